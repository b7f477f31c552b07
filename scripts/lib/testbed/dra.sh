# SPDX-License-Identifier: Apache-2.0
# scripts/testbed, part: GPU allocation through DRA (SKB_TESTBED_GPU_ALLOCATION=dra): the testbed plays NVIDIA's GPU
# DRA driver.
# Sourced by scripts/testbed after its settings (D, N, ports, LOGS, PIDS, BIN), never run.

# GPU allocation through DRA (SKB_TESTBED_GPU_ALLOCATION=dra). kwok plays the kubelet; this
# plays NVIDIA's GPU DRA driver (github.com/NVIDIA/k8s-dra-driver-gpu, now
# kubernetes-sigs/dra-driver-nvidia-gpu): its kubelet plugin publishes one ResourceSlice per
# node and its chart installs the DeviceClass. Copied from release v25.12.0:
#  - DeviceClass gpu.nvidia.com: deployments/helm/.../templates/deviceclass-gpu.yaml (CEL
#    selector on driver and type, extendedResourceName nvidia.com/gpu on resource.k8s.io/v1);
#  - the slice: driver gpu.nvidia.com, pool = node name, nodeName, owner the Node (the
#    kubelet plugin's resourceslice controller); one device per full GPU named gpu-<minor>
#    (GpuInfo.CanonicalName, cmd/gpu-kubelet-plugin/deviceinfo.go);
#  - a device's attributes (GpuInfo.PartDevAttributes, cmd/gpu-kubelet-plugin/partitions.go;
#    values as nvlib.go reads them from NVML): type "gpu", uuid, productName (NVML name),
#    brand, architecture (go-nvlib's names: Ampere, Hopper, Ada Lovelace), and as versions
#    cudaComputeCapability, driverVersion, cudaDriverVersion; the standard attributes
#    resource.kubernetes.io/pciBusID and resource.kubernetes.io/pcieRoot; capacity memory
#    (NVML total bytes). Releases up to v25.3 also published `index` and `minor`; v25.8 and
#    later do not (the minor is in the device name), so neither does this. addressingMode
#    exists only on coherent-memory (Grace) systems and is left out.
# The UUIDs, bus IDs and versions are made up but stable (per node and GPU).
# Kubernetes 1.37 needs no feature gate for any of it: resource.k8s.io/v1 (DeviceClass,
# ResourceSlice, ResourceClaim, DeviceTaintRule) is served by default, DRAExtendedResource
# is GA and locked on, DRADeviceTaints and DRADeviceTaintRules are GA and on by default
# (pkg/features/kube_features.go of v1.37.2).

DRA_DRIVER=gpu.nvidia.com
DRA_DRIVER_VERSION=580.126.20
DRA_CUDA_DRIVER_VERSION=13.0.0

# gpu_nvml_of TYPE: "productName|architecture|cudaComputeCapability" as NVML reports them.
gpu_nvml_of() {
  case "$1" in
    h100) echo "NVIDIA H100 80GB HBM3|Hopper|9.0.0" ;;
    h200) echo "NVIDIA H200|Hopper|9.0.0" ;;
    a100) echo "NVIDIA A100-SXM4-80GB|Ampere|8.0.0" ;;
    l40s) echo "NVIDIA L40S|Ada Lovelace|8.9.0" ;;
    *) echo "NVIDIA ${1^^}|Unknown|0.0.0" ;;
  esac
}

# The PCI buses of an HGX board's eight GPUs (DGX H100 layout), one root complex each.
DRA_PCI_BUSES=(18 2a 3a 5d 9a ab ba db)

# gpu_uuid NODE INDEX: a stable GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx for a fake GPU.
gpu_uuid() {
  local h
  h="$(printf 'skb-testbed/%s/gpu-%s' "$1" "$2" | sha256sum | cut -c1-32)"
  echo "GPU-${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"
}

ensure_gpu_device_class() {
  kubectl apply -f - >>"$LOGS/testbed.log" 2>&1 <<EOF ||
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: $DRA_DRIVER
spec:
  selectors:
  - cel:
      expression: "device.driver == '$DRA_DRIVER' && device.attributes['$DRA_DRIVER'].type == 'gpu'"
  extendedResourceName: nvidia.com/gpu
EOF
    skb_die "creating the DeviceClass $DRA_DRIVER failed" "$LOGS/testbed.log"
}

