// SPDX-License-Identifier: Apache-2.0
#include "src/devices/sharing_config.h"

#include "src/base/strings.h"

namespace skb::devices {
namespace {

bool IsDnsLabelish(const std::string& s) {
  return !s.empty() && s.size() <= 253 &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos;
}

}  // namespace

// One entry of gres_files[node]: "/dev/nvidiaN", or a MIG slice's object.
Status ReadGresDevice(const nlohmann::json& item, const std::string& path, GresDevice* out) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("config: key '", path, "': ", why));
  };
  if (item.is_string()) {
    out->files = {item.get<std::string>()};
    if (out->files[0].rfind("/dev/nvidia", 0) != 0) {
      return bad(StrCat("'", out->files[0], "' is not a /dev/nvidia<N> device file"));
    }
    return OkStatus();
  }
  if (!item.is_object()) {
    return bad("expected a device file or a MIG slice's {files, type, mig_uuid}");
  }
  config::JsonReader r(item, path);
  r.StringList("files", &out->files);
  r.String("type", &out->type);
  r.String("mig_uuid", &out->mig_uuid);
  // As AutoDetect=nvml writes them: the GPU's file, the GPU instance's and the compute
  // instance's access files (a hand-written gres.conf may leave out the last).
  bool caps = out->files.size() == 2 || out->files.size() == 3;
  for (size_t i = 1; i < out->files.size(); ++i) {
    caps &= out->files[i].rfind("/dev/nvidia-caps/nvidia-cap", 0) == 0;
  }
  if (!caps || out->files[0].rfind("/dev/nvidia", 0) != 0 ||
      out->files[0].rfind("/dev/nvidia-caps", 0) == 0) {
    r.Fail("files",
           "must be the slice's MultipleFiles: its GPU's /dev/nvidiaN, then its "
           "/dev/nvidia-caps/nvidia-capM access files (one or two)");
  }
  if (out->type.empty()) r.Fail("type", "must name the slice's MIG profile, as gres.conf's Type=");
  if (out->mig_uuid.rfind("MIG-", 0) != 0) {
    r.Fail("mig_uuid", "must be the slice's MIG UUID (MIG-...), as nvidia-smi -L shows it");
  }
  return r.Finish();
}

DerivedGres SharingConfig::GresFilesOf(const std::string& node, int64_t gpus,
                                       std::span<const SliceDevice> devices) const {
  if (auto it = gres_files.find(node); it != gres_files.end()) return {.gres = it->second};
  return DeriveGresFiles(gpus, devices, gres_order, TrustNames());
}

Status ReadSharingConfig(config::JsonReader r, SharingConfig* out) {
  r.Bool("enabled", &out->enabled);
  r.String("driver", &out->driver);
  r.String("extended_resource", &out->extended_resource);
  if (!r.TypeOf("device_classes").empty()) {
    std::vector<std::string> classes;
    r.StringList("device_classes", &classes);
    out->device_classes = {classes.begin(), classes.end()};
    if (out->device_classes.empty()) r.Fail("device_classes", "must name at least one DeviceClass");
    for (const std::string& c : classes) {
      if (!IsDnsLabelish(c)) {
        r.Fail("device_classes",
               StrCat("'", c, "' is not a DeviceClass name such as gpu.nvidia.com"));
      }
    }
  }
  r.Enum("device_identity", &out->device_identity, {"name", "minor-attribute"});
  std::string order = out->gres_order == GresOrder::kFiles    ? "files"
                      : out->gres_order == GresOrder::kPciBus ? "pci-bus"
                                                              : "auto";
  r.Enum("gres_order", &order, {"auto", "files", "pci-bus"});
  out->gres_order = order == "files"     ? GresOrder::kFiles
                    : order == "pci-bus" ? GresOrder::kPciBus
                                         : GresOrder::kAuto;
  r.Duration("give_timeout", &out->give_timeout);
  r.Duration("give_backoff", &out->give_backoff);
  r.Duration("give_backoff_max", &out->give_backoff_max);
  if (!IsDnsLabelish(out->driver)) {
    r.Fail("driver", "must be a DRA driver name such as gpu.nvidia.com");
  }
  if (out->extended_resource.find('/') == std::string::npos) {
    r.Fail("extended_resource", "must be an extended resource name such as nvidia.com/gpu");
  }
  r.String("mig_extended_resource_prefix", &out->mig_extended_resource_prefix);
  if (const std::string& p = out->mig_extended_resource_prefix;
      !p.empty() && (p.find('/') == std::string::npos || p.back() == '/' ||
                     out->extended_resource.starts_with(p))) {
    r.Fail("mig_extended_resource_prefix",
           StrCat("'", p, "' must be the start of extended resource names that end in a MIG ",
                  "profile, such as nvidia.com/mig- (not of extended_resource '",
                  out->extended_resource, "')"));
  }
  if (out->give_timeout < std::chrono::seconds(10)) r.Fail("give_timeout", "must be at least 10s");
  if (out->give_backoff < std::chrono::seconds(10)) r.Fail("give_backoff", "must be at least 10s");
  if (out->give_backoff_max < out->give_backoff) {
    r.Fail("give_backoff_max", "must be at least give_backoff");
  }

  if (!r.TypeOf("mig_device_classes").empty()) {
    std::vector<std::string> classes;
    r.StringList("mig_device_classes", &classes);
    out->mig_device_classes = {classes.begin(), classes.end()};
    for (const std::string& c : classes) {
      if (!IsDnsLabelish(c) || out->device_classes.count(c)) {
        r.Fail("mig_device_classes",
               StrCat("'", c, "' is not a DeviceClass name such as mig.nvidia.com, or is also in ",
                      "device_classes"));
      }
    }
  }
  config::JsonReader files = r.Object("gres_files");  // node -> its GPUs, in index order
  for (const std::string& node : files.Keys()) {
    std::vector<GresDevice> list;
    const bool present = files.List(node, [&](const nlohmann::json& item, const std::string& path) {
      GresDevice g;
      Status s = ReadGresDevice(item, path, &g);
      list.push_back(std::move(g));
      return s;
    });
    if (present && list.empty()) files.Fail(node, "must list the node's GPUs");
    out->gres_files[node] = std::move(list);
  }
  r.Merge(files.Finish());
  config::JsonReader ph = r.Object("placeholder");
  ph.String("partition", &out->placeholder.partition);
  ph.String("qos", &out->placeholder.qos);
  ph.String("account", &out->placeholder.account);
  if (out->placeholder.partition.empty()) ph.Fail("partition", "must name a Slurm partition");
  r.Merge(ph.Finish());
  return r.Finish();
}

}  // namespace skb::devices
