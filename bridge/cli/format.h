// How bridgectl prints the daemon's answers: aligned tables for people, JSON (`-o json`)
// for scripts. Pure functions of the protobuf answers.
//
//   std::fputs(NodesTable(resp.list_nodes(), /*wide=*/false).c_str(), stdout);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bridge/api/v1/bridge.pb.h"

namespace skb::bridge::cli {

// Columns padded to their widest cell, two spaces apart; no trailing spaces.
std::string Table(const std::vector<std::vector<std::string>>& rows);

// A node shared GPU by GPU: how many GPUs each side holds, e.g. "slurm 5 (1 idle) / k8s 3"
// (+ "/ moving N", "/ unguarded N" while a move is under way or a hold is missing).
std::string GpuSplit(const api::v1::NodeSummary& n);

// NODE GPUS OWNER K8S SLURM REASON JOBS PODS (wide: + MODE, FEATURES, K8S-NAME). OWNER is
// GpuSplit for a node shared GPU by GPU (gpu_mode "gpu"), the whole-node owner otherwise.
std::string NodesTable(const api::v1::ListNodesResponse& resp, bool wide);
nlohmann::json NodesJson(const api::v1::ListNodesResponse& resp);

// JOBID USER PARTITION STATE NODES GPUS OWNER PREEMPTIBLE PREEMPTED WHY (wide: + ACCOUNT,
// QOS, REASON, RESTARTS, STARTED). A job without a user name shows its uid.
std::string JobsTable(const api::v1::ListJobsResponse& resp, bool wide);
nlohmann::json JobsJson(const api::v1::ListJobsResponse& resp);

// kubectl-describe-like text: summary, conditions, taints, why (explanation), plan.
std::string DescribeText(const api::v1::DescribeNodeResponse& resp);
nlohmann::json DescribeJson(const api::v1::DescribeNodeResponse& resp);

}  // namespace skb::bridge::cli