# The driver's DeviceClass for MIG devices (deployments/helm/.../templates/
# deviceclass-mig.yaml): type mig, no extendedResourceName. Installed with SKB_TESTBED_MIG=1.
ensure_mig_device_class() {
  kubectl apply -f - >>"$LOGS/testbed.log" 2>&1 <<EOF ||
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: mig.nvidia.com
spec:
  selectors:
  - cel:
      expression: "device.driver == '$DRA_DRIVER' && device.attributes['$DRA_DRIVER'].type == 'mig'"
EOF
    skb_die "creating the DeviceClass mig.nvidia.com failed" "$LOGS/testbed.log"
}

# gpu_device_yaml NODE GPU TYPE: one whole GPU of the slice (GpuInfo.GetDevice).
gpu_device_yaml() {
  local product arch ccap mem bus="${DRA_PCI_BUSES[$2]}"
  IFS='|' read -r product arch ccap <<<"$(gpu_nvml_of "$3")"
  read -r _ mem _ <<<"$(gpu_product_of "$3")"
  cat <<EOF
  - name: gpu-$2
    attributes:
      type: {string: gpu}
      uuid: {string: $(gpu_uuid "$1" "$2")}
      productName: {string: "$product"}
      brand: {string: Nvidia}
      architecture: {string: "$arch"}
      cudaComputeCapability: {version: $ccap}
      driverVersion: {version: $DRA_DRIVER_VERSION}
      cudaDriverVersion: {version: $DRA_CUDA_DRIVER_VERSION}
      resource.kubernetes.io/pciBusID: {string: "0000:$bus:00.0"}
      resource.kubernetes.io/pcieRoot: {string: "pci0000:$(printf '%02x' $((16#$bus - 3)))"}
    capacity:
      memory: {value: ${mem}Mi}
EOF
}

# mig_device_yaml NODE TYPE SLICE: one MIG device of the slice as the driver's
# MigDeviceInfo.GetDevice publishes it (cmd/gpu-kubelet-plugin/deviceinfo.go): named
# gpu-<parent minor>-mig-<GI profile id>-<placement start>-<placement size>; the parent's
# product, versions and PCI location; capacity the GI profile's engines and memory plus one
# memorySlice<i> per memory slice the placement covers. SLICE is an entry of MIG_SLICES.
mig_device_yaml() {
  local parent profile start size gi id sms ce dec enc jpeg ofa mem product arch ccap i
  read -r parent profile start size gi <<<"$3"
  read -r id sms ce dec enc jpeg ofa mem <<<"$(mig_profile_of "$profile")"
  IFS='|' read -r product arch ccap <<<"$(gpu_nvml_of "$2")"
  local bus="${DRA_PCI_BUSES[$parent]}"
  cat <<EOF
  - name: gpu-$parent-mig-$id-$start-$size
    attributes:
      type: {string: mig}
      uuid: {string: $(mig_uuid "$1" "$parent" "$start" "$size")}
      parentUUID: {string: $(gpu_uuid "$1" "$parent")}
      profile: {string: "$profile"}
      productName: {string: "$product"}
      brand: {string: Nvidia}
      architecture: {string: "$arch"}
      cudaComputeCapability: {version: $ccap}
      driverVersion: {version: $DRA_DRIVER_VERSION}
      cudaDriverVersion: {version: $DRA_CUDA_DRIVER_VERSION}
      pcieBusID: {string: "0000:$bus:00.0"}
      resource.kubernetes.io/pcieRoot: {string: "pci0000:$(printf '%02x' $((16#$bus - 3)))"}
    capacity:
      multiprocessors: {value: "$sms"}
      copyEngines: {value: "$ce"}
      decoders: {value: "$dec"}
      encoders: {value: "$enc"}
      jpegEngines: {value: "$jpeg"}
      ofaEngines: {value: "$ofa"}
      memory: {value: ${mem}Mi}
EOF
  for ((i = start; i < start + size; i++)); do echo "      memorySlice$i: {value: \"1\"}"; done
}

