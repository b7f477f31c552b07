// SPDX-License-Identifier: Apache-2.0
// How bridgectl prints the daemon's answers: aligned tables for people, JSON (`-o json`)
// for scripts, kind/name lines (`-o name`). Pure functions of the protobuf answers.
//
//   std::fputs(Render(NodesListing(resp.list_nodes(), /*wide=*/false)).c_str(), stdout);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bridge/api/v1/bridge.pb.h"

namespace skb::bridge::cli {

// Columns padded to their widest cell, two spaces apart; no trailing spaces.
std::string Table(const std::vector<std::vector<std::string>>& rows);

// What `get` prints as text, in parts: the table's rows (the header first; none at all when
// a note stands instead of the table), what a person is told beside them ("(not ready:
// ...)", "quotas are off ..."), and each object as kind/NAME for `-o name`.
struct Listing {
  std::vector<std::vector<std::string>> rows;
  std::string notes;
  std::vector<std::string> names;
};

// The table and then its notes; without headers (--no-headers), the data rows alone: the
// caller shows the notes apart (stderr), so a script reads rows only.
std::string Render(const Listing& listing, bool headers = true);

// `-o name`: one kind/NAME a line.
std::string Names(const Listing& listing);

// `get node NAME`: keeps only the node of that Slurm or Kubernetes name. False when there is
// none.
bool KeepOnlyNode(api::v1::ListNodesResponse* resp, const std::string& name);

// A node shared GPU by GPU: how many GPUs each side holds, e.g. "slurm 5 (1 idle) / k8s 3"
// (+ "/ moving N", "/ unguarded N" while a move is under way or a hold is missing).
std::string GpuSplit(const api::v1::NodeSummary& n);

// NODE GPUS OWNER K8S SLURM REASON JOBS PODS (wide: + MODE, FEATURES, K8S-NAME). OWNER is
// GpuSplit for a node shared GPU by GPU (gpu_mode "gpu"), the whole-node owner otherwise.
// Names: node/NAME.
Listing NodesListing(const api::v1::ListNodesResponse& resp, bool wide);
nlohmann::json NodesJson(const api::v1::ListNodesResponse& resp);

// JOBID USER PARTITION STATE NODES GPUS OWNER PREEMPTIBLE PREEMPTED WHY (wide: + ACCOUNT,
// QOS, REASON, RESTARTS, STARTED). A job without a user name shows its uid. Names:
// job/ID (the display id: 7_3 for an array task).
Listing JobsListing(const api::v1::ListJobsResponse& resp, bool wide);
nlohmann::json JobsJson(const api::v1::ListJobsResponse& resp);

// kubectl-describe-like text: summary, conditions, taints, why (explanation), plan.
std::string DescribeText(const api::v1::DescribeNodeResponse& resp);
nlohmann::json DescribeJson(const api::v1::DescribeNodeResponse& resp);

}  // namespace skb::bridge::cli
