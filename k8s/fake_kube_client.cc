// SPDX-License-Identifier: Apache-2.0
#include "k8s/fake_kube_client.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "k8s/api_error.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

Status ApiStatus(std::string_view what, int code, const std::string& reason,
                 const std::string& message) {
  return ApiError(
      what, code,
      json({{"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", message}}).dump(),
      "");
}

std::string MetaString(const json& obj, const char* field) {
  if (!obj.is_object()) return "";
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  auto v = md->find(field);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

int64_t ParseRv(const std::string& rv) {
  if (rv.empty()) return -1;
  try {
    return std::stoll(rv);
  } catch (...) {
    return -2;
  }
}

// `k=v,k2=v2` and `!k` (no such label) only; an unsupported selector is an error rather
// than a silent match-all.
StatusOr<bool> Matches(const json& obj, const ListOptions& o) {
  for (std::string_view term : StrSplit(o.label_selector, ',', true)) {
    term = StripWhitespace(term);
    if (term.starts_with('!') && term.find('=') == std::string_view::npos) {
      const std::string key(StripWhitespace(term.substr(1)));
      if (obj.contains("metadata") && obj["metadata"].contains("labels") &&
          obj["metadata"]["labels"].is_object() && obj["metadata"]["labels"].contains(key)) {
        return false;
      }
      continue;
    }
    size_t eq = term.find('=');
    if (eq == std::string_view::npos || term.find("!=") != std::string_view::npos) {
      return InvalidArgumentError(
          StrCat("fake client: unsupported label selector '", o.label_selector, "'"));
    }
    std::string key(StripWhitespace(term.substr(0, eq)));
    std::string value(StripWhitespace(term.substr(eq + 1)));
    const json* labels = nullptr;
    if (obj.contains("metadata") && obj["metadata"].contains("labels"))
      labels = &obj["metadata"]["labels"];
    if (labels == nullptr || !labels->is_object() ||
        labels->value(key, std::string("\x01")) != value)
      return false;
  }
  // The fields the apiserver selects pods and nodes on that the bridge uses, with =, == and
  // != (a missing field reads as ""); any other field is an error, as the apiserver's is.
  for (std::string_view term : StrSplit(o.field_selector, ',', true)) {
    bool negate = false;
    size_t op = term.find("!=");
    size_t value_at = 0;
    if (op != std::string_view::npos) {
      negate = true;
      value_at = op + 2;
    } else if (op = term.find("=="); op != std::string_view::npos) {
      value_at = op + 2;
    } else if (op = term.find('='); op != std::string_view::npos) {
      value_at = op + 1;
    } else {
      op = value_at = term.size();
    }
    const std::string field(StripWhitespace(term.substr(0, op)));
    const std::string value(StripWhitespace(term.substr(value_at)));
    std::string actual;
    if (field == "metadata.name" || field == "metadata.namespace") {
      actual = MetaString(obj, field == "metadata.name" ? "name" : "namespace");
    } else if (field == "spec.nodeName" || field == "status.phase") {
      const size_t dot = field.find('.');
      const json* parent =
          obj.contains(field.substr(0, dot)) ? &obj[field.substr(0, dot)] : nullptr;
      if (parent != nullptr && parent->is_object()) {
        actual = parent->value(field.substr(dot + 1), std::string());
      }
    } else {
      return InvalidArgumentError(
          StrCat("fake client: unsupported field selector '", o.field_selector, "'"));
    }
    if ((actual == value) == negate) return false;
  }
  return true;
}

// The merge key of the lists of the built-in types that a strategic merge patch merges item
// by item (the patchMergeKey of their Go fields); any other list is replaced whole, as an
// atomic list is.
const char* MergeKeyOf(const std::string& field) {
  static const std::map<std::string, const char*> keys = {
      {"conditions", "type"},        {"addresses", "type"},      {"containers", "name"},
      {"initContainers", "name"},    {"volumes", "name"},        {"env", "name"},
      {"volumeMounts", "mountPath"}, {"ownerReferences", "uid"}, {"imagePullSecrets", "name"},
  };
  auto it = keys.find(field);
  return it == keys.end() ? nullptr : it->second;
}

// A strategic merge patch as the apiserver applies it to the built-in types the bridge
// patches: objects merge, null deletes, lists with a merge key merge item by item
// (`$patch: delete` on an item removes it), `finalizers` merge as a set, other lists and
// values are replaced.
void StrategicMerge(json* target, const json& patch) {
  if (!patch.is_object()) {
    *target = patch;
    return;
  }
  if (!target->is_object()) *target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    const json& value = it.value();
    if (key.rfind('$', 0) == 0) continue;  // directives ($setElementOrder, $retainKeys)
    if (value.is_null()) {
      target->erase(key);
      continue;
    }
    json& current = (*target)[key];
    const char* merge_key = MergeKeyOf(key);
    if (value.is_array() && current.is_array() && merge_key != nullptr) {
      for (const json& item : value) {
        if (!item.is_object() || !item.contains(merge_key)) {
          current.push_back(item);
          continue;
        }
        auto same = std::find_if(current.begin(), current.end(), [&](const json& c) {
          return c.is_object() && c.contains(merge_key) && c[merge_key] == item[merge_key];
        });
        const bool remove = item.value("$patch", "") == "delete";
        if (same == current.end()) {
          if (!remove) current.push_back(item);
        } else if (remove) {
          current.erase(same);
        } else {
          StrategicMerge(&*same, item);
        }
      }
    } else if (value.is_array() && current.is_array() && key == "finalizers") {
      for (const json& f : value) {
        if (std::find(current.begin(), current.end(), f) == current.end()) current.push_back(f);
      }
    } else if (value.is_object()) {
      StrategicMerge(&current, value);
    } else {
      current = value;
    }
  }
}

}  // namespace

