// SPDX-License-Identifier: Apache-2.0
// What an operator finds of the bridge after a decommission, read the way the operator would:
// kubectl with jq, sinfo and squeue. Shares no code with the bridge (not its label names'
// constants, not its parsers): a check through the bridge's own readers would pass whenever
// they miss what they also missed when cleaning.
#pragma once

#include <string>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::decommission_e2e {

// One line per thing of the bridge's left in the cluster ("node1 taint slurm-k8s-bridge.io/
// slurm-busy", "Slurm drain node2 k8s-bridge: lent to ..."); "" when nothing is. Stricter
// than the decommission's own list: every annotation, label and taint with the bridge's
// prefix counts, but those the testbed itself sets as a site would (the node selector's
// label slurm-k8s-bridge.io/managed, the rack and real-node labels, the kubelet-restart
// annotations of its fault injection).
inline std::string LeftOfTheBridge() {
  using testbed::Shell;
  std::string left;
  auto add = [&](const std::string& what, const testbed::CommandResult& r) {
    const std::string out = testbed::Trim(r.out);
    if (!out.empty()) StrAppend(&left, what, ":\n", out, "\n");
    if (r.exit_code != 0) StrAppend(&left, what, ": the check failed: ", r.err, "\n");
  };
  add("pods of the bridge",
      Shell("kubectl get pods -A -l slurm-k8s-bridge.io/role -o "
            "jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}'"));
  add("on the nodes", Shell(R"jq(kubectl get nodes -o json | jq -r '
      ["managed", "rack", "real-node"] as $site_labels
      | .items[] | .metadata.name as $n
      | ((.metadata.annotations // {}) | keys[]
          | select(startswith("slurm-k8s-bridge.io/")
                   and (startswith("slurm-k8s-bridge.io/kubelet-restart") | not))
          | "\($n) annotation \(.)"),
        ((.metadata.labels // {}) | keys[]
          | select(startswith("slurm-k8s-bridge.io/")
                   and (ltrimstr("slurm-k8s-bridge.io/") as $k | $site_labels | index($k) | not))
          | "\($n) label \(.)"),
        ((.spec.taints // [])[] | select(.key | startswith("slurm-k8s-bridge.io/"))
          | "\($n) taint \(.key)"),
        ((.status.conditions // [])[]
          | select(.type == "SlurmNodeHealthy" or .type == "SlurmDrained"
                   or .type == "GPUDevicesHealthy")
          | "\($n) condition \(.type)")')jq"));
  add("finalizers",
      Shell("kubectl get pods -A -o json | jq -r '.items[] | select((.metadata.finalizers // [])"
            " | any(startswith(\"slurm-k8s-bridge.io/\"))) | .metadata.name'"));
  // A server without the DRA API has none to list.
  add("DeviceTaintRules",
      Shell("if kubectl api-resources -o name | grep -qx devicetaintrules.resource.k8s.io; then "
            "kubectl get devicetaintrules -o json | jq -r '.items[] | select((.metadata.labels"
            " // {})[\"app.kubernetes.io/managed-by\"] == \"slurm-k8s-bridge\") | .metadata.name';"
            " fi"));
  add("ResourceQuotas",
      Shell("kubectl get resourcequotas -A -o json | jq -r '.items[] | select((.metadata.labels"
            " // {})[\"app.kubernetes.io/managed-by\"] == \"slurm-k8s-bridge\")"
            " | \"\\(.metadata.namespace)/\\(.metadata.name)\"'"));
  add("Slurm drains", Shell("sinfo -h -N -o '%N %E' | sort -u | awk '$2 ~ /^k8s-bridge:/'"));
  add("placeholder jobs", Shell("squeue -h -n skb-gpu-hold -o '%i %T'"));
  add("preemption records",
      Shell("for j in $(squeue -h -o %i); do scontrol show job \"$j\" |"
            " grep -o 'k8s-bridge-preempted=[^ ]*' | sed \"s/^/job $j /\"; done; true"));
  return left;
}

}  // namespace skb::decommission_e2e
