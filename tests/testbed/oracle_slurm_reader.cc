// SPDX-License-Identifier: Apache-2.0
// The invariant oracle's Slurm reader (tests/testbed/oracle.h): a process of its own, so
// that its libslurm (process-wide state, not safe for concurrent use) is not the one the
// bridge's client in the test process owns. For every line on stdin it calls
// slurm_load_jobs(last_update, &msg, SHOW_ALL | SHOW_DETAIL) and writes one line of JSON on
// stdout (oracle_wire.h): each job's raw fields, nothing interpreted. Exits at end of input.
//
// last_update is the time of the answer before (0 the first time), as squeue --iterate
// asks: slurmctld answers SLURM_NO_CHANGE_IN_DATA, without packing a job, when no job has
// changed since the second before it (_slurm_rpc_dump_jobs: last_update - 1 >=
// last_job_update), and the line sent is the one before, which is then still Slurm's word.
// A full read of every job with its GRES detail at every tick was most of the Slurm side of
// the slowest oracle reads on a busy machine.
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

// The jobs as one line of JSON.
std::string Line(const json& answer) {
  // Invalid UTF-8 in a job's name or comment is replaced, never a throw.
  return answer.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The answer to one request: the jobs as slurmctld has them now, or the answer before when
// slurmctld says nothing changed since it.
std::string LoadJobs() {
  static time_t last_update = 0;  // of the answer in `last`; 0: none yet
  static std::string last;
  job_info_msg_t* msg = nullptr;
  if (slurm_load_jobs(last_update, &msg, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
    // libslurm sets errno (slurm_get_errno is gone from 24.11).
    if (errno == SLURM_NO_CHANGE_IN_DATA && last_update != 0) return last;
    last_update = 0;  // the next read is a whole one
    return Line({{"ok", false}, {"error", Str(slurm_strerror(errno))}});
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
  last_update = msg != nullptr ? msg->last_update : 0;
  slurm_free_job_info_msg(msg);
  last = Line({{"ok", true}, {"jobs", std::move(jobs)}});
  return last;
}

}  // namespace

int main() {
  // The oracle's sampling thread started it: it goes when that thread does, whatever
  // happens to the test process.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  slurm_init(nullptr);  // $SLURM_CONF
  std::string line;
  while (std::getline(std::cin, line)) {
    std::cout << LoadJobs() << '\n' << std::flush;
    if (!std::cout) return 1;
  }
  return 0;
}