std::string FakeKubeClient::Key(const Resource& r, const std::string& ns,
                                const std::string& name) const {
  return StrCat(r.Name(), "|", r.namespaced ? ns : "", "|", name);
}

Status FakeKubeClient::TakeInjectedFailure() {
  if (fail_calls_ <= 0) return OkStatus();
  --fail_calls_;
  return fail_status_;
}

namespace {

bool HasFinalizers(const json& object) {
  const json& meta = object["metadata"];
  auto f = meta.find("finalizers");
  return f != meta.end() && f->is_array() && !f->empty();
}

}  // namespace

json FakeKubeClient::Store(const Resource& r, const std::string& ns, json object,
                           WatchEvent::Type type) {
  // As the apiserver: an object being deleted goes when its last finalizer does.
  if (type == WatchEvent::Type::kModified && object["metadata"].contains("deletionTimestamp") &&
      !HasFinalizers(object)) {
    type = WatchEvent::Type::kDeleted;
  }
  ++rv_;
  object["metadata"]["resourceVersion"] = StrCat(rv_);
  if (r.namespaced) object["metadata"]["namespace"] = ns;
  const std::string name = MetaString(object, "name");
  json previous;  // null when the object is new
  if (auto it = objects_.find(Key(r, ns, name)); it != objects_.end()) previous = it->second;
  if (type == WatchEvent::Type::kDeleted) {
    objects_.erase(Key(r, ns, name));
  } else {
    objects_[Key(r, ns, name)] = object;
  }
  history_.push_back({r.Name(), r.namespaced ? ns : "", type, object, rv_, std::move(previous)});
  if (history_.size() > 10000) history_.pop_front();
  changed_.notify_all();
  return object;
}

StatusOr<json> FakeKubeClient::Get(const Resource& r, const std::string& ns,
                                   const std::string& name, const std::string&) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(Key(r, ns, name));
  if (it == objects_.end()) {
    return ApiStatus(StrCat("GET ", r.Name(), "/", name), 404, "NotFound",
                     StrCat(r.resource, " \"", name, "\" not found"));
  }
  return it->second;
}

