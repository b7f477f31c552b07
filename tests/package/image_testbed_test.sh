#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image_testbed_test DEB: the daemon of the container image (image_lib.sh: built from the
# Dockerfile with the package, or the image image_test built from the same inputs) against
# the testbed (`eval "$(scripts/testbed env)"` first), run by `buildah run` as the chart runs
# the image: as the image's user (uid 64030), host network, the config directory mounted
# read-only at /etc/slurm-k8s-bridge (config.json and a copy of the testbed's kubeconfig,
# readable by that uid only), the plugin socket's directory at /run/slurm-k8s-bridge, and the
# testbed's directory (slurm.conf, munge socket) read-only at its own path. It reaches
# slurmctld through libslurm and munge (auth_munge.so from the image, nothing from the host)
# and the apiserver: /readyz answers ok, the log shows the Slurm snapshot and the synced
# caches, the image's bridgectl gets its answer over the socket, and SIGTERM stops it. It manages no node and does not lend, so it changes nothing
# on the shared testbed. Skipped (exit 77) without a running testbed, or when not root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
if [[ -z "${SKB_TESTBED_DIR:-}" || -z "${KUBECONFIG:-}" || -z "${SLURM_CONF:-}" ]]; then
  echo "SKIP: no testbed in the environment (scripts/testbed up; eval \"\$(scripts/testbed env)\")"
  exit 77
fi
running="$("$SKB_ROOT/scripts/testbed" status 2>/dev/null | awk '$2 == "running" {print $1}' || true)"
for c in munged slurmctld kube-apiserver; do
  grep -qx "$c" <<<"$running" || { echo "SKIP: the testbed's $c is not running"; exit 77; }
done
image_build "$1"
image_container
# The host's name, which the container's /etc/hosts resolves as a pod's does its own (buildah
# would give the container's id, which nothing resolves). buildah warns that an OCI image
# keeps no hostname: the container does.
"${BUILDAH[@]}" config --hostname "$(hostname)" "$CTR" 2>/dev/null

work="$(mktemp -d "${TMPDIR:-/tmp}/skb-image-testbed.XXXXXX")"
conf=""
daemon=""
runner=""
cleanup() {
  if [[ -n "$daemon" ]]; then kill "$daemon" 2>/dev/null || true; fi
  if [[ -n "$runner" ]]; then stop_pid "$runner"; fi
  if [[ -n "$conf" ]]; then rm -f "$conf"; fi
  rm -rf "$work"
  image_cleanup
}
trap cleanup EXIT

conf="$(testbed_slurm_conf image-test)"
port=16498
install -d -m 0750 -o 64030 -g 64030 "$work/etc" "$work/run"
install -m 0400 -o 64030 -g 64030 "$KUBECONFIG" "$work/etc/kubeconfig"
testbed_daemon_config "$port" "$conf" /etc/slurm-k8s-bridge/kubeconfig >"$work/etc/config.json"
chown 64030:64030 "$work/etc/config.json"
run_daemon() {
  "${BUILDAH[@]}" run --network host -v "$SKB_TESTBED_DIR:$SKB_TESTBED_DIR:ro" \
    -v "$work/etc:/etc/slurm-k8s-bridge:ro" -v "$work/run:/run/slurm-k8s-bridge" \
    "$CTR" -- /usr/bin/slurm-k8s-bridge --config /etc/slurm-k8s-bridge/config.json "$@"
}
run_daemon --check-config
log="$work/daemon.log"
# buildah runs the daemon as a child of its own (and kills it with SIGKILL when it is
# killed itself): the daemon is found below it and stopped with SIGTERM. Neither keeps the
# lock files' descriptors.
run_daemon --no-leader-election >"$log" 2>&1 8>&- 9>&- &
runner=$!
# descendant PID NAME: the first process named NAME (comm) below PID.
descendant() {
  local c
  for c in $(ps -o pid= --ppid "$1"); do
    [[ "$(cat "/proc/$c/comm" 2>/dev/null)" == "$2" ]] && { echo "$c"; return 0; }
    descendant "$c" "$2" && return 0
  done
  return 1
}
skb_wait_for 10 "the daemon below buildah" descendant "$runner" slurm-k8s-bridg ||
  { tail -20 "$log" >&2; fail "no daemon process below buildah run"; }
daemon="$(descendant "$runner" slurm-k8s-bridg)"
uids="$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$daemon/status")"
[[ "$uids" == "64030 64030 64030 64030" ]] || fail "the daemon runs with uids $uids, not 64030"

wait_ready "$daemon" "$port" "$log"
# /readyz answers once the caches are synced; the first reconcile worker logs caches_synced
# a moment later (after it has ensured the PriorityClasses): wait for the line.
for e in snapshot_published caches_synced; do
  skb_wait_for 30 "$e in the log" grep -q "\"event\":\"$e\"" "$log" ||
    fail "the log shows no $e (slurmctld; the apiserver)"
  grep "\"event\":\"$e\"" "$log"
done
# What libslurm loaded (from the image: the paths are the container's root as the host sees it).
echo "Slurm plugins loaded: $(grep -o '/slurm-wlm/[^/ ]*\.so$' "/proc/$daemon/maps" | sort -u |
  sed 's|.*/||' | tr '\n' ' ')"
grep -q '/slurm-wlm/auth_munge\.so$' "/proc/$daemon/maps" || fail "auth_munge.so is not loaded"

# bridgectl from the image beside the running daemon, as `kubectl exec` into the chart's pod
# runs it (docs/runbook.md, its opening; README "bridgectl"): the image's user, the default
# socket path, no flags.
ctl="$("${BUILDAH[@]}" run --network host -v "$work/run:/run/slurm-k8s-bridge" "$CTR" -- \
  /usr/bin/bridgectl get nodes -o json 2>&1)" || fail "bridgectl in the image failed: $ctl"
jq -e '.nodes | type == "array"' <<<"$ctl" >/dev/null ||
  fail "bridgectl in the image answered no node list: $ctl"
echo "bridgectl get nodes (in the image): $(jq -c . <<<"$ctl")"

kill "$daemon"
# The daemon is buildah's grandchild (reaped below buildah), buildah exits after it.
skb_wait_for 15 "the daemon to stop" sh -c "! kill -0 $daemon" || fail "the daemon ignored SIGTERM"
wait "$runner" || fail "the daemon exited non-zero after SIGTERM ($(tail -3 "$log"))"
runner=""
daemon=""
grep -q '"event":"stopped"' "$log" || fail "the log does not show the daemon stopping"
echo "OK"
