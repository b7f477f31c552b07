// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/hetjob.h"

#include <algorithm>

#include "src/base/strings.h"

namespace skb::ownership {

std::vector<const slurm::JobView*> WholeJob(const slurm::JobView& job,
                                            std::span<const slurm::JobView> more) {
  std::vector<const slurm::JobView*> out = {&job};
  if (job.het_job_id == 0) return out;
  for (const slurm::JobView& j : more) {
    if (j.het_job_id != job.het_job_id) continue;
    if (std::none_of(out.begin(), out.end(),
                     [&](const slurm::JobView* o) { return o->job_id == j.job_id; })) {
      out.push_back(&j);
    }
  }
  std::sort(out.begin() + 1, out.end(), [](const slurm::JobView* a, const slurm::JobView* b) {
    return a->het_job_offset < b->het_job_offset;
  });
  return out;
}

std::string DescribeWhole(std::span<const slurm::JobView* const> components) {
  if (components.empty() || components.front()->het_job_id == 0) return "";
  std::vector<const slurm::JobView*> by_offset(components.begin(), components.end());
  std::sort(by_offset.begin(), by_offset.end(),
            [](const slurm::JobView* a, const slurm::JobView* b) {
              return a->het_job_offset < b->het_job_offset;
            });
  std::string out = StrCat("heterogeneous job ", by_offset.front()->het_job_id, " (components ");
  for (size_t i = 0; i < by_offset.size(); ++i) {
    const slurm::JobView& c = *by_offset[i];
    StrAppend(&out, i ? ", " : "", c.job_id, " on ",
              c.nodes.empty() ? std::string("no node") : StrJoin(c.nodes, ","));
  }
  return StrCat(out, ")");
}

int64_t WholeJobGpus(std::span<const slurm::JobView* const> components) {
  int64_t total = 0;
  for (const slurm::JobView* c : components) total += c->AllocatedGpus();
  return total;
}

}  // namespace skb::ownership