StatusOr<ListResult> FakeKubeClient::List(const Resource& r, const std::string& ns,
                                          const ListOptions& options) {
  std::function<void(const ListOptions&)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = list_hook_;
  }
  if (hook) hook(options);
  std::lock_guard<std::mutex> lock(mu_);
  ++list_calls_;
  RETURN_IF_ERROR(TakeInjectedFailure());
  const std::string what = StrCat("GET ", r.Name());
  int64_t snapshot = rv_;
  std::string after;  // the last key the previous page served
  if (!options.continue_token.empty()) {
    const size_t bar = options.continue_token.find('|');
    snapshot = bar == std::string::npos ? -1 : ParseRv(options.continue_token.substr(0, bar));
    if (snapshot < 0) return ApiStatus(what, 400, "BadRequest", "invalid continue token");
    if (snapshot < oldest_watchable_rv_) {
      return ApiStatus(what, 410, "Expired",
                       "The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter.");
    }
    after = options.continue_token.substr(bar + 1);
  }
  const std::string prefix = StrCat(r.Name(), "|", r.namespaced ? ns : "", "|");
  const std::string all_ns_prefix = StrCat(r.Name(), "|");
  ListResult result;
  result.resource_version = StrCat(snapshot);
  const std::string* last = nullptr;
  for (auto it = after.empty() ? objects_.begin() : objects_.upper_bound(after);
       it != objects_.end(); ++it) {
    const auto& [key, obj] = *it;
    bool in_scope =
        (r.namespaced && ns.empty()) ? key.rfind(all_ns_prefix, 0) == 0 : key.rfind(prefix, 0) == 0;
    if (!in_scope) continue;
    ASSIGN_OR_RETURN(bool match, Matches(obj, options));
    if (!match) continue;
    if (options.limit > 0 && static_cast<int64_t>(result.items.size()) == options.limit) {
      result.continue_token = StrCat(snapshot, "|", *last);
      break;
    }
    result.items.push_back(obj);
    last = &key;
  }
  return result;
}

StatusOr<json> FakeKubeClient::Create(const Resource& r, const std::string& ns, const json& object,
                                      const WriteOptions&) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = MetaString(object, "name");
  if (name.empty())
    return ApiStatus(StrCat("POST ", r.Name()), 422, "Invalid", "metadata.name: Required value");
  if (objects_.count(Key(r, ns, name))) {
    return ApiStatus(StrCat("POST ", r.Name()), 409, "AlreadyExists",
                     StrCat(r.resource, " \"", name, "\" already exists"));
  }
  json stored = object;
  stored["metadata"]["uid"] = StrCat("uid-", rv_ + 1);
  stored["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  return Store(r, ns, std::move(stored), WatchEvent::Type::kAdded);
}

StatusOr<json> FakeKubeClient::Update(const Resource& r, const std::string& ns, const json& object,
                                      const WriteOptions&, const std::string&) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = MetaString(object, "name");
  auto it = objects_.find(Key(r, ns, name));
  const std::string what = StrCat("PUT ", r.Name(), "/", name);
  if (it == objects_.end())
    return ApiStatus(what, 404, "NotFound", StrCat(r.resource, " \"", name, "\" not found"));
  const std::string rv = MetaString(object, "resourceVersion");
  if (!rv.empty() && rv != MetaString(it->second, "resourceVersion")) {
    return ApiStatus(what, 409, "Conflict",
                     StrCat("Operation cannot be fulfilled on ", r.resource, " \"", name,
                            "\": the object has been modified; please apply your changes to the "
                            "latest version and try again"));
  }
  json stored = object;
  stored["metadata"]["uid"] = it->second["metadata"]["uid"];
  stored["metadata"]["creationTimestamp"] = it->second["metadata"]["creationTimestamp"];
  return Store(r, ns, std::move(stored), WatchEvent::Type::kModified);
}

