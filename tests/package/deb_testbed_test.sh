#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
conf="$(testbed_slurm_conf deb-root-test)"
port=16499
mkdir -p "$ROOT/run/slurm-k8s-bridge"
testbed_daemon_config "$port" "$conf" "$KUBECONFIG" >"$ROOT/etc/slurm-k8s-bridge/config.json"
in_root slurm-k8s-bridge --check-config --config /etc/slurm-k8s-bridge/config.json
log="$ROOT/daemon.log"
# chroot and env exec, so $! is the daemon itself (a shell function here would leave the
# daemon running after the test, holding the testbed lock it inherited).
chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  slurm-k8s-bridge --config /etc/slurm-k8s-bridge/config.json --no-leader-election \
  >"$log" 2>&1 9>&- &
daemon=$!
trap 'stop_pid "$daemon"; rm -f "$conf"; deb_root_cleanup' EXIT

wait_ready "$daemon" "$port" "$log"
stop_pid "$daemon"
kill -0 "$daemon" 2>/dev/null && fail "the daemon outlived the test"
echo "OK"
