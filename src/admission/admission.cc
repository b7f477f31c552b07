// SPDX-License-Identifier: Apache-2.0
#include "src/admission/admission.h"

#include <algorithm>
#include <map>
#include <set>

#include "src/base/strings.h"
#include "src/devices/placeholder_record.h"
#include "src/slurm/syntax.h"

namespace skb::admission {
namespace {

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::string> Partitions(const JobRequest& job, const Inventory& inv) {
  std::vector<std::string> out;
  for (std::string_view p : StrSplit(job.partition, ',', /*skip_empty=*/true)) {
    p = StripWhitespace(p);
    if (!p.empty()) out.emplace_back(p);
  }
  if (out.empty() && !inv.default_partition.empty()) out.push_back(inv.default_partition);
  return out;
}

bool IsPreemptible(const JobRequest& job, const std::vector<std::string>& partitions,
                   const Policy& policy) {
  if (!job.qos.empty() && Contains(policy.preemptible_qos, job.qos)) return true;
  if (partitions.empty()) return false;
  return std::all_of(partitions.begin(), partitions.end(), [&](const std::string& p) {
    return Contains(policy.preemptible_partitions, p);
  });
}

// GPUs of `type` (any type when empty) on one node.
int64_t GpusOfType(const NodeFacts& n, const std::string& type) {
  int64_t total = 0;
  for (const auto& g : n.gpus) {
    if (type.empty() || g.type == type) total += g.count;
  }
  return total;
}

std::string Plural(int64_t n, std::string_view word) {
  return StrCat(n, " ", word, n == 1 ? "" : "s");
}

struct GpuField {
  const std::string* tres;
  std::string_view scope;  // "per node", "per task", "per socket", "per job"
};

}  // namespace

Inventory InventoryFromSlurm(const std::vector<slurm::NodeView>& nodes,
                             std::string default_partition) {
  Inventory inv;
  inv.known = true;
  inv.default_partition = std::move(default_partition);
  for (const auto& n : nodes) {
    NodeFacts f;
    f.name = n.name;
    f.gpus = n.gpus;
    f.features = n.features;
    f.partitions = n.partitions;
    if (n.Unavailable()) {
      const bool lent = n.DrainedByBridge() && n.reason.find("lent to") != std::string::npos;
      f.availability = lent ? NodeFacts::Availability::kLent : NodeFacts::Availability::kUnhealthy;
      f.why = n.reason.empty() ? n.StateString() : StrCat(n.StateString(), ": ", n.reason);
    }
    inv.nodes.push_back(std::move(f));
  }
  return inv;
}

std::string DescribeGpus(const std::vector<const NodeFacts*>& nodes) {
  // (type, per-node count) -> number of nodes, listed biggest first.
  std::map<std::pair<std::string, int64_t>, int64_t> groups;
  for (const NodeFacts* n : nodes) {
    for (const auto& g : n->gpus) {
      if (g.count > 0) ++groups[{g.type.empty() ? "gpu" : g.type, g.count}];
    }
  }
  if (groups.empty()) return "no GPUs";
  std::vector<std::pair<std::pair<std::string, int64_t>, int64_t>> sorted(groups.begin(),
                                                                          groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [key, count] : sorted) {
    if (!out.empty()) out += ", ";
    StrAppend(&out, key.first, " x", key.second, " on ", Plural(count, "node"));
  }
  return out;
}

Decision Decide(const JobRequest& job, const Inventory& inventory, const Policy& policy) {
  Decision d;
  const std::vector<std::string> partitions = Partitions(job, inventory);
  slurm::Annotation note;
  note.preemptible = IsPreemptible(job, partitions, policy);
  note.signal = job.signal;
  // Where it was decided: a job an admin moves later is judged where it is then. No
  // partitions when none was asked for and the default is unknown (no inventory yet).
  if (!partitions.empty()) note.partitions = partitions;
  note.qos = job.qos;
  auto accept = [&](std::string message) {
    d.accept = true;
    d.user_message = std::move(message);
    d.admin_comment = slurm::MergeAnnotation(job.admin_comment, note);
    return d;
  };
  auto reject = [&](Refusal why, std::string message) {
    d.accept = false;
    d.refusal = why;
    d.user_message = StrCat(kPrefix, message);
    d.admin_comment.reset();
    return d;
  };
  if (job.name == devices::kPlaceholderJobName &&
      devices::ParsePlaceholderRecord(job.admin_comment).has_value()) {
    return Decision{};  // the bridge's placeholder: accepted as it is
  }
  if (!inventory.known) return accept("");

  // Candidate nodes: those in the job's partitions. Partitions no managed node is in are
  // not the bridge's to judge (Slurm rejects unknown partitions itself).
  std::vector<const NodeFacts*> candidates;
  for (const auto& n : inventory.nodes) {
    if (partitions.empty() ||
        std::any_of(partitions.begin(), partitions.end(),
                    [&](const std::string& p) { return Contains(n.partitions, p); })) {
      candidates.push_back(&n);
    }
  }
  if (candidates.empty()) return accept("");
  std::string where;
  if (!partitions.empty() && candidates.size() != inventory.nodes.size()) {
    where = StrCat(" in partition ", job.partition.empty() ? partitions[0] : job.partition);
  }
  const std::string available = DescribeGpus(candidates);

  const GpuField fields[] = {{&job.tres_per_node, "per node"},
                             {&job.tres_per_task, "per task"},
                             {&job.tres_per_socket, "per socket"},
                             {&job.tres_per_job, "per job"}};
  for (const auto& field : fields) {
    if (field.tres->empty()) continue;
    auto requests = slurm::ParseTresRequest(*field.tres);
    if (!requests.ok()) continue;  // malformed: Slurm rejects it with its own message
    for (const auto& req : *requests) {
      if (req.name != "gpu" || req.count <= 0) continue;
      int64_t max_per_node = 0, total = 0, nodes_with = 0;
      for (const NodeFacts* n : candidates) {
        const int64_t c = GpusOfType(*n, req.type);
        if (c > 0) ++nodes_with;
        max_per_node = std::max(max_per_node, c);
        total += c;
      }
      const std::string what = req.type.empty() ? "GPUs" : StrCat("GPUs of type ", req.type);
      if (nodes_with == 0) {
        if (!req.type.empty()) {
          return reject(Refusal::kGresType, StrCat("no node", where, " has gpu type ", req.type,
                                                   "; available: ", available));
        }
        return reject(Refusal::kGresType, StrCat("no node", where, " has GPUs"));
      }
      if (field.scope == "per job") {
        if (req.count > total) {
          return reject(Refusal::kNodeConfig,
                        StrCat("the job asks for ", req.count, " ", what, " but all nodes", where,
                               " together have ", total, "; available: ", available));
        }
      } else if (req.count > max_per_node) {
        return reject(
            Refusal::kNodeConfig,
            StrCat("the job asks for ", req.count, " ", what, " ", field.scope, " but no node",
                   where, " has more than ", max_per_node, "; available: ", available));
      }
    }
  }

  if (policy.reject_unknown_features && !job.features.empty()) {
    auto names = slurm::ParseConstraintFeatures(job.features);
    if (names.ok()) {
      std::set<std::string> known;
      for (const NodeFacts* n : candidates) known.insert(n->features.begin(), n->features.end());
      for (const auto& name : *names) {
        if (known.count(name)) continue;
        std::string list;
        for (const auto& k : known) StrAppend(&list, list.empty() ? "" : ", ", k);
        return reject(Refusal::kFeature,
                      StrCat("unknown feature '", name, "' in --constraint; features of the nodes",
                             where, ": ", list.empty() ? "none" : list));
      }
    }
  }

  std::string message;
  for (const auto& name : job.required_nodes) {
    auto it = std::find_if(inventory.nodes.begin(), inventory.nodes.end(),
                           [&](const NodeFacts& n) { return n.name == name; });
    if (it == inventory.nodes.end()) continue;  // unknown: Slurm rejects it itself
    if (it->availability == NodeFacts::Availability::kAvailable) continue;
    if (!message.empty()) message += "; ";
    message += it->availability == NodeFacts::Availability::kLent
                   ? StrCat(kPrefix, "node ", name, " is lent to Kubernetes (", it->why,
                            "); the job waits until it returns to Slurm")
                   : StrCat(kPrefix, "node ", name, " is unavailable (", it->why,
                            "); the job waits until it is healthy again");
  }
  return accept(std::move(message));
}

}  // namespace skb::admission
