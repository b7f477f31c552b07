// SPDX-License-Identifier: Apache-2.0
// Informer, leader election and event recorder against the testbed's real kube-apiserver,
// including a restart of the apiserver under a running informer.
#include "k8s/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include "k8s/api_error.h"
#include "k8s/api_event_recorder.h"
#include "k8s/field_selection.h"
#include "k8s/json_selection.h"
#include "k8s/leader_elector.h"
#include "k8s/node_info.h"
#include "src/base/strings.h"
#include "tests/integration/k8s/k8s_test_env.h"
#include "tests/testbed/testbed_support.h"

namespace skb::k8s::testing {
namespace {

using nlohmann::json;
using skb::testbed::WaitFor;
using std::chrono::milliseconds;
using std::chrono::seconds;

json ConfigMap(const std::string& name, const std::string& v) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"v", v}}}};
}

class Log {
 public:
  InformerHandlers Handlers() {
    return {
        [this](const ObjectPtr& o) { Push("add " + Name(*o)); },
        [this](const ObjectPtr&, const ObjectPtr& o) { Push("update " + Name(*o) + " " + V(*o)); },
        [this](const ObjectPtr& o, bool unknown) {
          Push("delete " + Name(*o) + (unknown ? " unknown" : ""));
        }};
  }
  std::vector<std::string> Snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  size_t Size() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_.size();
  }

 private:
  static std::string Name(const json& o) { return o["metadata"]["name"].get<std::string>(); }
  static std::string V(const json& o) { return o.contains("data") ? o["data"].value("v", "") : ""; }
  void Push(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::string> log_;
};

InformerOptions ConfigMapsIn(const std::string& ns) {
  InformerOptions o;
  o.resource = Resource::ConfigMaps();
  o.ns = ns;
  o.backoff = {milliseconds(200), seconds(2), 0.5};
  return o;
}

TEST_F(K8sTest, InformerSeesAddUpdateDeleteInOrder) {
  ASSERT_TRUE(client_->Create(Resource::ConfigMaps(), ns_, ConfigMap("k8stest-pre", "0")).ok());
  Informer inf(client_.get(), ConfigMapsIn(ns_));
  Log log;
  inf.AddHandlers(log.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(20)));
  ASSERT_NE(inf.Get(ns_ + "/k8stest-pre"), nullptr);

  ASSERT_TRUE(client_->Create(Resource::ConfigMaps(), ns_, ConfigMap("k8stest-a", "1")).ok());
  ASSERT_TRUE(client_
                  ->Patch(Resource::ConfigMaps(), ns_, "k8stest-a", PatchType::kJsonMerge,
                          {{"data", {{"v", "2"}}}})
                  .ok());
  ASSERT_TRUE(client_->Delete(Resource::ConfigMaps(), ns_, "k8stest-a", {}).ok());
  // Wait for the delete itself: the log also holds kube-root-ca.crt's add, so a count
  // alone can be reached before the delete arrives.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto entries = log.Snapshot();
        return std::find(entries.begin(), entries.end(), "delete k8stest-a") != entries.end();
      },
      seconds(20)));
  std::vector<std::string> got = log.Snapshot();
  // kube-root-ca.crt is published into every new namespace by the controller-manager.
  got.erase(std::remove_if(
                got.begin(), got.end(),
                [](const std::string& s) { return s.find("kube-root-ca") != std::string::npos; }),
            got.end());
  EXPECT_THAT(got, ::testing::ElementsAre("add k8stest-pre", "add k8stest-a", "update k8stest-a 2",
                                          "delete k8stest-a"));
  EXPECT_EQ(inf.Get(ns_ + "/k8stest-a"), nullptr);
  inf.Stop();
}

