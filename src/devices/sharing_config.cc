#include "src/devices/sharing_config.h"

#include "src/base/strings.h"

namespace skb::devices {
namespace {

bool IsDnsLabelish(const std::string& s) {
  return !s.empty() && s.size() <= 253 &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos;
}

}  // namespace

std::vector<std::string> SharingConfig::GresFilesOf(const std::string& node, int64_t gpus) const {
  if (auto it = gres_files.find(node); it != gres_files.end()) return it->second;
  std::vector<std::string> out;
  for (int64_t i = 0; i < gpus; ++i) out.push_back(StrCat("/dev/nvidia", i));
  return out;
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
  r.Duration("give_timeout", &out->give_timeout);
  r.Duration("give_backoff", &out->give_backoff);
  r.Duration("give_backoff_max", &out->give_backoff_max);
  if (!IsDnsLabelish(out->driver)) {
    r.Fail("driver", "must be a DRA driver name such as gpu.nvidia.com");
  }
  if (out->extended_resource.find('/') == std::string::npos) {
    r.Fail("extended_resource", "must be an extended resource name such as nvidia.com/gpu");
  }
  if (out->give_timeout < std::chrono::seconds(10)) r.Fail("give_timeout", "must be at least 10s");
  if (out->give_backoff < std::chrono::seconds(10)) r.Fail("give_backoff", "must be at least 10s");
  if (out->give_backoff_max < out->give_backoff) {
    r.Fail("give_backoff_max", "must be at least give_backoff");
  }

  config::JsonReader files = r.Object("gres_files");  // node -> its files, in index order
  for (const std::string& node : files.Keys()) {
    std::vector<std::string> list;
    files.StringList(node, &list);
    for (const std::string& f : list) {
      if (f.rfind("/dev/nvidia", 0) != 0) {
        files.Fail(node, StrCat("'", f, "' is not a /dev/nvidia<N> device file"));
      }
    }
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
