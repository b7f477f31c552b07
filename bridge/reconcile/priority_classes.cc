// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/priority_classes.h"

#include "bridge/logging.h"
#include "src/base/strings.h"

namespace skb::bridge {

Status EnsurePriorityClasses(k8s::KubeClient* kube, const ownership::LendingConfig& cfg) {
  struct Want {
    const ownership::PriorityClassRef* ref;
    const char* key;
    const char* what;
  };
  const Want wants[] = {
      {&cfg.idle_class, "idle", "reservation of an idle Slurm node (the cheapest victim)"},
      {&cfg.preemptible_class, "preemptible",
       "reservation of a node running only preemptible Slurm jobs"},
      {&cfg.protected_class, "protected",
       "reservation of a node running non-preemptible Slurm work (never a victim)"}};
  for (const Want& w : wants) {
    const std::string& name = w.ref->name;
    auto got = kube->Get(k8s::Resource::PriorityClasses(), "", name);
    if (got.ok()) {
      int64_t value = got->value("value", int64_t{0});
      if (value != w.ref->value) {
        return FailedPreconditionError(StrCat("PriorityClass ", name, " has value ", value,
                                              " but lending.priority_classes.", w.key, ".value is ",
                                              w.ref->value, ": make them agree"));
      }
      continue;
    }
    if (got.status().code() == StatusCode::kPermissionDenied) {
      Logger("reconcile")
          ->info(
              "priority_class_unchecked name={} reason=\"no read access: "
              "assuming the chart manages it\"",
              name);
      continue;
    }
    if (got.status().code() != StatusCode::kNotFound) return got.status();
    nlohmann::json pc = {
        {"apiVersion", "scheduling.k8s.io/v1"},
        {"kind", "PriorityClass"},
        {"metadata",
         {{"name", name}, {"labels", {{"app.kubernetes.io/managed-by", "slurm-k8s-bridge"}}}}},
        {"value", w.ref->value},
        {"preemptionPolicy", "Never"},
        {"description", StrCat("slurm-k8s-bridge: ", w.what)}};
    auto created = kube->Create(k8s::Resource::PriorityClasses(), "", pc);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return FailedPreconditionError(StrCat("PriorityClass ", name,
                                            " is missing and cannot be "
                                            "created (",
                                            created.status().message(),
                                            "): install the chart's PriorityClasses or grant "
                                            "priorityclasses create"));
    }
    Logger("reconcile")->info("priority_class_created name={} value={}", name, w.ref->value);
  }
  return OkStatus();
}

}  // namespace skb::bridge
