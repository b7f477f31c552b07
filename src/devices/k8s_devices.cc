// SPDX-License-Identifier: Apache-2.0
#include "src/devices/k8s_devices.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <regex>
#include <set>

#include "src/base/strings.h"
#include "src/devices/placement.h"
#include "src/inventory/k8s_node.h"
#include "src/ownership/schema.h"

namespace skb::devices {
namespace {

using nlohmann::json;

// obj[key] when obj is an object that has it, else nullptr. Objects come from outside and
// are never trusted to have the documented shape.
const json* Field(const json* obj, std::string_view key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}
const json* Path(const json& obj, std::initializer_list<std::string_view> keys) {
  const json* j = &obj;
  for (std::string_view k : keys) j = Field(j, k);
  return j;
}
std::string Str(const json* j) {
  return j != nullptr && j->is_string() ? j->get<std::string>() : "";
}
std::span<const json> Items(const json* j) {
  if (j == nullptr || !j->is_array()) return {};
  const auto& a = j->get_ref<const json::array_t&>();
  return {a.data(), a.size()};
}

std::string NameOf(const json& obj) { return Str(Path(obj, {"metadata", "name"})); }
std::string NamespacedName(const json& obj) {
  return StrCat(Str(Path(obj, {"metadata", "namespace"})), "/", NameOf(obj));
}

// An integer field (a JSON number, or a string of digits: quantities and int64s travel
// as strings), or nullopt.
std::optional<int64_t> Int(const json* j) {
  if (j == nullptr) return std::nullopt;
  if (j->is_number_integer()) return j->get<int64_t>();
  if (!j->is_string()) return std::nullopt;
  const std::string& s = j->get_ref<const std::string&>();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The device's minor number, from the attribute "minor" (unqualified names are the
// driver's own domain) or "<driver>/minor".
std::optional<int64_t> MinorAttribute(const json& device, std::string_view driver) {
  const json* attrs = Field(&device, "attributes");
  const json* a = Field(attrs, "minor");
  if (a == nullptr) a = Field(attrs, StrCat(driver, "/minor"));
  std::optional<int64_t> v = Int(Field(a, "int"));
  if (v && *v < 0) return std::nullopt;
  return v;
}

// A published device's taints that keep it from new claims (NoSchedule, NoExecute), as
// kubectl shows taints: "key=value:effect", comma-separated. A taint without a key is skipped,
// and so is the bridge's own hold (a DeviceTaintRule's taint is not written into the slice,
// but should an apiserver ever show it there, a held device must not read as the driver's).
std::string DeviceTaints(const json& device) {
  std::vector<std::string> out;
  for (const json& t : Items(Field(&device, "taints"))) {
    const std::string key = Str(Field(&t, "key"));
    const std::string effect = Str(Field(&t, "effect"));
    if (key.empty() || key == kHoldTaintKey || (effect != "NoSchedule" && effect != "NoExecute"))
      continue;
    const std::string value = Str(Field(&t, "value"));
    out.push_back(value.empty() ? StrCat(key, ":", effect) : StrCat(key, "=", value, ":", effect));
  }
  return StrJoin(out, ",");
}

// A string attribute `name` of the device (unqualified: the driver's own domain, or
// "<driver>/<name>"); "" when not published.
std::string StringAttribute(const json& device, std::string_view driver, std::string_view name) {
  const json* attrs = Field(&device, "attributes");
  const json* a = Field(attrs, name);
  if (a == nullptr) a = Field(attrs, StrCat(driver, "/", name));
  return Str(Field(a, "string"));
}

// A GPU's PCI address: Kubernetes' standard attribute (k8s.io/dynamic-resource-allocation
// deviceattribute), which NVIDIA's driver publishes for every whole GPU, or the driver's own
// pcieBusID that its releases before the standard attribute published.
std::string PciBusId(const json& device, std::string_view driver) {
  std::string id = StringAttribute(device, driver, "resource.kubernetes.io/pciBusID");
  return id.empty() ? StringAttribute(device, driver, "pcieBusID") : id;
}

struct Pool {
  int64_t generation = -1;
  int64_t slice_count = 0;  // resourceSliceCount of the newest generation
  int64_t slices_seen = 0;  // of the newest generation
  std::vector<SliceDevice> devices;
  std::vector<std::string> problems;  // of the newest generation
};

void Skip(std::vector<std::string>* skipped, std::string reason) {
  if (skipped != nullptr) skipped->push_back(std::move(reason));
}

// FNV-1a, 64 bits: stable across builds and machines (std::hash is neither promised).
uint64_t Fnv1a(std::string_view a, std::string_view b) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(a);
  mix(std::string_view("\0", 1));
  mix(b);
  return h;
}

// A label value: at most 63 characters of [A-Za-z0-9._-], beginning and ending with an
// alphanumeric. Node names are DNS subdomains (up to 253): a longer one is cut and ended
// with its hash.
std::string LabelValue(std::string_view node) {
  if (node.size() <= 63) return std::string(node);
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(Fnv1a(node, "")));  // NOLINT(runtime/int)
  std::string v(node.substr(0, 63 - 17));
  while (!v.empty() && (v.back() == '-' || v.back() == '.')) v.pop_back();
  return StrCat(v, "-", hash);
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A container's request for `resource` (its limit when no request is set), or 0; nullopt
// when the value is not a whole number (extended resources are always whole).
std::optional<int64_t> ContainerRequest(const json& container, std::string_view resource) {
  const json* res = Field(&container, "resources");
  const json* v = Field(Field(res, "requests"), resource);
  if (v == nullptr) v = Field(Field(res, "limits"), resource);
  if (v == nullptr) return 0;
  if (v->is_string() && !IsDigits(v->get_ref<const std::string&>())) return std::nullopt;
  std::optional<int64_t> n = Int(v);
  if (!n || *n < 0) return std::nullopt;
  return n;
}

// The pod's effective request of `resource` as kube-scheduler counts it
// (k8s.io/component-helpers/resource PodRequests): containers and restartable init
// containers (sidecars) run together; each regular init container runs alone beside the
// sidecars started before it.
std::optional<int64_t> EffectiveRequest(const json& spec, std::string_view resource) {
  int64_t sum = 0;
  for (const json& c : Items(Field(&spec, "containers"))) {
    std::optional<int64_t> r = ContainerRequest(c, resource);
    if (!r) return std::nullopt;
    sum += *r;
  }
  int64_t sidecars = 0, init_peak = 0;
  for (const json& c : Items(Field(&spec, "initContainers"))) {
    std::optional<int64_t> r = ContainerRequest(c, resource);
    if (!r) return std::nullopt;
    if (Str(Field(&c, "restartPolicy")) == "Always") {
      sum += *r;
      sidecars += *r;
      init_peak = std::max(init_peak, sidecars);
    } else {
      init_peak = std::max(init_peak, *r + sidecars);
    }
  }
  return std::max(sum, init_peak);
}

// The extended resources longer than `prefix` and starting with it that a container or
// init container of `spec` asks for (a request or a limit).
std::set<std::string> ResourcesStarting(const json& spec, std::string_view prefix) {
  std::set<std::string> out;
  for (const char* list : {"containers", "initContainers"}) {
    for (const json& c : Items(Field(&spec, list))) {
      for (const char* kind : {"requests", "limits"}) {
        const json* m = Field(Field(&c, "resources"), kind);
        if (m == nullptr || !m->is_object()) continue;
        for (auto it = m->begin(); it != m->end(); ++it) {
          if (it.key().size() > prefix.size() && it.key().starts_with(prefix)) out.insert(it.key());
        }
      }
    }
  }
  return out;
}

// The pod's effective request (EffectiveRequest) of each extended resource `prefix` +
// profile it asks more than 0 of, by profile; empty when `prefix` is ""; nullopt when a
// request does not parse.
std::optional<std::map<std::string, int64_t>> MigSliceRequests(const json& spec,
                                                               std::string_view prefix) {
  std::map<std::string, int64_t> out;
  if (prefix.empty()) return out;
  for (const std::string& r : ResourcesStarting(spec, prefix)) {
    std::optional<int64_t> n = EffectiveRequest(spec, r);
    if (!n) return std::nullopt;
    if (*n > 0) out[r.substr(prefix.size())] = *n;
  }
  return out;
}

// A toleration as the API writes it (a pod's, or a device request's: the same fields).
Toleration TolerationOf(const json& t) {
  return {.key = Str(Field(&t, "key")),
          .op = Str(Field(&t, "operator")),
          .value = Str(Field(&t, "value")),
          .effect = Str(Field(&t, "effect"))};
}

// The single value a required node affinity allows for `key` ("In" with one value in every
// term that names the key, and every term naming it), or "".
std::string AffinityValue(const json& spec, std::string_view key) {
  const json* terms =
      Path(spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                  "nodeSelectorTerms"});
  std::string value;
  bool any = false;
  for (const json& term : Items(terms)) {
    std::string in_term;
    for (const json& e : Items(Field(&term, "matchExpressions"))) {
      if (Str(Field(&e, "key")) != key) continue;
      std::span<const json> values = Items(Field(&e, "values"));
      if (Str(Field(&e, "operator")) != "In" || values.size() != 1) return "";
      std::string v = Str(&values[0]);
      if (!in_term.empty() && in_term != v) return "";
      in_term = v;
    }
    // Terms are ORed: one without the key lets the pod onto any model.
    if (in_term.empty()) return "";
    if (any && in_term != value) return "";
    value = in_term;
    any = true;
  }
  return value;
}

}  // namespace

