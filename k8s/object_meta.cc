// SPDX-License-Identifier: Apache-2.0
#include "k8s/object_meta.h"

#include "src/base/strings.h"

namespace skb::k8s {

StatusOr<ObjectMeta> ReadObjectMeta(const nlohmann::json& obj, std::string_view what,
                                    std::vector<FieldIssue>* issues) {
  if (!obj.is_object())
    return InvalidArgumentError(StrCat(what, ": not an object but a ", JsonTypeName(obj)));
  FieldReader md = FieldReader(obj, "", issues).Sub("metadata");
  ObjectMeta m;
  m.name = md.String("name");
  if (m.name.empty()) return InvalidArgumentError(StrCat(what, ": no metadata.name"));
  m.namespace_ = md.String("namespace");
  m.uid = md.String("uid");
  m.resource_version = md.String("resourceVersion");
  m.creation_timestamp = md.String("creationTimestamp");
  m.deletion_timestamp = md.String("deletionTimestamp");
  m.labels = md.StringMap("labels");
  m.annotations = md.StringMap("annotations");
  m.finalizers = md.StringList("finalizers");
  return m;
}

std::vector<Condition> ReadConditions(const FieldReader& reader, std::string_view key) {
  std::vector<Condition> out;
  for (const FieldReader& c : reader.ObjectList(key)) {
    Condition cond;
    cond.type = c.String("type");
    if (cond.type.empty()) {
      c.AddIssue(c.PathOf("type"), "condition without a type skipped");
      continue;
    }
    cond.status = c.String("status");
    cond.reason = c.String("reason");
    cond.message = c.String("message");
    cond.last_transition_time = c.String("lastTransitionTime");
    out.push_back(std::move(cond));
  }
  return out;
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace skb::k8s
