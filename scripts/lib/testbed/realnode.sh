# SPDX-License-Identifier: Apache-2.0
# scripts/testbed, part: the real node (SKB_TESTBED_REAL_NODE=1): one real kubelet beside the
# kwok nodes, with Debian's containerd, runc and CNI plugins, and a fake device plugin
# advertising nvidia.com/gpu, so that what only a real kubelet does (admission by its device
# manager, containers really started, volumes really made) can be tested.
# Sourced by scripts/testbed after its settings (D, N, ports, LOGS, PIDS, BIN), never run.
#
# The node is named REAL_NODE (never nodeN: kwok's nodes), carries no kwok annotation, the
# label testbed.slurm-k8s-bridge.io/real-node=true and the taint of the same key
# (NoSchedule: no test of the kwok nodes lands a pod on it by chance). It is a Slurm node of
# the same name too (slurm.sh: a slurmd beside the others, in every partition), so that the
# bridge can lend it.
#
# What it changes on the host, all recorded under $REAL_DIR/host and put back by `down`
# (real_node_down): the sysctls the kubelet rewrites (vm.overcommit_memory, kernel.panic,
# kernel.panic_on_oops, vm.panic_on_oom, kernel.keys.root_maxkeys/maxbytes) and
# net.ipv4.ip_forward (the CNI bridge's gateway sets it); a bridge interface REAL_NODE_BRIDGE
# holding the node's address; the directories of fixed paths it had to create
# (REAL_FIXED_DIRS: /var/lib/kubelet/device-plugins, /var/log/containers, /var/lib/cni,
# /run/containerd, /run/netns); the pods' network namespaces (/run/netns/cni-*); its mounts
# (all under $REAL_DIR) and the kubepods cgroups. iptables is not touched (the kubelet's
# makeIPTablesUtilChains is off and the CNI bridge masquerades nothing).
#
# One real node per machine: the kubelet's device-plugin directory is a fixed path. The
# testbed that has it is named in REAL_NODE_OWNER; another testbed's `up` with the setting
# on fails and names it.

REAL_NODE=realnode
REAL_DIR="$D/realnode"
REAL_NODE_GPUS=8
REAL_NODE_BRIDGE=skbreal0
REAL_NODE_SUBNET=10.213.213
REAL_NODE_IP="$REAL_NODE_SUBNET.1"
REAL_NODE_LOCK=/tmp/skb-testbed-real-node.lock
REAL_NODE_OWNER=/tmp/skb-testbed-real-node.owner
KUBELET_PORT=$((16250 + PORT_OFFSET))
REAL_IMAGE_PAUSE=skb-testbed.local/pause:1
REAL_IMAGE_BUSYBOX=skb-testbed.local/busybox:1
REAL_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)
REAL_FIXED_DIRS=(/var/lib/kubelet /var/lib/kubelet/device-plugins /var/log/containers /var/lib/cni
  /run/containerd /run/netns)
REAL_COMPONENTS=(realnode-containerd realnode-kubelet realnode-gpu-plugin)

real_ctr() { ctr --address "$REAL_DIR/containerd/containerd.sock" --namespace k8s.io "$@"; }

real_node_running_in() { # real_node_running_in DIR: a real-node process of that testbed lives
  local c pid
  for c in "${REAL_COMPONENTS[@]}"; do
    pid="$(cat "$1/pids/$c.pid" 2>/dev/null || true)"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && return 0
  done
  return 1
}

# Claims the machine's real node for this testbed, or fails naming the testbed that has it
# (its processes run, or its host changes are not yet put back).
claim_real_node() {
  local fd other
  exec {fd}>>"$REAL_NODE_LOCK"
  flock "$fd"
  other="$(cat "$REAL_NODE_OWNER" 2>/dev/null || true)"
  if [[ -n "$other" && "$other" != "$D" ]] &&
    { real_node_running_in "$other" || [[ -d "$other/realnode/host" ]]; }; then
    exec {fd}>&-
    skb_die "the machine's real node belongs to the testbed in $other (slot $(cat "$other/slot" 2>/dev/null || echo '?')): one real kubelet per machine (its device-plugin directory is a fixed path). 'scripts/testbed down' that testbed first, or bring this one up without SKB_TESTBED_REAL_NODE=1"
  fi
  echo "$D" >"$REAL_NODE_OWNER"
  exec {fd}>&-
}

