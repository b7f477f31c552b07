// SPDX-License-Identifier: Apache-2.0
#include "src/admission/submit.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/time_codec.h"
#include "src/quota/observe.h"
#include "src/slurm/syntax.h"

namespace skb::admission {
namespace {

void Append(std::string message, Decision* d) {
  d->user_message =
      d->user_message.empty() ? std::move(message) : StrCat(d->user_message, "\n", message);
}

// Tells an accepted job the bridge may preempt what a lend would do to it.
void AdviseOnPreemption(const config::Config& cfg, const ownership::JobPolicy& policy,
                        Decision* d) {
  if (!cfg.lending.enabled || !policy.preemptible) return;
  Append(StrCat(kPrefix, "this job may be preempted for Kubernetes (", policy.why,
                "): if its node is lent, ", ownership::DescribePreemption(policy),
                "; checkpoint on that signal"),
         d);
}

// Adds the quota standing to an accepted job's message, or refuses it.
void AdviseOnQuota(const JobRequest& job, const config::Config& cfg,
                   const quota::Classification& quotas, const ownership::JobPolicy& policy,
                   Decision* d) {
  if (!cfg.quotas.enabled()) return;
  quota::SubmitFacts facts{.account = EffectiveAccount(job),
                           .account_is_default = job.account.empty(),
                           .gpus = static_cast<int>(RequestedGpus(job)),
                           .gpu_type = RequestedGpuType(job),
                           .preemptible = policy.preemptible,
                           .preemptible_why = policy.why,
                           .bridge_preempts = cfg.lending.enabled};
  quota::SubmitAdvice advice = quota::AdviseSubmit(cfg.quotas, quotas, facts);
  if (advice.message.empty()) return;
  if (advice.refuse) {
    d->accept = false;
    d->refusal = Refusal::kQuota;
    d->user_message = std::move(advice.message);
    d->admin_comment.reset();
    return;
  }
  Append(std::move(advice.message), d);
}

}  // namespace

Decision Admit(const JobRequest& job, const Inventory& inventory, const Policy& policy,
               const SubmitContext& context) {
  Decision d = Decide(job, inventory, policy);
  if (!d.accept || context.config == nullptr) return d;
  // The job as the lend will judge it once it runs, once for both notices.
  const ownership::JobPolicy judged =
      ownership::PolicyFor(AsRunning(job, d), *context.config, ownership::FromUnix(0));
  AdviseOnPreemption(*context.config, judged, &d);
  if (context.quotas != nullptr) AdviseOnQuota(job, *context.config, *context.quotas, judged, &d);
  return d;
}

int64_t RequestedGpus(const JobRequest& job) {
  const int64_t nodes = std::max<int64_t>(1, job.min_nodes);
  constexpr int64_t kMax = 1'000'000;
  if (int64_t per_job = slurm::GpusInTres(job.tres_per_job); per_job > 0)
    return std::min(per_job, kMax);
  int64_t per_node = slurm::GpusInTres(job.tres_per_node);
  if (per_node == 0) per_node = slurm::GpusInTres(job.tres_per_task);
  if (per_node == 0) per_node = slurm::GpusInTres(job.tres_per_socket);
  return std::min<int64_t>(std::min(per_node, kMax) * std::min(nodes, kMax), kMax);
}

std::string RequestedGpuType(const JobRequest& job) {
  for (const std::string* tres :
       {&job.tres_per_job, &job.tres_per_node, &job.tres_per_task, &job.tres_per_socket}) {
    if (std::string type = slurm::RequestedGpuType(*tres); !type.empty()) return type;
  }
  return "";
}

std::string EffectiveAccount(const JobRequest& job) {
  return job.account.empty() ? job.default_account : job.account;
}

slurm::JobView AsRunning(const JobRequest& job, const Decision& d) {
  slurm::JobView view;
  view.account = EffectiveAccount(job);
  view.qos = job.qos;
  view.partition = job.partition;
  view.admin_comment = d.admin_comment.value_or(job.admin_comment);
  view.requeue = job.requeue;
  view.batch = !job.interactive;
  view.signal = job.signal;
  return view;
}

}  // namespace skb::admission
