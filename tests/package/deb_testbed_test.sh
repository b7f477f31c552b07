#!/usr/bin/env bash
# deb_testbed_test DEB: the daemon of the installed package, in a bare Debian 12 root,
# against the testbed (`eval "$(scripts/testbed env)"` first): it reaches slurmctld through
# libslurm and munge (auth_munge.so from the package's dependencies, nothing from the host)
# and the apiserver, and serves /readyz ("ready" needs the node and pod caches synced and
# one Slurm poll done). It manages no node (a selector nothing matches) and does not lend,
# so it changes nothing on the shared testbed. Needs root (chroot); exit 77 when not root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/deb_root_lib.sh"
: "${SKB_TESTBED_DIR:?run eval \"\$(scripts/testbed env)\" first}"
: "${KUBECONFIG:?}" "${SLURM_CONF:?}"
deb_root_install "$1"

# The testbed's files (kubeconfig and certificates, slurm.conf, munge socket) at the same
# paths inside the root; name resolution of localhost as on the host.
deb_root_mount "$SKB_TESTBED_DIR" "$SKB_TESTBED_DIR" --bind
cp /etc/hosts "$ROOT/etc/hosts"
# The testbed's slurm.conf names the build tree's plugin directory too (for slurmctld's
# job_submit plugin), which does not exist in the root, and libslurm refuses a PluginDir it
# cannot open: the daemon reads a copy beside it (same directory, so relative paths hold)
# whose PluginDir is the package's.
conf="$(dirname "$SLURM_CONF")/slurm-deb-root-test.conf"
sed -E 's|^[Pp]lugin[Dd]ir=.*|PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm|' "$SLURM_CONF" >"$conf"
port=16499
mkdir -p "$ROOT/run/slurm-k8s-bridge"
cat >"$ROOT/etc/slurm-k8s-bridge/config.json" <<JSON
{
  "logging": {"level": "info", "format": "json"},
  "kubernetes": {"kubeconfig": "$KUBECONFIG", "namespace": "slurm-bridge",
                 "node_selector": "slurm-k8s-bridge.io/managed=deb-root-test-none"},
  "slurm": {"conf": "$conf"},
  "server": {"socket_path": "/run/slurm-k8s-bridge/bridge.sock",
             "http_address": "127.0.0.1:$port"},
  "lending": {"enabled": false}
}
JSON
in_root slurm-k8s-bridge --check-config --config /etc/slurm-k8s-bridge/config.json
log="$ROOT/daemon.log"
# chroot and env exec, so $! is the daemon itself (a shell function here would leave the
# daemon running after the test, holding the testbed lock it inherited).
chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  slurm-k8s-bridge --config /etc/slurm-k8s-bridge/config.json --no-leader-election \
  >"$log" 2>&1 9>&- &
daemon=$!
stop_daemon() {
  kill "$daemon" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$daemon" 2>/dev/null || true
  wait "$daemon" 2>/dev/null || true
}
trap 'stop_daemon; rm -f "$conf"; deb_root_cleanup' EXIT

ready=""
for _ in $(seq 1 150); do  # 30 s
  if ! kill -0 "$daemon" 2>/dev/null; then
    tail -20 "$log" >&2
    fail "the daemon exited"
  fi
  ready="$(curl -fsS "http://127.0.0.1:$port/readyz" 2>/dev/null || true)"
  [[ "$ready" == ok* ]] && break
  sleep 0.2
done
if [[ "$ready" != ok* ]]; then
  tail -20 "$log" >&2
  curl -sS "http://127.0.0.1:$port/readyz" >&2 || true
  fail "/readyz never said ready"
fi
echo "/readyz: $ready"
grep -q '^skb_cache_synced{source="slurm"} 1' <(curl -fsS "http://127.0.0.1:$port/metrics") ||
  fail "metrics do not show a Slurm poll"
stop_daemon
kill -0 "$daemon" 2>/dev/null && fail "the daemon outlived the test"
echo "OK"
