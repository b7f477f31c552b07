// SPDX-License-Identifier: Apache-2.0
#include "k8s/informer.h"

#include "k8s/api_error.h"
#include "k8s/logger.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

std::string MetaField(const nlohmann::json& obj, const char* field) {
  if (!obj.is_object()) return "";
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  auto v = md->find(field);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

// A notification computed under the cache lock and delivered after it is released. Objects
// that come from the cache are decoded then, outside the lock.
struct Notification {
  enum class Kind { kAdd, kUpdate, kDelete } kind;
  ObjectPtr old_obj;
  ObjectPtr obj;
  bool final_state_unknown = false;
  CompactJson cached_old;  // becomes old_obj (kUpdate)
  CompactJson cached_obj;  // becomes obj (kDelete inferred on relist)
};

ObjectPtr Decoded(const CompactJson& c) {
  return std::make_shared<const nlohmann::json>(c.Decode());
}

std::string_view CachedMeta(const CompactJson& c, std::string_view field) {
  return c.StringAt({"metadata", field});
}

}  // namespace

std::string Informer::KeyOf(const nlohmann::json& obj) {
  std::string name = MetaField(obj, "name");
  if (name.empty()) return "";
  std::string ns = MetaField(obj, "namespace");
  return ns.empty() ? name : StrCat(ns, "/", name);
}

Informer::Informer(KubeClient* client, InformerOptions options)
    : client_(client), options_(std::move(options)) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandlers(InformerHandlers handlers) { handlers_.push_back(std::move(handlers)); }

void Informer::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::SleepUnlessStopped(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(stop_mu_);
  return !stop_cv_.wait_for(lock, d, [this] { return stop_.load(); });
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return synced_cv_.wait_for(lock, timeout, [this] { return synced_; });
}

ObjectPtr Informer::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : Decoded(it->second);
}

std::vector<ObjectPtr> Informer::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(cache_.size());
  for (const auto& [key, obj] : cache_) out.push_back(Decoded(obj));
  return out;
}

size_t Informer::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

std::string Informer::ResourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resource_version_;
}

InformerStats Informer::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

namespace {

void Deliver(const std::vector<InformerHandlers>& handlers, std::vector<Notification>& notes) {
  bool wants_old = false;
  for (const InformerHandlers& h : handlers) wants_old |= h.on_update && h.wants_old_object;
  for (Notification& n : notes) {
    if (n.kind == Notification::Kind::kUpdate && wants_old) n.old_obj = Decoded(n.cached_old);
    if (n.obj == nullptr) n.obj = Decoded(n.cached_obj);
    n.cached_old = CompactJson();
    n.cached_obj = CompactJson();
    for (const InformerHandlers& h : handlers) {
      switch (n.kind) {
        case Notification::Kind::kAdd:
          if (h.on_add) h.on_add(n.obj);
          break;
        case Notification::Kind::kUpdate:
          if (h.on_update) h.on_update(h.wants_old_object ? n.old_obj : nullptr, n.obj);
          break;
        case Notification::Kind::kDelete:
          if (h.on_delete) h.on_delete(n.obj, n.final_state_unknown);
          break;
      }
    }
    n.old_obj.reset();  // unless a handler kept them
    n.obj.reset();
  }
}

}  // namespace

Status Informer::Relist() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  // Listed items are decoded with the watch selection's "object" part, when there is one.
  lo.item_selection =
      options_.decode_selection != nullptr ? options_.decode_selection->Find("object") : nullptr;

  // Page by page, each item trimmed and encoded at once: a relist of 50,000 pods never holds
  // more than one page of them decoded (ListAll held them all: ~1.5 GB at 50,000 pods).
  // Nothing touches the cache until the last page is in, so a list that fails half-way
  // leaves the cache, and what a later relist will diff against, as it was.
  std::vector<std::pair<std::string, CompactJson>> fresh;
  uint64_t skipped = 0;
  auto list_pages = [&]() -> StatusOr<std::string> {
    fresh.clear();
    skipped = 0;
    return ForEachListPage(*client_, options_.resource, options_.ns, lo, [&](ListResult&& page) {
      // Stop() during a long list: end it between pages.
      if (stop_) return CancelledError(StrCat("list ", options_.resource.Name(), ": stopping"));
      if (fresh.empty() && page.remaining_item_count > 0) {
        fresh.reserve(page.items.size() + static_cast<size_t>(page.remaining_item_count));
      }
      for (nlohmann::json& item : page.items) {
        std::string key = KeyOf(item);
        if (key.empty()) {
          ++skipped;
          Logger()->warn("k8s_informer_skip resource={} reason=\"object without metadata.name\"",
                         options_.resource.Name());
          continue;
        }
        if (options_.transform) item = options_.transform(std::move(item));
        fresh.emplace_back(std::move(key), CompactJson::Encode(item));
        nlohmann::json().swap(item);
      }
      return OkStatus();
    });
  };
  StatusOr<std::string> listed = list_pages();
  // Only a continued page can be 410 (the first asks for the latest state): the list took
  // longer than the apiserver keeps its snapshot (etcd compaction, ~5 minutes). Start over
  // at once with a new snapshot, as client-go's pager does; a second expiry is a failure
  // and backs off like one.
  if (!listed.ok() && IsResourceExpired(listed.status()) && !stop_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.expired;
    }
    Logger()->info("k8s_informer_relist resource={} reason=\"{}\" listed={}",
                   options_.resource.Name(), listed.status().message(), fresh.size());
    listed = list_pages();
  }
  RETURN_IF_ERROR(listed.status());
  const std::string& list_resource_version = *listed;

  // Notifications carry copies of the encodings and are decoded one at a time as they are
  // delivered, so a relist of many changed objects never holds them all decoded.
  std::vector<Notification> notes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unordered_map<std::string, CompactJson> next;
    next.reserve(fresh.size());
    for (auto& [key, compact] : fresh) {
      auto old = cache_.find(key);
      if (old == cache_.end()) {
        notes.push_back({.kind = Notification::Kind::kAdd, .cached_obj = compact.Copy()});
      } else if (CachedMeta(old->second, "resourceVersion") !=
                     CachedMeta(compact, "resourceVersion") ||
                 CachedMeta(old->second, "uid") != CachedMeta(compact, "uid")) {
        notes.push_back({.kind = Notification::Kind::kUpdate,
                         .cached_old = std::move(old->second),
                         .cached_obj = compact.Copy()});
      }
      next.insert_or_assign(std::move(key), std::move(compact));
    }
    for (auto& [key, obj] : cache_) {
      // Deleted while we were not watching: the last state we saw is all we have.
      if (!next.count(key)) {
        notes.push_back({.kind = Notification::Kind::kDelete,
                         .final_state_unknown = true,
                         .cached_obj = std::move(obj)});
      }
    }
    cache_ = std::move(next);
    resource_version_ = list_resource_version;
    ++stats_.lists;
    stats_.skipped += skipped;
  }
  Logger()->info("k8s_informer_listed resource={} objects={} resource_version={} changes={}",
                 options_.resource.Name(), Size(), list_resource_version, notes.size());
  Deliver(handlers_, notes);
  // Synced only once the handlers have seen the list (like client-go's HasSynced of a
  // handler registration): a consumer that waits for it must find their state complete,
  // not the pods of a node whose add is still on its way.
  {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = true;
  }
  synced_cv_.notify_all();
  return OkStatus();
}