# publish_gpu_slices: node1..nodeN's ResourceSlices, as the driver's kubelet plugin publishes
# them once its kubelet has registered the node. Idempotent (kubectl apply). The MIG node
# (SKB_TESTBED_MIG=1) publishes its whole GPUs and its MIG devices: in static MIG a GPU with
# MIG enabled is not offered whole.
publish_gpu_slices() {
  skb_step testbed/dra "publishing ResourceSlices of driver $DRA_DRIVER for node1..node$N"
  local i g s manifest=""
  for ((i = 1; i <= N; i++)); do
    local uid t whole=8
    uid="$(kubectl get node "node$i" -o jsonpath='{.metadata.uid}')" ||
      skb_die "node$i has no uid" "$LOGS/testbed.log"
    t="$(gpu_type_of "$i")"
    [[ "node$i" != "$MIG_NODE" ]] || whole=$MIG_WHOLE
    manifest+="---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node$i-$DRA_DRIVER
  ownerReferences:
  - {apiVersion: v1, kind: Node, name: node$i, uid: $uid, controller: true}
spec:
  driver: $DRA_DRIVER
  nodeName: node$i
  pool: {name: node$i, generation: 1, resourceSliceCount: 1}
  devices:
"
    for ((g = 0; g < whole; g++)); do manifest+="$(gpu_device_yaml "node$i" "$g" "$t")"$'\n'; done
    if [[ "node$i" == "$MIG_NODE" ]]; then
      for s in "${MIG_SLICES[@]}"; do manifest+="$(mig_device_yaml "node$i" "$t" "$s")"$'\n'; done
    fi
  done
  kubectl apply -f - <<<"$manifest" >>"$LOGS/testbed.log" 2>&1 ||
    skb_die "publishing the ResourceSlices failed" "$LOGS/testbed.log"
  write_gpu_identity
}

# write_gpu_identity: $D/gpu-identity.json, the testbed's own record of which physical GPU
# (or MIG slice) each Slurm GRES index and each published DRA device is, for the tests'
# invariant oracle (tests/testbed/oracle.h), which must not trust the bridge's mapping.
# Written from the layout that gres.conf and the slices are written from (File=nvidia[0-7]
# in index order; on the MIG node the whole GPUs, then MIG_SLICES in gres.conf order), and
# again whenever the testbed republishes a slice (gpu-lost, gpu-recovered): same content, a
# new file (the oracle re-reads it when it changes). Per node:
#   {"driver", "pool", "by_gres_index": {"0": "node1/gpu0", ...},
#    "by_device": {"gpu-0": "node1/gpu0", ...}, "parent": {"<slice id>": "<its GPU's id>"}}
# A MIG slice is "NODE/gpuP/mig-START+SIZE" (its memory-slice placement): it conflicts with
# its parent GPU, were that ever allocated whole. The devices a gpu-lost took out of the
# slice stay listed: claims allocated on them still hold them.
write_gpu_identity() {
  local i g s parent profile start size gi id whole doc="{}"
  for ((i = 1; i <= N; i++)); do
    local node="node$i" idx="{}" dev="{}" par="{}"
    whole=8
    [[ "$node" != "$MIG_NODE" ]] || whole=$MIG_WHOLE
    for ((g = 0; g < whole; g++)); do
      idx="$(jq -c --arg k "$g" --arg v "$node/gpu$g" '.[$k] = $v' <<<"$idx")"
      dev="$(jq -c --arg k "gpu-$g" --arg v "$node/gpu$g" '.[$k] = $v' <<<"$dev")"
    done
    if [[ "$node" == "$MIG_NODE" ]]; then
      g=$MIG_WHOLE
      for s in "${MIG_SLICES[@]}"; do
        read -r parent profile start size gi <<<"$s"
        read -r id _ <<<"$(mig_profile_of "$profile")"
        local phys="$node/gpu$parent/mig-$start+$size"
        idx="$(jq -c --arg k "$g" --arg v "$phys" '.[$k] = $v' <<<"$idx")"
        dev="$(jq -c --arg k "gpu-$parent-mig-$id-$start-$size" --arg v "$phys" '.[$k] = $v' <<<"$dev")"
        par="$(jq -c --arg k "$phys" --arg v "$node/gpu$parent" '.[$k] = $v' <<<"$par")"
        g=$((g + 1))
      done
    fi
    doc="$(jq -c --arg n "$node" --arg d "$DRA_DRIVER" --argjson idx "$idx" --argjson dev "$dev" \
      --argjson par "$par" '.[$n] = {driver: $d, pool: $n, by_gres_index: $idx,
        by_device: $dev, parent: $par}' <<<"$doc")"
  done
  jq . <<<"$doc" >"$D/gpu-identity.json.tmp" && mv "$D/gpu-identity.json.tmp" "$D/gpu-identity.json" ||
    skb_die "writing $D/gpu-identity.json failed"
}
