#!/usr/bin/env bash
# Puts the testbed back to "every node belongs to Slurm, no bridge bookkeeping": what the
# lending e2e tests leave behind when a bridge with lending enabled stops. Reservation pods
# lose their finalizer and go, lend annotations and bridge taints are removed, nodes the
# bridge drained are resumed. Idempotent; needs `eval "$(scripts/testbed env)"`.
set -uo pipefail
ns=slurm-bridge
# A release's reservation guard (RbacE2E installs one) would refuse the forced deletes below;
# the testbed's swap guard stays.
for kind in validatingadmissionpolicybinding validatingadmissionpolicy; do
  for o in $(kubectl get "$kind" -o name 2>/dev/null | grep -- '-reservation-guard$'); do
    kubectl delete "$o" --ignore-not-found >/dev/null 2>&1
  done
done
for p in $(kubectl -n "$ns" get pods -l slurm-k8s-bridge.io/role=reservation -o name 2>/dev/null); do
  kubectl -n "$ns" patch "$p" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
done
kubectl -n "$ns" delete pods -l slurm-k8s-bridge.io/role=reservation --grace-period=0 --force \
  --wait=true --timeout=60s >/dev/null 2>&1
kubectl -n default delete pods -l skb-e2e=lending --grace-period=0 --force --wait=true \
  --timeout=60s >/dev/null 2>&1
kubectl -n "$ns" delete pods -l skb-e2e=lending --grace-period=0 --force --wait=true \
  --timeout=60s >/dev/null 2>&1
# A test deletes the namespace: its pods are gone now; finalize it (the namespace
# controller may be backing off for minutes), wait for it to go, then create it again.
for _ in $(seq 120); do
  phase="$(kubectl get namespace "$ns" -o jsonpath='{.status.phase}' 2>/dev/null)"
  [[ "$phase" == Terminating ]] || break
  kubectl get namespace "$ns" -o json 2>/dev/null | jq '.spec.finalizers=[]' |
    kubectl replace --raw "/api/v1/namespaces/$ns/finalize" -f - >/dev/null 2>&1
  sleep 0.5
done
kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null 2>&1
# Pods (the bridge's reservations) created before the namespace's default ServiceAccount
# exists are refused: wait for it.
for _ in $(seq 150); do
  kubectl get serviceaccount default -n "$ns" >/dev/null 2>&1 && break
  sleep 0.2
done
# GPU-granular sharing: the bridge's per-device holds and its placeholder jobs.
kubectl delete devicetaintrules -l app.kubernetes.io/managed-by=slurm-k8s-bridge \
  --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
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
for n in $(kubectl get nodes -l slurm-k8s-bridge.io/managed=true -o name | sed 's#node/##'); do
  kubectl annotate node "$n" slurm-k8s-bridge.io/lent-at- slurm-k8s-bridge.io/lent-to- \
    slurm-k8s-bridge.io/signalled-at- slurm-k8s-bridge.io/idle-since- \
    slurm-k8s-bridge.io/lend-blocked- slurm-k8s-bridge.io/return-blocked- \
    slurm-k8s-bridge.io/lend-refused-at- >/dev/null 2>&1
  kubectl taint node "$n" slurm-k8s-bridge.io/reservation-swap- >/dev/null 2>&1
  kubectl taint node "$n" slurm-k8s-bridge.io/slurm-busy- >/dev/null 2>&1
  kubectl label node "$n" slurm-k8s-bridge.io/swap-guard- >/dev/null 2>&1
  kubectl uncordon "$n" >/dev/null 2>&1  # a `kubectl drain` test
  reason="$(sinfo -h -N -n "$n" -o '%E' | head -1)"
  if [[ "$reason" == k8s-bridge:* ]]; then
    scontrol update nodename="$n" state=resume >/dev/null 2>&1
  fi
done
exit 0
