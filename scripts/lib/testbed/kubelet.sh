# SPDX-License-Identifier: Apache-2.0
# scripts/testbed, part: Kubelet realism: the admission half of every kwok kubelet (a component), and the kubelet
# and GPU-driver faults tests inject (commands).
# Sourced by scripts/testbed after its settings (D, N, ports, LOGS, PIDS, BIN), never run.

# Kubelet realism: the admission half of every kwok kubelet (a component), and the kubelet
# and GPU-driver faults tests inject (commands). Kept apart from the rest on purpose.

KUBELET_ADMISSION="$SKB_ROOT/tests/testbed/kubelet_admission.py"

# Healthy once it has listed nodes and pods since its latest start.
kubelet_admission_ok() {
  local log="$LOGS/kubelet-admission.log" from
  from="$(grep -n '===== .* starting kubelet-admission' "$log" | tail -1 | cut -d: -f1)"
  tail -n "+${from:-1}" "$log" | grep -q 'synced:'
}

start_kubelet_admission() {
  is_running kubelet-admission && return 0
  skb_step testbed/kubelet-admission
  local c="$D/k8s/certs"
  launch kubelet-admission /usr/bin/python3 "$KUBELET_ADMISSION" \
    --server "https://127.0.0.1:$APISERVER_PORT" --ca "$c/ca.crt" --cert "$c/kwok.crt" \
    --key "$c/kwok.key"
  wait_healthy kubelet-admission 30 kubelet_admission_ok
}

# Every namespace `up` made (and default) has its default ServiceAccount: a pod created
# before the ServiceAccount controller made it is refused (serviceaccount "default" not found).
wait_default_service_accounts() {
  skb_step testbed/serviceaccounts "waiting for the default ServiceAccount of default, slurm-bridge"
  local ns
  for ns in default slurm-bridge; do
    skb_wait_for 60 "serviceaccount default in $ns" kubectl get serviceaccount default -n "$ns" ||
      skb_die "namespace $ns has no default ServiceAccount after 60 s" "$LOGS/kube-controller-manager.log"
  done
}

# After kube-apiserver restarts, kube-controller-manager is refused (Forbidden) until the new
# apiserver's authorizer has its RBAC objects, and its reflectors then back off: for up to
# a minute or two new namespaces get no default ServiceAccount, and a test that creates
# pods right after `restart kube-apiserver` or `expire-watches` fails on it. This returns
# once a fresh namespace gets its ServiceAccount again, so those commands return with a
# whole cluster.
probe_namespace() { kubectl get namespace "$1" || kubectl create namespace "$1"; }
wait_controllers_back() {
  local ns="skb-testbed-probe-$RANDOM$RANDOM"
  skb_wait_for 60 "namespace $ns created" probe_namespace "$ns" ||
    skb_die "kube-apiserver does not create a namespace after its restart" "$LOGS/kube-apiserver.log"
  if ! skb_wait_for 180 "serviceaccount default in $ns" kubectl get serviceaccount default -n "$ns"; then
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    skb_die "kube-controller-manager made no ServiceAccount within 180 s of the apiserver's restart" \
      "$LOGS/kube-controller-manager.log"
  fi
  if is_running kube-scheduler && is_running kwok; then wait_scheduler_back "$ns"; fi
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

# The scheduler's reflectors back off the same way, and when its pod informer relists it
# replays the pods in key order: a pod of namespace default is scheduled before the
# scheduler has re-added slurm-bridge's reservation pods, lands where their GPUs are taken
# and is refused by the kubelet (OutOfnvidia.com/gpu), as a real one would. A pod created
# after the restart that the scheduler binds and kwok runs shows both watch again: the
# watch delivers in order, so every pod created before it is in their caches. No
# resources asked, every taint tolerated (cordoned nodes too), only kwok's nodes.
wait_scheduler_back() {
  local ns="$1" manifest
  manifest="$(jq -nc --arg ns "$ns" '{apiVersion: "v1", kind: "Pod",
    metadata: {name: "scheduler-probe", namespace: $ns},
    spec: {containers: [{name: "c", image: "pause"}], terminationGracePeriodSeconds: 0,
      nodeSelector: {type: "kwok"}, tolerations: [{operator: "Exists"}]}}')"
  skb_wait_for 60 "probe pod created in $ns" probe_create "$ns" "$manifest" ||
    skb_die "no probe pod could be created in $ns after the apiserver's restart"
  if ! skb_wait_for 120 "probe pod scheduled and running" probe_running "$ns"; then
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    skb_die "kube-scheduler and kwok did not run a pod within 120 s of the apiserver's restart" \
      "$LOGS/kube-scheduler.log"
  fi
}
probe_create() {
  kubectl get pod -n "$1" scheduler-probe || kubectl create -f - <<<"$2"
}
probe_running() {
  [[ "$(kubectl get pod -n "$1" scheduler-probe -o jsonpath='{.status.phase}')" == Running ]]
}

