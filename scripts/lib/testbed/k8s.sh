# SPDX-License-Identifier: Apache-2.0
# scripts/testbed, part: Kubernetes: certificates and kubeconfigs, etcd, kube-apiserver, the nodes, the bridge's
# namespace and admission policies, kwok, kube-controller-manager and kube-scheduler.
# Sourced by scripts/testbed after its settings (D, N, ports, LOGS, PIDS, BIN), never run.

# cert NAME CN [O] [SANS]: a key and a certificate signed by the testbed CA.
cert() {
  local name="$1" cn="$2" org="${3:-}" sans="${4:-}" dir="$D/k8s/certs"
  [[ -s "$dir/$name.crt" ]] && return 0
  local subj="/CN=$cn"
  [[ -n "$org" ]] && subj="/O=$org$subj"
  openssl genrsa -out "$dir/$name.key" 2048 2>/dev/null
  openssl req -new -key "$dir/$name.key" -subj "$subj" -out "$dir/$name.csr" 2>/dev/null
  local ext="$dir/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n "$sans" ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$sans"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 3650 -sha256 -extfile "$ext" -out "$dir/$name.crt" 2>/dev/null
  rm -f "$dir/$name.csr" "$ext"
}

make_certs() {
  local dir="$D/k8s/certs"
  mkdir -p "$dir"
  chmod 0700 "$dir"
  if [[ ! -s "$dir/ca.crt" ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.crt" \
      -days 3650 -subj "/CN=skb-testbed-ca" 2>/dev/null
  fi
  cert apiserver kube-apiserver "" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
  cert admin skb-admin system:masters
  cert kube-controller-manager system:kube-controller-manager
  cert kube-scheduler system:kube-scheduler
  # kwok plays every kubelet: infrastructure, so it gets cluster-admin like a test harness.
  cert kwok skb-kwok system:masters
  # The apiserver's client certificate towards kubelets (logs, exec of the real node's pods).
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  if [[ ! -s "$dir/sa.key" ]]; then
    openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
    openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  fi
}

# kubeconfig NAME: writes $D/k8s/NAME.kubeconfig for the client certificate NAME, with the
# credentials embedded (the form most kubeconfigs in the wild have).
write_kubeconfig() {
  local name="$1" out="$D/k8s/$1.kubeconfig" dir="$D/k8s/certs"
  cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: skb-testbed
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$dir/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 <"$dir/$name.crt")
    client-key-data: $(base64 -w0 <"$dir/$name.key")
contexts:
- name: skb-testbed
  context:
    cluster: skb-testbed
    user: $name
current-context: skb-testbed
EOF
  chmod 0600 "$out"
}

write_k8s_config() {
  make_certs
  for n in admin kube-controller-manager kube-scheduler kwok; do write_kubeconfig "$n"; done
  cp "$SKB_ROOT/tests/testbed/kwok/stages.yaml" "$D/k8s/kwok.yaml"
}

etcd_ok() { curl -fsS "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

# --unsafe-no-fsync: a testbed's etcd is thrown away with it, and what it must show is the
# apiserver of a healthy cluster, whose etcd syncs to a disk of its own in about a
# millisecond. Here the disk is the one every lane shares: while the package tests ran dpkg
# beside a lane (at idle CPU priority, which does not order the disk), fdatasync held etcd's
# apply loop and with it every consistent read: Kubernetes reads of up to 660 ms, where
# Slurm's stayed under 110, and a sampler that kept 76% of its ticks (the clean run of
# b864f42, SafetyE2E.AJobThatOutlivesItsGrace...). A restarted etcd still finds its data
# (the page cache holds it; only a crash of the machine loses it).
start_etcd() {
  is_running etcd && return 0
  skb_step testbed/etcd
  require_port "$ETCD_PORT" etcd
  require_port "$ETCD_PEER_PORT" "etcd peer"
  launch etcd "${CONTROL_PLANE[@]}" "$BIN/etcd" --name skb-testbed --data-dir "$D/k8s/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "skb-testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
    --listen-metrics-urls "" --log-level warn --quota-backend-bytes 4294967296 \
    --auto-compaction-mode periodic --auto-compaction-retention 5m --unsafe-no-fsync
  wait_healthy etcd 30 etcd_ok
}

apiserver_ok() { kubectl get --raw /readyz; }

start_apiserver() {
  is_running kube-apiserver && return 0
  skb_step testbed/kube-apiserver
  require_port "$APISERVER_PORT" kube-apiserver
  local c="$D/k8s/certs"
  launch kube-apiserver "${CONTROL_PLANE[@]}" "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$c/apiserver.crt" --tls-private-key-file "$c/apiserver.key" \
    --client-ca-file "$c/ca.crt" \
    --kubelet-client-certificate "$c/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$c/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$c/sa.pub" --service-account-signing-key-file "$c/sa.key" \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 \
    --allow-privileged=true --profiling=false --cert-dir "$D/k8s/certs" \
    --endpoint-reconciler-type none --v 1
  wait_healthy kube-apiserver 90 apiserver_ok
}

# The GPU nodes, named like the Slurm nodes, with the labels GPU Feature Discovery sets.
create_nodes() {
  skb_step testbed/nodes "creating node1..node$N"
  local i manifest=""
  for ((i = 1; i <= N; i++)); do
    local t product mem family
    t="$(gpu_type_of "$i")"
    read -r product mem family <<<"$(gpu_product_of "$t")"
    manifest+="---
apiVersion: v1
kind: Node
metadata:
  name: node$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: \"0\"
  labels:
    kubernetes.io/hostname: node$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    slurm-k8s-bridge.io/managed: \"true\"
    nvidia.com/gpu.present: \"true\"
    nvidia.com/gpu.product: $product
    nvidia.com/gpu.count: \"8\"
    nvidia.com/gpu.memory: \"$mem\"
    nvidia.com/gpu.family: $family
    topology.kubernetes.io/zone: testbed-zone-$(( (i - 1) / 2 + 1 ))
    slurm-k8s-bridge.io/rack: rack-$(( (i - 1) / 2 + 1 ))
"
  done
  kubectl apply -f - <<<"$manifest" >>"$LOGS/testbed.log" 2>&1 ||
    skb_die "creating the Kubernetes nodes failed" "$LOGS/testbed.log"
  # In dra mode the node advertises no nvidia.com/gpu: kube-scheduler serves an extended
  # resource through DRA (a DeviceClass's extendedResourceName) only on nodes whose
  # allocatable does not list it (KEP-5004), exactly as on a node without the device plugin.
  local gpus='"nvidia.com/gpu":"8"'
  [[ "$GPU_ALLOCATION" == dra ]] && gpus=""
  local res="\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\"${gpus:+,$gpus}"
  local status="{\"status\":{\"capacity\":{$res},\"allocatable\":{$res}}}"
  for ((i = 1; i <= N; i++)); do
    kubectl patch node "node$i" --subresource=status --type=merge -p "$status" \
      >>"$LOGS/testbed.log" 2>&1 || skb_die "setting GPU capacity on node$i failed" "$LOGS/testbed.log"
  done
}


# The bridge's namespace (its Lease, reservation pods, Events on pods) and the
# PriorityClasses of its reservation pods plus an inference class above the threshold
# (the chart's defaults; see helm/slurm-k8s-bridge/values.yaml).
ensure_namespace() {
  kubectl apply -f - >>"$LOGS/testbed.log" 2>&1 <<'EOF' ||
apiVersion: v1
kind: Namespace
metadata: {name: slurm-bridge}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: slurm-idle}
value: 1000
preemptionPolicy: Never
description: "Reservation of an idle Slurm node: the cheapest victim"
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: slurm-preemptible}
value: 2000
preemptionPolicy: Never
description: "Reservation of a node running only preemptible Slurm jobs"
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: slurm-protected}
value: 1000000000
preemptionPolicy: Never
description: "Reservation of a node running non-preemptible Slurm work: never a victim"
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: inference-high}
value: 100000
description: "Inference pods that may take nodes from Slurm"
EOF
    skb_die "creating the bridge's namespace and PriorityClasses failed" "$LOGS/testbed.log"
}

