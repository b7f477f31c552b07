#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# systemd_testbed_test DEB: the packaged daemon as the package runs it -- started by its
# systemd unit, inside the unit's sandbox (ProtectSystem=strict, PrivateUsers=, the
# system-call filter, no capabilities...) -- against the testbed, until /readyz says ok: the
# sandbox lets it read its config and kubeconfig, reach the apiserver over TCP, reach
# slurmctld through libslurm and the munge socket, and serve its socket (bridgectl, as root,
# reads the inventory through it). Then `systemctl stop` ends it cleanly (exit status 0).
#
# The bare Debian 12 root of deb_root_lib.sh, with systemd and the package installed by apt,
# is booted with systemd-nspawn (--boot, the host's network; nothing registered with a host
# systemd, which this machine need not run). The unit's PrivateTmp= hides the testbed's
# /tmp paths, so the daemon gets copies: the testbed's kubeconfig flattened (certificates
# inline) into /etc/slurm-k8s-bridge/kubeconfig, its slurm.conf in /etc/slurm with the
# package's PluginDir and the munge socket at /run/munge/munge.sock, where the testbed's
# munge directory is bound. The daemon manages no node and lends nothing, so the shared
# testbed is not changed. Label integration (tests/testbed/on_testbed.sh holds a testbed);
# needs root and systemd-nspawn; exit 77 without root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/deb_root_lib.sh"
: "${SKB_TESTBED_DIR:?run eval \"\$(scripts/testbed env)\" first}"
: "${KUBECONFIG:?}" "${SLURM_CONF:?}"
((EUID == 0)) || { echo "SKIP: needs root"; exit 77; }
command -v systemd-nspawn >/dev/null || fail "systemd-nspawn missing (scripts/setup installs systemd-container)"
command -v kubectl >/dev/null || fail "kubectl missing (the testbed's env puts it on PATH)"
PORT=16497
UNIT=slurm-k8s-bridge.service

deb_root_setup
deb_root_apt install --no-install-recommends systemd
deb_root_install_deb "$1"
# The testbed's files, as copies the sandbox can see.
kubectl config view --flatten --minify >"$ROOT/etc/slurm-k8s-bridge/kubeconfig"
chmod 0400 "$ROOT/etc/slurm-k8s-bridge/kubeconfig"
in_root chown slurm:slurm /etc/slurm-k8s-bridge/kubeconfig
mkdir -p "$ROOT/etc/slurm"
munge_sock="$(sed -n 's/^AuthInfo=.*socket=\([^,]*\).*/\1/p' "$SLURM_CONF")"
[[ -S "$munge_sock" ]] || fail "the testbed's munge socket ($munge_sock, from AuthInfo) is missing"
sed -E -e 's|^[Pp]lugin[Dd]ir=.*|PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm|' \
  -e "s|$munge_sock|/run/munge/$(basename "$munge_sock")|g" "$SLURM_CONF" >"$ROOT/etc/slurm/slurm.conf"
cp "$(dirname "$SLURM_CONF")"/gres.conf "$ROOT/etc/slurm/" 2>/dev/null || true
testbed_daemon_config "$PORT" /etc/slurm/slurm.conf /etc/slurm-k8s-bridge/kubeconfig \
  >"$ROOT/etc/slurm-k8s-bridge/config.json"
echo skb-systemd-test >"$ROOT/etc/hostname"
cp /etc/hosts "$ROOT/etc/hosts"  # slurm.conf's SlurmctldHost=localhost; the bare root has none
deb_root_unmount  # nspawn makes the container's /dev and /proc

log="$ROOT/nspawn.log"
systemd-nspawn -q -D "$ROOT" --boot --register=no --keep-unit \
  --bind-ro="$(dirname "$munge_sock"):/run/munge" >"$log" 2>&1 9>&- &
nspawn=$!
init=""
stop_container() {
  if [[ -n "$init" ]]; then nsenter -t "$init" -a systemctl poweroff >/dev/null 2>&1 || true; fi
  for _ in $(seq 1 50); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.2; done
  kill "$nspawn" 2>/dev/null || true
  wait "$nspawn" 2>/dev/null || true
}
trap 'stop_container; deb_root_cleanup' EXIT
for _ in $(seq 1 100); do
  init="$(pgrep -P "$nspawn" | head -1 || true)"
  [[ -n "$init" ]] && break
  kill -0 "$nspawn" 2>/dev/null || { cat "$log" >&2; fail "systemd-nspawn exited"; }
  sleep 0.1
done
[[ -n "$init" ]] || fail "no container init under systemd-nspawn"
in_ct() { nsenter -t "$init" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
state=""
for _ in $(seq 1 300); do
  state="$(in_ct systemctl is-system-running 2>/dev/null || true)"
  [[ "$state" == running || "$state" == degraded ]] && break
  sleep 0.2
done
[[ "$state" == running || "$state" == degraded ]] || fail "the container's systemd did not boot: $state"
echo "container booted ($state): $(in_ct systemctl --version | head -1)"

in_ct systemctl start "$UNIT" || true
ready=""
for _ in $(seq 1 150); do
  if [[ "$(in_ct systemctl is-active "$UNIT" || true)" == failed ]]; then break; fi
  ready="$(curl -fsS "http://127.0.0.1:$PORT/readyz" 2>/dev/null || true)"
  [[ "$ready" == ok* ]] && break
  sleep 0.2
done
if [[ "$ready" != ok* ]]; then
  in_ct systemctl status --no-pager "$UNIT" >&2 || true
  in_ct journalctl -u "$UNIT" --no-pager | tail -30 >&2 || true
  fail "the unit's daemon never answered /readyz with ok"
fi
echo "/readyz: $ready"
in_ct systemctl show -p User -p PrivateUsers -p ProtectSystem -p NoNewPrivileges "$UNIT"
grep -q '^skb_cache_synced{source="slurm"} 1' <(curl -fsS "http://127.0.0.1:$PORT/metrics") ||
  fail "metrics do not show a Slurm poll"
sock="$(in_ct stat -c '%U %a' /run/slurm-k8s-bridge/bridge.sock)" || fail "no socket in /run/slurm-k8s-bridge"
[[ "$sock" == "slurm 600" ]] || fail "the socket is '$sock', not slurm's 0600"
in_ct bridgectl get nodes >"$ROOT/bridgectl.out" 2>&1 ||
  { cat "$ROOT/bridgectl.out" >&2; fail "bridgectl (root) could not read the daemon through its socket"; }
echo "bridgectl get nodes: $(head -1 "$ROOT/bridgectl.out")"
in_ct systemctl stop "$UNIT"
result="$(in_ct systemctl show -p Result -p ExecMainStatus --value "$UNIT" | paste -sd' ')"
[[ "$result" == "success 0" ]] || fail "the daemon did not stop cleanly: Result, ExecMainStatus = $result"
in_ct journalctl -u "$UNIT" --no-pager | grep -iE 'denied|seccomp|read-only|EROFS|EPERM' &&
  fail "the sandbox refused the daemon something (journal above)"
echo "OK"
