// SPDX-License-Identifier: Apache-2.0
#include "src/devices/gres.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <utility>

#include "src/base/strings.h"

namespace skb::devices {
namespace {

// Slurm nodes hold at most a few hundred GPUs (MIG slices included); anything larger is
// garbage, not a node.
constexpr int64_t kMaxIndex = 4095;

std::optional<int64_t> ParseIndex(std::string_view s) {
  if (s.empty() || s.size() > 4 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  if (v > kMaxIndex) return std::nullopt;
  return v;
}

// Splits at commas outside parentheses.
std::vector<std::string_view> TopLevelEntries(std::string_view s) {
  std::vector<std::string_view> out;
  size_t depth = 0, start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      out.push_back(StripWhitespace(s.substr(start, i - start)));
      start = i + 1;
    } else if (s[i] == '(') {
      ++depth;
    } else if (s[i] == ')' && depth > 0) {
      --depth;
    }
  }
  return out;
}

Status Malformed(std::string_view entry, std::string_view why) {
  return InvalidArgumentError(StrCat("GRES '", entry, "': ", why));
}

StatusOr<GresIndices> ParseEntry(std::string_view entry) {
  const size_t open = entry.find('(');
  if (open == std::string_view::npos) return Malformed(entry, "no (IDX:...) list");
  if (entry.back() != ')' || entry.find('(', open + 1) != std::string_view::npos ||
      entry.find(')') != entry.size() - 1) {
    return Malformed(entry, "unbalanced parentheses");
  }
  std::string_view head = entry.substr(0, open);
  std::string_view list = entry.substr(open + 1, entry.size() - open - 2);
  if (list.rfind("IDX:", 0) != 0) return Malformed(entry, "the list does not start with IDX:");
  list.remove_prefix(4);

  GresIndices g;
  std::vector<std::string_view> f = StrSplit(head, ':');
  std::string_view count_text;
  if (f.size() == 2) {
    count_text = f[1];
  } else if (f.size() == 3) {
    if (f[1].empty()) return Malformed(entry, "empty GPU type");
    g.type = std::string(f[1]);
    count_text = f[2];
  } else {
    return Malformed(entry, "expected gpu[:TYPE]:COUNT before (IDX:...)");
  }
  std::optional<int64_t> count = ParseIndex(count_text);
  if (!count) return Malformed(entry, StrCat("count '", count_text, "' is not a number"));
  g.count = *count;

  if (list == "N/A") {
    if (g.count != 0) return Malformed(entry, "IDX:N/A with a non-zero count");
    return g;
  }
  for (std::string_view part : StrSplit(list, ',')) {
    const size_t dash = part.find('-');
    std::optional<int64_t> lo = ParseIndex(part.substr(0, dash));
    std::optional<int64_t> hi =
        dash == std::string_view::npos ? lo : ParseIndex(part.substr(dash + 1));
    if (!lo || !hi) return Malformed(entry, StrCat("index '", part, "' is not a number or range"));
    if (*hi < *lo) return Malformed(entry, StrCat("range '", part, "' runs backwards"));
    for (int64_t i = *lo; i <= *hi; ++i) g.indices.push_back(i);
  }
  std::sort(g.indices.begin(), g.indices.end());
  if (std::adjacent_find(g.indices.begin(), g.indices.end()) != g.indices.end()) {
    return Malformed(entry, "an index is listed twice");
  }
  if (static_cast<int64_t>(g.indices.size()) != g.count) {
    return Malformed(entry, StrCat("count ", g.count, " but ", g.indices.size(), " indices"));
  }
  return g;
}

}  // namespace

StatusOr<std::vector<GresIndices>> ParseGresIndices(std::string_view gres) {
  std::vector<GresIndices> out;
  for (std::string_view entry : TopLevelEntries(gres)) {
    if (entry.empty()) continue;
    const std::string_view name = entry.substr(0, entry.find_first_of(":("));
    if (name != "gpu") continue;
    ASSIGN_OR_RETURN(GresIndices g, ParseEntry(entry));
    out.push_back(std::move(g));
  }
  return out;
}

StatusOr<std::vector<int64_t>> ParseGpuIndices(std::string_view gres) {
  ASSIGN_OR_RETURN(std::vector<GresIndices> entries, ParseGresIndices(gres));
  std::vector<int64_t> all;
  for (const GresIndices& g : entries) all.insert(all.end(), g.indices.begin(), g.indices.end());
  std::sort(all.begin(), all.end());
  if (std::adjacent_find(all.begin(), all.end()) != all.end()) {
    return InvalidArgumentError(StrCat("GRES '", gres, "': an index is held twice"));
  }
  return all;
}

