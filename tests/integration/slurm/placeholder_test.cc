// SPDX-License-Identifier: Apache-2.0
// The GPU-granular lane's Slurm side against the testbed's real slurmctld: GRES indices of
// running jobs, and the placeholder job (LibSlurmClient::SubmitPlaceholder) with the
// semantics docs/gpu-granular.md ("The placeholder partition") promises:
//   (a) nothing preempts or requeues a running placeholder (an urgent-tier job waits);
//   (b) a placeholder submitted while jobs hold the GPUs preempts nothing: it waits;
//   (c) once the GPUs free, it starts before the other jobs pending for the node;
//   (d) its partition is hidden.
//
// The testbed (scripts/testbed) has partitions gpu (PriorityTier=1, preemptible), urgent
// (PriorityTier=10) and skb-gpu-hold (PriorityTier=1, PreemptMode=OFF, Hidden) on every node,
// 8 GPUs each, PreemptType=preempt/partition_prio, PreemptMode=REQUEUE. Run after
// `scripts/testbed up --no-bridge` and `eval "$(scripts/testbed env)"`; every job a test
// submits is cancelled at its end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "bridge/slurm/libslurm_client.h"
#include "src/base/strings.h"
#include "src/devices/observe.h"
#include "src/devices/placeholder_record.h"
#include "src/devices/sharing_config.h"
#include "tests/integration/slurm/slurm_test_util.h"
#include "tests/testbed/testbed_support.h"

namespace skb::bridge::slurm {
namespace {

using skb::slurm::JobState;
using skb::testbed::JobJanitor;
using skb::testbed::RunCommand;
using skb::testbed::Sbatch;
using skb::testbed::WaitFor;
using std::chrono::seconds;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kNode[] = "node3";

class SlurmPlaceholderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = skb::testbed::TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    const char* conf = std::getenv("SLURM_CONF");
    ASSERT_NE(conf, nullptr) << "SLURM_CONF not set: eval \"$(scripts/testbed env)\"";
    client_ = std::make_unique<LibSlurmClient>(
        LibSlurmClient::Options{.conf = conf, .call_timeout = seconds(15)});
    auto parts = client_->LoadPartitions(0);
    ASSERT_TRUE(parts.ok()) << parts.status();
    ASSERT_TRUE(std::any_of(parts->items.begin(), parts->items.end(),
                            [&](const PartitionView& p) { return p.name == Partition(); }))
        << "the testbed has no partition " << Partition()
        << " (started before it had one): scripts/testbed down && scripts/testbed up";
    // A run that crashed (its TearDown never ran) leaves its jobs on kNode; every test here
    // assumes kNode's GPUs are free.
    RunCommand({"scancel", "--quiet", StrCat("--nodelist=", kNode), "--name=skb-test"},
               seconds(30));
    RunCommand({"scancel", "--quiet", StrCat("--partition=", Partition())}, seconds(30));
    ASSERT_TRUE(WaitFor(
        [&] {
          auto jobs = client_->LoadJobs(0);
          return jobs.ok() &&
                 std::none_of(jobs->items.begin(), jobs->items.end(), [](const JobView& j) {
                   const bool live = j.completing || j.state == JobState::kPending ||
                                     j.state == JobState::kRunning ||
                                     j.state == JobState::kSuspended;
                   return live && (j.partition == Partition() || j.name == "skb-test");
                 });
        },
        seconds(60)))
        << "jobs left on " << kNode << " by an earlier run did not go";
    // A test before this one on the testbed may have resumed kNode: slurmctld then marks it
    // not responding until its slurmd registers again (about half a second), and places no
    // allocation there meanwhile. A clean run's placeholder found it so ("IDLE*").
    std::string state;
    ASSERT_TRUE(WaitFor(
        [&] {
          auto n = client_->LoadNode(kNode);
          state = n.ok() ? n->StateString() : std::string(n.status().message());
          return n.ok() && !n->Unavailable();
        },
        seconds(30)))
        << kNode << " does not take work: " << state;
  }