std::string SliceNodeOf(const json& slice, std::string_view driver) {
  const json* spec = Field(&slice, "spec");
  if (Str(Field(spec, "driver")) != driver) return "";
  std::string node = Str(Field(spec, "nodeName"));
  if (node.empty()) node = Str(Field(Field(spec, "pool"), "name"));
  return node;
}

std::map<std::string, std::vector<SliceDevice>> SlicesByNode(
    std::span<const json> slices, std::string_view driver, std::vector<std::string>* skipped,
    std::map<std::string, std::string>* unreadable) {
  std::map<std::string, Pool> pools;
  for (const json& s : slices) {
    const json* spec = Field(&s, "spec");
    if (Str(Field(spec, "driver")) != driver) continue;
    const std::string name = NameOf(s);
    const std::string node = SliceNodeOf(s, driver);
    const json* pool = Field(spec, "pool");
    if (node.empty()) {
      Skip(skipped, StrCat("ResourceSlice ", name, ": no spec.nodeName and no pool name"));
      continue;
    }
    const int64_t generation = Int(Field(pool, "generation")).value_or(0);
    const int64_t count = Int(Field(pool, "resourceSliceCount")).value_or(1);
    Pool& p = pools[node];
    if (generation < p.generation) continue;  // superseded by a newer publication
    if (generation > p.generation) p = Pool{.generation = generation, .slice_count = count};
    ++p.slices_seen;
    std::span<const json> devices = Items(Field(spec, "devices"));
    if (devices.empty()) {
      // A slice may legitimately carry only counters (partitionable devices); it adds nothing.
      Skip(skipped, StrCat("ResourceSlice ", name, " of node ", node, ": no devices"));
      continue;
    }
    for (const json& d : devices) {
      std::string dev = Str(Field(&d, "name"));
      if (dev.empty()) {
        Skip(skipped, StrCat("ResourceSlice ", name, " of node ", node, ": a device has no name"));
        continue;
      }
      for (const SliceDevice& seen : p.devices) {
        if (seen.name == dev) p.problems.push_back(StrCat("device ", dev, " is published twice"));
      }
      p.devices.push_back({.name = std::move(dev),
                           .minor = MinorAttribute(d, driver),
                           .type = StringAttribute(d, driver, "type"),
                           .uuid = StringAttribute(d, driver, "uuid"),
                           .profile = StringAttribute(d, driver, "profile"),
                           .pci_bus_id = PciBusId(d, driver),
                           .taint = DeviceTaints(d)});
    }
  }
  std::map<std::string, std::vector<SliceDevice>> out;
  for (auto& [node, p] : pools) {
    if (p.slices_seen < p.slice_count) {
      p.problems.push_back(StrCat("pool generation ", p.generation, " has ", p.slices_seen, " of ",
                                  p.slice_count, " slices (the driver is still publishing)"));
    }
    if (!p.problems.empty()) {
      for (const std::string& why : p.problems) Skip(skipped, StrCat("node ", node, ": ", why));
      if (unreadable != nullptr) (*unreadable)[node] = StrJoin(p.problems, "; ");
      continue;
    }
    if (!p.devices.empty()) out[node] = std::move(p.devices);
  }
  return out;
}