# pod_ref POD: "NAMESPACE NAME" from NAMESPACE/NAME or NAME (namespace default).
pod_ref() { if [[ "$1" == */* ]]; then echo "${1%%/*} ${1#*/}"; else echo "default $1"; fi; }

cmd_kubelet_fail() {
  SKB_STEP=testbed/kubelet-fail
  [[ $# -ge 1 ]] || skb_die "usage: scripts/testbed kubelet-fail POD [REASON [MESSAGE]]"
  local ns name pod device reason="${2:-UnexpectedAdmissionError}" message="${3:-}" patch
  read -r ns name <<<"$(pod_ref "$1")"
  pod="$(kubectl get pod -n "$ns" "$name" -o json 2>&1)" || skb_die "no pod $ns/$name: $pod"
  device="$(jq -r '[.spec.containers[].resources | (.limits // {}), (.requests // {}) | keys[]
                    | select(contains("/"))][0] // "nvidia.com/gpu"' <<<"$pod")"
  # What kubelet 1.37 writes when the device plugin is not back after a restart.
  [[ -n "$message" ]] || message="Allocate failed due to no healthy devices present; cannot allocate unhealthy devices $device, which is unexpected"
  patch="$(jq -c --arg r "$reason" --arg m "$message" --arg now "$(date -u +%FT%TZ)" '
    {metadata: {uid: .metadata.uid},
     status: {phase: "Failed", reason: $r, message: $m,
       conditions: [{type: "Ready", status: "False", reason: "PodFailed", lastTransitionTime: $now},
                    {type: "ContainersReady", status: "False", reason: "PodFailed",
                     lastTransitionTime: $now}],
       containerStatuses: [.spec.containers[] | {name, image, ready: false, restartCount: 0,
         started: false, state: {terminated: {exitCode: 137, reason: "Error",
         finishedAt: $now}}}]}}' <<<"$pod")"
  kubectl patch pod -n "$ns" "$name" --subresource=status --type=strategic -p "$patch" \
    >/dev/null || skb_die "failing $ns/$name did not work"
  skb_log "$ns/$name: Failed ($reason), not deleted"
}

cmd_kubelet_restart() {
  SKB_STEP=testbed/kubelet-restart
  local node="${1:-}" devices=registered token
  [[ -n "$node" ]] || skb_die "usage: scripts/testbed kubelet-restart NODE [--devices-late]"
  [[ "${2:-}" == --devices-late ]] && devices=late
  is_running kubelet-admission || skb_die "kubelet-admission is not running (scripts/testbed up)"
  token="$(date +%s%N)"
  kubectl annotate node "$node" --overwrite "testbed.slurm-k8s-bridge.io/kubelet-restart-devices=$devices" \
    "testbed.slurm-k8s-bridge.io/kubelet-restart=$token" >/dev/null ||
    skb_die "annotating node $node failed"
  restarted() {
    [[ "$(kubectl get node "$node" -o \
      jsonpath='{.metadata.annotations.testbed\.slurm-k8s-bridge\.io/kubelet-restarted}')" == "$token" ]]
  }
  skb_wait_for 30 "kubelet restart of $node" restarted ||
    skb_die "the kubelet restart of $node was not carried out in 30 s" "$LOGS/kubelet-admission.log"
  skb_log "$node: pods admitted again (device plugin $devices)"
}

# gpu_field NODE FIELD RESOURCE: status.FIELD[RESOURCE] of the node ("" when absent).
gpu_field() {
  kubectl get node "$1" -o json | jq -r --arg f "$2" --arg r "$3" '.status[$f][$r] // empty'
}

# dra mode: the driver's health check (NVIDIA's NVMLDeviceHealthCheck, alpha in v25.12)
# republishes the node's ResourceSlice without its unhealthy devices, as a new pool
# generation; claims already allocated on them stay. The last N devices are the ones lost;
# the slice as it was is kept for gpu-recovered.
dra_gpu_lost() {
  local node="$1" n="$2" slice="$1-$DRA_DRIVER" saved="$D/lost-slice-$1.json" out
  [[ "$n" =~ ^[1-8]$ ]] || skb_die "N must be 1..8 in dra mode, not '$n'"
  [[ -f "$saved" ]] || kubectl get resourceslice "$slice" -o json >"$saved" ||
    skb_die "reading ResourceSlice $slice failed"
  out="$(kubectl get resourceslice "$slice" -o json |
    jq --argjson n "$n" '.spec.pool.generation += 1 |
      .spec.devices = .spec.devices[0:([(.spec.devices | length) - $n, 0] | max)]' |
    kubectl replace -f - 2>&1)" || skb_die "republishing ResourceSlice $slice failed: $out"
  write_gpu_identity
  skb_log "$node: ResourceSlice $slice republished without its last $n device(s)"
}

dra_gpu_recovered() {
  local node="$1" slice="$1-$DRA_DRIVER" saved="$D/lost-slice-$1.json" out
  [[ -f "$saved" ]] || { skb_log "$node: no device lost"; return 0; }
  out="$(kubectl get resourceslice "$slice" -o json |
    jq --slurpfile was "$saved" '.spec.pool.generation += 1 | .spec.devices = $was[0].spec.devices' |
    kubectl replace -f - 2>&1)" || skb_die "republishing ResourceSlice $slice failed: $out"
  rm -f "$saved"
  write_gpu_identity
  skb_log "$node: ResourceSlice $slice republished with every device"
}

cmd_gpu_lost() {
  SKB_STEP=testbed/gpu-lost
  local node="${1:-}" n="${2:-1}" res="${3:-nvidia.com/gpu}" alloc left
  [[ -n "$node" ]] || skb_die "usage: scripts/testbed gpu-lost NODE [N [RESOURCE]]"
  if [[ "$GPU_ALLOCATION" == dra ]]; then
    dra_gpu_lost "$node" "$n"
    return
  fi
  alloc="$(gpu_field "$node" allocatable "$res")"
  [[ "$alloc" =~ ^[0-9]+$ ]] || skb_die "node $node has no allocatable $res ('$alloc')"
  left=$((alloc > n ? alloc - n : 0))
  kubectl patch node "$node" --subresource=status --type=merge \
    -p "{\"status\":{\"allocatable\":{\"$res\":\"$left\"}}}" >/dev/null ||
    skb_die "patching node $node failed"
  skb_log "$node: $res allocatable $alloc -> $left (capacity $(gpu_field "$node" capacity "$res"))"
}

cmd_gpu_recovered() {
  SKB_STEP=testbed/gpu-recovered
  local node="${1:-}" res="${2:-nvidia.com/gpu}" cap
  [[ -n "$node" ]] || skb_die "usage: scripts/testbed gpu-recovered NODE [RESOURCE]"
  if [[ "$GPU_ALLOCATION" == dra ]]; then
    dra_gpu_recovered "$node"
    return
  fi
  cap="$(gpu_field "$node" capacity "$res")"
  [[ "$cap" =~ ^[0-9]+$ ]] || skb_die "node $node has no capacity $res ('$cap')"
  kubectl patch node "$node" --subresource=status --type=merge \
    -p "{\"status\":{\"allocatable\":{\"$res\":\"$cap\"}}}" >/dev/null ||
    skb_die "patching node $node failed"
  skb_log "$node: $res allocatable back to $cap"
}

# dra_publish_pool NODE N GAP [JQ]: the pool's devices (every slice of its newest generation,
# in slice-name order, passed through the jq program JQ when given) as N slices of the next
# generation, the first replacing the node's slice (same name), the others made beside it,
# GAP s apart; then every slice of an older generation deleted, as the driver's publisher does.
dra_publish_pool() {
  local node="$1" n="$2" gap="$3" edit="${4:-.}" slice="$1-$DRA_DRIVER" pool devices gen count k part out
  pool="$(kubectl get resourceslices -o json | jq -c --arg n "$node" --arg d "$DRA_DRIVER" \
    '[.items[] | select(.spec.driver == $d and .spec.pool.name == $n)]')" ||
    skb_die "reading the ResourceSlices of $node failed"
  gen="$(jq 'map(.spec.pool.generation) | max' <<<"$pool")"
  devices="$(jq -c --argjson g "$gen" '[.[] | select(.spec.pool.generation == $g)] |
    sort_by(.metadata.name) | map(.spec.devices) | add' <<<"$pool" | jq -c "$edit")" ||
    skb_die "editing the devices of $node failed"
  count="$(jq length <<<"$devices")"
  ((count >= n)) || skb_die "$node publishes $count device(s): cannot split them into $n slices"
  for ((k = 0; k < n; k++)); do
    part="$(jq -c --argjson k "$k" --argjson n "$n" \
      '. as $all | ($all | length) as $len | [range($k * $len / $n | floor;
        ($k + 1) * $len / $n | floor)] | map($all[.])' <<<"$devices")"
    if ((k == 0)); then
      out="$(kubectl get resourceslice "$slice" -o json |
        jq --argjson g "$((gen + 1))" --argjson n "$n" --argjson devs "$part" \
          '.spec.pool.generation = $g | .spec.pool.resourceSliceCount = $n |
           .spec.devices = $devs' | kubectl replace -f - 2>&1)" ||
        skb_die "republishing ResourceSlice $slice failed: $out"
    else
      ((gap == 0)) || sleep "$gap"
      out="$(kubectl get resourceslice "$slice" -o json |
        jq --arg name "$slice-part$k" --argjson devs "$part" \
          '.metadata = {name: $name, ownerReferences: .metadata.ownerReferences} |
           .spec.devices = $devs' | kubectl create -f - 2>&1)" ||
        skb_die "publishing ResourceSlice $slice-part$k failed: $out"
    fi
  done
  # The slices read above, of generations now older, but the node's own (replaced above).
  jq -r --arg s "$slice" '.[] | select(.metadata.name != $s) | .metadata.name' <<<"$pool" |
    while read -r old; do
      kubectl delete resourceslice "$old" >>"$LOGS/testbed.log" 2>&1
    done
  write_gpu_identity
}