  void TearDown() override {
    janitor_.CancelAll();
    for (uint32_t id : placeholders_) (void)client_->CancelJob(id);
  }

  static std::string Partition() { return devices::SharingConfig{}.placeholder.partition; }

  // A regular job of `gpus` GPUs on kNode, sleeping until cancelled.
  uint32_t Job(const std::string& partition, int gpus, bool requeue = true) {
    std::string err;
    std::string id = Sbatch(
        {"--partition=" + partition, StrCat("--nodelist=", kNode), StrCat("--gres=gpu:", gpus),
         requeue ? "--requeue" : "--no-requeue", "--job-name=skb-test", "--wrap", "sleep 3600"},
        &janitor_, &err);
    EXPECT_FALSE(id.empty()) << err;
    return id.empty() ? 0 : static_cast<uint32_t>(std::stoul(id));
  }

  static devices::PlaceholderRecord Record(const std::string& pod, int64_t gpus) {
    return {.node = kNode, .pod = pod, .gpus = gpus};
  }

  StatusOr<uint32_t> Placeholder(const std::string& pod, int64_t gpus) {
    StatusOr<bridge::slurm::PlaceholderSubmission> s = client_->SubmitPlaceholder(
        {.node = kNode,
         .gpus = gpus,
         .partition = Partition(),
         .admin_comment = devices::FormatPlaceholderRecord(Record(pod, gpus))});
    if (!s.ok()) return s.status();
    last_outcome_ = s->outcome;
    placeholders_.push_back(s->job_id);
    return s->job_id;
  }

  std::optional<JobView> Load(uint32_t id) {
    auto j = client_->LoadJob(id);
    if (!j.ok()) return std::nullopt;
    return *j;
  }

  bool WaitState(uint32_t id, JobState want, seconds timeout = seconds(60)) {
    return WaitFor(
        [&] {
          auto j = Load(id);
          return j && j->state == want && !j->requeue_pending && !j->completing;
        },
        timeout);
  }

  // Waits until slurmctld's scheduler has considered pending job `id` and left it pending
  // for want of resources: any preemption it would make for the job happens in that pass.
  bool WaitConsideredAndPending(uint32_t id) {
    return WaitFor(
        [&] {
          auto j = Load(id);
          return j && j->state == JobState::kPending && !j->state_reason.empty() &&
                 j->state_reason != "None";
        },
        seconds(60));
  }

  void WaitsWithoutPreemptingThenStartsFirst(bool requeue_holder);

  std::unique_ptr<LibSlurmClient> client_;
  JobJanitor janitor_;
  std::vector<uint32_t> placeholders_;
  WriteOutcome last_outcome_ = WriteOutcome::kChanged;  // of the last Placeholder()
};

TEST_F(SlurmPlaceholderTest, RunningJobsReportTheirGpuIndicesPerNode) {
  const uint32_t id = Job("gpu", 4);
  ASSERT_TRUE(WaitState(id, JobState::kRunning));
  auto j = Load(id);
  ASSERT_TRUE(j);
  ASSERT_THAT(j->gpu_indices, SizeIs(1));
  const std::vector<int64_t>& idx = j->gpu_indices.at(kNode);
  ASSERT_THAT(idx, SizeIs(4));
  EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
  EXPECT_TRUE(std::all_of(idx.begin(), idx.end(), [](int64_t i) { return i >= 0 && i < 8; }));
  // The poll's read (every job) says the same.
  auto all = client_->LoadJobs(0);
  ASSERT_TRUE(all.ok()) << all.status();
  auto it = std::find_if(all->items.begin(), all->items.end(),
                         [&](const JobView& v) { return v.job_id == id; });
  ASSERT_NE(it, all->items.end());
  EXPECT_EQ(it->gpu_indices, j->gpu_indices);
  // A pending job holds no index.
  const uint32_t waiting = Job("gpu", 8);
  ASSERT_TRUE(WaitConsideredAndPending(waiting));
  EXPECT_THAT(Load(waiting)->gpu_indices, IsEmpty());
}