std::map<std::string, std::vector<Claim>> ClaimsByNode(std::span<const json> claims,
                                                       std::string_view driver) {
  std::map<std::string, std::vector<Claim>> out;
  for (const json& c : claims) {
    const json* status = Field(&c, "status");
    const json* results = Path(c, {"status", "allocation", "devices", "results"});
    if (results == nullptr) continue;
    std::string pod;
    for (const json& r : Items(Field(status, "reservedFor"))) {
      const std::string group = Str(Field(&r, "apiGroup"));
      if (Str(Field(&r, "resource")) == "pods" && group.empty()) {
        pod = StrCat(Str(Path(c, {"metadata", "namespace"})), "/", Str(Field(&r, "name")));
        break;
      }
    }
    if (pod.empty()) pod = NamespacedName(c);
    std::map<std::string, Claim> by_node;
    for (const json& r : Items(results)) {
      if (Str(Field(&r, "driver")) != driver) continue;
      const json* admin = Field(&r, "adminAccess");
      if (admin != nullptr && admin->is_boolean() && admin->get<bool>()) continue;
      std::string node = Str(Field(&r, "pool"));
      std::string device = Str(Field(&r, "device"));
      if (node.empty() || device.empty()) continue;
      Claim& claim = by_node[node];
      claim.pod = pod;
      claim.allocated = true;
      if (std::find(claim.devices.begin(), claim.devices.end(), device) == claim.devices.end())
        claim.devices.push_back(std::move(device));
    }
    for (auto& [node, claim] : by_node) out[node].push_back(std::move(claim));
  }
  return out;
}

