// SPDX-License-Identifier: Apache-2.0
// The Kubernetes API as the bridge sees it: typed-by-descriptor CRUD, patch, subresources and
// watch over nlohmann::json objects. The bridge depends on this interface only; RestClient
// (rest_client.h) talks to a real apiserver, FakeKubeClient (fake_kube_client.h) is an
// in-memory stand-in for unit tests of code above the client.
//
//   std::unique_ptr<KubeClient> client = ...;
//   ASSIGN_OR_RETURN(nlohmann::json node, client->Get(Resource::Nodes(), "", "node1"));
//   RETURN_IF_ERROR(client->Patch(Resource::Nodes(), "", "node1", PatchType::kStrategicMerge,
//                                 patch, {}, "status").status());
//
// Errors are typed as in api_error.h (NotFound, AlreadyExists, Aborted for conflicts,
// OutOfRange for an expired resourceVersion, Unavailable to retry, ...), messages name the
// request and keep the apiserver's words.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "k8s/resource.h"
#include "src/base/status.h"

namespace skb::k8s {

class JsonSelection;  // json_selection.h

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "spec.nodeName=node1"
  int64_t limit = 0;           // page size; 0: no paging
  std::string continue_token;  // from the previous page
  std::string resource_version;
  std::string resource_version_match;  // "NotOlderThan" / "Exact"
  // Watch only.
  bool allow_watch_bookmarks = true;
  int64_t timeout_seconds = 0;  // server-side end of the watch; 0: the server's default
  // Watch only, optional: decode only these parts of each event (json_selection.h), an
  // optimisation for callers that trim objects anyway. Must outlive the call. Clients that
  // do not implement it deliver whole objects.
  const JsonSelection* watch_selection = nullptr;
  // List only, optional: decode only these parts of each item (the "object" part of a watch
  // selection). Must outlive the call. Clients that do not implement it deliver whole items.
  const JsonSelection* item_selection = nullptr;
};

struct ListResult {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // of the list, to watch from
  std::string continue_token;    // non-empty: more pages
  int64_t remaining_item_count = -1;
};

struct WriteOptions {
  std::string field_manager;
  bool dry_run = false;
};

enum class PatchType {
  kJsonMerge,       // application/merge-patch+json (RFC 7386)
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
  kJsonPatch,       // application/json-patch+json (RFC 6902)
  kApply,           // application/apply-patch+yaml: server-side apply (JSON is YAML)
};

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply: take ownership of conflicting fields
  bool dry_run = false;
};

struct DeleteOptions {
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
  std::string propagation_policy;  // "", "Orphan", "Background", "Foreground"
  bool dry_run = false;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  nlohmann::json object;
};

// Receives one watch event; returns false to end the watch.
using WatchHandler = std::function<bool(WatchEvent&& event)>;

// Implementations are thread-safe.
class KubeClient {
 public:
  virtual ~KubeClient() = default;

  virtual StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns,
                                       const std::string& name,
                                       const std::string& subresource = "") = 0;

  // One page (all items when options.limit is 0). See ListAll() for every page.
  virtual StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                                    const ListOptions& options) = 0;

  // Creates `object` (metadata.name or generateName set by the caller).
  virtual StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                          const nlohmann::json& object,
                                          const WriteOptions& options = {}) = 0;

  // Replaces the object named by object.metadata.name (PUT). With
  // metadata.resourceVersion set the apiserver rejects a stale write as a conflict.
  // Only for objects the caller owns entirely; for others use Patch.
  virtual StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                          const nlohmann::json& object,
                                          const WriteOptions& options = {},
                                          const std::string& subresource = "") = 0;

  virtual StatusOr<nlohmann::json> Patch(const Resource& r, const std::string& ns,
                                         const std::string& name, PatchType type,
                                         const nlohmann::json& patch,
                                         const PatchOptions& options = {},
                                         const std::string& subresource = "") = 0;

  // Returns what the apiserver returns: the object (still present while finalizers run) or
  // a Status object.
  virtual StatusOr<nlohmann::json> Delete(const Resource& r, const std::string& ns,
                                          const std::string& name,
                                          const DeleteOptions& options = {}) = 0;

  // POSTs `body` to a subresource (pods/eviction, pods/binding).
  virtual StatusOr<nlohmann::json> CreateSubresource(const Resource& r, const std::string& ns,
                                                     const std::string& name,
                                                     const std::string& subresource,
                                                     const nlohmann::json& body) = 0;

  // Watches from options.resource_version, calling `handler` on the calling thread for every
  // event, in order. Returns OK when the server ends the watch (timeout) or the handler
  // returns false; Cancelled when *cancel becomes true (checked at least once a second);
  // OutOfRange (IsResourceExpired) when the resourceVersion is too old: relist; DataLoss
  // when the stream is malformed or cut mid-event; Unavailable when the connection drops.
  virtual Status Watch(const Resource& r, const std::string& ns, const ListOptions& options,
                       const WatchHandler& handler, const std::atomic<bool>* cancel) = 0;
};

// Every page of a list, following continue tokens. The result's resource_version is the
// first page's (a consistent snapshot, as the apiserver serves continuations). If the
// snapshot expires mid-way (410), returns OutOfRange: the caller starts over.
StatusOr<ListResult> ListAll(KubeClient& client, const Resource& r, const std::string& ns,
                             ListOptions options);

// The same, handing each page to `page_handler` as it arrives (so a caller that keeps less
// than whole items never holds every item decoded at once); returns the list's
// resource_version, or the first error (a page handler's included).
StatusOr<std::string> ForEachListPage(KubeClient& client, const Resource& r, const std::string& ns,
                                      ListOptions options,
                                      const std::function<Status(ListResult&& page)>& page_handler);

// The body of a DELETE (meta/v1 DeleteOptions without kind); {} when all defaults.
nlohmann::json DeleteOptionsToJson(const DeleteOptions& options);

// Evicts a pod through policy/v1 Eviction (respects PodDisruptionBudgets: a blocked
// eviction is Unavailable with reason TooManyRequests).
StatusOr<nlohmann::json> EvictPod(KubeClient& client, const std::string& ns,
                                  const std::string& name, const DeleteOptions& options = {});

}  // namespace skb::k8s