release_real_node() {
  local fd
  exec {fd}>>"$REAL_NODE_LOCK"
  flock "$fd"
  [[ "$(cat "$REAL_NODE_OWNER" 2>/dev/null)" != "$D" ]] || rm -f "$REAL_NODE_OWNER"
  exec {fd}>&-
}

# The pause and busybox images, built once per machine with buildah (no registry) into the
# cache as OCI archives; two testbeds coming up at once build them once (flock).
real_node_images() {
  local key dir fd
  key="$( (cat "$SKB_ROOT/tests/testbed/realnode/pause.c"; dpkg-query -W -f='${Version}' busybox-static;
    declare -f build_real_node_images_in) | sha256sum | cut -c1-12)"
  dir="$SKB_CACHE/realnode-images-$key"
  REAL_IMAGES="$dir"
  [[ -s "$dir/pause.tar" && -s "$dir/busybox.tar" ]] && return 0
  mkdir -p "$SKB_CACHE"
  exec {fd}>>"$SKB_CACHE/realnode-images.lock"
  flock "$fd"
  if [[ ! -s "$dir/pause.tar" || ! -s "$dir/busybox.tar" ]]; then
    skb_log "building the pause and busybox images (buildah, once per machine)"
    build_real_node_images "$dir" >>"$LOGS/realnode-images.log" 2>&1 ||
      { exec {fd}>&-; skb_die "building the real node's images failed" "$LOGS/realnode-images.log"; }
  fi
  exec {fd}>&-
}

# build_real_node_images DIR: DIR/pause.tar and DIR/busybox.tar (OCI archives). Each step is
# checked (the caller's `||` turns off errexit in here).
build_real_node_images() {
  local out="$1" work ctr a rc=0
  work="$(mktemp -d)"
  build_real_node_images_in "$out" "$work" || rc=1
  rm -rf "$work" "$out.tmp"
  return "$rc"
}
build_real_node_images_in() {
  local out="$1" work="$2" ctr a
  local bah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
  rm -rf "$out.tmp"
  mkdir -p "$work/pause" "$work/busybox/bin" "$work/busybox/tmp" "$work/busybox/etc" "$out.tmp" &&
    gcc -static -O2 -o "$work/pause/pause" "$SKB_ROOT/tests/testbed/realnode/pause.c" &&
    cp /bin/busybox "$work/busybox/bin/busybox" || return 1
  for a in $(/bin/busybox --list); do
    [[ "$a" == busybox ]] || ln -s busybox "$work/busybox/bin/$a" || return 1
  done
  chmod 1777 "$work/busybox/tmp" &&
    printf 'root:x:0:0:root:/:/bin/sh\n' >"$work/busybox/etc/passwd" &&
    printf 'root:x:0:\n' >"$work/busybox/etc/group" || return 1
  ctr="$("${bah[@]}" from scratch)" &&
    "${bah[@]}" copy "$ctr" "$work/pause/pause" /pause &&
    "${bah[@]}" config --entrypoint '["/pause"]' "$ctr" &&
    "${bah[@]}" commit --format oci "$ctr" "oci-archive:$out.tmp/pause.tar:$REAL_IMAGE_PAUSE" || return 1
  ctr="$("${bah[@]}" from scratch)" &&
    "${bah[@]}" copy "$ctr" "$work/busybox" / &&
    "${bah[@]}" config --env PATH=/bin --cmd '["/bin/sh"]' "$ctr" &&
    "${bah[@]}" commit --format oci "$ctr" "oci-archive:$out.tmp/busybox.tar:$REAL_IMAGE_BUSYBOX" || return 1
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# Host state before the real node's first start (kept until `down` puts it back).
save_host_state() {
  local h="$REAL_DIR/host" s p
  [[ -d "$h" ]] && return 0
  mkdir -p "$h.tmp"
  for s in "${REAL_SYSCTLS[@]}"; do
    echo "$s=$(sysctl -n "$s")" >>"$h.tmp/sysctls"
  done
  : >"$h.tmp/created-dirs"
  for p in "${REAL_FIXED_DIRS[@]}"; do
    [[ -e "$p" ]] || echo "$p" >>"$h.tmp/created-dirs"
  done
  # The pods' network namespaces appear in /run/netns (cni-*): those there now are not ours.
  ls -1 /run/netns >"$h.tmp/netns" 2>/dev/null || true
  mv "$h.tmp" "$h"
}

write_containerd_config() {
  local c="$REAL_DIR/containerd"
  mkdir -p "$c" "$REAL_DIR/cni/conf"
  cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$REAL_IMAGE_PAUSE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # The VM's capability bounding set lacks CAP_SYS_RESOURCE: runc cannot give the sandbox
  # its oom_score_adj of -998 ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$REAL_DIR/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$c/runc"
EOF
  # A bridge of its own, with the node's address as its gateway; host-local addresses kept
  # in the testbed's directory; no masquerade (nothing in iptables).
  cat >"$REAL_DIR/cni/conf/10-skb-real.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "skb-real", "plugins": [
  {"type": "bridge", "bridge": "$REAL_NODE_BRIDGE", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$REAL_DIR/cni/ipam",
            "ranges": [[{"subnet": "$REAL_NODE_SUBNET.0/24", "gateway": "$REAL_NODE_IP"}]]}},
  {"type": "loopback"}]}
