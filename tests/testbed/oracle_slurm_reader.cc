// SPDX-License-Identifier: Apache-2.0
// The invariant oracle's Slurm reader (tests/testbed/oracle.h): a process of its own, so
// that its libslurm (process-wide state, not safe for concurrent use) is not the one the
// bridge's client in the test process owns. For every line on stdin it calls
// slurm_load_jobs(0, &msg, SHOW_ALL | SHOW_DETAIL) and writes one line of JSON on stdout
// (oracle_wire.h): each job's raw fields, nothing interpreted. Exits at end of input.
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/prctl.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/testbed/oracle_wire.h"

namespace {

using nlohmann::json;
using skb::oracle::SlurmJob;

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

// libslurm's own hostlist: "node[1-3]" -> node1 node2 node3. hostlist_t is a pointer type up
// to 23.02 and the struct itself from 23.11 on; auto* takes either.
bool Expand(const char* list, std::vector<std::string>* out) {
  if (list == nullptr || *list == '\0') return true;
  auto* hl = slurm_hostlist_create(list);
  if (hl == nullptr) return false;
  while (char* host = slurm_hostlist_shift(hl)) {
    out->emplace_back(host);
    free(host);  // malloc()ed by libslurm
    if (out->size() > 1'000'000) break;
  }
  slurm_hostlist_destroy(hl);
  return true;
}

json LoadJobs() {
  job_info_msg_t* msg = nullptr;
  if (slurm_load_jobs(0, &msg, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
    // libslurm sets errno (slurm_get_errno is gone from 24.11).
    return {{"ok", false}, {"error", Str(slurm_strerror(errno))}};
  }
  json jobs = json::array();
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    SlurmJob job;
    job.job_id = j.job_id;
    job.job_state = j.job_state;
    job.name = Str(j.name);
    job.partition = Str(j.partition);
    job.nodes = Str(j.nodes);
    job.nodes_expanded = Expand(j.nodes, &job.node_list);
    for (uint32_t n = 0; n < j.gres_detail_cnt; ++n) {
      if (j.gres_detail_str == nullptr || j.gres_detail_str[n] == nullptr) {
        job.gres_detail.emplace_back(std::nullopt);
      } else {
        job.gres_detail.emplace_back(j.gres_detail_str[n]);
      }
    }
    job.tres_alloc = Str(j.tres_alloc_str);
    jobs.push_back(skb::oracle::ToJson(job));
  }
  slurm_free_job_info_msg(msg);
  return {{"ok", true}, {"jobs", std::move(jobs)}};
}

}  // namespace

int main() {
  // The oracle's sampling thread started it: it goes when that thread does, whatever
  // happens to the test process.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  slurm_init(nullptr);  // $SLURM_CONF
  std::string line;
  while (std::getline(std::cin, line)) {
    // Invalid UTF-8 in a job's name or comment is replaced, never a throw.
    std::cout << LoadJobs().dump(-1, ' ', false, json::error_handler_t::replace) << '\n'
              << std::flush;
    if (!std::cout) return 1;
  }
  return 0;
}
