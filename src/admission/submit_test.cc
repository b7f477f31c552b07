// SPDX-License-Identifier: Apache-2.0
#include "src/admission/submit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/ownership/time_codec.h"
#include "src/quota/observe.h"

namespace skb::admission {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

JobRequest Gpus(std::string tres_per_node, uint32_t min_nodes = 1) {
  JobRequest j;
  j.partition = "gpu";
  j.tres_per_node = std::move(tres_per_node);
  j.min_nodes = min_nodes;
  return j;
}

TEST(RequestedGpus, PerJobElsePerNodeTimesTheNodesElsePerTaskOrSocketOncePerNode) {
  EXPECT_EQ(RequestedGpus(Gpus("gres/gpu:4")), 4);
  EXPECT_EQ(RequestedGpus(Gpus("gres/gpu:4", 3)), 12);
  EXPECT_EQ(RequestedGpus(Gpus("gres/gpu:4", 0)), 4) << "no node count reads as one";
  EXPECT_EQ(RequestedGpus(Gpus("gres/gpu:a100:2,gres/gpu:h100:1", 2)), 6);
  EXPECT_EQ(RequestedGpus(Gpus("gres/shard:4")), 0) << "not a gpu GRES";

  JobRequest per_job = Gpus("gres/gpu:4", 3);
  per_job.tres_per_job = "gres/gpu:5";
  EXPECT_EQ(RequestedGpus(per_job), 5) << "--gpus counts as given";

  JobRequest per_task = Gpus("", 2);
  per_task.tres_per_task = "gres/gpu:1";
  EXPECT_EQ(RequestedGpus(per_task), 2) << "the task count is not known: once per node";
  JobRequest per_socket = Gpus("", 1);
  per_socket.tres_per_socket = "gres/gpu:2";
  EXPECT_EQ(RequestedGpus(per_socket), 2);

  EXPECT_EQ(RequestedGpus(Gpus("gres/gpu:h100:many")), 0) << "unreadable counts 0";
  EXPECT_EQ(RequestedGpus(Gpus("gres/gpu:999999", 4'000'000'000u)), 1'000'000) << "capped";
  JobRequest huge = Gpus("");
  huge.tres_per_job = "gres/gpu:9223372036854775807";
  EXPECT_LE(RequestedGpus(huge), 1'000'000);
}

TEST(RequestedGpuType, TheFirstTypedRequestInSlurmsOrder) {
  EXPECT_EQ(RequestedGpuType(Gpus("gres/gpu:4")), "");
  EXPECT_EQ(RequestedGpuType(Gpus("gres/gpu:h100:4")), "h100");
  JobRequest both = Gpus("gres/gpu:h100:4");
  both.tres_per_job = "gres/gpu:a100:8";
  EXPECT_EQ(RequestedGpuType(both), "a100");
}

TEST(AsRunning, TheJobAsTheLendWillJudgeIt) {
  JobRequest j = Gpus("gres/gpu:1");
  j.qos = "scavenger";
  j.default_account = "team-a";
  j.requeue = false;
  j.interactive = true;
  j.admin_comment = "site=x";
  j.signal = slurm::SignalSpec{10, 300, true};
  Decision d;
  d.admin_comment = "site=x,k8s-bridge:preemptible=true";
  slurm::JobView v = AsRunning(j, d);
  EXPECT_EQ(v.account, "team-a") << "no --account: the user's default";
  EXPECT_EQ(v.qos, "scavenger");
  EXPECT_EQ(v.partition, "gpu");
  EXPECT_EQ(v.admin_comment, *d.admin_comment) << "the annotation just made";
  EXPECT_FALSE(v.requeue);
  EXPECT_FALSE(v.batch);
  ASSERT_TRUE(v.signal.has_value());
  EXPECT_EQ(v.signal->seconds, 300);
  j.account = "team-b";
  d.admin_comment.reset();
  EXPECT_EQ(AsRunning(j, d).account, "team-b");
  EXPECT_EQ(AsRunning(j, d).admin_comment, "site=x");
}

Inventory Nodes() {
  Inventory inv;
  inv.known = true;
  inv.default_partition = "gpu";
  for (int i = 1; i <= 4; ++i) {
    inv.nodes.push_back({"node" + std::to_string(i),
                         {{"h100", 8}},
                         {},
                         {"gpu"},
                         NodeFacts::Availability::kAvailable,
                         ""});
  }
  return inv;
}

config::Config Config(bool lending) {
  auto cfg = config::ParseConfig(std::string(R"({
    "admission": {"preemptible_partitions": ["gpu"]},
    "lending": {"enabled": )") + (lending ? "true" : "false") +
                                 R"(, "checkpoint_signal": "USR2",
                "default_grace": "90s"},
    "quotas": {"tenants": [
      {"name": "team-a", "slurm_accounts": ["team-a"], "guaranteed": 8},
      {"name": "team-b", "slurm_accounts": ["team-b"], "guaranteed": 8}]}})");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  return *cfg;
}

// team-a runs 12 GPUs (4 beyond its floor of 8), team-b 4.
quota::Observation Usage(const config::Config& cfg) {
  std::vector<slurm::JobView> jobs;
  for (uint32_t id = 1; id <= 4; ++id) {
    slurm::JobView j;
    j.job_id = id;
    j.account = id <= 3 ? "team-a" : "team-b";
    j.partition = "gpu";
    j.state = slurm::JobState::kRunning;
    j.nodes = {"node" + std::to_string(id)};
    j.gpus_per_node = 4;
    j.start_time = 1000 + id;
    j.requeue = true;
    jobs.push_back(j);
  }
  return quota::Observe(cfg, jobs, {}, {"node1", "node2", "node3", "node4"},
                        ownership::FromUnix(1'700'000'000));
}

Policy PolicyOf() { return Policy{.preemptible_partitions = {"gpu"}}; }

// The whole answer: Decide's, the preemption notice, the quota standing, and the refusal
// of a job that could not be preempted beyond its tenant's floor.
TEST(Admit, TellsTheStandingAndThePreemptionAndRefusesWhatCouldNotBeTakenBack) {
  const config::Config cfg = Config(/*lending=*/true);
  const quota::Observation usage = Usage(cfg);
  const SubmitContext ctx{.config = &cfg, .quotas = &usage.classification};

  JobRequest borrowed = Gpus("gres/gpu:2");
  borrowed.account = "team-a";
  Decision d = Admit(borrowed, Nodes(), PolicyOf(), ctx);
  EXPECT_TRUE(d.accept);
  EXPECT_THAT(d.user_message,
              HasSubstr("k8s-bridge: this job may be preempted for Kubernetes (admitted as "
                        "preemptible in partition gpu)"));
  EXPECT_THAT(d.user_message, HasSubstr("it gets SIGUSR2 90s before it is requeued"));
  EXPECT_THAT(d.user_message, HasSubstr("would be borrowed"));
  EXPECT_TRUE(d.admin_comment.has_value());

  JobRequest kept = borrowed;
  kept.requeue = false;
  d = Admit(kept, Nodes(), PolicyOf(), ctx);
  EXPECT_FALSE(d.accept);
  EXPECT_EQ(d.refusal, Refusal::kQuota);
  EXPECT_THAT(d.user_message, HasSubstr("refused: tenant team-a uses 12 of its 8 GPUs"));
  EXPECT_THAT(d.user_message, Not(HasSubstr("may be preempted"))) << "refused: no other notice";
  EXPECT_FALSE(d.admin_comment.has_value()) << "a refused job is not annotated";

  JobRequest within = Gpus("gres/gpu:4");
  within.account = "team-b";
  within.requeue = false;
  d = Admit(within, Nodes(), PolicyOf(), ctx);
  EXPECT_TRUE(d.accept);
  EXPECT_THAT(d.user_message, HasSubstr("within the guarantee"));

  JobRequest defaulted = kept;
  defaulted.account = "";
  defaulted.default_account = "team-a";
  d = Admit(defaulted, Nodes(), PolicyOf(), ctx);
  EXPECT_FALSE(d.accept);
  EXPECT_THAT(d.user_message, HasSubstr("no --account given: your default account team-a"));
}

TEST(Admit, SaysNothingOfQuotasBeforeTheyAreKnownAndDecideRefusalsComeFirst) {
  const config::Config cfg = Config(/*lending=*/true);
  JobRequest kept = Gpus("gres/gpu:2");
  kept.account = "team-a";
  kept.requeue = false;
  Decision d = Admit(kept, Nodes(), PolicyOf(), {.config = &cfg, .quotas = nullptr});
  EXPECT_TRUE(d.accept) << "no classification yet: nothing is refused for quotas";
  EXPECT_EQ(d.user_message, "") << "--no-requeue: not preemptible, and quotas not known";

  const quota::Observation usage = Usage(cfg);
  d = Admit(Gpus("gres/gpu:9"), Nodes(), PolicyOf(),
            {.config = &cfg, .quotas = &usage.classification});
  EXPECT_FALSE(d.accept);
  EXPECT_EQ(d.refusal, Refusal::kNodeConfig) << "Decide's refusal stands, no quota notice";
  EXPECT_THAT(d.user_message, Not(HasSubstr("quota")));

  EXPECT_EQ(Admit(Gpus("gres/gpu:2"), Nodes(), PolicyOf(), {}).user_message, "")
      << "without a config: Decide alone";
}

TEST(Admit, WithLendingOffFloorsAreReportedNotEnforcedAndNoPreemptionIsAnnounced) {
  const config::Config cfg = Config(/*lending=*/false);
  const quota::Observation usage = Usage(cfg);
  JobRequest kept = Gpus("gres/gpu:2");
  kept.account = "team-a";
  kept.requeue = false;
  Decision d = Admit(kept, Nodes(), PolicyOf(), {.config = &cfg, .quotas = &usage.classification});
  EXPECT_TRUE(d.accept);
  EXPECT_THAT(d.user_message, HasSubstr("lending is off"));
  EXPECT_THAT(d.user_message, Not(HasSubstr("may be preempted")));
}

}  // namespace
}  // namespace skb::admission
