// SPDX-License-Identifier: Apache-2.0
#include "k8s/rest_client.h"

#include <optional>
#include <random>
#include <thread>

#include "k8s/api_error.h"
#include "k8s/curl_transport.h"
#include "k8s/json_selection.h"
#include "k8s/logger.h"
#include "k8s/watch_decoder.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

// Builds "?a=b&c=d" with encoded values.
class Query {
 public:
  void Add(std::string_view key, std::string_view value) {
    StrAppend(&q_, q_.empty() ? "?" : "&", key, "=", UrlEncode(value));
  }
  void AddIf(std::string_view key, std::string_view value) {
    if (!value.empty()) Add(key, value);
  }
  const std::string& str() const { return q_; }

 private:
  std::string q_;
};

std::string ContentType(PatchType type) {
  switch (type) {
    case PatchType::kJsonMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

StatusOr<std::string> NameOf(const nlohmann::json& object) {
  if (object.is_object()) {
    auto md = object.find("metadata");
    if (md != object.end() && md->is_object()) {
      auto name = md->find("name");
      if (name != md->end() && name->is_string() && !name->get_ref<const std::string&>().empty()) {
        return name->get<std::string>();
      }
    }
  }
  return InvalidArgumentError("object has no metadata.name");
}

void AddListOptions(Query* q, const ListOptions& o) {
  q->AddIf("labelSelector", o.label_selector);
  q->AddIf("fieldSelector", o.field_selector);
  if (o.limit > 0) q->Add("limit", StrCat(o.limit));
  q->AddIf("continue", o.continue_token);
  q->AddIf("resourceVersion", o.resource_version);
  q->AddIf("resourceVersionMatch", o.resource_version_match);
}

}  // namespace

RestClient::RestClient(std::unique_ptr<HttpTransport> transport, const RestConfig& config)
    : transport_(std::move(transport)), limiter_(config.qps, config.burst) {}

void RestClient::Throttle() {
  auto wait = limiter_.Reserve(std::chrono::steady_clock::now());
  if (wait > std::chrono::milliseconds(50)) {
    Logger()->debug("k8s_client_throttled wait_ms={}",
                    std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
  }
  if (wait > TokenBucket::Duration::zero()) std::this_thread::sleep_for(wait);
}

StatusOr<nlohmann::json> RestClient::Call(HttpRequest req, const JsonSelection* selection) {
  Throttle();
  const std::string what = StrCat(req.method, " ", req.path.substr(0, req.path.find('?')));
  ASSIGN_OR_RETURN(HttpResponse resp, transport_->Send(req));
  if (resp.status < 200 || resp.status >= 300) {
    return ApiError(what, resp.status, resp.body, resp.retry_after);
  }
  // The bounded-depth scanner rather than nlohmann's parser: the same result for any real
  // object, an error instead of a stack-deep DOM for hostile input, and faster.
  static const JsonSelection kAll;
  auto body = ParseSelected(resp.body, selection != nullptr ? *selection : kAll);
  if (!body.ok()) {
    return DataLossError(StrCat(what, ": HTTP ", resp.status, " with a body that is not JSON (",
                                resp.body.size(), " bytes): ", body.status().message()));
  }
  return std::move(body).value();
}

StatusOr<nlohmann::json> RestClient::Get(const Resource& r, const std::string& ns,
                                         const std::string& name, const std::string& subresource) {
  if (name.empty()) return InvalidArgumentError(StrCat("get ", r.Name(), ": empty name"));
  HttpRequest req;
  req.path = ResourcePath(r, ns, name, subresource);
  return Call(std::move(req));
}

StatusOr<ListResult> RestClient::List(const Resource& r, const std::string& ns,
                                      const ListOptions& options) {
  Query q;
  AddListOptions(&q, options);
  HttpRequest req;
  req.path = ResourcePath(r, ns, "") + q.str();
  std::optional<JsonSelection> selection;
  if (options.item_selection != nullptr) {
    selection = JsonSelection::Fields({{"items", *options.item_selection}, {"metadata", {}}});
  }
  ASSIGN_OR_RETURN(nlohmann::json body, Call(std::move(req), selection ? &*selection : nullptr));
  const std::string what = StrCat("list ", r.Name());
  ListResult result;
  if (!body.is_object()) return DataLossError(StrCat(what, ": reply is not an object"));
  auto items = body.find("items");
  if (items != body.end() && !items->is_null()) {
    if (!items->is_array()) return DataLossError(StrCat(what, ": 'items' is not a list"));
    result.items.reserve(items->size());
    for (auto& item : *items) {
      if (!item.is_object()) return DataLossError(StrCat(what, ": an item is not an object"));
      result.items.push_back(std::move(item));
    }
  }
  auto md = body.find("metadata");
  if (md != body.end() && md->is_object()) {
    result.resource_version = md->value("resourceVersion", "");
    result.continue_token = md->value("continue", "");
    auto rem = md->find("remainingItemCount");
    if (rem != md->end() && rem->is_number_integer())
      result.remaining_item_count = rem->get<int64_t>();
  }
  return result;
}

StatusOr<nlohmann::json> RestClient::Create(const Resource& r, const std::string& ns,
                                            const nlohmann::json& object,
                                            const WriteOptions& options) {
  Query q;
  q.AddIf("fieldManager", options.field_manager);
  if (options.dry_run) q.Add("dryRun", "All");
  HttpRequest req;
  req.method = "POST";
  req.path = ResourcePath(r, ns, "") + q.str();
  req.body = object.dump();
  req.content_type = "application/json";
  return Call(std::move(req));
}

StatusOr<nlohmann::json> RestClient::Update(const Resource& r, const std::string& ns,
                                            const nlohmann::json& object,
                                            const WriteOptions& options,
                                            const std::string& subresource) {
  auto name = NameOf(object);
  if (!name.ok())
    return InvalidArgumentError(StrCat("update ", r.Name(), ": ", name.status().message()));
  Query q;
  q.AddIf("fieldManager", options.field_manager);
  if (options.dry_run) q.Add("dryRun", "All");
  HttpRequest req;
  req.method = "PUT";
  req.path = ResourcePath(r, ns, *name, subresource) + q.str();
  req.body = object.dump();
  req.content_type = "application/json";
  return Call(std::move(req));
}

StatusOr<nlohmann::json> RestClient::Patch(const Resource& r, const std::string& ns,
                                           const std::string& name, PatchType type,
                                           const nlohmann::json& patch, const PatchOptions& options,
                                           const std::string& subresource) {
  if (name.empty()) return InvalidArgumentError(StrCat("patch ", r.Name(), ": empty name"));
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return InvalidArgumentError(
        StrCat("apply ", r.Name(), "/", name, ": server-side apply needs a field manager"));
  }
  if (type == PatchType::kJsonPatch ? !patch.is_array() : !patch.is_object()) {
    return InvalidArgumentError(StrCat("patch ", r.Name(), "/", name, ": ",
                                       type == PatchType::kJsonPatch
                                           ? "a JSON patch must be a list"
                                           : "a patch must be an object"));
  }
  Query q;
  q.AddIf("fieldManager", options.field_manager);
  if (type == PatchType::kApply && options.force) q.Add("force", "true");
  if (options.dry_run) q.Add("dryRun", "All");
  HttpRequest req;
  req.method = "PATCH";
  req.path = ResourcePath(r, ns, name, subresource) + q.str();
  req.body = patch.dump();
  req.content_type = ContentType(type);
  return Call(std::move(req));
}

StatusOr<nlohmann::json> RestClient::Delete(const Resource& r, const std::string& ns,
                                            const std::string& name, const DeleteOptions& options) {
  if (name.empty()) return InvalidArgumentError(StrCat("delete ", r.Name(), ": empty name"));
  HttpRequest req;
  req.method = "DELETE";
  req.path = ResourcePath(r, ns, name);
  nlohmann::json body = DeleteOptionsToJson(options);
  if (!body.empty()) {
    body["kind"] = "DeleteOptions";
    body["apiVersion"] = "v1";
    req.body = body.dump();
    req.content_type = "application/json";
  }
  return Call(std::move(req));
}

StatusOr<nlohmann::json> RestClient::CreateSubresource(const Resource& r, const std::string& ns,
                                                       const std::string& name,
                                                       const std::string& subresource,
                                                       const nlohmann::json& body) {
  if (name.empty() || subresource.empty()) {
    return InvalidArgumentError(StrCat("post ", r.Name(), ": empty name or subresource"));
  }
  HttpRequest req;
  req.method = "POST";
  req.path = ResourcePath(r, ns, name, subresource);
  req.body = body.dump();
  req.content_type = "application/json";
  return Call(std::move(req));
}

Status RestClient::Watch(const Resource& r, const std::string& ns, const ListOptions& options,
                         const WatchHandler& handler, const std::atomic<bool>* cancel) {
  Query q;
  q.Add("watch", "1");
  ListOptions o = options;
  o.limit = 0;
  o.continue_token.clear();
  o.resource_version_match.clear();
  AddListOptions(&q, o);
  if (options.allow_watch_bookmarks) q.Add("allowWatchBookmarks", "true");
  // Like client-go, end each watch after a randomised 5-10 minutes so that a silently dead
  // connection or a stuck apiserver cannot hold the informer forever.
  int64_t timeout = options.timeout_seconds;
  if (timeout <= 0) {
    thread_local std::mt19937 rng(std::random_device{}());
    timeout = std::uniform_int_distribution<int64_t>(300, 600)(rng);
  }
  q.Add("timeoutSeconds", StrCat(timeout));
  HttpRequest req;
  req.path = ResourcePath(r, ns, "") + q.str();
  req.timeout = std::chrono::seconds(timeout + 30);
  const std::string what = StrCat("watch ", r.Name());

  Throttle();
  WatchDecoder decoder(what, 16u << 20, options.watch_selection);
  Status decode_error;
  auto sink = [&](std::string_view chunk) {
    decode_error = decoder.Feed(chunk, handler);
    return decode_error.ok() && !decoder.stopped();
  };
  ASSIGN_OR_RETURN(HttpResponse resp, transport_->Stream(req, sink, cancel));
  if (resp.status < 200 || resp.status >= 300) {
    return ApiError(StrCat("WATCH ", ResourcePath(r, ns, "")), resp.status, resp.body,
                    resp.retry_after);
  }
  RETURN_IF_ERROR(decode_error);
  if (decoder.stopped()) return OkStatus();
  return decoder.Finish(handler);
}

StatusOr<std::unique_ptr<KubeClient>> NewRestClient(const RestConfig& config) {
  ASSIGN_OR_RETURN(std::unique_ptr<CurlTransport> transport, CurlTransport::Create(config));
  return std::unique_ptr<KubeClient>(std::make_unique<RestClient>(std::move(transport), config));
}

}  // namespace skb::k8s