StatusOr<json> FakeKubeClient::Patch(const Resource& r, const std::string& ns,
                                     const std::string& name, PatchType type, const json& patch,
                                     const PatchOptions&, const std::string&) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(Key(r, ns, name));
  const std::string what = StrCat("PATCH ", r.Name(), "/", name);
  if (it == objects_.end())
    return ApiStatus(what, 404, "NotFound", StrCat(r.resource, " \"", name, "\" not found"));
  // A resourceVersion in a merge patch is a precondition (the apiserver's optimistic
  // concurrency): a stale one is refused.
  if (type != PatchType::kJsonPatch && patch.is_object() && patch.contains("metadata") &&
      patch["metadata"].is_object() && patch["metadata"].contains("resourceVersion") &&
      patch["metadata"]["resourceVersion"] != MetaString(it->second, "resourceVersion")) {
    return ApiStatus(what, 409, "Conflict",
                     "the object has been modified; please apply your changes to the latest "
                     "version and try again");
  }
  json updated = it->second;
  if (type == PatchType::kJsonPatch) {
    try {
      updated = updated.patch(patch);
    } catch (const json::exception& e) {
      return ApiStatus(what, 422, "Invalid", e.what());
    }
  } else if (type == PatchType::kStrategicMerge) {
    StrategicMerge(&updated, patch);
  } else {
    updated.merge_patch(patch);
  }
  return Store(r, ns, std::move(updated), WatchEvent::Type::kModified);
}

StatusOr<json> FakeKubeClient::Delete(const Resource& r, const std::string& ns,
                                      const std::string& name, const DeleteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(Key(r, ns, name));
  const std::string what = StrCat("DELETE ", r.Name(), "/", name);
  if (it == objects_.end())
    return ApiStatus(what, 404, "NotFound", StrCat(r.resource, " \"", name, "\" not found"));
  if ((options.precondition_uid && *options.precondition_uid != MetaString(it->second, "uid")) ||
      (options.precondition_resource_version &&
       *options.precondition_resource_version != MetaString(it->second, "resourceVersion"))) {
    return ApiStatus(what, 409, "Conflict", "Precondition failed");
  }
  json last = it->second;
  if (HasFinalizers(last)) {
    // Finalizers hold the object: it is marked (once) and stays until they are removed.
    if (last["metadata"].contains("deletionTimestamp")) return last;
    last["metadata"]["deletionTimestamp"] = FormatTime(std::chrono::system_clock::now());
    last["metadata"]["deletionGracePeriodSeconds"] =
        options.grace_period_seconds ? *options.grace_period_seconds : 0;
    return Store(r, ns, std::move(last), WatchEvent::Type::kModified);
  }
  Store(r, ns, last, WatchEvent::Type::kDeleted);
  return json({{"kind", "Status"}, {"status", "Success"}});
}

StatusOr<json> FakeKubeClient::CreateSubresource(const Resource& r, const std::string& ns,
                                                 const std::string& name,
                                                 const std::string& subresource, const json& body) {
  if (r.Name() == "pods" && subresource == "eviction") {
    DeleteOptions options;
    if (body.contains("deleteOptions") && body["deleteOptions"].contains("preconditions")) {
      const json& p = body["deleteOptions"]["preconditions"];
      if (p.contains("uid")) options.precondition_uid = p["uid"].get<std::string>();
    }
    RETURN_IF_ERROR(Delete(r, ns, name, options).status());
    return json({{"kind", "Status"}, {"status", "Success"}});
  }
  return UnimplementedError(StrCat("fake client: POST ", r.Name(), "/", subresource));
}

