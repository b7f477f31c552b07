// SPDX-License-Identifier: Apache-2.0
#include "k8s/event_info.h"

namespace skb::k8s {

StatusOr<EventInfo> ParseEvent(const nlohmann::json& obj) {
  EventInfo e;
  ASSIGN_OR_RETURN(e.meta, ReadObjectMeta(obj, "event", &e.issues));
  FieldReader root(obj, "", &e.issues);
  FieldReader inv = root.Sub("involvedObject");
  e.involved = {inv.String("kind"), inv.String("namespace"), inv.String("name"), inv.String("uid"),
                inv.String("apiVersion")};
  e.type = root.String("type");
  e.reason = root.String("reason");
  e.message = root.String("message");
  e.count = root.Int("count").value_or(0);
  e.first_timestamp = root.String("firstTimestamp");
  e.last_timestamp = root.String("lastTimestamp");
  e.source_component = root.Sub("source").String("component");
  return e;
}

}  // namespace skb::k8s
