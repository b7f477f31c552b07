#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# real_node_chart_test.sh DEB: the chart installed as an operator installs it (the chart
# README's quick start and docs/install.md), onto the testbed's real node (a real kubelet
# with containerd, scripts/lib/testbed/realnode.sh), which is also a Slurm node:
#   1. the image the package DEB makes (tests/package/image_lib.sh, buildah, no registry) is
#      imported into the node's containerd; `helm install` runs the bridge pod there, beside
#      the host's slurmctld and munged (their files mounted by hostPath, as on a slurmctld
#      host), its socket directory handed over by the init container, the job_submit
#      plugin in slurmctld reaching it through the socket;
#   2. the lend-and-return flow: the reservation pod's real container holds the node for
#      Slurm, an inference pod takes the node from a preemptible job (signal, grace,
#      requeue), its container runs, and when it goes the node and the job come back;
#   3. `helm upgrade` with a changed config rolls the pod without a stall (the old pod stops
#      before its successor starts: one process per host socket);
#   4. removal as the chart README says: the Deployment scaled to 0, `--decommission` run on
#      the host as the bridge's account (uid 64030 and its ServiceAccount's token), `helm
#      uninstall`; then nothing of the bridge is left on the node, in Slurm or in the
#      cluster, and the job was not lost.
# Throughout, a checker of its own (kubectl and squeue, nothing of the bridge) fails the test
# if a Slurm job runs on the node while a pod other than the bridge's reservation holds its
# GPUs there.
#
# What the testbed lacks and the values below stand in for: kube-proxy and cluster DNS (the
# pod reaches the apiserver at 127.0.0.1 through hostNetwork, KUBERNETES_SERVICE_HOST set to
# it; a terminating reservation asks the bridge at the node's address, not at the chart's
# default, the bridge Service's DNS name) and a
# slurm.conf that names slurmctld by an address a pod network reaches (SlurmctldHost=
# localhost: hostNetwork again). SlurmUser is root here, so uid 64030 (Debian's `slurm`, the
# chart's user) is made a Slurm administrator for the test, as SlurmUser is one by itself.
#
# Label realnode (tests/CMakeLists.txt). Fails, never skips, without the real node.
set -euo pipefail
DEB="${1:?usage: real_node_chart_test.sh DEB (the package deb_package_test builds)}"
: "${SKB_TESTBED_DIR:?run on a testbed: eval \"\$(scripts/testbed env)\"}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CHART="$SRC/helm/slurm-k8s-bridge"
D="$SKB_TESTBED_DIR"
NODE=realnode
NS="skb-real-$$"  # per run: a deleted namespace may take the namespace controller minutes
RES_NS="$NS-reservations"
RELEASE=bridge
DEPLOY="$RELEASE-slurm-k8s-bridge"
IMAGE_REF=localhost/slurm-k8s-bridge:test
BUSYBOX=skb-testbed.local/busybox:1
HTTP_PORT=$((16465 + ${SKB_TESTBED_SLOT:-0} * 1000))
FAILED=0
PASSED=0

