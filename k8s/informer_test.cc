// SPDX-License-Identifier: Apache-2.0
#include "k8s/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "k8s/fake_kube_client.h"

namespace skb::k8s {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::ElementsAre;

json Pod(const std::string& name, const std::string& phase = "Pending") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"labels", {{"app", "x"}}},
            {"annotations", {{"big", std::string(100, 'a')}}}}},
          {"status", {{"phase", phase}}}};
}

// Records notifications as "add ns/a", "update ns/a Running", "delete ns/a unknown".
class Recorder {
 public:
  InformerHandlers Handlers() {
    return {
        [this](const ObjectPtr& o) { Push("add " + Informer::KeyOf(*o)); },
        [this](const ObjectPtr&, const ObjectPtr& o) {
          Push("update " + Informer::KeyOf(*o) + " " + (*o)["status"].value("phase", ""));
        },
        [this](const ObjectPtr& o, bool unknown) {
          Push("delete " + Informer::KeyOf(*o) + (unknown ? " unknown" : ""));
        },
    };
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(log_, {});
  }
  bool WaitForCount(size_t n) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (log_.size() >= n) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

 private:
  void Push(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::string> log_;
};

InformerOptions PodOptions() {
  InformerOptions o;
  o.resource = Resource::Pods();
  o.ns = "ns";
  o.backoff = {milliseconds(5), milliseconds(50), 0.5};
  return o;
}

bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

TEST(Informer, ListsThenWatchesInOrder) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
  Informer inf(&fake, PodOptions());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  EXPECT_FALSE(inf.HasSynced());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  ASSERT_TRUE(rec.WaitForCount(1));
  EXPECT_THAT(rec.Take(), ElementsAre("add ns/a"));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));

  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("b")).ok());
  ASSERT_TRUE(fake.Patch(Resource::Pods(), "ns", "a", PatchType::kJsonMerge,
                         {{"status", {{"phase", "Running"}}}})
                  .ok());
  ASSERT_TRUE(fake.Delete(Resource::Pods(), "ns", "b").ok());
  ASSERT_TRUE(rec.WaitForCount(3));
  EXPECT_THAT(rec.Take(), ElementsAre("add ns/b", "update ns/a Running", "delete ns/b"));
  ASSERT_NE(inf.Get("ns/a"), nullptr);
  EXPECT_EQ((*inf.Get("ns/a"))["status"]["phase"], "Running");
  EXPECT_EQ(inf.Get("ns/b"), nullptr);
  EXPECT_EQ(inf.Size(), 1u);
  EXPECT_EQ(inf.ResourceVersion(), std::to_string(fake.resource_version()));
  EXPECT_EQ(inf.Stats().lists, 1u);
}

// A field selector on a mutable field (the daemon's live pods: status.phase!=Succeeded,
// status.phase!=Failed): a pod that turns terminal leaves the cache as a delete, one that
// comes back into the selection arrives as an add, as the apiserver's watch cache sends them.
TEST(Informer, AnObjectLeavingItsFieldSelectionIsADeleteAndOneEnteringItAnAdd) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a", "Running")).ok());
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("done", "Succeeded")).ok());
  InformerOptions o = PodOptions();
  o.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  Informer inf(&fake, o);
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  ASSERT_TRUE(rec.WaitForCount(1));
  EXPECT_THAT(rec.Take(), ElementsAre("add ns/a"));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));

  auto phase = [&](const std::string& name, const std::string& p) {
    ASSERT_TRUE(fake.Patch(Resource::Pods(), "ns", name, PatchType::kJsonMerge,
                           {{"status", {{"phase", p}}}})
                    .ok());
  };
  phase("a", "Failed");      // leaves the selection
  phase("done", "Running");  // enters it (not what a kubelet does; what a selector does)
  phase("done", "Pending");  // stays in it
  ASSERT_TRUE(rec.WaitForCount(3));
  EXPECT_THAT(rec.Take(), ElementsAre("delete ns/a", "add ns/done", "update ns/done Pending"));
  EXPECT_EQ(inf.Get("ns/a"), nullptr);
  EXPECT_EQ(inf.Size(), 1u);

  // A field the apiserver cannot select on is an error, not a silent match-all.
  ListOptions bad;
  bad.field_selector = "spec.priority=5";
  EXPECT_FALSE(fake.List(Resource::Pods(), "ns", bad).ok());
}