TEST_F(SlurmPlaceholderTest, PlaceholderRunsBesideAJobOnOtherGpusAndIsSubmittedOnce) {
  const uint32_t job = Job("gpu", 4);
  ASSERT_TRUE(WaitState(job, JobState::kRunning));
  StatusOr<uint32_t> id = Placeholder("infer/llama-0", 2);
  ASSERT_TRUE(id.ok()) << id.status();
  // Asked again before anything observed it (pending or just started): the same job.
  StatusOr<uint32_t> again = Placeholder("infer/llama-0", 2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *id);
  EXPECT_EQ(last_outcome_, WriteOutcome::kUnchanged);
  ASSERT_TRUE(WaitState(*id, JobState::kRunning));
  EXPECT_EQ(Placeholder("infer/llama-0", 2).value(), *id);
  EXPECT_EQ(last_outcome_, WriteOutcome::kUnchanged);

  auto p = Load(*id);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, devices::kPlaceholderJobName);
  EXPECT_EQ(p->partition, Partition());
  EXPECT_EQ(p->nodes, std::vector<std::string>{kNode});
  EXPECT_FALSE(p->requeue);
  EXPECT_EQ(p->priority, devices::kPlaceholderPriority);
  EXPECT_EQ(devices::ParsePlaceholderRecord(p->admin_comment), Record("infer/llama-0", 2));
  EXPECT_TRUE(devices::IsPlaceholder(*p));
  ASSERT_THAT(p->gpu_indices.at(kNode), SizeIs(2));
  const std::vector<int64_t> theirs =
      Load(job)->gpu_indices.at(kNode);  // a copy: Load returns a temporary
  for (int64_t i : p->gpu_indices.at(kNode)) {
    EXPECT_EQ(std::count(theirs.begin(), theirs.end(), i), 0) << "GPU " << i << " held twice";
  }

  // The record is updated in place (SetAdminComment), and reads back.
  devices::PlaceholderRecord r = Record("infer/llama-0", 2);
  r.signalled_at = 1'700'000'000;
  r.victims = {job};
  ASSERT_TRUE(
      client_->SetAdminComment(*id, devices::MergePlaceholderRecord(p->admin_comment, r)).ok());
  EXPECT_EQ(devices::ParsePlaceholderRecord(Load(*id)->admin_comment), r);

  // Another pod gets its own placeholder; once the first has ended, its pod gets a new one.
  StatusOr<uint32_t> other = Placeholder("infer/llama-1", 1);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *id);
  ASSERT_TRUE(client_->CancelJob(*id).ok());
  StatusOr<uint32_t> renewed = Placeholder("infer/llama-0", 2);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_NE(*renewed, *id);
  EXPECT_NE(*renewed, *other);
}

// The placeholder is a job allocation, placed when it is submitted: not a batch job, which
// slurmctld places only in its next scheduling pass (up to batch_sched_delay, 3 s by
// default, after the last one) while the pod waits. Batch jobs submitted just before it
// start a scheduling pass's worth of time later; the placeholder already runs when the
// submission returns.
TEST_F(SlurmPlaceholderTest, APlaceholderOnIdleGpusIsAllocatedWhenItIsSubmitted) {
  for (int i = 0; i < 3; ++i) Job("gpu", 1);  // keep the scheduler busy
  StatusOr<uint32_t> id = Placeholder("infer/now", 2);
  ASSERT_TRUE(id.ok()) << id.status();
  auto p = Load(*id);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state, JobState::kRunning) << "placed in a later pass, not at submission";
  EXPECT_EQ(p->nodes, std::vector<std::string>{kNode});
  ASSERT_THAT(p->gpu_indices.at(kNode), SizeIs(2));
  EXPECT_FALSE(p->batch) << "a batch job waits for slurmctld's next scheduling pass";
  // Nothing runs for it on the node: it stays until it is cancelled.
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(Load(*id)->state, JobState::kRunning);
}