EOF
}

write_kubelet_config() {
  local k="$REAL_DIR/kubelet" c="$D/k8s/certs"
  mkdir -p "$k/root" "$k/pod-logs"
  # The node's client certificate (Node authorizer: system:node:NAME in system:nodes) and its
  # serving certificate, both from the testbed CA (the apiserver's client CA).
  cert "$REAL_NODE" "system:node:$REAL_NODE" system:nodes
  cert "$REAL_NODE-serving" "$REAL_NODE" "" "DNS:$REAL_NODE,IP:$REAL_NODE_IP"
  write_kubeconfig "$REAL_NODE"
  cat >"$k/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $REAL_NODE_IP
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: 0
readOnlyPort: 0
tlsCertFile: $c/$REAL_NODE-serving.crt
tlsPrivateKeyFile: $c/$REAL_NODE-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $c/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://$REAL_DIR/containerd/containerd.sock
podLogsDir: $k/pod-logs
registerWithTaints:
- {key: testbed.slurm-k8s-bridge.io/real-node, value: "true", effect: NoSchedule}
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 2s
syncFrequency: 5s
fileCheckFrequency: 5s
serializeImagePulls: false
maxPods: 20
EOF
}

containerd_ok() { real_ctr version; }
real_tasks_stopped() { ! real_ctr tasks ls 2>/dev/null | grep -q RUNNING; }

real_node_ready() {
  kubectl get node "$REAL_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' |
    grep -qx True
}
real_node_gpus() {
  kubectl get node "$REAL_NODE" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}' |
    grep -qx "$REAL_NODE_GPUS"
}

# The kubelet's own labels: the testbed's, and those GPU Feature Discovery puts on a GPU node
# (the bridge pairs a GPU model with Slurm's GRES type by them), for the first kwok node's
# type, which its Slurm node has too. slurm-k8s-bridge.io/managed is the site's: a test that
# wants the bridge to manage the node sets it.
real_node_labels() {
  local product mem family
  read -r product mem family <<<"$(gpu_product_of "$(gpu_type_of 1)")"
  echo "testbed.slurm-k8s-bridge.io/real-node=true,nvidia.com/gpu.present=true,nvidia.com/gpu.product=$product,nvidia.com/gpu.count=$REAL_NODE_GPUS,nvidia.com/gpu.memory=$mem,nvidia.com/gpu.family=$family"
}