log() { printf '[real_node_chart_test] %s\n' "$*" >&2; }
fail() { log "FAIL: $*"; FAILED=$((FAILED + 1)); }
pass() { log "ok: $*"; PASSED=$((PASSED + 1)); }
# fatal MESSAGE: a step the rest depends on failed.
fatal() { fail "$*"; finish; }
finish() {
  echo "$PASSED passed, $FAILED failed"
  if ((FAILED)); then exit 1; fi
  exit 0
}
wait_until() { # wait_until SECONDS COMMAND...: polls every 0.2 s; 1 at the deadline
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
real_ctr() { ctr --address "$D/realnode/containerd/containerd.sock" --namespace k8s.io "$@"; }
bridge_pods() {
  kubectl get pods -n "$NS" -l "app.kubernetes.io/instance=$RELEASE" -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name'
}
reservation_running() {
  [[ "$(kubectl get pods -n "$RES_NS" -o jsonpath="{range .items[?(@.spec.nodeName==\"$NODE\")]}{.status.phase}{\"\\n\"}{end}" 2>/dev/null)" == Running ]]
}
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
job_running_on_node() { [[ "$(job_field "$1" JobState)" == RUNNING && "$(job_field "$1" NodeList)" == "$NODE" ]]; }
pod_phase() { kubectl get pod -n default "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }

# --- The real node, a Slurm node too. Nothing below can pass without it.
if [[ "${SKB_TESTBED_REAL_NODE:-0}" != 1 ]]; then
  fatal "this testbed ($D) runs without the real node: bring it up with SKB_TESTBED_REAL_NODE=1"
fi
wait_until 60 bash -c "kubectl get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True" ||
  fatal "node $NODE is not Ready (logs in $D/logs/realnode-*.log)"
sinfo -h -n "$NODE" -o %G | grep -q 'gpu:.*8' || fatal "Slurm has no node $NODE with 8 GPUs: $(sinfo -N 2>&1 | tr '\n' ' ')"
[[ -s "$DEB" ]] || fatal "no package at $DEB: build it first (ctest -R deb_package_test)"
APISERVER="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
APISERVER_PORT="${APISERVER##*:}"

work="$(mktemp -d "${TMPDIR:-/tmp}/skb-real-chart.XXXXXX")"
checker=""
job=""
cleanup() {
  set +e
  if [[ -n "${SKB_REAL_CHART_KEEP:-}" ]]; then log "kept for a look: namespace $NS, $work"; return; fi
  [[ -n "$checker" ]] && kill "$checker" 2>/dev/null
  [[ -n "$job" ]] && scancel "$job" 2>/dev/null
  kubectl delete pod -n default infer-real --ignore-not-found --wait=false >/dev/null 2>&1
  helm uninstall "$RELEASE" -n "$NS" --wait --timeout 60s >/dev/null 2>&1
  # What the test made, and what it took from the testbed (its own PriorityClasses and
  # admission policies, which the chart makes under its own names): `up` makes them again.
  kubectl delete namespace "$NS" "$RES_NS" --ignore-not-found --wait=false >/dev/null 2>&1
  kubectl label node "$NODE" slurm-k8s-bridge.io/managed- >/dev/null 2>&1
  # The decommission leaves a node that ran Slurm work cordoned (the site uncordons it).
  kubectl uncordon "$NODE" >/dev/null 2>&1
  sacctmgr -i delete user name=slurm >/dev/null 2>&1
  (cd "$SRC" && scripts/testbed up --no-bridge >"$work/up-again.log" 2>&1) ||
    log "restoring the testbed failed: $(tail -3 "$work/up-again.log")"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'log "FAIL: line $LINENO: \"$BASH_COMMAND\" exited $?"; FAILED=$((FAILED + 1)); echo "$PASSED passed, $FAILED failed"' ERR

# --- 1. The image, in the node's containerd (what a registry pull would have put there).
t0=$SECONDS
(
  # shellcheck source=../package/image_lib.sh
  source "$SRC/tests/package/image_lib.sh"
  image_build "$DEB" >&2
  "${BUILDAH[@]}" push "$IMAGE" "oci-archive:$work/image.tar:$IMAGE_REF" >/dev/null 2>&1
) || fatal "building the image from $DEB failed"
real_ctr images import "$work/image.tar" >/dev/null || fatal "importing the image into $NODE's containerd failed"
rm -f "$work/image.tar"
pass "image $IMAGE_REF built from the package and imported into $NODE's containerd ($((SECONDS - t0)) s)"

# The site's side of the install (docs/install.md): the node labelled for the bridge, the
# bridge's uid a Slurm administrator (SlurmUser is root on the testbed).
kubectl label node "$NODE" slurm-k8s-bridge.io/managed=true --overwrite >/dev/null
sacctmgr -i add user name=slurm account=root adminlevel=Administrator >/dev/null 2>&1 ||
  sacctmgr -i modify user name=slurm set adminlevel=Administrator >/dev/null 2>&1 || true
[[ "$(sacctmgr -n -P show user name=slurm format=adminlevel 2>&1)" == Administrator ]] ||
  fatal "sacctmgr could not make uid 64030 (slurm) a Slurm administrator: $(sacctmgr -n -P show user name=slurm format=adminlevel 2>&1)"
kubectl delete priorityclass slurm-idle slurm-preemptible slurm-protected inference-high \
  --ignore-not-found >/dev/null
for p in $(kubectl get validatingadmissionpolicy -o name | grep '/skb-slurm-k8s-bridge-' || true); do
  kubectl delete "$p" "validatingadmissionpolicybinding/${p#*/}" --ignore-not-found >/dev/null
done

# --- 2. helm install, as the chart README's quick start, with this host's paths.
# libslurm refuses a slurm.conf whose PluginDir names a directory it cannot see (and exits
# the process: "fatal: Unable to process configuration file"); the testbed's adds the
# build tree's job_submit plugin to Debian's, so that one is mounted too (docs/install.md).
plugin_dir_volumes() {
  local dirs=() d i=0 vols="" mounts=""
  IFS=: read -r -a dirs <<<"$(sed -n 's/^PluginDir=//p' "$D/slurm/slurm.conf")"
  for d in "${dirs[@]}"; do
    [[ "$d" == /usr/lib/x86_64-linux-gnu/slurm-wlm ]] && continue
    vols+="  - {name: plugin-dir-$i, hostPath: {path: $d, type: Directory}}"$'\n'
    mounts+="  - {name: plugin-dir-$i, mountPath: $d, readOnly: true}"$'\n'
    i=$((i + 1))
  done
  printf 'extraVolumes:\n%sextraVolumeMounts:\n%s' "${vols:-  []}"$'\n' "${mounts:-  []}"$'\n'
}
# helm's --wait counts a Deployment ready when no more than maxUnavailable replicas are
# missing: with one replica and maxUnavailable 1 (the chart's default), none. The rollout's
# own status says whether the new pod became Ready.
rolled_out() {
  kubectl rollout status deploy -n "$NS" "$DEPLOY" --timeout "$1" >"$work/rollout.log" 2>&1
}
cat >"$work/values.yaml" <<EOF
image: {repository: ${IMAGE_REF%:*}, tag: ${IMAGE_REF##*:}, pullPolicy: Never}
hostNetwork: true
http: {port: $HTTP_PORT}
nodeSelector: {kubernetes.io/hostname: $NODE}
tolerations:
  - {key: testbed.slurm-k8s-bridge.io/real-node, operator: Exists, effect: NoSchedule}
slurm:
  confDir: {mountPath: $D/slurm, hostPath: $D/slurm}
  mungeSocket: {mountPath: $D/munge, hostPath: $D/munge}
pluginSocket: {mountPath: $D/bridge, hostPath: $D/bridge}
$(plugin_dir_volumes)
extraEnv:
  - {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
  - {name: KUBERNETES_SERVICE_PORT, value: "$APISERVER_PORT"}
config:
  logging: {level: debug}
  # The real node only: the testbed's kwok node carries the site's label too.
  kubernetes: {node_selector: "slurm-k8s-bridge.io/managed=true,testbed.slurm-k8s-bridge.io/real-node=true"}
  admission: {preemptible_partitions: [gpu]}
  lending:
    enabled: true
    image: $BUSYBOX
    release_url: http://$(kubectl get node "$NODE" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}'):$HTTP_PORT/reservation-released
    default_grace: 5s
    cooldown: 8s
    min_lend_time: 5s
    class_upgrade_delay: 1s
    class_downgrade_delay: 5s
    reservation_update_interval: 5s
EOF
# An earlier run's reservation pods, if it was killed, with their finalizers taken off
# (nothing of theirs runs Slurm work any more) and their namespaces deleted.
for ns in $(kubectl get namespace -o name | sed -n 's|^namespace/\(skb-real-[0-9]*\(-reservations\)\?\)$|\1|p'); do
  for p in $(kubectl get pods -n "$ns" -o name 2>/dev/null); do
    kubectl patch -n "$ns" "$p" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
    kubectl delete -n "$ns" "$p" --grace-period=0 --force >/dev/null 2>&1 || true
  done
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
done
kubectl create namespace "$NS" >/dev/null
kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=privileged >/dev/null
t0=$SECONDS
if ! helm install "$RELEASE" "$CHART" -n "$NS" -f "$work/values.yaml" --wait --timeout 180s \
  >"$work/install.log" 2>&1; then
  fail "helm install did not complete: $(tail -5 "$work/install.log")"
  kubectl get pods -n "$NS" -o wide >&2 || true
  kubectl describe pods -n "$NS" 2>&1 | tail -30 >&2 || true
  kubectl logs -n "$NS" -l "app.kubernetes.io/instance=$RELEASE" --all-containers --tail=40 >&2 || true
  finish
fi
if ! rolled_out 120s; then
  fail "helm install: the bridge never became Ready: $(tail -2 "$work/rollout.log")"
  kubectl logs -n "$NS" -l "app.kubernetes.io/instance=$RELEASE" --tail=20 >&2 || true
  finish
fi
pod="$(bridge_pods)"
pod_json="$(kubectl get pod -n "$NS" "$pod" -o json)"
if [[ "$(jq -r .spec.nodeName <<<"$pod_json")" == "$NODE" &&
  "$(jq -r '.status.containerStatuses[0].containerID' <<<"$pod_json")" == containerd://* &&
  "$(jq -r '.status.initContainerStatuses[0].state.terminated.exitCode' <<<"$pod_json")" == 0 ]]; then
  pass "helm install: $pod runs on $NODE (containerd), socket-dir exited 0, Ready ($((SECONDS - t0)) s)"
else
  fail "helm install: the bridge pod is not a started container on $NODE: $(jq -c '{node: .spec.nodeName, status: .status.containerStatuses}' <<<"$pod_json")"
fi
if [[ "$(stat -c '%u %a' "$D/bridge")" == "64030 750" && -S "$D/bridge/bridge.sock" ]]; then
  pass "the plugin socket's host directory is the daemon's (64030, 0750) and holds its socket"
else
  fail "plugin socket directory: $(stat -c '%u %a' "$D/bridge" 2>&1), socket: $(ls -l "$D/bridge" 2>&1)"
fi
[[ "$(curl -s "http://127.0.0.1:$HTTP_PORT/readyz")" == ok* ]] &&
  pass "/readyz answers on the host's port $HTTP_PORT" ||
  fail "/readyz on port $HTTP_PORT: $(curl -s "http://127.0.0.1:$HTTP_PORT/readyz" 2>&1 | head -3)"
if wait_until 60 reservation_running; then
  res_json="$(kubectl get pods -n "$RES_NS" -o json | jq ".items[] | select(.spec.nodeName == \"$NODE\")")"
  cid="$(jq -r '.status.containerStatuses[0].containerID' <<<"$res_json")"
  real_ctr containers info "${cid#containerd://}" >/dev/null 2>&1 &&
    pass "the reservation $(jq -r .metadata.name <<<"$res_json") runs a real container on $NODE (${cid:0:25}...)" ||
    fail "the reservation's container $cid is not in $NODE's containerd"
else
  fatal "no reservation pod Running on $NODE within 60 s: $(kubectl get pods -n "$RES_NS" -o wide 2>&1 | tr '\n' ' ') $(kubectl logs -n "$NS" "$pod" --tail=20 2>&1)"
fi

# The checker: a GPU pod other than the reservation Running on the node while a Slurm job
# runs there is a GPU given to both. Read with kubectl and squeue every 0.2 s.
(
  while :; do
    pods="$(kubectl get pods -A --field-selector "spec.nodeName=$NODE,status.phase=Running" \
      -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.spec.containers[*].resources.requests.nvidia\.com/gpu}{"\n"}{end}' 2>/dev/null |
      awk -v res="$RES_NS/" '$2 != "" && index($1, res) != 1 {print $1}')"
    jobs="$(squeue -h -w "$NODE" -t RUNNING -o %i 2>/dev/null)"
    if [[ -n "$pods" && -n "$jobs" ]]; then
      echo "$(date +%T.%N) pods [$pods] and jobs [$jobs] on $NODE at once" >>"$work/double-booked"
    fi
    echo x >>"$work/samples"
    sleep 0.2
  done
) &
checker=$!

# --- 3. Lend and return. A preemptible job (partition gpu) on the node; the plugin in
# slurmctld asks the daemon in the pod through the socket and marks it.
job="$(sbatch --parsable -p gpu -w "$NODE" --gres=gpu:8 -o /dev/null \
  --wrap 'trap "" USR1; sleep 3600')" || fatal "sbatch failed"
wait_until 30 job_running_on_node "$job" || fatal "job $job is not running on $NODE: $(squeue 2>&1 | tr '\n' ' ')"
if scontrol show job "$job" | grep -q 'k8s-bridge:preemptible'; then
  pass "job $job on $NODE: the job_submit plugin got its answer from the daemon in the pod"
else
  fail "job $job carries no admission token: the plugin did not reach the daemon's socket ($(scontrol show job "$job" | grep -o 'AdminComment=[^ ]*'))"
fi
wait_until 30 bash -c "kubectl get pods -n $RES_NS -o jsonpath='{.items[*].spec.priorityClassName}' | grep -qx slurm-preemptible" ||
  fail "the reservation did not follow the preemptible job (class $(kubectl get pods -n "$RES_NS" -o jsonpath='{.items[*].spec.priorityClassName}'))"
t0=$SECONDS
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: infer-real, namespace: default}
spec:
  priorityClassName: inference-high
  nodeSelector: {kubernetes.io/hostname: $NODE}
  tolerations: [{key: testbed.slurm-k8s-bridge.io/real-node, operator: Exists, effect: NoSchedule}]
  terminationGracePeriodSeconds: 1
  containers:
    - name: serve
      image: $BUSYBOX
      imagePullPolicy: Never
      command: [sh, -c, 'echo serving on \$NVIDIA_VISIBLE_DEVICES; sleep 3600']
      resources: {limits: {nvidia.com/gpu: 8}}
EOF
if wait_until 90 bash -c "[[ \$(kubectl get pod -n default infer-real -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}') != '' ]]"; then
  pass "the inference pod's container runs on $NODE $((SECONDS - t0)) s after its creation (grace 5 s)"
else
  fatal "the inference pod never ran: $(kubectl get pods -A -o wide 2>&1 | tr '\n' ' ') $(squeue 2>&1 | tr '\n' ' ') $(kubectl logs -n "$NS" "$(bridge_pods)" --tail=30 2>&1)"
fi
restarts="$(job_field "$job" Restarts)"
[[ "${restarts:-0}" -ge 1 && "$(job_field "$job" JobState)" != RUNNING ]] &&
  pass "job $job was requeued (restarts $restarts), not lost: $(job_field "$job" JobState)" ||
  fail "job $job: state $(job_field "$job" JobState), restarts ${restarts:-0}"
sinfo -h -N -n "$NODE" -o %E | grep -q 'k8s-bridge: lent to default/infer-real' &&
  pass "Slurm's node $NODE is drained: lent to default/infer-real" ||
  fail "Slurm's node reason: $(sinfo -h -N -n "$NODE" -o '%T %E' | head -1)"
kubectl delete pod -n default infer-real --wait=false >/dev/null
t0=$SECONDS
if wait_until 90 job_running_on_node "$job" && wait_until 30 reservation_running; then
  pass "the pod gone, $NODE returned to Slurm: job $job runs there again and a reservation holds the node ($((SECONDS - t0)) s, cool-down 8 s)"
else
  fail "no return: job $(job_field "$job" JobState) $(job_field "$job" Reason), node $(sinfo -h -N -n "$NODE" -o '%T %E' | head -1)"
fi

# --- 4. helm upgrade with a changed config: the pod rolls (the old one first), no stall.
# First the node settles: after the return its reservation is swapped for one of the job's
# class, and while a swap runs the node is closed to every pod but the bridge's own writes
# (the reservation-swap taint, the swap guard refuses every binding), the bridge's next pod
# included: a bridge restarted then on the node it manages cannot come back there
# (docs/install.md, "Where the bridge runs").
settled() {
  [[ "$(kubectl get pods -n "$RES_NS" -o jsonpath='{.items[*].spec.priorityClassName}/{.items[*].status.phase}')" == slurm-preemptible/Running ]] &&
    ! kubectl get node "$NODE" -o jsonpath='{.spec.taints[*].key} {.metadata.labels}' | grep -q 'reservation-swap\|swap-guard'
}
wait_until 60 settled ||
  fail "the node did not settle after the return: $(kubectl get pods -n "$RES_NS" -o wide 2>&1 | tr '\n' ' ') $(kubectl get node "$NODE" -o jsonpath='{.spec.taints}')"
old="$(bridge_pods)"
res_uid="$(kubectl get pods -n "$RES_NS" -o jsonpath='{.items[0].metadata.uid}')"
t0=$SECONDS
if helm upgrade "$RELEASE" "$CHART" -n "$NS" -f "$work/values.yaml" \
  --set config.slurm.poll_interval=1s --wait --timeout 120s >"$work/upgrade.log" 2>&1 &&
  rolled_out 120s; then
  new="$(bridge_pods)"
  [[ -n "$new" && "$new" != "$old" && "$(wc -l <<<"$new")" == 1 ]] &&
    pass "helm upgrade with a changed config: $old -> $new in $((SECONDS - t0)) s" ||
    fail "helm upgrade completed but the pod did not roll: before '$old', after '$new'"
else
  fail "helm upgrade did not complete: $(grep -i error "$work/upgrade.log" | tail -3) $(tail -2 "$work/rollout.log") $(kubectl get pods -n "$NS" 2>&1 | tr '\n' ' ')"
  kubectl logs -n "$NS" -l "app.kubernetes.io/instance=$RELEASE" --tail=15 >&2 || true
fi
grep -q 'poll_interval.*1s' <<<"$(kubectl get configmap -n "$NS" -o yaml)" ||
  fail "the ConfigMap does not hold the new poll_interval"
[[ "$(kubectl get pods -n "$RES_NS" -o jsonpath='{.items[0].metadata.uid}')" == "$res_uid" ]] &&
  job_running_on_node "$job" &&
  pass "across the upgrade the reservation pod stayed (same uid) and job $job ran on" ||
  fail "the upgrade disturbed the node: reservation $(kubectl get pods -n "$RES_NS" -o wide 2>&1 | tr '\n' ' '), job $(job_field "$job" JobState)"

# --- 5. Removal, as the chart README's "Uninstall" says.
kubectl get configmap -n "$NS" "$DEPLOY-config" -o jsonpath='{.data.config\.json}' >"$work/config.json"
kubectl scale deploy -n "$NS" "$DEPLOY" --replicas=0 >/dev/null
wait_until 60 bash -c "[[ -z \"\$(kubectl get pods -n $NS -l app.kubernetes.io/instance=$RELEASE -o name)\" ]]" ||
  fail "the bridge pod did not stop after the scale to 0"
token="$(kubectl create token -n "$NS" "$DEPLOY" --duration=10m)"
ca="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
install -d -m 0700 -o 64030 -g 64030 "$work/decommission"
cat >"$work/decommission/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$APISERVER", certificate-authority-data: "$ca"}}]
users: [{name: bridge, user: {token: "$token"}}]
contexts: [{name: c, context: {cluster: c, user: bridge}}]
current-context: c
EOF
jq --arg kc "$work/decommission/kubeconfig" '.kubernetes.kubeconfig = $kc' "$work/config.json" \
  >"$work/decommission/config.json"
chown -R 64030:64030 "$work/decommission"
chmod 0755 "$work"
# The package's daemon, as on a slurmctld host with the package installed (the host is the
# Debian release the package is built for).
dpkg-deb -x "$DEB" "$work/root"
binary="$work/root/usr/bin/slurm-k8s-bridge"
as_bridge() { setpriv --reuid 64030 --regid 64030 --clear-groups "$binary" --config "$work/decommission/config.json" --decommission "$@"; }
# The lease was renewed within its duration by the pod just stopped: wait it out rather than
# force (the README's order).
if wait_until 60 as_bridge --dry-run; then
  if as_bridge >"$work/decommission.log" 2>&1; then
    pass "--decommission as uid 64030 with the bridge's ServiceAccount: exit 0 ($(grep -c '^done:' "$work/decommission.log") steps done)"
  else
    fail "--decommission failed: $(tail -8 "$work/decommission.log")"
  fi
else
  fail "--decommission --dry-run never got past the Lease: $(as_bridge --dry-run 2>&1 | tail -5)"
fi
t0=$SECONDS
helm uninstall "$RELEASE" -n "$NS" --wait --timeout 60s >"$work/uninstall.log" 2>&1 &&
  pass "helm uninstall ($((SECONDS - t0)) s)" || fail "helm uninstall: $(tail -3 "$work/uninstall.log")"
kubectl delete namespace "$RES_NS" --wait=false >/dev/null 2>&1 || true

# Nothing of the bridge left: on the node, in Slurm, in the cluster. The job not lost.
left=""
node_json="$(kubectl get node "$NODE" -o json)"
left+="$(jq -r '.metadata.annotations // {} | keys[] | select(startswith("slurm-k8s-bridge.io/"))' <<<"$node_json" | sed 's/^/annotation /' || true)"
left+="$(jq -r '.metadata.labels // {} | keys[] | select(startswith("slurm-k8s-bridge.io/") and . != "slurm-k8s-bridge.io/managed")' <<<"$node_json" | sed 's/^/label /' || true)"
left+="$(jq -r '.spec.taints // [] | .[].key | select(startswith("slurm-k8s-bridge.io/"))' <<<"$node_json" | sed 's/^/taint /' || true)"
left+="$(jq -r '.status.conditions[] | select(.type | test("^Slurm|^GPUDevices")) | .type' <<<"$node_json" | sed 's/^/condition /' || true)"
left+="$(kubectl get pods -A -o json | jq -r '.items[] | select(.metadata.finalizers // [] | index("slurm-k8s-bridge.io/reservation")) | "finalizer on " + .metadata.namespace + "/" + .metadata.name' || true)"
left+="$(kubectl get validatingadmissionpolicy,priorityclass -o name | grep -E "/$RELEASE-slurm-k8s-bridge-|/slurm-(idle|preemptible|protected)$" | sed 's/^/object /' || true)"
left+="$(sinfo -h -N -n "$NODE" -o %E | grep -E 'k8s-bridge:' | sed 's/^/slurm drain /' || true)"
left+="$(squeue -h -o '%i %j' | grep -i 'skb' | sed 's/^/placeholder /' || true)"
if [[ -z "$left" ]]; then
  pass "nothing of the bridge is left (annotations, labels, taints, conditions, finalizers, policies, PriorityClasses, drains, placeholders)"
else
  fail "left after removal: $(tr '\n' ';' <<<"$left")"
fi
[[ "$(kubectl get node "$NODE" -o jsonpath='{.spec.unschedulable}')" == true ]] &&
  pass "$NODE, which ran a Slurm job, is left cordoned, as the decommission documents" ||
  fail "$NODE ran a Slurm job but is not cordoned after the decommission"
state="$(job_field "$job" JobState)"
[[ "$state" == RUNNING || "$state" == PENDING ]] &&
  pass "job $job not lost: $state$( [[ "$state" == RUNNING ]] && echo " on $(job_field "$job" NodeList)")" ||
  fail "job $job after removal: '$state'"

kill "$checker" 2>/dev/null || true
wait "$checker" 2>/dev/null || true
checker=""
samples="$(wc -l <"$work/samples" 2>/dev/null || echo 0)"
if [[ -s "$work/double-booked" ]]; then
  fail "GPUs given to both, $(wc -l <"$work/double-booked") of $samples samples: $(head -3 "$work/double-booked" | tr '\n' ';')"
elif ((samples < 100)); then
  fail "the checker took only $samples samples"
else
  pass "no GPU given to both in $samples samples"
fi
finish
