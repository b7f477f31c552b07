// SPDX-License-Identifier: Apache-2.0
#include "k8s/kube_client.h"

namespace skb::k8s {

StatusOr<std::string> ForEachListPage(
    KubeClient& client, const Resource& r, const std::string& ns, ListOptions options,
    const std::function<Status(ListResult&& page)>& page_handler) {
  std::string resource_version;
  bool first = true;
  do {
    ASSIGN_OR_RETURN(ListResult page, client.List(r, ns, options));
    if (first) {
      resource_version = page.resource_version;
      first = false;
    }
    options.continue_token = page.continue_token;
    // A continuation carries its own snapshot; resourceVersion must not be repeated.
    options.resource_version.clear();
    options.resource_version_match.clear();
    RETURN_IF_ERROR(page_handler(std::move(page)));
  } while (!options.continue_token.empty());
  return resource_version;
}

StatusOr<ListResult> ListAll(KubeClient& client, const Resource& r, const std::string& ns,
                             ListOptions options) {
  ListResult all;
  ASSIGN_OR_RETURN(all.resource_version,
                   ForEachListPage(client, r, ns, std::move(options), [&all](ListResult&& page) {
                     if (all.items.empty()) {
                       all.items = std::move(page.items);
                     } else {
                       all.items.insert(all.items.end(),
                                        std::make_move_iterator(page.items.begin()),
                                        std::make_move_iterator(page.items.end()));
                     }
                     return OkStatus();
                   }));
  return all;
}

nlohmann::json DeleteOptionsToJson(const DeleteOptions& options) {
  nlohmann::json del = nlohmann::json::object();
  if (options.grace_period_seconds) del["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (options.precondition_uid) del["preconditions"]["uid"] = *options.precondition_uid;
  if (options.precondition_resource_version) {
    del["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  if (!options.propagation_policy.empty()) del["propagationPolicy"] = options.propagation_policy;
  if (options.dry_run) del["dryRun"] = {"All"};
  return del;
}

StatusOr<nlohmann::json> EvictPod(KubeClient& client, const std::string& ns,
                                  const std::string& name, const DeleteOptions& options) {
  nlohmann::json eviction = {{"apiVersion", "policy/v1"},
                             {"kind", "Eviction"},
                             {"metadata", {{"name", name}, {"namespace", ns}}}};
  nlohmann::json del = DeleteOptionsToJson(options);
  if (!del.empty()) eviction["deleteOptions"] = std::move(del);
  return client.CreateSubresource(Resource::Pods(), ns, name, "eviction", eviction);
}

}  // namespace skb::k8s