TEST_F(SlurmPlaceholderTest, RefusesASpecThatIsNoPlaceholder) {
  PlaceholderSpec s{.node = kNode, .gpus = 2, .partition = Partition(), .admin_comment = "x"};
  EXPECT_EQ(client_->SubmitPlaceholder(s).status().code(), StatusCode::kInvalidArgument);
  s.admin_comment = devices::FormatPlaceholderRecord(Record("a/b", 2));
  s.node = "node4";  // the record says node3
  EXPECT_EQ(client_->SubmitPlaceholder(s).status().code(), StatusCode::kInvalidArgument);
}

// (a): an urgent-tier job (which preempts the gpu tier) neither preempts nor requeues a
// running placeholder; it takes the GPUs the placeholder leaves, preempting a gpu-tier job.
TEST_F(SlurmPlaceholderTest, NothingPreemptsARunningPlaceholder) {
  StatusOr<uint32_t> id = Placeholder("infer/a", 2);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(WaitState(*id, JobState::kRunning));
  const uint32_t train = Job("gpu", 6);
  ASSERT_TRUE(WaitState(train, JobState::kRunning));

  // All 8 GPUs: only by preempting the placeholder, which Slurm does not do.
  const uint32_t all_gpus = Job("urgent", 8);
  ASSERT_TRUE(WaitConsideredAndPending(all_gpus));
  auto p = Load(*id);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state, JobState::kRunning);
  EXPECT_EQ(p->restart_count, 0u);
  ASSERT_TRUE(client_->CancelJob(all_gpus).ok());

  // The control: the 6 GPUs the placeholder leaves, urgent work takes, preempting the job.
  const uint32_t six = Job("urgent", 6);
  ASSERT_TRUE(WaitState(six, JobState::kRunning));
  EXPECT_TRUE(WaitFor([&] { return Load(train)->restart_count > 0; }, seconds(60)))
      << "the urgent job ran without preempting the gpu-tier job";
  p = Load(*id);
  EXPECT_EQ(p->state, JobState::kRunning);
  EXPECT_EQ(p->restart_count, 0u);

  // An operator's requeue is refused too (--no-requeue).
  EXPECT_FALSE(client_->RequeueJob(*id, false).ok());
  EXPECT_EQ(Load(*id)->state, JobState::kRunning);
}

// (b) and (c): a placeholder submitted while a job holds the node's GPUs preempts nothing
// and waits; when the GPUs free (the job cancelled, or requeued as the bridge preempts a
// victim) it starts before the jobs pending for the node, an older one and the requeued job
// itself included.
void SlurmPlaceholderTest::WaitsWithoutPreemptingThenStartsFirst(bool requeue_holder) {
  const uint32_t holder = Job("gpu", 8);
  ASSERT_TRUE(WaitState(holder, JobState::kRunning));
  const uint32_t older = Job("gpu", 8);  // queued before the placeholder, for the same node
  ASSERT_TRUE(WaitConsideredAndPending(older));

  StatusOr<uint32_t> id = Placeholder("infer/b", 2);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(WaitConsideredAndPending(*id));
  auto h = Load(holder);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->state, JobState::kRunning);
  EXPECT_EQ(h->restart_count, 0u) << "the placeholder's submission preempted the job";

  if (requeue_holder) {
    // What the bridge does to a victim: requeue, and make it eligible at once.
    ASSERT_TRUE(client_->RequeueJob(holder, false).ok());
    (void)client_->MakeEligibleNow(holder);
  } else {
    ASSERT_TRUE(client_->CancelJob(holder).ok());
  }
  ASSERT_TRUE(WaitState(*id, JobState::kRunning));
  EXPECT_EQ(Load(older)->state, JobState::kPending);
  if (requeue_holder) {
    EXPECT_EQ(Load(holder)->state, JobState::kPending);
  }
}