// A consumer that waits for HasSynced must find the first list in its own state: the
// adds are delivered before the informer says it is synced (a reconciler once planned a
// node from its pods while the node's add was still on its way).
TEST(Informer, HasSyncedOnlyAfterTheFirstListIsDelivered) {
  FakeKubeClient fake;
  for (const char* n : {"a", "b", "c"})
    ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod(n)).ok());
  Informer inf(&fake, PodOptions());
  std::atomic<int> delivered{0};
  std::atomic<int> synced_while_delivering{0};
  inf.AddHandlers({.on_add = [&](const ObjectPtr&) {
    synced_while_delivering += inf.HasSynced();
    std::this_thread::sleep_for(milliseconds(20));  // a slow handler widens the window
    ++delivered;
  }});
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  EXPECT_EQ(delivered.load(), 3);
  EXPECT_EQ(synced_while_delivering.load(), 0);
}

TEST(Informer, ResumesAfterADroppedWatchWithoutRelistOrDuplicates) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
  Informer inf(&fake, PodOptions());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));
  rec.Take();

  // Apiserver restart: the watch drops; and the first reconnect attempts fail.
  fake.FailNextListOrWatch(2, UnavailableError("connection refused"));
  fake.DropWatches();
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("c")).ok());
  ASSERT_TRUE(rec.WaitForCount(1));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_THAT(rec.Take(), ElementsAre("add ns/c"));
  EXPECT_EQ(inf.Stats().lists, 1u);  // resumed from the last resourceVersion
  EXPECT_GE(inf.Stats().errors, 2u);
  EXPECT_GE(fake.watch_calls(), 3);
}

// Cuts the informer off (its watch drops, its next attempt fails) and, while it is, deletes
// pod `gone`, puts pod a into Running and creates pod `created`; then compacts the history,
// so the reconnecting watch gets 410 and the informer must relist.
void ChangeWhileCutOff(FakeKubeClient& fake, const std::string& gone, const std::string& created) {
  fake.FailNextListOrWatch(1, UnavailableError("connection refused"));
  fake.DropWatches();
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 0; }));
  fake.DeleteSilently(Resource::Pods(), "ns", gone);
  json a = *fake.Get(Resource::Pods(), "ns", "a");
  a["status"]["phase"] = "Running";
  ASSERT_TRUE(fake.Update(Resource::Pods(), "ns", a).ok());
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod(created)).ok());
  fake.ExpireHistory();
}

TEST(Informer, RelistsOnExpiredResourceVersionAndReportsMissedDeletes) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("b")).ok());
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("unchanged")).ok());
  Informer inf(&fake, PodOptions());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(rec.WaitForCount(3));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));
  rec.Take();

  ASSERT_NO_FATAL_FAILURE(ChangeWhileCutOff(fake, "b", "d"));

  ASSERT_TRUE(rec.WaitForCount(3));
  std::vector<std::string> got = rec.Take();
  EXPECT_THAT(got, ::testing::UnorderedElementsAre("update ns/a Running", "add ns/d",
                                                   "delete ns/b unknown"));
  EXPECT_EQ(inf.Stats().lists, 2u);
  EXPECT_GE(inf.Stats().expired, 1u);
  EXPECT_EQ(inf.Size(), 3u);  // a, unchanged, d
}

// Relists go page by page (page_size); the semantics must be those of one list.
InformerOptions PagedPodOptions() {
  InformerOptions o = PodOptions();
  o.page_size = 2;
  return o;
}

TEST(Informer, PagedRelistReportsMissedDeletesOnlyAfterTheLastPage) {
  FakeKubeClient fake;
  for (const char* name : {"a", "b", "c", "d", "e"})
    ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod(name)).ok());
  Informer inf(&fake, PagedPodOptions());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(rec.WaitForCount(5));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));
  EXPECT_EQ(fake.list_calls(), 3);  // 2 + 2 + 1
  rec.Take();

  ASSERT_NO_FATAL_FAILURE(ChangeWhileCutOff(fake, "e", "f"));  // e is on the last page

  ASSERT_TRUE(rec.WaitForCount(3));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_THAT(rec.Take(), ::testing::UnorderedElementsAre("update ns/a Running", "add ns/f",
                                                          "delete ns/e unknown"));
  EXPECT_EQ(inf.Stats().lists, 2u);
  EXPECT_EQ(inf.Size(), 5u);  // a, b, c, d, f
}