# The chart's admission policies, rendered from this checkout's chart as a release in
# slurm-bridge would render them (reservations in slurm-bridge), with the testbed's admin
# user (what the bridges of the tests and of scripts/demo run as) exempt like the chart's
# ServiceAccount: the swap guard (a node labelled slurm-k8s-bridge.io/swap-guard, or whose
# reservation pod a kubelet failed, admits no binding and no GPU pod by spec.nodeName but
# the bridge's), the device-hold guard (no ResourceClaim or template may tolerate the
# bridge's device taint; rendered as with gpu_sharing on) and the hold-rule guard (nobody
# but the bridge writes or deletes the bridge's DeviceTaintRules). Also exempt: the
# ServiceAccount of RbacE2E's release (skb-rbac), whose bridge runs as it and must pass this
# release's policy as well as its own.
ensure_admission_policies() {
  local manifest
  manifest="$("$BIN/helm" template skb "$SKB_ROOT/helm/slurm-k8s-bridge" --namespace slurm-bridge \
    --show-only templates/admission-swap-guard.yaml \
    --show-only templates/admission-device-hold-guard.yaml --set config.gpu_sharing.enabled=true \
    --show-only templates/admission-hold-rule-guard.yaml \
    --set reservationNamespace.name=slurm-bridge \
    --set 'admissionPolicies.swapGuard.exemptUsers={skb-admin,system:serviceaccount:slurm-bridge:skb-rbac-slurm-k8s-bridge}' \
    --set 'admissionPolicies.holdRuleGuard.exemptUsers={skb-admin,system:serviceaccount:slurm-bridge:skb-rbac-slurm-k8s-bridge}' \
    2>&1)" ||
    skb_die "rendering the chart's admission policies failed: $manifest"
  kubectl apply -f - <<<"$manifest" >>"$LOGS/testbed.log" 2>&1 ||
    skb_die "creating the chart's admission policies failed" "$LOGS/testbed.log"
}

