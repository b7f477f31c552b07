// SPDX-License-Identifier: Apache-2.0
// GPU-granular sharing of DRA nodes: the "gpu_sharing" section of the bridge config (every
// key is listed in README.md; docs/gpu-granular.md says how a give and a return run).
//
//   "gpu_sharing": {
//     "enabled": true,
//     "driver": "gpu.nvidia.com", "extended_resource": "nvidia.com/gpu",
//     "device_classes": ["gpu.nvidia.com"],
//     "device_identity": "name",
//     "gres_files": {"node7": ["/dev/nvidia1", "/dev/nvidia0"],
//                    "node8": ["/dev/nvidia0", {"files": ["/dev/nvidia1",
//                              "/dev/nvidia-caps/nvidia-cap147",
//                              "/dev/nvidia-caps/nvidia-cap148"], "type": "1g.10gb",
//                              "mig_uuid": "MIG-..."}]},
//     "mig_device_classes": ["mig.nvidia.com"],
//     "placeholder": {"partition": "skb-gpu-hold", "qos": "", "account": ""},
//     "give_timeout": "10m", "give_backoff": "10m", "give_backoff_max": "4h"
//   }
//
// A node is shared GPU by GPU when sharing is on, the driver publishes a ResourceSlice for
// it and the mapping between Slurm's GRES indices and the published devices is proven
// (devices::MapGresFiles). Every other node stays at node granularity (the lending
// section), and says why.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/config/json_reader.h"
#include "src/devices/gres.h"

namespace skb::devices {

struct PlaceholderConfig {
  // The partition the bridge submits placeholder jobs to: every managed node, a priority
  // tier that no preemptor outranks and PreemptMode=OFF (nothing may requeue a placeholder
  // while Kubernetes uses its GPUs), Hidden, usable only by the bridge's user.
  std::string partition = "skb-gpu-hold";
  std::string qos;      // "" = the account's default
  std::string account;  // "" = the bridge user's default account
};

struct SharingConfig {
  bool enabled = false;
  // The DRA driver whose ResourceSlices publish the GPUs (one pool per node).
  std::string driver = "gpu.nvidia.com";
  // The extended resource a DeviceClass serves through DRA: pods asking for it (or a claim
  // of the driver's devices) are the GPU pods the bridge frees devices for.
  std::string extended_resource = "nvidia.com/gpu";
  // The DeviceClasses of whole GPUs: a pod's ResourceClaim (its own, or one generated from
  // a ResourceClaimTemplate) asking for devices of one of these is GPU demand like
  // extended_resource (devices::GpuDemandOf). NVIDIA's driver installs gpu.nvidia.com.
  std::set<std::string, std::less<>> device_classes = {"gpu.nvidia.com"};
  // How a published device names its GPU: "name" (the device is gpu-<minor>, as NVIDIA's
  // driver v25.8 and later publish it) or "minor-attribute" (only the device's `minor`
  // attribute counts, as releases up to v25.3 published it).
  std::string device_identity = "name";
  // The DeviceClasses of MIG slices (NVIDIA's driver installs mig.nvidia.com): a claim's
  // request of one of these asks for slices of the profile its CEL selector names
  // (devices::GpuDemandOf).
  std::set<std::string, std::less<>> mig_device_classes = {"mig.nvidia.com"};
  // Pods may also ask for slices through extended resources, one per profile, that a
  // DeviceClass of slices serves through DRA (its extendedResourceName, with a selector on
  // the profile): a request of <prefix><profile> asks for that many slices of <profile>. The
  // default is the NVIDIA device plugin's "mixed" naming (nvidia.com/mig-1g.10gb), which such
  // DeviceClasses keep for pods written for it. "" reads none.
  std::string mig_extended_resource_prefix = "nvidia.com/mig-";
  // Slurm's GPUs of a node in GRES index order, where gres.conf does not list
  // /dev/nvidia0../dev/nvidiaN-1 in that order (AutoDetect=nvml orders by PCI bus), or lists
  // MIG slices: a whole GPU is its file ("/dev/nvidia3"); a slice an object with the
  // MultipleFiles of its gres.conf line ("files": its GPU's /dev/nvidiaN first, then the
  // /dev/nvidia-caps/nvidia-capM of its GPU instance and compute instance), its Type ("type": the
  // MIG profile) and its MIG UUID
  // ("mig_uuid", as nvidia-smi -L shows it), which proves it against the driver's device.
  std::map<std::string, std::vector<GresDevice>, std::less<>> gres_files;
  // How Slurm numbers the GPUs of a node gres_files does not list (GresOrder): "auto" (the
  // default: only where gres.conf's File= order and AutoDetect=nvml's PCI bus order agree,
  // which the driver's pciBusID attributes show), "files" (gres.conf lists /dev/nvidia0..N-1
  // in order) or "pci-bus" (AutoDetect=nvml).
  GresOrder gres_order = GresOrder::kAuto;
  PlaceholderConfig placeholder;
  // A give whose placeholder has not started after this long is cancelled (its victims
  // became protected, Slurm placed other work first): the pod waits for the next pass.
  std::chrono::milliseconds give_timeout = std::chrono::minutes(10);
  // A give the pod did not use (kube-scheduler did not place it on the node before the
  // GPUs went back, or the placeholder timed out): the node gets no give for that pod for
  // this long, doubled for each further unused give there, at most give_backoff_max
  // (give_backoff.h).
  std::chrono::milliseconds give_backoff = std::chrono::minutes(10);
  std::chrono::milliseconds give_backoff_max = std::chrono::hours(4);

  // The GPUs of `node` with `gpus` GPUs in Slurm and the devices its slice publishes, in
  // Slurm's index order: gres_files[node], or as gres_order derives them.
  DerivedGres GresFilesOf(const std::string& node, int64_t gpus,
                          std::span<const SliceDevice> devices) const;
  bool TrustNames() const { return device_identity == "name"; }
};

Status ReadSharingConfig(config::JsonReader r, SharingConfig* out);

}  // namespace skb::devices