TEST(K8sInformer, NodesWithFieldSelectionReadThroughTheView) {
  auto client = AdminClient();
  ASSERT_NE(client, nullptr);
  InformerOptions o;
  o.resource = Resource::Nodes();
  o.transform = SelectNodeFields;
  Informer inf(client.get(), o);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(20)));
  const int n = skb::testbed::TestbedNodeCount();
  for (int i = 1; i <= n; ++i) {
    ObjectPtr node = inf.Get(StrCat("node", i));
    ASSERT_NE(node, nullptr) << "node" << i;
    EXPECT_FALSE(node->at("metadata").contains("managedFields"));
    auto view = ParseNode(*node);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->AllocatableGpus(), 8) << "node" << i;
    EXPECT_TRUE(view->issues.empty());
  }
}

// The bridge's node informer (bridge/controller.cc: its label selector, SelectNodeFields,
// the NodeWatchEvent decode selection) with pages of 2 nodes, so its list takes pages.
TEST(K8sInformer, PagedNodeListWithTheBridgesSelection) {
  auto client = AdminClient();
  ASSERT_NE(client, nullptr);
  InformerOptions o;
  o.resource = Resource::Nodes();
  o.label_selector = "slurm-k8s-bridge.io/managed=true";
  o.page_size = 2;
  o.transform = SelectNodeFields;
  o.decode_selection = &JsonSelection::NodeWatchEvent();
  Informer inf(client.get(), o);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(20)));
  const int n = skb::testbed::TestbedNodeCount();
  EXPECT_GE(inf.Size(), static_cast<size_t>(n));
  for (int i = 1; i <= n; ++i) {
    ObjectPtr node = inf.Get(StrCat("node", i));
    ASSERT_NE(node, nullptr) << "node" << i;
    EXPECT_FALSE(node->at("metadata").contains("managedFields"));
    EXPECT_FALSE(node->at("status").contains("images"));
    auto view = ParseNode(*node);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->AllocatableGpus(), 8) << "node" << i;
  }
  EXPECT_FALSE(inf.ResourceVersion().empty());
}

// A paged list followed by the watch from its resourceVersion: nothing missed, nothing twice.
TEST_F(K8sTest, PagedListThenWatchSeesEveryObjectOnce) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        client_->Create(Resource::ConfigMaps(), ns_, ConfigMap(StrCat("k8stest-p", i), StrCat(i)))
            .ok());
  }
  InformerOptions o = ConfigMapsIn(ns_);
  o.page_size = 2;
  Informer inf(client_.get(), o);
  Log log;
  inf.AddHandlers(log.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(20)));
  for (int i = 0; i < 5; ++i) EXPECT_NE(inf.Get(StrCat(ns_, "/k8stest-p", i)), nullptr) << i;
  ASSERT_TRUE(client_->Create(Resource::ConfigMaps(), ns_, ConfigMap("k8stest-p5", "5")).ok());
  ASSERT_TRUE(WaitFor([&] { return inf.Get(ns_ + "/k8stest-p5") != nullptr; }, seconds(20)));
  std::vector<std::string> got = log.Snapshot();
  std::multiset<std::string> adds;
  for (const std::string& e : got) {
    if (e.find("kube-root-ca") == std::string::npos) adds.insert(e);
  }
  EXPECT_THAT(adds, ::testing::ElementsAre("add k8stest-p0", "add k8stest-p1", "add k8stest-p2",
                                           "add k8stest-p3", "add k8stest-p4", "add k8stest-p5"));
  EXPECT_EQ(inf.Stats().lists, 1u);
  inf.Stop();
}