kwok_ok() { curl -fsS "http://127.0.0.1:$KWOK_PORT/healthz"; }

start_kwok() {
  is_running kwok && return 0
  skb_step testbed/kwok
  require_port "$KWOK_PORT" kwok
  launch kwok "$BIN/kwok" --kubeconfig "$D/k8s/kwok.kubeconfig" --config "$D/k8s/kwok.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds "$NODE_LEASE_SECONDS" --cidr 10.244.0.1/16 --node-ip 127.0.0.1 \
    --server-address "127.0.0.1:$KWOK_PORT"
  wait_healthy kwok 30 kwok_ok
}

k8s_component_ok() { curl -fsSk "https://127.0.0.1:$1/healthz" | grep -q ok; }

start_controller_manager() {
  is_running kube-controller-manager && return 0
  skb_step testbed/kube-controller-manager
  require_port "$CM_PORT" kube-controller-manager
  local c="$D/k8s/certs" kc="$D/k8s/kube-controller-manager.kubeconfig"
  launch kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$CM_PORT" --leader-elect=false \
    --service-account-private-key-file "$c/sa.key" --root-ca-file "$c/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file "$c/ca.crt" --cluster-signing-key-file "$c/ca.key" \
    --cluster-name skbtest --controllers '*,-nodeipam' \
    --node-monitor-grace-period 40s --v 1
  wait_healthy kube-controller-manager 60 k8s_component_ok "$CM_PORT"
}

start_scheduler() {
  is_running kube-scheduler && return 0
  skb_step testbed/kube-scheduler
  require_port "$SCHED_PORT" kube-scheduler
  local kc="$D/k8s/kube-scheduler.kubeconfig"
  launch kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false --v 1
  wait_healthy kube-scheduler 60 k8s_component_ok "$SCHED_PORT"
}


wait_nodes_ready() {
  skb_step testbed/nodes "waiting for node1..node$N Ready"
  local deadline=$((SECONDS + 60)) i
  for ((i = 1; i <= N; i++)); do
    until kubectl get node "node$i" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' \
        2>/dev/null | grep -q True; do
      ((SECONDS < deadline)) || skb_die "node$i is not Ready in Kubernetes (kwok)" "$LOGS/kwok.log"
      sleep 0.3
    done
  done
}