namespace {

// "<prefix><node>.<device>" (device names are DNS labels, so the last dot separates them), a
// DNS-1123 subdomain; when longer than 253 characters, cut and ended with a hash of node and
// device, so it stays stable and distinct.
std::string RuleName(std::string_view prefix, std::string_view node, std::string_view device) {
  std::string name = StrCat(prefix, node, ".", device);
  // Object names are lower case; node names are already (DNS subdomains), device names too
  // (DNS labels), but a rule must never fail on a name it did not choose.
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (name.size() <= 253) return name;
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(Fnv1a(node, device)));  // NOLINT(runtime/int)
  name.resize(253 - 17);
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  return StrCat(name, "-", hash);
}

// A DeviceTaintRule `name` with `labels` (the bridge's, and its node's) that taints one
// device (driver, pool, device) with `taint_key`=`taint_value`, NoSchedule: an allocated claim
// is not disturbed, nothing is evicted.
json OneDeviceRule(std::string name, std::string_view node, json labels, std::string_view driver,
                   std::string_view pool, std::string_view device, std::string_view taint_key,
                   std::string_view taint_value) {
  labels[ownership::kManagedByLabel] = kManagedByValue;
  labels[kHoldNodeLabel] = LabelValue(node);
  return json{
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "DeviceTaintRule"},
      {"metadata", {{"name", std::move(name)}, {"labels", std::move(labels)}}},
      {"spec",
       {{"deviceSelector", {{"driver", driver}, {"pool", pool}, {"device", device}}},
        {"taint", {{"key", taint_key}, {"value", taint_value}, {"effect", "NoSchedule"}}}}}};
}

}  // namespace