// Every page of a continued list carries the first page's snapshot resourceVersion, and the
// watch starts from it: a write made while later pages are fetched (here to a key an earlier
// page already passed) arrives through the watch, once.
TEST(Informer, PagedListWatchesFromItsSnapshotSoWritesDuringPagingAreNotMissed) {
  FakeKubeClient fake;
  for (const char* name : {"b", "c", "d"})
    ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod(name)).ok());
  std::atomic<bool> written{false};
  fake.OnList([&](const ListOptions& o) {
    if (!o.continue_token.empty() && !written.exchange(true)) {
      ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
    }
  });
  const std::string snapshot = std::to_string(fake.resource_version());
  Informer inf(&fake, PagedPodOptions());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  EXPECT_TRUE(written);
  ASSERT_TRUE(rec.WaitForCount(4));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_THAT(rec.Take(), ElementsAre("add ns/b", "add ns/c", "add ns/d", "add ns/a"));
  EXPECT_EQ(inf.Size(), 4u);
  EXPECT_EQ(inf.Stats().lists, 1u);
  EXPECT_TRUE(
      WaitUntil([&] { return inf.ResourceVersion() == std::to_string(fake.resource_version()); }));
  EXPECT_NE(snapshot, inf.ResourceVersion());
}

// A list that outlives the apiserver's snapshot gets 410 Expired on a continued page: the
// informer starts the list over at once (no back-off, not counted as an error), keeps
// nothing from the abandoned pages, and notifies each object once.
TEST(Informer, PagedListWhoseContinueTokenExpiresStartsOverCleanly) {
  FakeKubeClient fake;
  for (const char* name : {"a", "b", "c", "d", "e"})
    ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod(name)).ok());
  std::atomic<int> expiries{0};
  fake.OnList([&](const ListOptions& o) {
    // On the second page of the first attempt: compaction, and b goes away meanwhile.
    if (!o.continue_token.empty() && expiries.fetch_add(1) == 0) {
      fake.DeleteSilently(Resource::Pods(), "ns", "b");
      fake.ExpireHistory();
    }
  });
  InformerOptions slow_backoff = PagedPodOptions();
  slow_backoff.backoff = {std::chrono::seconds(30), std::chrono::seconds(30), 0};
  Informer inf(&fake, slow_backoff);
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));  // far below the back-off
  ASSERT_TRUE(rec.WaitForCount(4));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_THAT(rec.Take(), ElementsAre("add ns/a", "add ns/c", "add ns/d", "add ns/e"));
  EXPECT_EQ(inf.Size(), 4u);
  EXPECT_EQ(inf.Get("ns/b"), nullptr);
  const InformerStats st = inf.Stats();
  EXPECT_EQ(st.lists, 1u);
  EXPECT_EQ(st.expired, 1u);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_EQ(fake.list_calls(), 2 + 2);  // abandoned after 2 pages; then a, c + d, e
  EXPECT_EQ(inf.ResourceVersion(), std::to_string(fake.resource_version()));
}

