#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts the testbed back to "every node belongs to Slurm, no bridge bookkeeping": what the
# lending e2e tests leave behind when a bridge with lending enabled stops. Reservation pods
# lose their finalizer and go, lend annotations and bridge taints (and the tests' own, keys
# skb-e2e/...) are removed, nodes the bridge drained are resumed. Idempotent; needs `eval "$(scripts/testbed env)"`.
#
# It runs before and after every lending test (about 150 times a CI run), so it reads each
# kind of object once and writes only what is dirty: a clean testbed costs 6 kubectl calls
# (0.1 s each) instead of the 38 an unconditional reset made (3.2 s).
set -uo pipefail
ns=slurm-bridge
q() { kubectl "$@" 2>/dev/null; }  # reads; a kind this apiserver does not serve reads empty
# A release's reservation guard (RbacE2E installs one) would refuse the forced deletes below;
# the testbed's swap guard stays.
guards="$(q get validatingadmissionpolicybindings,validatingadmissionpolicies -o name |
  grep -- '-reservation-guard$')"
[[ -z "$guards" ]] || kubectl delete $guards --ignore-not-found >/dev/null 2>&1
# The bridge's reservation pods (their finalizer first) and the tests' own pods.
pods="$(q get pods -A -o json | jq -r --arg ns "$ns" '.items[] | .metadata as $m
  | select(($m.namespace == $ns and $m.labels["slurm-k8s-bridge.io/role"] == "reservation")
      or (($m.namespace == $ns or $m.namespace == "default") and $m.labels["skb-e2e"] == "lending"))
  | "\($m.namespace) \($m.name) \(($m.finalizers // []) | length)"')"
if [[ -n "$pods" ]]; then
  while read -r pns name fin; do
    ((fin == 0)) || kubectl -n "$pns" patch pod "$name" --type=merge \
      -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  done <<<"$pods"
  for pns in $(awk '{print $1}' <<<"$pods" | sort -u); do
    kubectl -n "$pns" delete pod $(awk -v n="$pns" '$1 == n {print $2}' <<<"$pods") \
      --grace-period=0 --force --wait=true --timeout=60s >/dev/null 2>&1
  done
fi
# A test deletes the namespace: its pods are gone now; finalize it (the namespace
# controller may be backing off for minutes), wait for it to go, then create it again.
phase="$(q get namespace "$ns" -o jsonpath='{.status.phase}')"
if [[ "$phase" != Active ]]; then
  for _ in $(seq 120); do
    [[ "$phase" == Terminating ]] || break
    q get namespace "$ns" -o json | jq '.spec.finalizers=[]' |
      kubectl replace --raw "/api/v1/namespaces/$ns/finalize" -f - >/dev/null 2>&1
    sleep 0.5
    phase="$(q get namespace "$ns" -o jsonpath='{.status.phase}')"
  done
  q get namespace "$ns" >/dev/null || kubectl create namespace "$ns" >/dev/null 2>&1
  # Pods (the bridge's reservations) created before the namespace's default ServiceAccount
  # exists are refused: wait for it.
  for _ in $(seq 150); do
    q get serviceaccount default -n "$ns" >/dev/null && break
    sleep 0.2
  done