std::string HoldRuleName(std::string_view node, std::string_view device) {
  return RuleName("slurm-hold.", node, device);
}

json HoldRule(std::string_view node, std::string_view device, std::string_view driver) {
  return OneDeviceRule(HoldRuleName(node, device), node, json::object(), driver, node, device,
                       kHoldTaintKey, kHoldTaintValue);
}

namespace {

// The one device `rule` taints with `taint_key` (NoSchedule or NoExecute, the effects
// kube-scheduler honours), its selector exactly a driver, a pool and a device (anything else
// narrows it: it may then match no device).
bool TaintsOneDevice(const json& rule, std::string_view taint_key, std::string* pool,
                     std::string* device) {
  const json* sel = Path(rule, {"spec", "deviceSelector"});
  const json* taint = Path(rule, {"spec", "taint"});
  if (sel == nullptr || !sel->is_object() || taint == nullptr || !taint->is_object()) return false;
  std::string p = Str(Field(sel, "pool"));
  std::string d = Str(Field(sel, "device"));
  if (p.empty() || d.empty() || Str(Field(sel, "driver")).empty()) return false;
  for (const auto& [key, value] : sel->items()) {
    if (key != "driver" && key != "pool" && key != "device" && !value.is_null()) return false;
  }
  const std::string effect = Str(Field(taint, "effect"));
  if (Str(Field(taint, "key")) != taint_key || (effect != "NoSchedule" && effect != "NoExecute")) {
    return false;
  }
  *pool = std::move(p);
  *device = std::move(d);
  return true;
}

}  // namespace

bool IsHoldRule(const json& rule, std::string* pool, std::string* device) {
  return Str(Path(rule, {"metadata", "labels", ownership::kManagedByLabel})) == kManagedByValue &&
         TaintsOneDevice(rule, kHoldTaintKey, pool, device);
}

std::string DrainRuleName(std::string_view node, std::string_view device) {
  return RuleName(kDrainRulePrefix, node, device);
}

json DrainRule(std::string_view node, std::string_view device, std::string_view driver,
               std::string_view pool, std::string_view reason) {
  json rule = OneDeviceRule(DrainRuleName(node, device), node, {{kDrainedByLabel, "bridgectl"}},
                            driver, pool, device, kDrainTaintKey, "true");
  rule["metadata"]["annotations"] = {{kDrainReasonAnnotation, reason}};
  return rule;
}

bool IsDrainRule(const json& rule, std::string* pool, std::string* device, std::string* reason) {
  if (!Str(Path(rule, {"metadata", "name"})).starts_with(kDrainRulePrefix) ||
      !TaintsOneDevice(rule, kDrainTaintKey, pool, device)) {
    return false;
  }
  *reason = Str(Path(rule, {"metadata", "annotations", kDrainReasonAnnotation}));
  return true;
}

std::map<std::string, std::map<std::string, std::string>> DrainedDevices(
    std::span<const json> rules) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const json& r : rules) {
    std::string pool, device, reason;
    if (IsDrainRule(r, &pool, &device, &reason)) out[pool][device] = std::move(reason);
  }
  return out;
}

std::map<std::string, std::set<std::string>> HeldDevices(std::span<const json> rules) {
  std::map<std::string, std::set<std::string>> out;
  for (const json& r : rules) {
    std::string pool, device;
    if (IsHoldRule(r, &pool, &device)) out[pool].insert(std::move(device));
  }
  return out;
}

