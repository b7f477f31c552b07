# SPDX-License-Identifier: Apache-2.0
# scripts/testbed, part: Static MIG (SKB_TESTBED_MIG=1): the last node's layout, shared by Slurm's config, the
# ResourceSlice and the bridge config.
# Sourced by scripts/testbed after its settings (D, N, ports, LOGS, PIDS, BIN), never run.

# Static MIG (SKB_TESTBED_MIG=1): the last node's layout, shared by Slurm's config, the
# ResourceSlice and the bridge config.

MIG_NODE=""
if [[ "$MIG" == 1 ]]; then MIG_NODE="node$N"; fi
# GPUs 0..MIG_WHOLE-1 stay whole; the rest are cut into these slices, one "PARENT PROFILE
# PLACEMENT_START PLACEMENT_SIZE GI_ID" each, in the order Slurm numbers them (gres.conf
# order). Placements are H100 80GB's (nvidia-smi mig -lgipp: 1g.10gb starts 0..6 size 1,
# 3g.40gb starts 0 and 4 size 4). The GPU instance ids are made up (plausible ids
# nvidia-smi could assign: 1..7 on GPU 6, 1 and 2 on GPU 7); only the cap minors below
# derive from them.
MIG_WHOLE=6
MIG_SLICES=(
  "6 1g.10gb 0 1 1" "6 1g.10gb 1 1 2" "6 1g.10gb 2 1 3" "6 1g.10gb 3 1 4"
  "6 1g.10gb 4 1 5" "6 1g.10gb 5 1 6" "6 1g.10gb 6 1 7"
  "7 3g.40gb 0 4 1" "7 3g.40gb 4 4 2"
)

# mig_profile_of PROFILE: "GI_PROFILE_ID MULTIPROCESSORS COPY_ENGINES DECODERS ENCODERS
# JPEG_ENGINES OFA_ENGINES MEMORY_MIB" of an H100 80GB GPU instance profile, as NVML's
# GpuInstanceProfileInfo gives them (the profile ids are NVML's; the engine counts and
# memory sizes are approximate). Used whatever SKB_TESTBED_GPU_TYPES names for the node.
mig_profile_of() {
  case "$1" in
    1g.10gb) echo "19 16 1 1 0 1 0 9856" ;;
    3g.40gb) echo "9 60 3 3 0 3 0 40192" ;;
    *) skb_die "no MIG profile $1 in the testbed's table" ;;
  esac
}

# mig_cap_minor GPU GI: the minor of /dev/nvidia-caps/nvidia-cap<M> for gpu<GPU>/gi<GI>/access
# in the driver's /proc/driver/nvidia-caps/mig-minors (its compute instance ci<c> is M+1+c).
# The driver numbers its capability table in order (NVIDIA/open-gpu-kernel-modules,
# kernel-open/nvidia/nv-caps.c): fabric-mgmt 0, mig/config 1, mig/monitor 2, then per GPU
# minor 15 GPU instances gi0..gi14, each its access and ci0..ci7 (9 minors): 135 per GPU.
mig_cap_minor() { echo $((3 + 135 * $1 + 9 * $2)); }

# mig_uuid NODE PARENT START SIZE: a stable MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
mig_uuid() {
  local h
  h="$(printf 'skb-testbed/%s/gpu-%s/mig-%s-%s' "$1" "$2" "$3" "$4" | sha256sum | cut -c1-32)"
  echo "MIG-${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"
}

# mig_slurm_gres TYPE: slurm.conf's Gres= of the MIG node (gpu:TYPE:6,gpu:1g.10gb:7,...).
mig_slurm_gres() {
  local out="gpu:$1:$MIG_WHOLE" s parent profile last="" count=0
  for s in "${MIG_SLICES[@]}"; do
    read -r parent profile _ <<<"$s"
    if [[ "$profile" != "$last" && -n "$last" ]]; then
      out+=",gpu:$last:$count"
      count=0
    fi
    last="$profile"
    count=$((count + 1))
  done
  echo "$out,gpu:$last:$count"
}

# mig_gres_conf TYPE: gres.conf's lines of the MIG node: the whole GPUs, then one line per
# slice naming the parent's device file and its GPU and compute instance capabilities, as
# Slurm's AutoDetect=nvml does (gpu_nvml.c: /dev/nvidia<minor>, nvidia-cap<GI minor>,
# nvidia-cap<CI minor>). Placeholder files under $D/slurm/dev.
mig_gres_conf() {
  local s parent profile gi m dev="$D/slurm/dev"
  echo "NodeName=$MIG_NODE Name=gpu Type=$1 File=$dev/nvidia[0-$((MIG_WHOLE - 1))]"
  for s in "${MIG_SLICES[@]}"; do
    read -r parent profile _ _ gi <<<"$s"
    m="$(mig_cap_minor "$parent" "$gi")"
    echo "NodeName=$MIG_NODE Name=gpu Type=$profile MultipleFiles=$dev/nvidia$parent,$dev/nvidia-caps/nvidia-cap$m,$dev/nvidia-caps/nvidia-cap$((m + 1))"
  done
}

# mig_gres_files_json: the MIG node's GRES in Slurm's index order, as on a real node's /dev:
# "/dev/nvidiaG" per whole GPU, {"files", "type", "mig_uuid"} per slice.
mig_gres_files_json() {
  local g s parent profile start size gi m
  {
    for ((g = 0; g < MIG_WHOLE; g++)); do jq -n --arg f "/dev/nvidia$g" '$f'; done
    for s in "${MIG_SLICES[@]}"; do
      read -r parent profile start size gi <<<"$s"
      m="$(mig_cap_minor "$parent" "$gi")"
      jq -n --arg p "/dev/nvidia$parent" --arg gi "/dev/nvidia-caps/nvidia-cap$m" \
        --arg ci "/dev/nvidia-caps/nvidia-cap$((m + 1))" --arg t "$profile" \
        --arg u "$(mig_uuid "$MIG_NODE" "$parent" "$start" "$size")" \
        '{files: [$p, $gi, $ci], type: $t, mig_uuid: $u}'
    done
  } | jq -s .
}
