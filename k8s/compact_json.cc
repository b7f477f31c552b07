// SPDX-License-Identifier: Apache-2.0
#include "k8s/compact_json.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace skb::k8s {
namespace {

using nlohmann::json;

// Value tags. Bytes 0x40-0x7F are the integers 0-63; bytes 0x80-0xFF are dictionary strings.
enum Tag : uint8_t {
  kNull = 0,
  kFalse = 1,
  kTrue = 2,
  kInt = 3,     // zigzag LEB128
  kUint = 4,    // LEB128 (above INT64_MAX only)
  kDouble = 5,  // 8 bytes, host order
  kString = 6,  // LEB128 length, bytes
  kArray = 7,   // LEB128 count, values
  kObject = 8,  // LEB128 count, (key string, value) pairs in key order
};
constexpr uint8_t kSmallInt = 0x40;
constexpr uint8_t kDict = 0x80;

// Strings common in Kubernetes objects, one byte each. Generic vocabulary only (field names
// the typed views read, API values, well-known label and annotation keys); the order is part
// of the in-memory format of this process only.
constexpr auto kDictionary = std::to_array<std::string_view>(
    {// Field names.
     "metadata", "name", "namespace", "uid", "resourceVersion", "creationTimestamp",
     "deletionTimestamp", "labels", "annotations", "finalizers", "ownerReferences", "apiVersion",
     "kind", "controller", "blockOwnerDeletion", "spec", "nodeName", "schedulerName", "priority",
     "priorityClassName", "terminationGracePeriodSeconds", "containers", "initContainers",
     "resources", "requests", "limits", "status", "phase", "nominatedNodeName", "conditions",
     "startTime", "type", "reason", "message", "lastTransitionTime", "unschedulable", "taints",
     "key", "value", "effect", "timeAdded", "capacity", "allocatable",
     // Resource names.
     "cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu",
     // Values.
     "True", "False", "Unknown", "Running", "Pending", "Succeeded", "Failed", "NoSchedule",
     "PreferNoSchedule", "NoExecute", "Ready", "MemoryPressure", "DiskPressure", "PIDPressure",
     "NetworkUnavailable", "PodScheduled", "Initialized", "ContainersReady",
     "PodReadyToStartContainers", "DisruptionTarget", "KubeletReady", "KubeletNotReady",
     "KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID",
     "kubelet has sufficient memory available", "kubelet has no disk pressure",
     "kubelet has sufficient PID available", "kubelet is posting ready status", "default-scheduler",
     "v1", "apps/v1", "batch/v1", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "Node", "true",
     "false", "amd64", "arm64", "linux",
     // Well-known label and annotation keys.
     "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/arch",
     "beta.kubernetes.io/os", "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
     "topology.kubernetes.io/region", "node-role.kubernetes.io/control-plane",
     "node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready",
     "node.kubernetes.io/unreachable", "app.kubernetes.io/name", "app.kubernetes.io/instance",
     "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
     "app.kubernetes.io/version", "pod-template-hash", "controller-revision-hash",
     "pod-template-generation", "statefulset.kubernetes.io/pod-name",
     "batch.kubernetes.io/job-name", "batch.kubernetes.io/controller-uid", "job-name",
     "controller-uid", "node.alpha.kubernetes.io/ttl",
     "volumes.kubernetes.io/controller-managed-attach-detach", "kubectl.kubernetes.io/restartedAt",
     "kubectl.kubernetes.io/default-container", "prometheus.io/scrape", "prometheus.io/port",
     "prometheus.io/path", "nvidia.com/gpu.product", "nvidia.com/gpu.count",
     "nvidia.com/gpu.memory", "nvidia.com/gpu.present"});
static_assert(kDictionary.size() <= 128, "one byte per dictionary string");
static_assert(std::all_of(kDictionary.begin(), kDictionary.end(),
                          [](std::string_view d) { return !d.empty() && d.size() <= 64; }));

// Dictionary entries by length: a lookup compares a handful of same-length candidates
// (cheaper than hashing every string).
constexpr size_t kMaxDictLength = 64;
const std::array<std::vector<uint8_t>, kMaxDictLength + 1>& DictionaryByLength() {
  static const auto* index = [] {
    auto* by_length = new std::array<std::vector<uint8_t>, kMaxDictLength + 1>();
    for (size_t i = 0; i < kDictionary.size(); ++i) {
      (*by_length)[kDictionary[i].size()].push_back(static_cast<uint8_t>(i));
    }
    return by_length;
  }();
  return *index;
}

// The dictionary index of `s`, or -1.
int DictionaryIndex(std::string_view s) {
  if (s.empty() || s.size() > kMaxDictLength) return -1;
  for (uint8_t i : DictionaryByLength()[s.size()]) {
    const std::string_view d = kDictionary[i];
    if (d[0] == s[0] && std::memcmp(d.data(), s.data(), s.size()) == 0) return i;
  }
  return -1;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(0x80 | (v & 0x7F)));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutString(std::string* out, std::string_view s) {
  if (const int i = DictionaryIndex(s); i >= 0) {
    out->push_back(static_cast<char>(kDict | i));
    return;
  }
  out->push_back(static_cast<char>(kString));
  PutVarint(out, s.size());
  out->append(s);
}

void PutValue(std::string* out, const json& v) {
  switch (v.type()) {
    case json::value_t::boolean:
      out->push_back(static_cast<char>(v.get<bool>() ? kTrue : kFalse));
      return;
    case json::value_t::number_integer: {
      const int64_t i = v.get<int64_t>();
      if (i >= 0 && i < 64) {
        out->push_back(static_cast<char>(kSmallInt | i));
        return;
      }
      out->push_back(static_cast<char>(kInt));
      PutVarint(out, (static_cast<uint64_t>(i) << 1) ^ static_cast<uint64_t>(i >> 63));
      return;
    }
    case json::value_t::number_unsigned: {
      // The decoders produce unsigned only above INT64_MAX; keep the type as it was.
      out->push_back(static_cast<char>(kUint));
      PutVarint(out, v.get<uint64_t>());
      return;
    }
    case json::value_t::number_float: {
      const double d = v.get<double>();
      char bytes[sizeof d];
      std::memcpy(bytes, &d, sizeof d);
      out->push_back(static_cast<char>(kDouble));
      out->append(bytes, sizeof d);
      return;
    }
    case json::value_t::string:
      PutString(out, v.get_ref<const std::string&>());
      return;
    case json::value_t::array:
      out->push_back(static_cast<char>(kArray));
      PutVarint(out, v.size());
      for (const json& e : v) PutValue(out, e);
      return;
    case json::value_t::object:
      out->push_back(static_cast<char>(kObject));
      PutVarint(out, v.size());
      for (const auto& [key, e] : v.get_ref<const json::object_t&>()) {
        PutString(out, key);
        PutValue(out, e);
      }
      return;
    case json::value_t::null:
    case json::value_t::binary:
    case json::value_t::discarded:
      out->push_back(static_cast<char>(kNull));
      return;
  }
}

// Reads an encoding this file wrote: trusted, so no bounds checks.
class Reader {
 public:
  explicit Reader(const uint8_t* p) : p_(p) {}