std::string MigProfileOf(const json& request) {
  std::set<std::string> profiles;
  for (const json& sel : Items(Field(&request, "selectors"))) {
    const std::string e = Str(Path(sel, {"cel", "expression"}));
    // Only a conjunction says what every matching device is.
    if (e.find("||") != std::string::npos) continue;
    static const std::regex kProfile(
        R"re(device\.attributes\[\s*['"][A-Za-z0-9.\-]+['"]\s*\]\s*\.\s*profile\s*==\s*['"]([A-Za-z0-9.+\-]+)['"])re");
    for (auto it = std::sregex_iterator(e.begin(), e.end(), kProfile); it != std::sregex_iterator();
         ++it) {
      profiles.insert((*it)[1].str());
    }
  }
  return profiles.size() == 1 ? *profiles.begin() : "";
}

ClaimDemand GpuDemandOf(const json& claim, const std::set<std::string, std::less<>>& classes,
                        const std::set<std::string, std::less<>>& mig_classes) {
  ClaimDemand d;
  d.allocated = Path(claim, {"status", "allocation"}) != nullptr;
  const auto ours = [&](const json* r) {
    const std::string c = Str(Field(r, "deviceClassName"));
    return classes.contains(c) || mig_classes.contains(c);
  };
  bool whole = false;
  for (const json& r : Items(Path(claim, {"spec", "devices", "requests"}))) {
    const std::string name = Str(Field(&r, "name"));
    const json* one = Field(&r, "exactly");
    if (one == nullptr) {
      for (const json& alt : Items(Field(&r, "firstAvailable"))) {
        if (ours(&alt)) {
          one = &alt;
          break;
        }
      }
    }
    if (one == nullptr || !ours(one)) continue;
    if (const json* admin = Field(one, "adminAccess");
        admin != nullptr && admin->is_boolean() && admin->get<bool>()) {
      continue;
    }
    for (const json& t : Items(Field(one, "tolerations"))) {
      if (Tolerates(TolerationOf(t),
                    inventory::Taint{
                        .key = kHoldTaintKey, .value = kHoldTaintValue, .effect = "NoSchedule"})) {
        d.unknown = StrCat("request ", name, " tolerates the bridge's device taint ", kHoldTaintKey,
                           ", so it may be given GPUs Slurm holds");
        return d;
      }
    }
    const std::string mode = Str(Field(one, "allocationMode"));
    if (mode == "All") {
      d.unknown = StrCat("request ", name,
                         " asks for every device of its class on a node (allocationMode All)");
      return d;
    }
    if (!mode.empty() && mode != "ExactCount") {
      d.unknown = StrCat("request ", name, " has allocationMode '", mode, "'");
      return d;
    }
    std::optional<int64_t> count = Int(Field(one, "count"));
    if (Field(one, "count") == nullptr) count = 1;
    if (!count || *count < 1) {
      d.unknown = StrCat("request ", name, " has no valid count");
      return d;
    }
    const std::string cls = Str(Field(one, "deviceClassName"));
    if (mig_classes.contains(cls)) {
      const std::string profile = MigProfileOf(*one);
      if (profile.empty()) {
        d.unknown = StrCat("request ", name, " asks for MIG slices (", cls,
                           ") of no single profile its CEL selectors name (device.attributes"
                           "['<driver>'].profile == '<profile>')");
        return d;
      }
      if ((!d.profile.empty() && d.profile != profile) || whole) {
        d.unknown = StrCat("request ", name, " asks for ", profile,
                           " slices beside other GPUs: a give frees one kind of device");
        return d;
      }
      d.profile = profile;
    } else {
      if (!d.profile.empty()) {
        d.unknown = StrCat("request ", name, " asks for whole GPUs beside ", d.profile,
                           " slices: a give frees one kind of device");
        return d;
      }
      whole = true;
    }
    d.gpus += *count;
  }
  return d;
}

ClaimDemand QuotaGpusOf(const json& claim, const std::set<std::string, std::less<>>& classes,
                        std::string_view driver,
                        const std::set<std::string, std::less<>>& mig_classes) {
  if (Path(claim, {"status", "allocation"}) == nullptr) {
    return GpuDemandOf(claim, classes, mig_classes);
  }
  ClaimDemand d{.allocated = true};
  for (const auto& [node, claims] : ClaimsByNode(std::span<const json>(&claim, 1), driver)) {
    for (const Claim& c : claims) d.gpus += static_cast<int64_t>(c.devices.size());
  }
  return d;
}

