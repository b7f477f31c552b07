// SPDX-License-Identifier: Apache-2.0
#include "k8s/leader_elector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "k8s/fake_kube_client.h"
#include "k8s/lease_info.h"

namespace skb::k8s {
namespace {

using std::chrono::milliseconds;
using Clk = std::chrono::steady_clock;

struct Candidate {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::unique_ptr<LeaderElector> elector;
};

LeaderElectionConfig FastConfig(const std::string& id, Candidate* c) {
  LeaderElectionConfig cfg;
  cfg.lease_namespace = "ns";
  cfg.lease_name = "bridge";
  cfg.identity = id;
  cfg.lease_duration = milliseconds(600);
  cfg.renew_deadline = milliseconds(400);
  cfg.retry_period = milliseconds(50);
  cfg.on_started_leading = [c] { ++c->started; };
  cfg.on_stopped_leading = [c] { ++c->stopped; };
  return cfg;
}

bool WaitUntil(const std::function<bool()>& done, milliseconds timeout = milliseconds(5000)) {
  auto deadline = Clk::now() + timeout;
  while (Clk::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return done();
}

TEST(LeaderElector, ValidatesConfig) {
  FakeKubeClient fake;
  Candidate c;
  auto cfg = FastConfig("a", &c);
  cfg.renew_deadline = cfg.lease_duration;
  EXPECT_EQ(LeaderElector::Create(&fake, cfg).status().code(), StatusCode::kInvalidArgument);
  cfg = FastConfig("a", &c);
  cfg.renew_deadline = milliseconds(55);
  EXPECT_FALSE(LeaderElector::Create(&fake, cfg).ok());
  cfg = FastConfig("", &c);
  EXPECT_FALSE(LeaderElector::Create(&fake, cfg).ok());
  EXPECT_TRUE(LeaderElector::Create(&fake, FastConfig("a", &c)).ok());
}

TEST(LeaderElector, OneLeadsAndTheOtherTakesOverAfterARelease) {
  FakeKubeClient fake;
  Candidate a, b;
  a.elector = *LeaderElector::Create(&fake, FastConfig("a", &a));
  b.elector = *LeaderElector::Create(&fake, FastConfig("b", &b));
  a.elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a.elector->IsLeader(); }));
  b.elector->Start();
  std::this_thread::sleep_for(milliseconds(800));  // longer than the lease: a keeps renewing
  EXPECT_TRUE(a.elector->IsLeader());
  EXPECT_FALSE(b.elector->IsLeader());
  EXPECT_EQ(b.elector->Leader(), "a");

  auto stopped_at = Clk::now();
  a.elector->Stop();
  EXPECT_EQ(a.started, 1);
  EXPECT_EQ(a.stopped, 1);
  ASSERT_TRUE(WaitUntil([&] { return b.elector->IsLeader(); }));
  // Released: no need to wait out the lease duration.
  EXPECT_LT(Clk::now() - stopped_at, milliseconds(600));
  auto lease = ParseLease(*fake.Get(Resource::Leases(), "ns", "bridge"));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->holder_identity, "b");
  EXPECT_EQ(lease->lease_transitions, 1);
  b.elector->Stop();
  EXPECT_EQ(b.stopped, 1);
}

TEST(LeaderElector, TakesOverOnlyAfterTheLeaseExpiresWhenTheLeaderVanishes) {
  FakeKubeClient fake;
  Candidate a, b;
  auto cfg_a = FastConfig("a", &a);
  cfg_a.release_on_stop = false;  // a crash: the lease is left as it was
  a.elector = *LeaderElector::Create(&fake, cfg_a);
  b.elector = *LeaderElector::Create(&fake, FastConfig("b", &b));
  a.elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a.elector->IsLeader(); }));
  b.elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return b.elector->Leader() == "a"; }));
  auto stopped_at = Clk::now();
  a.elector->Stop();
  ASSERT_TRUE(WaitUntil([&] { return b.elector->IsLeader(); }));
  auto took = Clk::now() - stopped_at;
  EXPECT_GE(took, milliseconds(450));   // waited (most of) the lease duration
  EXPECT_LT(took, milliseconds(1500));  // and not much more
  b.elector->Stop();
}

TEST(LeaderElector, StopsLeadingWhenTheLeaseIsTakenAway) {
  FakeKubeClient fake;
  Candidate a;
  a.elector = *LeaderElector::Create(&fake, FastConfig("a", &a));
  a.elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return a.elector->IsLeader(); }));
  // Someone rewrites the lease (another elector with a longer lease, or an admin).
  nlohmann::json lease = *fake.Get(Resource::Leases(), "ns", "bridge");
  lease["spec"]["holderIdentity"] = "intruder";
  lease["spec"]["leaseDurationSeconds"] = 60;
  ASSERT_TRUE(fake.Update(Resource::Leases(), "ns", lease).ok());
  ASSERT_TRUE(WaitUntil([&] { return a.stopped.load() == 1; }));
  EXPECT_FALSE(a.elector->IsLeader());
  EXPECT_EQ(a.elector->Leader(), "intruder");
  a.elector->Stop();
  EXPECT_EQ(a.started, 1);
  EXPECT_EQ(a.stopped, 1);  // not called twice
}

}  // namespace
}  // namespace skb::k8s