void Informer::Apply(WatchEvent&& ev) {
  const std::string rv = MetaField(ev.object, "resourceVersion");
  if (ev.type == WatchEvent::Type::kBookmark) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!rv.empty()) resource_version_ = rv;
    return;
  }
  std::string key = KeyOf(ev.object);
  if (key.empty()) {
    Logger()->warn(
        "k8s_informer_skip resource={} reason=\"watch event object without metadata.name\"",
        options_.resource.Name());
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.skipped;
    if (!rv.empty()) resource_version_ = rv;
    return;
  }
  nlohmann::json obj =
      options_.transform ? options_.transform(std::move(ev.object)) : std::move(ev.object);
  CompactJson compact;
  if (ev.type != WatchEvent::Type::kDeleted) compact = CompactJson::Encode(obj);
  auto ptr = std::make_shared<const nlohmann::json>(std::move(obj));
  std::vector<Notification> notes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.events;
    if (!rv.empty()) resource_version_ = rv;
    auto it = cache_.find(key);
    if (ev.type == WatchEvent::Type::kDeleted) {
      if (it != cache_.end()) {
        cache_.erase(it);
        notes.push_back({.kind = Notification::Kind::kDelete, .obj = ptr});
      }
    } else if (it == cache_.end()) {
      cache_.emplace(std::move(key), std::move(compact));
      notes.push_back({.kind = Notification::Kind::kAdd, .obj = ptr});
    } else {
      notes.push_back(
          {.kind = Notification::Kind::kUpdate, .obj = ptr, .cached_old = std::move(it->second)});
      it->second = std::move(compact);
    }
  }
  Deliver(handlers_, notes);
}

Status Informer::WatchOnce() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.resource_version = ResourceVersion();
  lo.allow_watch_bookmarks = true;
  lo.timeout_seconds = options_.watch_timeout_seconds;
  lo.watch_selection = options_.decode_selection;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
  }
  return client_->Watch(
      options_.resource, options_.ns, lo,
      [this](WatchEvent&& ev) {
        Apply(std::move(ev));
        return !stop_.load();
      },
      &stop_);
}

void Informer::Run() {
  const std::string name = options_.resource.Name();
  Backoff backoff(options_.backoff);
  bool need_list = true;
  while (!stop_) {
    if (need_list) {
      Status s = Relist();
      if (stop_) break;
      if (!s.ok()) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.errors;
        }
        auto delay = backoff.Next();
        Logger()->warn("k8s_informer_list_failed resource={} retry_ms={} error=\"{}\"", name,
                       delay.count(), s.message());
        if (!SleepUnlessStopped(delay)) break;
        continue;
      }
      need_list = false;
      backoff.Reset();
    }
    const auto started = std::chrono::steady_clock::now();
    const uint64_t events_before = Stats().events;
    Status s = WatchOnce();
    if (stop_) break;
    const bool progressed = Stats().events != events_before ||
                            std::chrono::steady_clock::now() - started > std::chrono::seconds(5);
    if (progressed) backoff.Reset();
    if (s.ok()) {
      // The server ended the watch (timeoutSeconds): resume at once, unless it keeps ending
      // immediately, which would otherwise spin.
      if (!progressed && !SleepUnlessStopped(backoff.Next())) break;
      continue;
    }
    if (IsResourceExpired(s)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.expired;
      }
      Logger()->info("k8s_informer_relist resource={} reason=\"{}\"", name, s.message());
      need_list = true;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.errors;
    }
    // A corrupt stream may have lost events: only a relist restores a trustworthy cache.
    if (s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kResourceExhausted)
      need_list = true;
    auto delay = backoff.Next();
    Logger()->warn("k8s_informer_watch_failed resource={} relist={} retry_ms={} error=\"{}\"", name,
                   need_list, delay.count(), s.message());
    if (!SleepUnlessStopped(delay)) break;
  }
}

}  // namespace skb::k8s
