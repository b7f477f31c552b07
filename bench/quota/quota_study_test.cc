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

}  // namespace
}  // namespace skb::quota_study