start_real_node() {
  if is_running realnode-kubelet && is_running realnode-containerd && is_running realnode-gpu-plugin; then
    return 0
  fi
  skb_step testbed/realnode "a real kubelet ($REAL_NODE, $REAL_NODE_IP) beside the kwok nodes"
  local b missing=()
  for b in containerd runc ctr gcc buildah /bin/busybox /usr/lib/cni/bridge "$BIN/kubelet" \
    "$BIN/fake-gpu-plugin"; do
    skb_have "$b" || [[ -x "$b" ]] || missing+=("$b")
  done
  ((${#missing[@]} == 0)) || skb_die "the real node needs: ${missing[*]} -- run scripts/setup"
  claim_real_node
  real_node_images
  mkdir -p "$REAL_DIR"
  save_host_state
  local p
  for p in "${REAL_FIXED_DIRS[@]}"; do mkdir -p "$p"; done
  if ! ip link show "$REAL_NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$REAL_NODE_BRIDGE" type bridge || skb_die "cannot create the bridge $REAL_NODE_BRIDGE"
    ip addr add "$REAL_NODE_IP/24" dev "$REAL_NODE_BRIDGE"
    ip link set "$REAL_NODE_BRIDGE" up
  fi
  write_containerd_config
  write_kubelet_config
  if ! is_running realnode-containerd; then
    # Started as itself (not through a shell) so that its recorded PID is containerd's.
    launch realnode-containerd containerd --config "$REAL_DIR/containerd/config.toml"
    wait_healthy realnode-containerd 30 containerd_ok
    real_ctr images import --all-platforms "$REAL_IMAGES/pause.tar" >>"$LOGS/testbed.log" 2>&1 &&
      real_ctr images import --all-platforms "$REAL_IMAGES/busybox.tar" >>"$LOGS/testbed.log" 2>&1 ||
      skb_die "importing the images into containerd failed" "$LOGS/testbed.log"
  fi
  if ! is_running realnode-kubelet; then
    launch realnode-kubelet "$BIN/kubelet" --config "$REAL_DIR/kubelet/config.yaml" \
      --kubeconfig "$D/k8s/$REAL_NODE.kubeconfig" --root-dir "$REAL_DIR/kubelet/root" \
      --hostname-override "$REAL_NODE" --node-ip "$REAL_NODE_IP" \
      --node-labels "$(real_node_labels)" --v 1
    wait_healthy realnode-kubelet 60 real_node_ready
  fi
  if ! is_running realnode-gpu-plugin; then
    launch realnode-gpu-plugin "$BIN/fake-gpu-plugin" --count "$REAL_NODE_GPUS"
    wait_healthy realnode-gpu-plugin 30 real_node_gpus
  fi
}

# Stops the real node and puts back everything it changed on the host.
real_node_down() {
  [[ -d "$REAL_DIR" ]] || return 0
  halt realnode-gpu-plugin
  halt realnode-kubelet
  # The containers outlive the kubelet and containerd (their shims): kill them first.
  if is_running realnode-containerd; then
    local t
    for t in $(real_ctr tasks ls -q 2>/dev/null || true); do
      real_ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    skb_wait_for 10 "the real node's containers stopped" real_tasks_stopped ||
      skb_log "containers of the real node still running after SIGKILL: $(real_ctr tasks ls 2>&1 | tr '\n' ' ')"
    for t in $(real_ctr tasks ls -q 2>/dev/null || true); do
      real_ctr tasks delete "$t" >/dev/null 2>&1 || true
    done
  fi
  halt realnode-containerd
  local p
  for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $REAL_DIR/containerd/containerd.sock" || true); do
    kill -KILL "$p" 2>/dev/null || true
  done
  # Mounts under the state directory (the kubelet's root bind-mounted onto itself, volumes,
  # sandboxes' /dev/shm, rootfs), deepest first.
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(findmnt -rn -o TARGET | grep -F "$REAL_DIR" | sort -r)
  # The rest is the machine's, not this testbed's: only the testbed that holds the real node
  # (or, its record lost, whose host changes are still noted) puts it back.
  local owner
  owner="$(cat "$REAL_NODE_OWNER" 2>/dev/null || true)"
  [[ "$owner" == "$D" || (-z "$owner" && -d "$REAL_DIR/host") ]] || return 0
  # The kubepods cgroups (empty now), deepest first.
  local cg
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d "$cg" ]] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  local h="$REAL_DIR/host"
  if [[ -d "$h" ]]; then
    # The sandboxes' network namespaces (their veths go with them), never one that was there.
    local ns
    for ns in $(ls -1 /run/netns 2>/dev/null | grep '^cni-' | grep -vxF -f "$h/netns" || true); do
      umount "/run/netns/$ns" 2>/dev/null || umount -l "/run/netns/$ns" 2>/dev/null || true
      rm -f "/run/netns/$ns"
    done
  fi
  ip link del "$REAL_NODE_BRIDGE" 2>/dev/null || true
  if [[ -d "$h" ]]; then
    local line
    while read -r line; do
      sysctl -q -w "$line" >/dev/null || skb_log "could not restore sysctl $line"
    done <"$h/sysctls"
    while read -r p; do
      [[ -n "$p" ]] || continue
      # Only what is ours: the device-plugin directory's sockets, the log links of our pods.
      rm -rf "$p" 2>/dev/null || skb_log "could not remove $p"
    done < <(tac "$h/created-dirs")
    rm -rf "$h"
  fi
  release_real_node
}
