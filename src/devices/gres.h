// SPDX-License-Identifier: Apache-2.0
// Device identity between Slurm and Kubernetes on one node: which GPU a Slurm job holds
// (its GRES indices, `scontrol show job -d`: "GRES=gpu:4(IDX:0-3)") and which DRA device
// (NVIDIA's GPU DRA driver publishes "gpu-0".."gpu-N-1") is the same physical GPU.
//
//   StatusOr<GresIndices> g = ParseGresIndices("gpu:h100:2(IDX:1,5)");  // {h100, 2, {1, 5}}
//   DeviceMapping m = MapGresFiles({"/dev/nvidia0", "/dev/nvidia1"}, slice_devices);
//   if (!m.proven) { /* the node stays node-granular: m.reason says why */ }
//
// Slurm numbers a node's GPUs by their order in gres.conf (File= entries, ranges
// expanded); the device file's minor number names the physical GPU. The mapping is only
// trusted when every index resolves to exactly one published device; anything else keeps
// the node at node granularity, with the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace skb::devices {

// GPUs of one GRES entry of a job: "gpu:h100:2(IDX:1,5)" -> {type "h100", count 2, {1, 5}}.
struct GresIndices {
  std::string type;  // "" when untyped ("gpu:4(IDX:0-3)"); MIG profiles too ("1g.10gb")
  int64_t count = 0;
  std::vector<int64_t> indices;  // ascending, distinct
  friend bool operator==(const GresIndices&, const GresIndices&) = default;
};

// Parses the GPU entries of a job's per-node GRES string as `scontrol show job -d` prints
// it ("gpu:4(IDX:0-3)", "gpu:h100:2(IDX:1,5)", "gpu:1g.10gb:1(IDX:0)", several entries
// separated by top-level commas; non-gpu entries are skipped). InvalidArgument, naming the
// entry, on a missing or unbalanced "(IDX:...)", a bad number or range, a duplicate index,
// or a count that differs from the number of indices. "gpu:0(IDX:N/A)" is no GPU.
StatusOr<std::vector<GresIndices>> ParseGresIndices(std::string_view gres);
// All GPU indices of a job's GRES string, ascending (the union of its entries).
StatusOr<std::vector<int64_t>> ParseGpuIndices(std::string_view gres);

// The DRA device name of GPU `minor` as the NVIDIA driver and the testbed publish it.
std::string DeviceName(int64_t minor);
// "gpu-3" -> 3; nullopt for any other name.
std::optional<int64_t> DeviceMinor(std::string_view name);

// A device as the node's ResourceSlice publishes it.
struct SliceDevice {
  std::string name;
  std::optional<int64_t> minor;  // the driver's "minor" attribute, when published
  // NVIDIA's driver: "gpu" (a whole GPU) or "mig" (a MIG slice); "" when not published.
  std::string type;
  std::string uuid;     // "GPU-..." or "MIG-...", when published
  std::string profile;  // a MIG slice's profile ("1g.10gb")
  // The standard attribute resource.kubernetes.io/pciBusID ("0000:18:00.0"), when published.
  std::string pci_bus_id;
  // The driver's taints on the device that keep it from new claims (effect NoSchedule or
  // NoExecute, as NVIDIA's driver sets for a GPU's health: "gpu.nvidia.com/xid=79:NoSchedule"),
  // as kubectl shows taints, comma-separated; "" when none.
  std::string taint;
  bool IsMig() const { return type == "mig"; }
};

// One GRES index of a node as gres.conf lists it (gpu_sharing.gres_files): a whole GPU's
// File=/dev/nvidiaN, or a MIG slice's MultipleFiles (its GPU's /dev/nvidiaN and its
// /dev/nvidia-caps/nvidia-capM) with its Type (the profile) and the slice's MIG UUID.
struct GresDevice {
  std::vector<std::string> files;
  std::string type;      // Slurm's GRES type; for a slice, its MIG profile
  std::string mig_uuid;  // a slice's "MIG-..." (nvidia-smi -L): what proves it; "" = a GPU
  bool IsMig() const { return !mig_uuid.empty(); }
  friend bool operator==(const GresDevice&, const GresDevice&) = default;
};
// Whole GPUs: one entry per file.
std::vector<GresDevice> WholeGpus(std::span<const std::string> files);

struct DeviceMapping {
  bool proven = false;
  std::string reason;                      // why not (empty when proven)
  std::vector<std::string> device_by_idx;  // Slurm GRES index -> DRA device name
  // Slurm GRES index -> the MIG profile of its slice ("" = a whole GPU).
  std::vector<std::string> profile_by_idx;
};

// Maps a node's gres.conf GPU files, in Slurm's index order ("/dev/nvidia3" at index 0 ...),
// to its published devices. A file proves the device whose `minor` attribute equals its
// minor number; a slice without minor attributes proves nothing unless `trust_names` (an
// admin's statement that device gpu-N is /dev/nvidiaN, as on the testbed) maps it by name.
// Unproven when: a file is not /dev/nvidia<N>, two files share a minor, the counts differ,
// a minor has no device or more than one, or a device is left over.
//
// A MIG slice (an entry with a mig_uuid) proves the published device of type "mig" whose
// uuid is that MIG UUID, and only if the device's profile is the entry's type and its name
// (gpu-<minor>-mig-<profile id>-<start>-<size>, as NVIDIA's driver names it) carries the
// minor of the entry's /dev/nvidiaN: Slurm's view of a slice (MultipleFiles, Type) and the
// driver's then describe the same slice of the same GPU. A slice's device is never mapped
// by minor or name (a GPU's slices share its minor), and a whole GPU's file never proves a
// slice.
DeviceMapping MapGresFiles(std::span<const GresDevice> gres, std::span<const SliceDevice> devices,
                           bool trust_names);
DeviceMapping MapGresFiles(std::span<const std::string> files, std::span<const SliceDevice> devices,
                           bool trust_names);
// How Slurm numbers the GPUs of a node whose files gpu_sharing.gres_files does not list.
// gres.conf's File= lines number them in the order they list the files (/dev/nvidia0,
// /dev/nvidia1, ... is what the bridge assumes); AutoDetect=nvml numbers them in NVML's
// order, which is the PCI bus order, each with the file of its own minor (gpu_nvml.c:
// "GPU index %u is different from minor number %u"). The two agree unless the kernel
// numbered the GPUs' minors differently from their bus order, which happens on real boards.
enum class GresOrder {
  kAuto,    // either, only where both give the same files on the node (the default)
  kFiles,   // gres.conf lists /dev/nvidia0../dev/nvidiaN-1 in this order
  kPciBus,  // AutoDetect=nvml: in the order of the devices' PCI bus ids
};

struct DerivedGres {
  std::vector<GresDevice> gres;  // in Slurm's index order; empty when `unproven`
  std::string unproven;          // why the order cannot be told ("" = derived)
};
// The GRES files of a node with `gpus` GPUs in Slurm and these published devices, in the
// order `order` says Slurm numbers them. kPciBus and kAuto need every device's PCI bus id
// (unique) and minor (its `minor` attribute, or its name when `trust_names`), and no MIG
// slice (those are listed in gres_files); kAuto then also needs the bus order to give
// /dev/nvidia0../dev/nvidia<gpus-1> in that order, and otherwise says both orders.
DerivedGres DeriveGresFiles(int64_t gpus, std::span<const SliceDevice> devices, GresOrder order,
                            bool trust_names);

// The minor of a MIG device name's GPU: "gpu-6-mig-19-0-1" -> 6; nullopt for any other name.
std::optional<int64_t> MigParentMinor(std::string_view name);

}  // namespace skb::devices