std::string DeviceName(int64_t minor) { return StrCat("gpu-", minor); }

std::optional<int64_t> DeviceMinor(std::string_view name) {
  if (name.rfind("gpu-", 0) != 0) return std::nullopt;
  name.remove_prefix(4);
  if (name.size() > 1 && name[0] == '0') return std::nullopt;  // "gpu-01" is not gpu-1
  return ParseIndex(name);
}

std::optional<int64_t> MigParentMinor(std::string_view name) {
  const size_t mig = name.find("-mig-");
  if (mig == std::string_view::npos) return std::nullopt;
  return DeviceMinor(name.substr(0, mig));
}

std::vector<GresDevice> WholeGpus(std::span<const std::string> files) {
  std::vector<GresDevice> out;
  for (const std::string& f : files) out.push_back({.files = {f}});
  return out;
}

DeviceMapping MapGresFiles(std::span<const std::string> files, std::span<const SliceDevice> devices,
                           bool trust_names) {
  const std::vector<GresDevice> gres = WholeGpus(files);
  return MapGresFiles(std::span<const GresDevice>(gres), devices, trust_names);
}

DeviceMapping MapGresFiles(std::span<const GresDevice> gres, std::span<const SliceDevice> devices,
                           bool trust_names) {
  DeviceMapping m;
  auto fail = [&](std::string why) {
    m.proven = false;
    m.reason = std::move(why);
    m.device_by_idx.clear();
    m.profile_by_idx.clear();
    return m;
  };
  if (gres.empty()) return fail("gres.conf lists no GPU File= for the node");
  if (gres.size() != devices.size()) {
    return fail(StrCat("Slurm has ", gres.size(), " GPUs, the ResourceSlice ", devices.size()));
  }
  // Whole GPUs: minor -> devices that claim it. MIG slices: uuid -> devices.
  std::map<int64_t, std::vector<std::string>> by_minor;
  std::map<std::string, std::vector<const SliceDevice*>> by_uuid;
  for (const SliceDevice& d : devices) {
    if (d.IsMig()) {
      by_uuid[d.uuid].push_back(&d);
      continue;
    }
    std::optional<int64_t> minor = d.minor;
    if (!minor && trust_names) minor = DeviceMinor(d.name);
    if (!minor) {
      return fail(trust_names ? StrCat("device '", d.name, "' is not named gpu-<minor>")
                              : StrCat("device '", d.name,
                                       "' publishes no minor attribute (and device names are "
                                       "not trusted for this node)"));
    }
    by_minor[*minor].push_back(d.name);
  }
  auto minor_of = [](std::string_view f) -> std::optional<int64_t> {
    constexpr std::string_view kPrefix = "/dev/nvidia";
    if (f.rfind(kPrefix, 0) != 0) return std::nullopt;
    return ParseIndex(f.substr(kPrefix.size()));
  };
  std::map<int64_t, size_t> seen;           // a whole GPU's minor -> its index
  std::map<std::string, size_t> seen_uuid;  // a slice's MIG UUID -> its index
  for (size_t idx = 0; idx < gres.size(); ++idx) {
    const GresDevice& g = gres[idx];
    const std::string_view f = g.files.empty() ? std::string_view() : g.files.front();
    const std::optional<int64_t> minor = minor_of(f);
    if (!minor) return fail(StrCat("GRES index ", idx, ": File=", f, " is not /dev/nvidia<N>"));
    if (g.IsMig()) {
      if (auto [it, fresh] = seen_uuid.emplace(g.mig_uuid, idx); !fresh) {
        return fail(StrCat("GRES indices ", it->second, " and ", idx, " are both ", g.mig_uuid));
      }
      auto it = by_uuid.find(g.mig_uuid);
      if (it == by_uuid.end()) {
        return fail(StrCat("GRES index ", idx, ": no published MIG device has uuid ", g.mig_uuid));
      }
      if (it->second.size() > 1) {
        return fail(StrCat("devices ", it->second[0]->name, " and ", it->second[1]->name,
                           " both have uuid ", g.mig_uuid));
      }
      const SliceDevice& d = *it->second[0];
      if (d.profile != g.type) {
        return fail(StrCat("GRES index ", idx, " is a ", g.type, " slice in Slurm, device ", d.name,
                           " (", g.mig_uuid, ") is ",
                           d.profile.empty() ? "of no profile" : d.profile));
      }
      if (MigParentMinor(d.name) != minor) {
        return fail(StrCat("GRES index ", idx, ": ", g.mig_uuid, " is on ", f, " in Slurm, device ",
                           d.name, " is not a slice of GPU ", *minor));
      }
      m.device_by_idx.push_back(d.name);
      m.profile_by_idx.push_back(g.type);
      continue;
    }
    if (g.files.size() != 1) {
      return fail(StrCat("GRES index ", idx, ": ", StrJoin(g.files, ","),
                         " names several files but no MIG UUID"));
    }
    if (auto [it, fresh] = seen.emplace(*minor, idx); !fresh) {
      return fail(StrCat("GRES indices ", it->second, " and ", idx, " share ", f));
    }
    auto it = by_minor.find(*minor);
    if (it == by_minor.end()) return fail(StrCat("no published device for ", f));
    if (it->second.size() > 1) {
      return fail(StrCat("devices ", it->second[0], " and ", it->second[1], " both claim ", f));
    }
    m.device_by_idx.push_back(it->second[0]);
    m.profile_by_idx.emplace_back();
  }
  for (const auto& [minor, idx] : seen) {
    for (const SliceDevice& d : devices) {
      if (d.IsMig() && MigParentMinor(d.name) == minor) {
        return fail(StrCat("GRES index ", idx, " is all of GPU ", minor,
                           " in Slurm, the driver publishes its MIG slice ", d.name,
                           " too (partitionable devices: not supported)"));
      }
    }
  }
  m.proven = true;
  return m;
}