Status FakeKubeClient::Watch(const Resource& r, const std::string& ns, const ListOptions& options,
                             const WatchHandler& handler, const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  ++watch_calls_;
  RETURN_IF_ERROR(TakeInjectedFailure());
  const std::string what = StrCat("WATCH ", r.Name());
  int64_t since = ParseRv(options.resource_version);
  if (since == -2) return ApiStatus(what, 400, "BadRequest", "invalid resourceVersion");
  if (since == -1) since = rv_;
  const int64_t generation = drop_generation_;
  ++open_watches_;
  struct Closer {
    std::unique_lock<std::mutex>* lock;
    int* open;
    ~Closer() {
      if (!lock->owns_lock()) lock->lock();
      --*open;
    }
  } closer{&lock, &open_watches_};
  const auto deadline =
      options.timeout_seconds > 0
          ? std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds)
          : std::chrono::steady_clock::time_point::max();
  for (;;) {
    if (since < oldest_watchable_rv_) {
      return ApiStatus(what, 410, "Expired",
                       StrCat("too old resource version: ", since, " (", rv_, ")"));
    }
    std::vector<WatchEvent> batch;
    for (const HistoryEvent& e : history_) {
      if (e.rv <= since || e.resource != r.Name()) continue;
      if (e.type != WatchEvent::Type::kBookmark && r.namespaced && !ns.empty() && e.ns != ns)
        continue;
      since = e.rv;
      WatchEvent::Type type = e.type;
      if (e.type != WatchEvent::Type::kBookmark) {
        // As the apiserver's watch cache: an object that stops matching the selectors is
        // DELETED for this watch, one that starts matching ADDED.
        auto match = Matches(e.object, options);
        if (!match.ok()) return match.status();
        bool matched_before = false;
        if (e.type == WatchEvent::Type::kModified && !e.previous.is_null()) {
          auto before = Matches(e.previous, options);
          if (!before.ok()) return before.status();
          matched_before = *before;
        }
        if (!*match && !matched_before) continue;
        if (e.type == WatchEvent::Type::kModified && *match != matched_before) {
          type = *match ? WatchEvent::Type::kAdded : WatchEvent::Type::kDeleted;
        }
      } else if (!options.allow_watch_bookmarks) {
        continue;
      }
      batch.push_back({type, e.object});
    }
    if (!batch.empty()) {
      lock.unlock();
      for (WatchEvent& ev : batch) {
        if (!handler(std::move(ev))) return OkStatus();
      }
      lock.lock();
      continue;
    }
    if (cancel != nullptr && cancel->load()) return CancelledError(StrCat(what, ": cancelled"));
    if (drop_generation_ != generation)
      return UnavailableError(StrCat(what, ": connection reset by peer"));
    if (std::chrono::steady_clock::now() >= deadline) return OkStatus();
    changed_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

void FakeKubeClient::ExpireHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  oldest_watchable_rv_ = rv_ + 1;
  ++rv_;  // the compaction itself moves the store's revision on
  history_.clear();
  changed_.notify_all();
}

void FakeKubeClient::DropWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++drop_generation_;
  changed_.notify_all();
}

void FakeKubeClient::FailNextListOrWatch(int n, Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_calls_ = n;
  fail_status_ = std::move(status);
}

void FakeKubeClient::SendBookmark(const Resource& r) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rv_;
  history_.push_back({r.Name(), "", WatchEvent::Type::kBookmark,
                      json({{"kind", r.kind}, {"metadata", {{"resourceVersion", StrCat(rv_)}}}}),
                      rv_});
  changed_.notify_all();
}

void FakeKubeClient::OnList(std::function<void(const ListOptions&)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  list_hook_ = std::move(hook);
}

void FakeKubeClient::DeleteSilently(const Resource& r, const std::string& ns,
                                    const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  objects_.erase(Key(r, ns, name));
  ++rv_;
}

int64_t FakeKubeClient::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}
int FakeKubeClient::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_watches_;
}
int FakeKubeClient::list_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return list_calls_;
}
int FakeKubeClient::watch_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_calls_;
}

}  // namespace skb::k8s