cmd_driver_split() {
  SKB_STEP=testbed/driver-split
  local node="${1:-}" n="${2:-}" gap="${3:-0}"
  [[ -n "$node" && "$n" =~ ^[2-8]$ && "$gap" =~ ^[0-9]+$ ]] ||
    skb_die "usage: scripts/testbed driver-split NODE N(2..8) [GAP_SECONDS]"
  [[ "$GPU_ALLOCATION" == dra ]] || skb_die "driver-split needs the testbed in dra mode"
  dra_publish_pool "$node" "$n" "$gap"
  skb_log "$node: pool republished in $n ResourceSlices (a new generation, ${gap}s apart)"
}

cmd_driver_join() {
  SKB_STEP=testbed/driver-join
  local node="${1:-}"
  [[ -n "$node" ]] || skb_die "usage: scripts/testbed driver-join NODE"
  [[ "$GPU_ALLOCATION" == dra ]] || skb_die "driver-join needs the testbed in dra mode"
  dra_publish_pool "$node" 1 0
  skb_log "$node: pool republished in one ResourceSlice (a new generation)"
}

cmd_driver_reorder() {
  SKB_STEP=testbed/driver-reorder
  local node="${1:-}"
  [[ -n "$node" ]] || skb_die "usage: scripts/testbed driver-reorder NODE"
  [[ "$GPU_ALLOCATION" == dra ]] || skb_die "driver-reorder needs the testbed in dra mode"
  # gpu-0 and gpu-1 trade their PCI location (bus id and root); nothing else changes.
  dra_publish_pool "$node" 1 0 '
    def loc: .attributes | {b: .["resource.kubernetes.io/pciBusID"],
                            r: .["resource.kubernetes.io/pcieRoot"]};
    (map(select(.name == "gpu-0"))[0] | loc) as $a |
    (map(select(.name == "gpu-1"))[0] | loc) as $b |
    if $a.b == null or $b.b == null then error("gpu-0 and gpu-1 need a PCI bus id") else . end |
    map(if .name == "gpu-0" or .name == "gpu-1" then
          (if .name == "gpu-0" then $b else $a end) as $to |
          .attributes["resource.kubernetes.io/pciBusID"] = $to.b |
          .attributes["resource.kubernetes.io/pcieRoot"] = $to.r
        else . end)'
  skb_log "$node: pool republished with gpu-0 and gpu-1 on each other's PCI bus (a new generation)"
}