fi
# GPU-granular sharing: the bridge's per-device holds and its placeholder jobs.
rules="$(q get devicetaintrules -l app.kubernetes.io/managed-by=slurm-k8s-bridge -o name)"
[[ -z "$rules" ]] || kubectl delete $rules --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
scancel --name=skb-gpu-hold >/dev/null 2>&1
# Jobs a crashed test left behind (its TearDown never ran: an ASan abort, a timeout kill)
# would hold GPUs every later test expects free. Between tests no job should exist at all,
# so cancel every one and wait until none is left (a COMPLETING job still holds its GPUs).
left="$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')"
if [[ -n "${left// /}" ]]; then
  echo "reset_lending: cancelling jobs left by an earlier test: $left" >&2
  scancel --quiet $left >/dev/null 2>&1
  for _ in $(seq 120); do
    [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break
    sleep 0.5
  done
fi
# The maintenance cycle's reservations (skb-maint-NODE; none can hold a job now) and the
# check-failure files of the testbed's maintenance check.
for r in $(scontrol -o show reservation 2>/dev/null | grep -o 'ReservationName=skb-maint-[^ ]*' |
  cut -d= -f2); do
  scontrol delete reservation="$r" >/dev/null 2>&1
done
rm -f "${SKB_TESTBED_DIR:-/tmp/skb-testbed}"/node-state/*.check-fails
# slurmctld's own GPU count, once no job is left: every node's GresUsed must be 0, on no
# index. A slurmctld restarted while jobs start and end (the chaos suite's fault) can keep
# GPUs of a node counted as used after their jobs ended (Slurm 22.05 logs "gres count
# underflow" for that node): every later test on this testbed then finds the node short of
# GPUs, its 8-GPU jobs pending on Resources (cc9 of 7d7fcb9: 8 tests failed so, on one
# testbed, until a test restarted slurmctld). Only a restart makes slurmctld count again, from
# its job list, empty now.
stale_gres() {
  scontrol -d -o show node 2>/dev/null | awk '{
    n = ""; g = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^NodeName=/) n = substr($i, 10)
      if ($i ~ /^GresUsed=/) g = substr($i, 10)
    }
    if (g ~ /:[1-9][0-9]*\(|\(IDX:[0-9]/) printf "%s%s=%s", (c++ ? " " : ""), n, g
  }'
}
if [[ -z "$(squeue -h -o %i 2>/dev/null)" ]]; then
  stale="$(stale_gres)"
  if [[ -n "$stale" ]]; then
    echo "reset_lending: slurmctld counts GPUs in use with no job left ($stale): restarting it" >&2
    "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/scripts/testbed" restart slurmctld \
      >/dev/null 2>&1
    for _ in $(seq 60); do
      sinfo -h >/dev/null 2>&1 && [[ -z "$(stale_gres)" ]] && break
      sleep 0.5
    done
    stale="$(stale_gres)"
    [[ -z "$stale" ]] || echo "reset_lending: still counted after the restart: $stale" >&2
  fi
fi
# The managed nodes: per node, what of the bridge's bookkeeping is on it (one line each:
# name, then what to remove).
dirty="$(q get nodes -l slurm-k8s-bridge.io/managed=true -o json | jq -r '
  ["lent-at", "lent-to", "signalled-at", "idle-since", "lend-blocked", "return-blocked",
   "lend-refused-at", "unused-gives", "gpu-shared-since"] as $notes
  | .items[] | .metadata.name as $n | (.metadata.annotations // {}) as $a
  | (.spec.taints // [] | map(.key)) as $t
  | [ (if any($notes[]; $a["slurm-k8s-bridge.io/" + .] != null) then "notes" else empty end),
      ($t[] | select(. == "slurm-k8s-bridge.io/reservation-swap" or
                     . == "slurm-k8s-bridge.io/slurm-busy" or
                     . == "slurm-k8s-bridge.io/reclaiming" or
                     . == "slurm-k8s-bridge.io/maintenance" or startswith("skb-e2e/"))
            | "taint=" + .),
      (.status.conditions // [] | map(.type)[]
            | select(. == "RebootRequested" or . == "SlurmMaintenance") | "cond=" + .),
      (if (.metadata.labels // {})["slurm-k8s-bridge.io/swap-guard"] != null
       then "guard" else empty end),
      (if .spec.unschedulable == true then "cordon" else empty end),
      ((.status.capacity // {}) | keys[] | select(startswith("nvidia.com/mig-")) | "slice=" + .) ]
  | "\($n) \(join(" "))"')"
while read -r n what; do
  [[ -n "$n" ]] || continue
  for w in $what; do
    case "$w" in
      notes)
        kubectl annotate node "$n" slurm-k8s-bridge.io/lent-at- slurm-k8s-bridge.io/lent-to- \
          slurm-k8s-bridge.io/signalled-at- slurm-k8s-bridge.io/idle-since- \
          slurm-k8s-bridge.io/lend-blocked- slurm-k8s-bridge.io/return-blocked- \
          slurm-k8s-bridge.io/lend-refused-at- slurm-k8s-bridge.io/unused-gives- \
          slurm-k8s-bridge.io/gpu-shared-since- >/dev/null 2>&1 ;;
      taint=*) kubectl taint node "$n" "${w#taint=}-" >/dev/null 2>&1 ;;
      guard) kubectl label node "$n" slurm-k8s-bridge.io/swap-guard- >/dev/null 2>&1 ;;
      cordon) kubectl uncordon "$n" >/dev/null 2>&1 ;;  # a `kubectl drain` test
      cond=*)  # the maintenance cycle's request and record (MaintenanceE2E)
        kubectl patch node "$n" --subresource=status --type=strategic -p \
          "{\"status\":{\"conditions\":[{\"type\":\"${w#cond=}\",\"\$patch\":\"delete\"}]}}" \
          >/dev/null 2>&1 ;;
      slice=*)  # MIG slices a test advertised on a device-plugin node
        kubectl patch node "$n" --subresource=status --type=merge -p \
          "{\"status\":{\"capacity\":{\"${w#slice=}\":null},\"allocatable\":{\"${w#slice=}\":null}}}" \
          >/dev/null 2>&1 ;;
    esac
  done
done <<<"$dirty"
# Nodes the bridge drained in Slurm (its reasons start k8s-bridge:), and those a
# decommission test left drained for the site (decommissioned:).
resumed=0
while read -r n reason; do
  if [[ "$reason" == k8s-bridge:* || "$reason" == decommissioned:* ]]; then
    # A maintenance reboot the bridge asked for and that has not happened yet goes first.
    [[ "$reason" != *reboot* ]] || scontrol cancel_reboot "$n" >/dev/null 2>&1
    scontrol update nodename="$n" state=resume >/dev/null 2>&1
    resumed=1
  fi
done < <(sinfo -h -N -o '%N %E' 2>/dev/null | sort -u)
# A resumed node is "not responding" (sinfo's `*`) until slurmctld's next ping reaches its
# slurmd, about a second: a job a test submits to it in that window stays pending for the
# next scheduling pass. Wait for every node to answer.
if ((resumed)); then
  for _ in $(seq 40); do
    sinfo -h -N -o '%T' 2>/dev/null | grep -q '\*' || break
    sleep 0.25
  done
fi
exit 0