// Stops and starts the real kube-apiserver under a running informer: the informer must
// reconnect (with back-off), and its cache must end up exactly equal to the apiserver's state,
// with each change notified once.
// Runs an informer through a testbed fault on the apiserver (`scripts/testbed ARGS...`), then
// checks it follows every later change exactly once and its cache equals a fresh list.
void FollowsChangesAcrossAnApiserverFault(KubeClient* client, const std::string& ns,
                                          std::vector<std::string> fault, bool expect_410) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        client->Create(Resource::ConfigMaps(), ns, ConfigMap(StrCat("k8stest-r", i), "0")).ok());
  }
  Informer inf(client, ConfigMapsIn(ns));
  Log log;
  inf.AddHandlers(log.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(seconds(20)));
  ASSERT_TRUE(WaitFor([&] { return inf.Size() >= 3; }, seconds(10)));

  fault.insert(fault.begin(), StrCat(skb::testbed::SourceDir(), "/scripts/testbed"));
  auto restart = skb::testbed::RunCommand(fault, seconds(180));
  ASSERT_EQ(restart.exit_code, 0) << restart.out << restart.err;
  // The apiserver is back: change state and check the informer follows.
  StatusOr<json> created = InternalError("not yet");
  ASSERT_TRUE(WaitFor(
      [&] {
        created = client->Create(Resource::ConfigMaps(), ns, ConfigMap("k8stest-after", "1"));
        return created.ok() || IsAlreadyExists(created.status());
      },
      seconds(60)));
  ASSERT_TRUE(client->Delete(Resource::ConfigMaps(), ns, "k8stest-r0", {}).ok());
  ASSERT_TRUE(client
                  ->Patch(Resource::ConfigMaps(), ns, "k8stest-r1", PatchType::kJsonMerge,
                          {{"data", {{"v", "9"}}}})
                  .ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        ObjectPtr r1 = inf.Get(ns + "/k8stest-r1");
        return inf.Get(ns + "/k8stest-after") != nullptr &&
               inf.Get(ns + "/k8stest-r0") == nullptr && r1 && (*r1)["data"]["v"] == "9";
      },
      seconds(60)));

  // The cache equals a fresh list.
  auto list = client->List(Resource::ConfigMaps(), ns, {});
  ASSERT_TRUE(list.ok());
  std::set<std::string> want, have;
  for (const json& cm : list->items)
    want.insert(ns + "/" + cm["metadata"]["name"].get<std::string>());
  for (const ObjectPtr& cm : inf.List()) have.insert(Informer::KeyOf(*cm));
  EXPECT_EQ(have, want);
  // Each change notified exactly once (no duplicate adds from the reconnect or a relist).
  // The handlers run just after the cache changes (outside its lock): wait for the last
  // notification before counting, or a loaded machine reads the log a moment too early
  // (this session's ASan CI run: "update k8stest-r1 9" counted 0 with the cache at 9).
  const std::vector<std::string> last = {"add k8stest-after", "delete k8stest-r0",
                                         "update k8stest-r1 9"};
  EXPECT_TRUE(WaitFor(
      [&] {
        auto seen = log.Snapshot();
        return std::all_of(last.begin(), last.end(), [&](const std::string& e) {
          return std::find(seen.begin(), seen.end(), e) != seen.end();
        });
      },
      seconds(10)));
  auto events = log.Snapshot();
  EXPECT_EQ(std::count(events.begin(), events.end(), "add k8stest-after"), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), "delete k8stest-r0"), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), "add k8stest-r2"), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), "update k8stest-r1 9"), 1);
  InformerStats stats = inf.Stats();
  EXPECT_GE(stats.watches, 2u) << "the watch should have been re-established";
  if (expect_410) {
    // The watch resumed from a compacted resourceVersion: 410 Gone, then a relist.
    EXPECT_GE(stats.expired, 1u);
    EXPECT_GE(stats.lists, 2u);
  }
  std::cerr << "informer stats after " << fault.back() << ": lists=" << stats.lists
            << " watches=" << stats.watches << " expired=" << stats.expired
            << " errors=" << stats.errors << "\n";
  inf.Stop();
}

TEST_F(K8sTest, InformerSurvivesAnApiserverRestart) {
  FollowsChangesAcrossAnApiserverFault(client_.get(), ns_, {"restart", "kube-apiserver"}, false);
}

