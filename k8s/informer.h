// SPDX-License-Identifier: Apache-2.0
// A list+watch cache of one resource, as client-go's SharedInformer: list, then watch from
// the list's resourceVersion (with bookmarks), keep a local cache keyed "namespace/name"
// ("name" for cluster-scoped objects), and tell handlers about adds, updates and deletes.
//
// Recovery: a dropped watch (apiserver restart, network) is resumed from the last seen
// resourceVersion after a jittered exponential back-off; an expired resourceVersion (410
// Gone/Expired) or a corrupt stream triggers a relist, and the relist is diffed against the
// cache so that objects deleted while disconnected produce a delete notification
// (final_state_unknown = true) and unchanged objects produce none.
//
// Handlers run on the informer's thread, in event order, with no lock held. They must be
// cheap and non-blocking (enqueue a key) and must not call Stop(). Objects handed
// out are immutable and shared: keep the shared_ptr, never cast away const.
//
// Memory: the cache holds each object in a compact encoding (compact_json.h, a fraction of
// the size of nlohmann::json; figures in bench/RESULTS.md). A new object reaches the
// handlers as decoded; Get(), List(), the old object of an update and objects deleted while
// not watching are decoded from the cache on each call, so Get/List are not for hot loops
// over large caches, and handlers that do not need an update's old object say so
// (InformerHandlers::wants_old_object).
//
//   InformerOptions opts{.resource = Resource::Nodes(), .transform = SelectNodeFields};
//   Informer nodes(client.get(), opts);
//   nodes.AddHandlers({.on_add = [&](const ObjectPtr& n) { queue.Add(Informer::KeyOf(*n)); }});
//   nodes.Start();
//   if (!nodes.WaitForSync(std::chrono::seconds(30))) ...;
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "k8s/backoff.h"
#include "k8s/compact_json.h"
#include "k8s/json_selection.h"
#include "k8s/kube_client.h"

namespace skb::k8s {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

struct InformerOptions {
  Resource resource;
  std::string ns;  // "" for all namespaces / cluster-scoped
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;  // list pagination
  // Applied to every object before it is cached and handed to handlers: keep only the fields
  // the program uses (field_selection.h). Must keep metadata.name, namespace and
  // resourceVersion. Called on the informer thread.
  std::function<nlohmann::json(nlohmann::json&&)> transform;
  // Optional: decode only these parts of watch events (JsonSelection::PodWatchEvent() with
  // SelectPodFields as transform), and its "object" part of listed items; must select at
  // least what `transform` keeps. Must outlive the informer.
  const JsonSelection* decode_selection = nullptr;
  BackoffOptions backoff;  // between failed list/watch attempts
  // Server-side watch timeout; 0: random 5-10 minutes, as client-go.
  int64_t watch_timeout_seconds = 0;
};

struct InformerHandlers {
  std::function<void(const ObjectPtr& obj)> on_add;
  std::function<void(const ObjectPtr& old_obj, const ObjectPtr& new_obj)> on_update;
  // `final_state_unknown`: the delete was inferred on relist; `obj` is the last state seen.
  std::function<void(const ObjectPtr& obj, bool final_state_unknown)> on_delete;
  // False: on_update gets a null `old_obj`, sparing a decode from the cache per update
  // (~10 µs for a trimmed Pod; bench/k8s_cache_bench.cc) for handlers that only look at the
  // new state (level-triggered ones).
  bool wants_old_object = true;
};

struct InformerStats {
  uint64_t lists = 0;    // successful (re)lists
  uint64_t watches = 0;  // watch requests started
  uint64_t events = 0;   // add/modify/delete events applied
  uint64_t expired = 0;  // 410s that forced a relist
  uint64_t errors = 0;   // failed list/watch attempts
  uint64_t skipped = 0;  // objects without a name, dropped with a logged reason
};

// Thread-safe (all public methods).
class Informer {
 public:
  // `client` must outlive the informer.
  Informer(KubeClient* client, InformerOptions options);
  ~Informer();  // Stop()s

  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before Start() only.
  void AddHandlers(InformerHandlers handlers);

  // Starts the list/watch thread. Once only.
  void Start();
  // Ends the watch (within about a second) and joins the thread. Idempotent.
  void Stop();

  // True once the first list has been applied to the cache and delivered to the handlers.
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  ObjectPtr Get(const std::string& key) const;  // null when absent; decodes
  std::vector<ObjectPtr> List() const;          // decodes every object
  size_t Size() const;
  // The resourceVersion the cache reflects.
  std::string ResourceVersion() const;
  InformerStats Stats() const;

  // "namespace/name", or "name" when there is no namespace.
  static std::string KeyOf(const nlohmann::json& obj);

 private:
  void Run();
  // Lists everything and replaces the cache, notifying the differences.
  Status Relist();
  // Watches until an error, a server timeout or Stop(); returns why it ended.
  Status WatchOnce();
  void Apply(WatchEvent&& ev);
  // Sleeps up to `d`, waking early on Stop(). Returns false when stopping.
  bool SleepUnlessStopped(std::chrono::milliseconds d);

  KubeClient* const client_;
  const InformerOptions options_;
  std::vector<InformerHandlers> handlers_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex stop_mu_;
  std::condition_variable stop_cv_;

  mutable std::mutex mu_;
  mutable std::condition_variable synced_cv_;
  std::unordered_map<std::string, CompactJson> cache_;  // GUARDED_BY(mu_)
  std::string resource_version_;                        // GUARDED_BY(mu_)
  bool synced_ = false;                                 // GUARDED_BY(mu_)
  InformerStats stats_;                                 // GUARDED_BY(mu_)
};

}  // namespace skb::k8s
