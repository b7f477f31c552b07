// SPDX-License-Identifier: Apache-2.0
#include "k8s/api_event_recorder.h"

#include <cstdio>

#include "k8s/api_error.h"
#include "k8s/logger.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

constexpr size_t kMaxSpamEntries = 10000;
constexpr size_t kMaxMessageBytes = 1024;  // the apiserver's limit for event messages is larger

std::string TypeName(EventType t) { return t == EventType::kWarning ? "Warning" : "Normal"; }

std::string ObjectKey(const ObjectReference& o) {
  return StrCat(o.kind, "/", o.namespace_, "/", o.name, "/", o.uid);
}

}  // namespace

ApiEventRecorder::ApiEventRecorder(KubeClient* client, EventRecorderOptions options)
    : client_(client),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : SystemClock::Get()) {}

ApiEventRecorder::~ApiEventRecorder() { Stop(); }

void ApiEventRecorder::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ApiEventRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ApiEventRecorder::Record(const ObjectReference& object, EventType type,
                              const std::string& reason, const std::string& message) {
  Pending p{object, type, reason, message.substr(0, kMaxMessageBytes), clock_->Now()};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= options_.max_queue) {
      queue_.pop_front();
      ++stats_.dropped_queue;
    }
    queue_.push_back(std::move(p));
  }
  cv_.notify_one();
}

EventRecorderStats ApiEventRecorder::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ApiEventRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return (queue_.empty() && !busy_) || !thread_.joinable(); });
}

void ApiEventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) break;
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Write(p);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
    if (stop_ && !queue_.empty()) {
      // Shutting down: write what is queued, but give up on the rest if the apiserver is
      // unreachable rather than holding the process.
      if (stats_.failed > 0) {
        stats_.dropped_queue += queue_.size();
        queue_.clear();
        break;
      }
    }
  }
  busy_ = false;
  idle_cv_.notify_all();
}

void ApiEventRecorder::Write(const Pending& p) {
  const std::string obj_key = ObjectKey(p.object);
  const std::string spam_key = StrCat(obj_key, "|", p.reason);
  if (spam_.size() > kMaxSpamEntries && !spam_.count(spam_key)) spam_.clear();
  auto& bucket = spam_[spam_key];
  if (!bucket)
    bucket = std::make_unique<TokenBucket>(options_.per_object_qps, options_.per_object_burst);
  if (!bucket->TryTake(std::chrono::steady_clock::now())) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.dropped_spam;
    return;
  }

  const std::string ns =
      p.object.namespace_.empty() ? options_.cluster_scoped_namespace : p.object.namespace_;
  const std::string agg_key = StrCat(obj_key, "|", TypeName(p.type), "|", p.reason, "|", p.message);
  const std::string now = FormatTime(p.at);

  auto it = tracked_.find(agg_key);
  if (it != tracked_.end() && p.at - it->second.last < options_.aggregation_window) {
    Tracked& t = it->second;
    json patch = {{"count", t.count + 1}, {"lastTimestamp", now}};
    auto r = client_->Patch(Resource::Events(), t.ns, t.name, PatchType::kJsonMerge, patch);
    if (r.ok()) {
      ++t.count;
      t.last = p.at;
      lru_.splice(lru_.begin(), lru_, t.lru);
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.aggregated;
      return;
    }
    if (!IsNotFound(r.status())) {
      Logger()->warn("k8s_event_patch_failed event={}/{} reason={} error=\"{}\"", t.ns, t.name,
                     p.reason, r.status().message());
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.failed;
      return;
    }
    // The Event expired (the apiserver deletes them after an hour): start a new one.
    lru_.erase(t.lru);
    tracked_.erase(it);
  }

  // <object>.<hex nanoseconds>, as client-go; kept strictly increasing so that two Events
  // recorded within one clock tick get distinct names.
  uint64_t stamp = static_cast<uint64_t>(p.at.time_since_epoch().count());
  if (stamp <= last_stamp_) stamp = last_stamp_ + 1;
  last_stamp_ = stamp;
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".%llx", static_cast<unsigned long long>(stamp));
  const std::string name = StrCat(p.object.name, suffix);
  json involved = {{"kind", p.object.kind}, {"name", p.object.name}};
  if (!p.object.namespace_.empty()) involved["namespace"] = p.object.namespace_;
  if (!p.object.uid.empty()) involved["uid"] = p.object.uid;
  if (!p.object.api_version.empty()) involved["apiVersion"] = p.object.api_version;
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"involvedObject", involved},
                {"reason", p.reason},
                {"message", p.message},
                {"type", TypeName(p.type)},
                {"count", 1},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"source", {{"component", options_.component}}},
                {"reportingComponent", options_.component},
                {"reportingInstance", options_.host}};
  if (!options_.host.empty()) event["source"]["host"] = options_.host;
  auto r = client_->Create(Resource::Events(), ns, event);
  if (!r.ok()) {
    Logger()->warn("k8s_event_create_failed object={} reason={} error=\"{}\"", obj_key, p.reason,
                   r.status().message());
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.failed;
    return;
  }
  lru_.push_front(agg_key);
  tracked_[agg_key] = Tracked{ns, name, 1, p.at, lru_.begin()};
  while (tracked_.size() > options_.max_tracked_events) {
    tracked_.erase(lru_.back());
    lru_.pop_back();
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.created;
}

}  // namespace skb::k8s