// The cache keeps objects encoded (compact_json.h): an update's old object is decoded from
// it, after a watch event and after a relist alike; handlers that do not want it get null.
TEST(Informer, UpdatesCarryTheOldObjectFromTheCacheUnlessNotWanted) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
  Informer inf(&fake, PodOptions());
  std::mutex mu;
  std::vector<std::string> seen;
  auto push = [&](std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(std::move(s));
  };
  InformerHandlers with_old;
  with_old.on_update = [&](const ObjectPtr& old_obj, const ObjectPtr& obj) {
    ASSERT_NE(old_obj, nullptr);
    EXPECT_EQ((*old_obj)["metadata"]["annotations"]["big"], std::string(100, 'a'));
    EXPECT_NE((*old_obj)["metadata"]["resourceVersion"], (*obj)["metadata"]["resourceVersion"]);
    push((*old_obj)["status"].value("phase", "") + "->" + (*obj)["status"].value("phase", ""));
  };
  InformerHandlers without_old;
  without_old.on_update = [&](const ObjectPtr& old_obj, const ObjectPtr&) {
    push(old_obj == nullptr ? "no old" : "old");
  };
  without_old.wants_old_object = false;
  inf.AddHandlers(with_old);
  inf.AddHandlers(without_old);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));

  ASSERT_TRUE(fake.Patch(Resource::Pods(), "ns", "a", PatchType::kJsonMerge,
                         {{"status", {{"phase", "Running"}}}})
                  .ok());
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() == 2;
  }));

  fake.FailNextListOrWatch(1, UnavailableError("connection refused"));
  fake.DropWatches();
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 0; }));
  json a = *fake.Get(Resource::Pods(), "ns", "a");
  a["status"]["phase"] = "Succeeded";
  ASSERT_TRUE(fake.Update(Resource::Pods(), "ns", a).ok());
  fake.ExpireHistory();
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() == 4;
  }));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(seen, ElementsAre("Pending->Running", "no old", "Running->Succeeded", "no old"));
  EXPECT_EQ(inf.Stats().lists, 2u);
}

TEST(Informer, BookmarksAdvanceTheResourceVersion) {
  FakeKubeClient fake;
  Informer inf(&fake, PodOptions());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));
  fake.SendBookmark(Resource::Pods());
  const std::string want = std::to_string(fake.resource_version());
  EXPECT_TRUE(WaitUntil([&] { return inf.ResourceVersion() == want; }));
  EXPECT_EQ(inf.Size(), 0u);
}

TEST(Informer, TransformShrinksCachedObjectsAndSelectorsFilter) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
  json other = Pod("z");
  other["metadata"]["labels"]["app"] = "other";
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", other).ok());
  InformerOptions o = PodOptions();
  o.label_selector = "app=x";
  o.transform = [](json&& obj) {
    obj["metadata"].erase("annotations");
    return std::move(obj);
  };
  Informer inf(&fake, o);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  ASSERT_EQ(inf.Size(), 1u);
  EXPECT_FALSE((*inf.Get("ns/a"))["metadata"].contains("annotations"));
  ASSERT_TRUE(WaitUntil([&] { return fake.open_watches() == 1; }));
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("b")).ok());
  ASSERT_TRUE(WaitUntil([&] { return inf.Get("ns/b") != nullptr; }));
  EXPECT_FALSE((*inf.Get("ns/b"))["metadata"].contains("annotations"));
}

TEST(Informer, RetriesFailedListsWithBackoffThenSyncs) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Pods(), "ns", Pod("a")).ok());
  fake.FailNextListOrWatch(3, UnavailableError("apiserver starting"));
  Informer inf(&fake, PodOptions());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(5)));
  EXPECT_EQ(inf.Stats().errors, 3u);
  EXPECT_EQ(fake.list_calls(), 4);
}

TEST(Informer, StopIsPromptAndIdempotentEvenWhileWatchingOrBackingOff) {
  FakeKubeClient fake;
  auto inf = std::make_unique<Informer>(&fake, PodOptions());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(std::chrono::seconds(5)));
  auto t0 = std::chrono::steady_clock::now();
  inf->Stop();
  inf->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));

  InformerOptions slow = PodOptions();
  slow.backoff = {std::chrono::seconds(60), std::chrono::seconds(60), 0};
  fake.FailNextListOrWatch(1, UnavailableError("down"));
  Informer backing_off(&fake, slow);
  backing_off.Start();
  std::this_thread::sleep_for(milliseconds(50));
  t0 = std::chrono::steady_clock::now();
  backing_off.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_FALSE(backing_off.HasSynced());
}

TEST(Informer, KeyOf) {
  EXPECT_EQ(Informer::KeyOf({{"metadata", {{"name", "n"}, {"namespace", "ns"}}}}), "ns/n");
  EXPECT_EQ(Informer::KeyOf({{"metadata", {{"name", "node1"}}}}), "node1");
  EXPECT_EQ(Informer::KeyOf({{"metadata", {{"name", 5}}}}), "");
  EXPECT_EQ(Informer::KeyOf(json::array()), "");
}

}  // namespace
}  // namespace skb::k8s