DerivedGres DeriveGresFiles(int64_t gpus, std::span<const SliceDevice> devices, GresOrder order,
                            bool trust_names) {
  DerivedGres out;
  std::vector<GresDevice> by_files;
  for (int64_t i = 0; i < gpus; ++i) by_files.push_back({.files = {StrCat("/dev/nvidia", i)}});
  if (order == GresOrder::kFiles) {
    out.gres = std::move(by_files);
    return out;
  }
  // A count that differs is MapGresFiles' to report, with both counts.
  if (std::cmp_not_equal(devices.size(), gpus)) {
    out.gres = std::move(by_files);
    return out;
  }
  auto unproven = [&](std::string why) {
    out.unproven = order == GresOrder::kAuto
                       ? StrCat(why,
                                ": gres.conf's File= order cannot be told from AutoDetect=nvml's "
                                "PCI bus order; set gpu_sharing.gres_order or list the node in "
                                "gpu_sharing.gres_files")
                       : std::move(why);
    return out;
  };
  // (bus id, minor, name) of each whole GPU, sorted by bus id.
  struct Gpu {
    std::string bus;
    int64_t minor;
    std::string_view name;
  };
  std::vector<Gpu> by_bus;
  for (const SliceDevice& d : devices) {
    if (d.IsMig()) return unproven(StrCat("the driver publishes MIG slice ", d.name));
    std::optional<int64_t> minor = d.minor;
    if (!minor && trust_names) minor = DeviceMinor(d.name);
    if (!minor) return unproven(StrCat("device '", d.name, "' shows no minor"));
    if (d.pci_bus_id.empty()) {
      return unproven(StrCat("device '", d.name, "' publishes no resource.kubernetes.io/pciBusID"));
    }
    std::string bus = d.pci_bus_id;  // NVML prints hex digits upper-case, the driver lower
    std::transform(bus.begin(), bus.end(), bus.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    by_bus.push_back({std::move(bus), *minor, d.name});
  }
  std::sort(by_bus.begin(), by_bus.end(), [](const Gpu& a, const Gpu& b) { return a.bus < b.bus; });
  for (size_t i = 1; i < by_bus.size(); ++i) {
    if (by_bus[i].bus == by_bus[i - 1].bus) {
      return unproven(StrCat("devices ", by_bus[i - 1].name, " and ", by_bus[i].name,
                             " share PCI bus id ", by_bus[i].bus));
    }
  }
  std::vector<GresDevice> by_pci;
  for (const Gpu& g : by_bus) by_pci.push_back({.files = {StrCat("/dev/nvidia", g.minor)}});
  if (order == GresOrder::kPciBus || by_pci == by_files) {
    out.gres = std::move(by_pci);
    return out;
  }
  std::vector<std::string> pci_files;
  for (const Gpu& g : by_bus) pci_files.push_back(StrCat(g.name, "@", g.bus));
  return unproven(
      StrCat("the GPUs' minors are not in PCI bus order (", StrJoin(pci_files, " "), ")"));
}

}  // namespace skb::devices
