// SPDX-License-Identifier: Apache-2.0
// What the oracle's Slurm reader process (oracle_slurm_reader.cc) sends the oracle
// (oracle.h): per request line, one line of JSON, {"ok": true, "jobs": [...]} or {"ok":
// false, "error": "..."}. Header-only: both sides are built from it, neither links the other.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace skb::oracle {

// One job of slurm_load_jobs, its fields as libslurm gave them (nothing interpreted).
struct SlurmJob {
  uint32_t job_id = 0;
  uint32_t job_state = 0;  // job_info_t.job_state: base state and flags
  std::string name;
  std::string partition;
  std::string nodes;                   // job_info_t.nodes, as Slurm writes it
  bool nodes_expanded = true;          // false: libslurm's hostlist refused `nodes`
  std::vector<std::string> node_list;  // `nodes` expanded by libslurm's hostlist
  // gres_detail_str[i] (nullopt for a NULL string): gres_detail_cnt of them, the i-th for
  // the i-th node of node_list.
  std::vector<std::optional<std::string>> gres_detail;
  std::string tres_alloc;  // tres_alloc_str
};

inline nlohmann::json ToJson(const SlurmJob& job) {
  nlohmann::json detail = nlohmann::json::array();
  for (const auto& d : job.gres_detail) detail.push_back(d ? nlohmann::json(*d) : nullptr);
  return {{"id", job.job_id},           {"state", job.job_state}, {"name", job.name},
          {"partition", job.partition}, {"nodes", job.nodes},     {"expanded", job.nodes_expanded},
          {"node_list", job.node_list}, {"gres_detail", detail},  {"tres_alloc", job.tres_alloc}};
}

}  // namespace skb::oracle