PodClaims ClaimsOfPod(const json& pod) {
  PodClaims out;
  const std::string ns = Str(Path(pod, {"metadata", "namespace"}));
  std::map<std::string, const json*> statuses;  // pod claim name -> its status entry
  for (const json& s : Items(Path(pod, {"status", "resourceClaimStatuses"}))) {
    statuses[Str(Field(&s, "name"))] = &s;
  }
  for (const json& c : Items(Path(pod, {"spec", "resourceClaims"}))) {
    if (std::string claim = Str(Field(&c, "resourceClaimName")); !claim.empty()) {
      out.claims.push_back(StrCat(ns, "/", claim));
      continue;
    }
    if (Str(Field(&c, "resourceClaimTemplateName")).empty()) continue;
    auto it = statuses.find(Str(Field(&c, "name")));
    if (it == statuses.end()) {
      ++out.unresolved;
      continue;
    }
    // A recorded entry without a name: the controller decided no claim is needed.
    if (std::string claim = Str(Field(it->second, "resourceClaimName")); !claim.empty()) {
      out.claims.push_back(StrCat(ns, "/", claim));
    }
  }
  return out;
}

std::optional<PendingPod> CountGpus(const PendingCandidate& candidate,
                                    const std::map<std::string, ClaimDemand>& claims,
                                    std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<PendingPod> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  if (!candidate.unknown.empty()) return fail(candidate.unknown);
  PendingPod p = candidate.pod;
  if (candidate.claims.unresolved > 0) return std::nullopt;
  for (const std::string& key : candidate.claims.claims) {
    auto it = claims.find(key);
    if (it == claims.end()) return std::nullopt;
    if (!it->second.unknown.empty())
      return fail(StrCat("ResourceClaim ", key, ": ", it->second.unknown));
    if (it->second.allocated) continue;
    const std::string& profile = it->second.profile;
    if (it->second.gpus > 0 && p.gpus > 0 && profile != p.profile) {
      return fail(StrCat(
          "ResourceClaim ", key, " asks for ",
          profile.empty() ? std::string("whole GPUs") : StrCat(profile, " slices"), " beside ",
          p.profile.empty() ? std::string("whole GPUs") : StrCat(p.profile, " slices"),
          ": a give frees one kind of device"));
    }
    if (it->second.gpus > 0) p.profile = profile;
    p.gpus += it->second.gpus;
    p.claim_gpus += it->second.gpus;
  }
  if (p.gpus <= 0) return std::nullopt;
  return p;
}

bool MayUseGpus(const json& pod, std::string_view extended_resource, std::string_view mig_prefix) {
  const json* spec = Field(&pod, "spec");
  if (!Items(Field(spec, "resourceClaims")).empty()) return true;
  if (spec == nullptr) return false;
  std::optional<int64_t> gpus = EffectiveRequest(*spec, extended_resource);
  if (!gpus || *gpus > 0) return true;  // a request that does not parse: assume it may
  std::optional<std::map<std::string, int64_t>> slices = MigSliceRequests(*spec, mig_prefix);
  return !slices || !slices->empty();
}

std::optional<PendingPod> PendingGpuPod(const json& pod, std::string_view extended_resource,
                                        int32_t threshold,
                                        const std::map<std::string, ClaimDemand>& claims,
                                        std::string_view mig_prefix) {
  std::optional<PendingCandidate> c =
      PendingCandidateOf(pod, extended_resource, threshold, mig_prefix);
  if (!c) return std::nullopt;
  return CountGpus(*c, claims);
}