// Issue 3's 410 path on the real apiserver: the informer's watch resumes from a resourceVersion
// etcd has compacted away; it must relist and lose nothing.
TEST_F(K8sTest, InformerRelistsWhenItsWatchExpires) {
  FollowsChangesAcrossAnApiserverFault(client_.get(), ns_, {"expire-watches"}, true);
}

struct Candidate {
  std::atomic<bool> leading{false};
  std::unique_ptr<LeaderElector> elector;
};

LeaderElectionConfig Election(const std::string& ns, const std::string& id, Candidate* c,
                              bool release) {
  LeaderElectionConfig cfg;
  cfg.lease_namespace = ns;
  cfg.lease_name = "k8stest-lease";
  cfg.identity = id;
  cfg.lease_duration = seconds(4);
  cfg.renew_deadline = seconds(3);
  cfg.retry_period = milliseconds(500);
  cfg.release_on_stop = release;
  cfg.on_started_leading = [c] { c->leading = true; };
  cfg.on_stopped_leading = [c] { c->leading = false; };
  return cfg;
}

void LeaderElectionRound(KubeClient* client, const std::string& ns, bool release) {
  Candidate a, b;
  auto ea = LeaderElector::Create(client, Election(ns, "k8stest-a", &a, release));
  auto eb = LeaderElector::Create(client, Election(ns, "k8stest-b", &b, true));
  ASSERT_TRUE(ea.ok() && eb.ok());
  a.elector = std::move(ea).value();
  b.elector = std::move(eb).value();
  a.elector->Start();
  b.elector->Start();
  ASSERT_TRUE(WaitFor([&] { return a.leading || b.leading; }, seconds(20)));
  // Exactly one leads, for several renewals.
  for (int i = 0; i < 10; ++i) {
    EXPECT_NE(a.leading.load(), b.leading.load());
    std::this_thread::sleep_for(milliseconds(300));
  }
  Candidate& leader = a.leading ? a : b;
  Candidate& standby = a.leading ? b : a;
  auto stopped = std::chrono::steady_clock::now();
  leader.elector->Stop();
  ASSERT_TRUE(WaitFor([&] { return standby.leading.load(); }, seconds(10)));
  auto took = std::chrono::steady_clock::now() - stopped;
  // Within the lease duration (plus a retry period of slack), as the issue asks.
  EXPECT_LT(took, seconds(4) + milliseconds(1200)) << "release=" << release;
  standby.elector->Stop();
  EXPECT_FALSE(standby.leading);
}

TEST_F(K8sTest, LeaderElectionHandsOverOnRelease) { LeaderElectionRound(client_.get(), ns_, true); }

TEST_F(K8sTest, LeaderElectionTakesOverFromAVanishedLeader) {
  LeaderElectionRound(client_.get(), ns_, false);
}

TEST_F(K8sTest, EventRecorderAggregatesRepeats) {
  const std::string node = UniqueName("evnode");
  ApiEventRecorder rec(client_.get(), {.component = "k8stest", .host = "k8stest-host"});
  rec.Start();
  for (int i = 0; i < 3; ++i)
    rec.Record(PodRef(ns_, node), EventType::kWarning, "K8sTestRepeated", "the same words");
  rec.Record(PodRef(ns_, node), EventType::kNormal, "K8sTestOther", "different");
  rec.Flush();
  EventRecorderStats stats = rec.Stats();
  EXPECT_EQ(stats.created, 2u);
  EXPECT_EQ(stats.aggregated, 2u);
  EXPECT_EQ(stats.failed, 0u);
  ListOptions o;
  o.field_selector = "involvedObject.name=" + node;
  auto list = client_->List(Resource::Events(), ns_, o);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 2u);
  for (const json& e : list->items) {
    if (e["reason"] == "K8sTestRepeated") {
      EXPECT_EQ(e["count"], 3);
      EXPECT_EQ(e["type"], "Warning");
      EXPECT_EQ(e["source"]["component"], "k8stest");
    }
  }
  rec.Stop();
}

}  // namespace
}  // namespace skb::k8s::testing
