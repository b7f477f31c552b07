// SPDX-License-Identifier: Apache-2.0
// An in-memory KubeClient for unit tests of code built on the interface (informers, leader
// election, the bridge's reconcilers). It keeps objects per resource, assigns increasing
// resourceVersions, enforces the apiserver's optimistic concurrency (create/update/delete
// conflicts and preconditions) and serves watches from an event history, and it lets a test
// break things the way a real cluster does: expire old resourceVersions (410), drop every
// open watch (apiserver restart), fail the next calls.
//
// Lists honour `limit`: a continue token names the list's snapshot resourceVersion and the
// last key served; it expires with the history (ExpireHistory: 410 Expired, as the
// apiserver's after a compaction) and every page carries the snapshot's resourceVersion.
// Unlike the apiserver's, later pages show objects as they are now, not as of the snapshot.
//
// Finalizers hold a deleted object as the apiserver's do: the delete sets
// metadata.deletionTimestamp and the object goes with its last finalizer. (Pods without
// finalizers go at once, as an unbound pod does: no kubelet runs here.)
//
// It is not an apiserver: strategic merge patches merge the lists of the built-in types by
// their merge keys (node conditions by type, containers by name, ...) and finalizers as a
// set, without the other directives; apply patches are applied as JSON merge patches; the
// subresource of a write is not enforced; label selectors support only `k=v` terms, field selectors
// metadata.name, metadata.namespace, spec.nodeName and status.phase with `=`, `==` and `!=` (a
// watch sees an object that stops matching as DELETED and one that starts matching as ADDED, as the
// apiserver's watch cache sends them). Behaviour that matters beyond that is tested against the
// real apiserver (tests/integration/k8s).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "k8s/event_recorder.h"
#include "k8s/kube_client.h"

namespace skb::k8s {

// Thread-safe.
class FakeKubeClient final : public KubeClient {
 public:
  FakeKubeClient() = default;

  StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns, const std::string& name,
                               const std::string& subresource = "") override;
  StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                            const ListOptions& options) override;
  StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options = {}) override;
  StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object, const WriteOptions& options = {},
                                  const std::string& subresource = "") override;
  StatusOr<nlohmann::json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options = {},
                                 const std::string& subresource = "") override;
  StatusOr<nlohmann::json> Delete(const Resource& r, const std::string& ns, const std::string& name,
                                  const DeleteOptions& options = {}) override;
  StatusOr<nlohmann::json> CreateSubresource(const Resource& r, const std::string& ns,
                                             const std::string& name,
                                             const std::string& subresource,
                                             const nlohmann::json& body) override;
  Status Watch(const Resource& r, const std::string& ns, const ListOptions& options,
               const WatchHandler& handler, const std::atomic<bool>* cancel) override;

  // Watches (new and open) from a resourceVersion below the current one fail with 410
  // Expired, as after an etcd compaction.
  void ExpireHistory();
  // Ends every open watch with Unavailable, as an apiserver restart does.
  void DropWatches();
  // The next `n` List or Watch calls fail with `status` (an apiserver that is down or
  // restarting, as the informer's reconnects see it).
  void FailNextListOrWatch(int n, Status status);
  // Sends a BOOKMARK at the current resourceVersion to watches of `r`.
  void SendBookmark(const Resource& r);
  // Called at the start of every List (before its lock is taken, so it may call the fake):
  // lets a test act between the pages of a paged list.
  void OnList(std::function<void(const ListOptions&)> hook);
  // Removes an object without recording a watch event: a delete the watchers never see,
  // as when it happens while they are disconnected and the history is compacted.
  void DeleteSilently(const Resource& r, const std::string& ns, const std::string& name);

  int64_t resource_version() const;
  int open_watches() const;
  int list_calls() const;
  int watch_calls() const;

 private:
  struct HistoryEvent {
    std::string resource;  // Resource::Name()
    std::string ns;
    WatchEvent::Type type;
    nlohmann::json object;
    int64_t rv;
    nlohmann::json previous;  // the object before this event (null: none), for selectors
  };

  Status TakeInjectedFailure();  // requires mu_
  std::string Key(const Resource& r, const std::string& ns, const std::string& name) const;
  nlohmann::json Store(const Resource& r, const std::string& ns, nlohmann::json object,
                       WatchEvent::Type type);  // requires mu_

  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t rv_ = 100;
  int64_t oldest_watchable_rv_ = 0;
  int64_t drop_generation_ = 0;
  int open_watches_ = 0;
  int list_calls_ = 0;
  int watch_calls_ = 0;
  int fail_calls_ = 0;
  Status fail_status_;
  std::function<void(const ListOptions&)> list_hook_;
  std::map<std::string, nlohmann::json> objects_;  // Key() -> object
  std::deque<HistoryEvent> history_;
};

// An EventRecorder that drops every Event (unit tests of code that records them).
class DiscardingEventRecorder final : public EventRecorder {
 public:
  void Record(const ObjectReference&, EventType, const std::string&, const std::string&) override {}
};

}  // namespace skb::k8s