  uint8_t Peek() const { return *p_; }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (b < 0x80) return v;
    }
  }

  // A string value or key (the tag at p_ is kString or a dictionary byte).
  std::string_view String() {
    const uint8_t tag = *p_++;
    if (tag >= kDict) return kDictionary[tag - kDict];
    const size_t n = Varint();
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }

  // At an object: moves to the value of `key`. False when this is not an object or it has
  // no such key.
  bool FindKey(std::string_view key) {
    if (Peek() != kObject) return false;
    ++p_;
    for (uint64_t n = Varint(); n > 0; --n) {
      if (String() == key) return true;
      Skip();
    }
    return false;
  }

  void Skip() {
    const uint8_t tag = Peek();
    if (tag >= kSmallInt && tag < kDict) {
      ++p_;
      return;
    }
    if (tag == kString || tag >= kDict) {
      String();
      return;
    }
    ++p_;
    switch (tag) {
      case kInt:
      case kUint:
        Varint();
        return;
      case kDouble:
        p_ += sizeof(double);
        return;
      case kArray:
        for (uint64_t n = Varint(); n > 0; --n) Skip();
        return;
      case kObject:
        for (uint64_t n = Varint(); n > 0; --n) {
          String();
          Skip();
        }
        return;
      default:
        return;
    }
  }

  json Value() {
    const uint8_t tag = Peek();
    if (tag >= kSmallInt && tag < kDict) {
      ++p_;
      return json(static_cast<int64_t>(tag - kSmallInt));
    }
    if (tag == kString || tag >= kDict) return json(std::string(String()));
    ++p_;
    switch (tag) {
      case kFalse:
        return json(false);
      case kTrue:
        return json(true);
      case kInt: {
        const uint64_t z = Varint();
        return json(static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1)));
      }
      case kUint:
        return json(Varint());
      case kDouble: {
        double d;
        std::memcpy(&d, p_, sizeof d);
        p_ += sizeof d;
        return json(d);
      }
      case kArray: {
        json arr = json::array();
        auto& a = arr.get_ref<json::array_t&>();
        const uint64_t n = Varint();
        a.reserve(n);
        for (uint64_t i = 0; i < n; ++i) a.push_back(Value());
        return arr;
      }
      case kObject: {
        json obj = json::object();
        auto& o = obj.get_ref<json::object_t&>();
        for (uint64_t n = Varint(); n > 0; --n) {
          std::string key(String());
          o.emplace_hint(o.end(), std::move(key), Value());
        }
        return obj;
      }
      default:
        return json(nullptr);
    }
  }

 private:
  const uint8_t* p_;
};

}  // namespace

CompactJson CompactJson::Encode(const json& value) {
  std::string buf;
  buf.reserve(512);
  PutValue(&buf, value);
  CompactJson c;
  c.size_ = static_cast<uint32_t>(buf.size());
  c.data_ = std::make_unique_for_overwrite<uint8_t[]>(buf.size());
  std::memcpy(c.data_.get(), buf.data(), buf.size());
  return c;
}

CompactJson CompactJson::Copy() const {
  CompactJson c;
  c.size_ = size_;
  if (data_ != nullptr) {
    c.data_ = std::make_unique_for_overwrite<uint8_t[]>(size_);
    std::memcpy(c.data_.get(), data_.get(), size_);
  }
  return c;
}

json CompactJson::Decode() const {
  if (data_ == nullptr) return json(nullptr);
  return Reader(data_.get()).Value();
}

std::string_view CompactJson::StringAt(std::initializer_list<std::string_view> path) const {
  if (data_ == nullptr) return {};
  Reader r(data_.get());
  for (std::string_view step : path) {
    if (!r.FindKey(step)) return {};
  }
  const uint8_t tag = r.Peek();
  return tag == kString || tag >= kDict ? r.String() : std::string_view();
}

bool operator==(const CompactJson& a, const CompactJson& b) {
  return a.size_ == b.size_ &&
         (a.size_ == 0 || std::memcmp(a.data_.get(), b.data_.get(), a.size_) == 0);
}

}  // namespace skb::k8s