TEST_F(SlurmPlaceholderTest, WaitsWithoutPreemptingThenStartsFirstWhenTheJobIsCancelled) {
  WaitsWithoutPreemptingThenStartsFirst(/*requeue_holder=*/false);
}

TEST_F(SlurmPlaceholderTest, WaitsWithoutPreemptingThenStartsFirstWhenTheJobIsRequeued) {
  WaitsWithoutPreemptingThenStartsFirst(/*requeue_holder=*/true);
}

// (d): the partition is not preemptible, hidden from users and closed to them (root, as
// the bridge runs on the testbed, sees and uses every partition: a user is asked). The user
// is `daemon` (uid 1 in every Debian): slurmctld 26.05 never resolves an association of the
// user `nobody` to its uid (its cache shows uid 4294967294; a job of uid 65534 is refused,
// "User 65534 not found"), which 22.05 and 24.11 did.
TEST_F(SlurmPlaceholderTest, ThePartitionIsHiddenFromUsersAndClosedToThem) {
  auto parts = client_->LoadPartitions(0);
  ASSERT_TRUE(parts.ok()) << parts.status();
  for (const PartitionView& p : parts->items) {
    if (p.name == Partition()) {
      EXPECT_EQ(p.preempt_mode, skb::slurm::PreemptMode::kOff);
    }
  }
  const std::vector<std::string> as_user = {"setpriv", "--reuid=1", "--regid=1", "--clear-groups"};
  auto run_as_user = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), as_user.begin(), as_user.end());
    return RunCommand(argv, seconds(30));
  };
  auto shown = run_as_user({"sinfo", "-h", "-o", "%R"});
  if (shown.exit_code != 0) GTEST_SKIP() << "sinfo as uid 1 failed: " << shown.err;
  EXPECT_NE(shown.out.find("gpu"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find(Partition()), std::string::npos) << shown.out;
  // With an association of its own (else Slurm refuses it for that, whatever the
  // partition), the user may submit to gpu but not to the placeholder partition.
  struct Association {
    Association() {
      RunCommand({"sacctmgr", "-i", "add", "user", "daemon", "account=team-a"}, seconds(30));
    }
    ~Association() { RunCommand({"sacctmgr", "-i", "delete", "user", "daemon"}, seconds(30)); }
  } association;
  auto submit = [&](const std::string& partition) {
    return run_as_user({"sbatch", "--parsable", "--hold", "--partition=" + partition,
                        "--chdir=/tmp", "--output=/dev/null", "--wrap", "true"});
  };
  auto allowed = submit("gpu");
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  const std::string allowed_id(StripWhitespace(allowed.out));
  janitor_.Add(allowed_id);
  // Refused at submission (22.05; any release with EnforcePartLimits=ALL), or (24.11's
  // default EnforcePartLimits=NO) accepted but never started although the node is idle.
  auto refused = submit(Partition());
  if (refused.exit_code != 0) {
    EXPECT_NE(refused.err.find("group not permitted to use this partition"), std::string::npos)
        << refused.err;
    return;
  }
  const std::string id(StripWhitespace(refused.out));
  janitor_.Add(id);
  ASSERT_TRUE(RunCommand({"scontrol", "release", id}, seconds(30)).exit_code == 0);
  const uint32_t job = static_cast<uint32_t>(std::stoul(id));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto j = Load(job);
        return j && j->state == JobState::kPending && !j->Held() && j->state_reason != "None";
      },
      seconds(60)));
  // The control: the same user's job in the gpu partition starts.
  ASSERT_TRUE(RunCommand({"scontrol", "release", allowed_id}, seconds(30)).exit_code == 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        auto a = Load(static_cast<uint32_t>(std::stoul(allowed_id)));
        return a && a->state != JobState::kPending;
      },
      seconds(60)));
  auto j = Load(job);
  EXPECT_EQ(j->state, JobState::kPending);
  EXPECT_EQ(j->state_reason, "AccountNotAllowed") << "a user's job in the placeholder partition";
}

}  // namespace
}  // namespace skb::bridge::slurm