std::optional<PendingCandidate> PendingCandidateOf(const json& pod,
                                                   std::string_view extended_resource,
                                                   int32_t threshold, std::string_view mig_prefix) {
  const json* spec = Field(&pod, "spec");
  if (spec == nullptr || !spec->is_object()) return std::nullopt;
  if (Path(pod, {"metadata", "deletionTimestamp"}) != nullptr) return std::nullopt;
  if (!Str(Field(spec, "nodeName")).empty()) return std::nullopt;
  const std::string phase = Str(Path(pod, {"status", "phase"}));
  if (!phase.empty() && phase != "Pending") return std::nullopt;
  bool unschedulable = false;
  for (const json& c : Items(Path(pod, {"status", "conditions"}))) {
    if (Str(Field(&c, "type")) != "PodScheduled") continue;
    unschedulable =
        Str(Field(&c, "status")) == "False" && Str(Field(&c, "reason")) == "Unschedulable";
  }
  if (!unschedulable) return std::nullopt;
  const int64_t priority = Int(Field(spec, "priority")).value_or(0);
  if (priority < threshold) return std::nullopt;
  std::optional<int64_t> gpus = EffectiveRequest(*spec, extended_resource);
  if (!gpus) return std::nullopt;
  // MIG slices through per-profile extended resources: one kind of device per give.
  std::optional<std::map<std::string, int64_t>> slices = MigSliceRequests(*spec, mig_prefix);
  if (!slices) return std::nullopt;
  std::string profile, unknown;
  if (!slices->empty() && *gpus > 0) {
    unknown = StrCat("its extended resources ask for ", mig_prefix, slices->begin()->first,
                     " slices beside whole GPUs (", extended_resource,
                     "): a give frees one kind of device");
  } else if (slices->size() > 1) {
    unknown = StrCat("its extended resources ask for slices of two profiles (", mig_prefix,
                     slices->begin()->first, ", ", mig_prefix, std::next(slices->begin())->first,
                     "): a give frees one kind of device");
  } else if (!slices->empty()) {
    profile = slices->begin()->first;
    gpus = slices->begin()->second;
  }
  PodClaims claims = ClaimsOfPod(pod);
  if (*gpus <= 0 && claims.empty() && unknown.empty()) return std::nullopt;

  PendingCandidate c{.pod = {.pod = NamespacedName(pod),
                             .gpus = *gpus,
                             .priority = static_cast<int32_t>(priority),
                             .profile = profile},
                     .claims = std::move(claims),
                     .unknown = std::move(unknown)};
  c.pod.model = RequestedGpuModel(pod);
  c.pod.placement = PlacementOf(pod);
  return c;
}

std::string RequestedGpuModel(const json& pod) {
  const json* spec = Field(&pod, "spec");
  if (spec == nullptr) return "";
  std::string model = Str(Field(Field(spec, "nodeSelector"), kGpuProductLabel));
  return model.empty() ? AffinityValue(*spec, kGpuProductLabel) : model;
}

NodePlacement PlacementOf(const json& pod) {
  NodePlacement p;
  const json* spec = Field(&pod, "spec");
  if (spec == nullptr) return p;
  if (const json* sel = Field(spec, "nodeSelector"); sel != nullptr && sel->is_object()) {
    for (auto it = sel->begin(); it != sel->end(); ++it) {
      if (it.value().is_string()) p.node_selector[it.key()] = it.value().get<std::string>();
    }
  }
  const json* terms =
      Path(*spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                   "nodeSelectorTerms"});
  for (const json& term : Items(terms)) {
    std::vector<NodeSelectorRequirement> reqs;
    for (const char* kind : {"matchExpressions", "matchFields"}) {
      for (const json& e : Items(Field(&term, kind))) {
        NodeSelectorRequirement r{.key = Str(Field(&e, "key")),
                                  .op = Str(Field(&e, "operator")),
                                  .field = std::string_view(kind) == "matchFields"};
        for (const json& v : Items(Field(&e, "values"))) r.values.push_back(Str(&v));
        reqs.push_back(std::move(r));
      }
    }
    p.terms.push_back(std::move(reqs));
  }
  for (const json& t : Items(Field(spec, "tolerations"))) p.tolerations.push_back(TolerationOf(t));
  return p;
}

}  // namespace skb::devices