# The driver's health taints (NVIDIA's dra-driver-nvidia-gpu with NVMLDeviceHealthCheck):
# one taint per key on the device entry of the slice, NoSchedule for a fatal XID or a lost
# GPU; they stay until the kubelet plugin restarts and finds the GPU healthy.
cmd_gpu_unhealthy() {
  SKB_STEP=testbed/gpu-unhealthy
  local node="${1:-}" index="${2:-}" xid="${3:-79}" taint
  [[ -n "$node" && "$index" =~ ^[0-9]+$ && "$xid" =~ ^([0-9]+|lost)$ ]] ||
    skb_die "usage: scripts/testbed gpu-unhealthy NODE INDEX [XID|lost]"
  [[ "$GPU_ALLOCATION" == dra ]] || skb_die "gpu-unhealthy needs the testbed in dra mode"
  if [[ "$xid" == lost ]]; then
    taint="{key: \"$DRA_DRIVER/gpu-lost\"}"
  else
    taint="{key: \"$DRA_DRIVER/xid\", value: \"$xid\"}"
  fi
  # (Names, keys and numbers only: nothing here needs quoting inside the program.)
  dra_publish_pool "$node" 1 0 "
    if any(.[]; .name == \"gpu-$index\") then . else error(\"no device gpu-$index\") end |
    ($taint + {effect: \"NoSchedule\", timeAdded: \"$(date -u +%FT%TZ)\"}) as \$t |
    map(if .name == \"gpu-$index\" then
          .taints = ([(.taints // [])[] | select(.key != \$t.key)] + [\$t])
        else . end)"
  skb_log "$node: gpu-$index tainted by the driver ($taint, NoSchedule; a new generation)"
}

cmd_gpu_healthy() {
  SKB_STEP=testbed/gpu-healthy
  local node="${1:-}" index="${2:-}"
  [[ -n "$node" && "$index" =~ ^[0-9]+$ ]] || skb_die "usage: scripts/testbed gpu-healthy NODE INDEX"
  [[ "$GPU_ALLOCATION" == dra ]] || skb_die "gpu-healthy needs the testbed in dra mode"
  dra_publish_pool "$node" 1 0 "
    map(if .name == \"gpu-$index\" then
          .taints = [(.taints // [])[] | select(.key | startswith(\"$DRA_DRIVER/\") | not)] |
          if .taints == [] then del(.taints) else . end
        else . end)"
  skb_log "$node: gpu-$index republished without the driver's health taints (a new generation)"
}

cmd_force_delete() {
  SKB_STEP=testbed/force-delete
  [[ $# -eq 1 ]] || skb_die "usage: scripts/testbed force-delete POD"
  local ns name out
  read -r ns name <<<"$(pod_ref "$1")"
  out="$(kubectl delete pod -n "$ns" "$name" --grace-period=0 --force --wait=false 2>&1)" ||
    skb_die "force-deleting $ns/$name failed: $out"
  skb_log "$ns/$name: deleted with grace 0"
}
