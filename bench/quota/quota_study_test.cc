// SPDX-License-Identifier: Apache-2.0
#include "bench/quota/quota_study.h"

#include <gtest/gtest.h>

namespace skb::quota_study {
namespace {

// Two teams with equal GPU-hours on one 8-GPU node. Team a fills the node at t=0 with
// eight long 1-GPU jobs; team b submits four 1-GPU jobs at t=1000.
std::vector<Job> Contended() {
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({0, 100'000, 1, "a"});
  for (int i = 0; i < 4; ++i) jobs.push_back({1000, 200'000, 1, "b"});
  return jobs;
}

const TeamResult& TeamOf(const Result& r, const std::string& team) {
  for (const TeamResult& t : r.teams) {
    if (t.team == team) return t;
  }
  ADD_FAILURE() << "no team " << team;
  return r.teams.front();
}

TEST(QuotaStudy, SharesAreGpuHours) {
  auto s = Shares(Contended());
  EXPECT_DOUBLE_EQ(s["a"], 0.5);
  EXPECT_DOUBLE_EQ(s["b"], 0.5);
}

TEST(QuotaStudy, QuotasReclaimWhatTheOtherTeamBorrowed) {
  Options o;
  Result r = Simulate(Contended(), 8, Mode::kQuotas, o);
  const TeamResult& a = TeamOf(r, "a");
  const TeamResult& b = TeamOf(r, "b");
  EXPECT_EQ(a.guaranteed, 4);
  EXPECT_EQ(b.guaranteed, 4);
  // b is within its floor: a's four borrowed jobs are reclaimed after the grace.
  EXPECT_EQ(a.preemptions, 4);
  EXPECT_EQ(b.wait_p99_s, static_cast<double>(o.grace_s));
  EXPECT_EQ(b.within_guarantee_jobs, 4);
  EXPECT_EQ(b.within_guarantee_on_time, 4);
  // Lost work: 1000 s ran, no checkpoint yet (interval 3600 s) + the grace, per job.
  EXPECT_NEAR(a.preempted_gpu_h, 4 * (1000.0 + o.grace_s) / 3600.0, 1e-9);
  EXPECT_EQ(a.never_started, 0);
}

TEST(QuotaStudy, APoolDoesNotReclaimAndAStaticSplitDoesNotBorrow) {
  Options o;
  Result pool = Simulate(Contended(), 8, Mode::kPool, o);
  EXPECT_EQ(TeamOf(pool, "a").preemptions, 0);
  EXPECT_EQ(TeamOf(pool, "b").wait_p50_s, 100'000.0 - 1000.0);  // waits for a's jobs
  // Static: one node cannot be split between two teams: one team gets it, the other
  // never runs.
  Result split = Simulate(Contended(), 8, Mode::kStatic, o);
  EXPECT_TRUE(TeamOf(split, "a").never_started == 8 || TeamOf(split, "b").never_started == 4);
  EXPECT_EQ(TeamOf(split, "a").never_started + TeamOf(split, "b").never_started,
            TeamOf(split, "a").never_started == 8 ? 8 : 4);
  Result two = Simulate(Contended(), 16, Mode::kStatic, o);
  EXPECT_EQ(TeamOf(two, "a").wait_p99_s, 0);
  EXPECT_EQ(TeamOf(two, "b").wait_p99_s, 0);
  EXPECT_EQ(TeamOf(two, "a").preemptions, 0);
}

TEST(QuotaStudy, WorkBeyondTheFloorNeverReclaims) {
  // b asks for 6 GPUs at once: beyond its floor of 4, it waits for idle GPUs. (b's later
  // job makes both teams' GPU-hours equal: floors of 4 and 4.)
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({0, 100'000, 1, "a"});
  jobs.push_back({1000, 100'000, 6, "b"});
  jobs.push_back({10'000'000, 200'000, 1, "b"});
  Result r = Simulate(jobs, 8, Mode::kQuotas, Options{});
  EXPECT_EQ(TeamOf(r, "a").preemptions, 0);
  EXPECT_EQ(TeamOf(r, "b").wait_p99_s, 100'000.0 - 1000.0);  // the 6-GPU job
}

// The mixed case's reading: a window of 1000 s before the trace's last creation (2000).
constexpr char kTasks[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "early,1000,1024,1,1000,,LS,Succeeded,0,500,0\n"          // ended before the window
    "service,1000,1024,2,1000,,LS,Running,100,5000,200\n"     // running when it opens
    "late,1000,1024,1,1000,,LS,Running,900,3000,1100\n"       // created before, ran after
    "shared,1000,1024,1,460,,LS,Running,1500,2500,1600\n"     // a share of one GPU
    "training,1000,1024,8,1000,,BE,Running,1800,9000,1800\n"  // not inference
    "cpu,1000,1024,0,0,,LS,Running,1900,2000,1900\n"          // no GPU
    "pending,1000,1024,1,1000,,LS,Pending,1950,2100,\n"       // never scheduled
    "instant,1000,1024,1,1000,,LS,Failed,1990,1995,1995\n"    // no run time
    "open,1000,1024,4,1000,,LS,Running,2000,,2000\n";         // never deleted

TEST(QuotaStudy, InferencePodsAreTheTraceWindowLaidOntoTheReplay) {
  auto tasks = sim::ParseTasks(kTasks, "tasks.csv");
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  InferenceTrace pods = MapInference(*tasks, 1000);
  EXPECT_EQ(pods.window_start_s, 1000);
  EXPECT_EQ(pods.inference_gpu_tasks, 7);
  EXPECT_EQ(pods.never_scheduled, 1);
  EXPECT_EQ(pods.ended_before_window, 1);
  EXPECT_EQ(pods.no_run_time, 1);
  EXPECT_EQ(pods.running_at_start, 1);
  EXPECT_EQ(pods.no_deletion, 1);
  EXPECT_EQ(pods.fractional, 1);
  EXPECT_NEAR(pods.fractional_gpu_h_added, 900 * 0.54 / 3600, 1e-9);
  ASSERT_EQ(pods.jobs.size(), 4u);
  auto is = [&](size_t i, int64_t submit, int64_t duration, int gpus) {
    SCOPED_TRACE(i);
    EXPECT_EQ(pods.jobs[i].submit_s, submit);
    EXPECT_EQ(pods.jobs[i].duration_s, duration);
    EXPECT_EQ(pods.jobs[i].gpus, gpus);
    EXPECT_EQ(pods.jobs[i].team, kInferenceTenant);
    EXPECT_TRUE(pods.jobs[i].inference);
  };
  is(0, 0, 5000 - 1000, 2);     // service: the rest of its run from the window's start
  is(1, 0, 3000 - 1100, 1);     // late: its whole run, from when the window opens
  is(2, 500, 900, 1);           // shared: one whole GPU
  is(3, 1000, 9000 - 2000, 4);  // open: to the trace's last recorded time
  // At 1000-1400 all four run: 2 + 1 + 1 + 4.
  EXPECT_EQ(PeakConcurrentGpus(pods.jobs), 8);
  // A window longer than the trace takes all of it, from its time 0.
  EXPECT_EQ(MapInference(*tasks, 1'000'000).window_start_s, 0);
  EXPECT_EQ(MapInference(*tasks, 1'000'000).ended_before_window, 0);
}

TEST(QuotaStudy, MergeKeepsSubmitOrderTrainingFirstAtATie) {
  std::vector<Job> training = {{0, 10, 1, "a"}, {20, 10, 1, "a"}};
  std::vector<Job> pods = {{0, 10, 1, kInferenceTenant, true}, {5, 10, 1, kInferenceTenant, true}};
  std::vector<Job> all = Merge(training, pods);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].team, "a");
  EXPECT_EQ(all[1].team, kInferenceTenant);
  EXPECT_EQ(all[2].submit_s, 5);
  EXPECT_EQ(all[3].submit_s, 20);
}

// One 8-GPU node; team a's eight long 1-GPU jobs fill it at t=0. The inference tenant is
// guaranteed `guaranteed` GPUs; its 1-GPU pods arrive at t=1000 and run 5000 s.
std::vector<Job> TrainingThenPods(int pods) {
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({0, 100'000, 1, "a"});
  for (int i = 0; i < pods; ++i) jobs.push_back({1000, 5000, 1, kInferenceTenant, true});
  return jobs;
}

TEST(QuotaStudy, InferenceWithinItsGuaranteeReclaimsBorrowedTraining) {
  Options o;
  o.fixed_guarantees[kInferenceTenant] = 4;
  Result r = Simulate(TrainingThenPods(4), 8, Mode::kQuotas, o);
  const TeamResult& a = TeamOf(r, "a");
  const TeamResult& pods = TeamOf(r, kInferenceTenant);
  EXPECT_EQ(pods.guaranteed, 4);
  EXPECT_EQ(a.guaranteed, 4);  // the rest of the cluster
  // a's four borrowed jobs are reclaimed; its four within the guarantee keep running.
  EXPECT_EQ(a.preemptions, 4);
  EXPECT_NEAR(a.preempted_gpu_h, 4 * (1000.0 + o.grace_s) / 3600.0, 1e-9);
  EXPECT_EQ(pods.wait_p99_s, static_cast<double>(o.grace_s));
  EXPECT_EQ(pods.within_guarantee_jobs, 4);
  EXPECT_EQ(pods.within_guarantee_on_time, 4);
  EXPECT_EQ(pods.preemptions, 0);
}

TEST(QuotaStudy, InferenceBeyondItsGuaranteeWaitsAndTakesNothing) {
  Options o;
  o.fixed_guarantees[kInferenceTenant] = 2;
  Result r = Simulate(TrainingThenPods(3), 8, Mode::kQuotas, o);
  // Two pods reclaim two of a's borrowed GPUs; the third is beyond the guarantee and
  // cannot be preempted, so it may not borrow: it waits for a pod of its own to end
  // (1000 + 60 + 5000), and takes nothing from a.
  EXPECT_EQ(TeamOf(r, "a").preemptions, 2);
  EXPECT_EQ(TeamOf(r, kInferenceTenant).wait_p99_s, 60.0 + 5000.0);
  EXPECT_EQ(TeamOf(r, kInferenceTenant).wait_max_s, 60.0 + 5000.0);
  // The same with idle GPUs beside it: a second node a does not use. The third pod still
  // waits, where a preemptible job would borrow.
  std::vector<Job> jobs = {{0, 100'000, 1, "a"}};
  for (int i = 0; i < 3; ++i) jobs.push_back({1000, 5000, 1, kInferenceTenant, true});
  Result idle = Simulate(jobs, 16, Mode::kQuotas, o);
  EXPECT_EQ(TeamOf(idle, kInferenceTenant).wait_p50_s, 0);
  EXPECT_EQ(TeamOf(idle, kInferenceTenant).wait_p99_s, 5000.0);
  // A pool has no guarantees: all three start at once.
  Result pool = Simulate(jobs, 16, Mode::kPool, o);
  EXPECT_EQ(TeamOf(pool, kInferenceTenant).wait_p99_s, 0);
}

TEST(QuotaStudy, AStaticSplitGivesTheFixedGuaranteeNodesOfItsOwn) {
  // 3 nodes: 2 GPUs guaranteed to inference take one whole node; team a owns the other two.
  Options o;
  o.fixed_guarantees[kInferenceTenant] = 2;
  std::vector<Job> jobs;
  for (int i = 0; i < 16; ++i) jobs.push_back({0, 100'000, 1, "a"});
  jobs.push_back({1000, 5000, 1, kInferenceTenant, true});
  Result split = Simulate(jobs, 24, Mode::kStatic, o);
  EXPECT_EQ(TeamOf(split, kInferenceTenant).guaranteed, 8);
  EXPECT_EQ(TeamOf(split, "a").guaranteed, 16);
  EXPECT_EQ(TeamOf(split, kInferenceTenant).wait_p99_s, 0);
  EXPECT_EQ(TeamOf(split, "a").wait_p99_s, 0);
  Result quotas = Simulate(jobs, 24, Mode::kQuotas, o);
  EXPECT_EQ(TeamOf(quotas, kInferenceTenant).guaranteed, 2);
  EXPECT_EQ(TeamOf(quotas, "a").guaranteed, 22);
}

}  // namespace
}  // namespace skb::quota_study
