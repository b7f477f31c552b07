// SPDX-License-Identifier: Apache-2.0
#include "src/devices/give_backoff.h"

#include <gtest/gtest.h>

#include "src/ownership/time_codec.h"

namespace skb::devices {
namespace {

using std::chrono::minutes;

TEST(GiveBackoffTest, RecordsRoundTripOldestFirst) {
  const std::vector<UnusedGive> gives = {{"ml/infer-0", 4711, 1700000000},
                                         {"default/a.b-c", 4790, 1700000900}};
  EXPECT_EQ(FormatUnusedGives(gives), "ml/infer-0/4711@1700000000,default/a.b-c/4790@1700000900");
  EXPECT_EQ(ParseUnusedGives(FormatUnusedGives(gives)), gives);
  EXPECT_TRUE(ParseUnusedGives("").empty());
}

TEST(GiveBackoffTest, AnEntryThatDoesNotParseIsSkippedAndTheOthersKept) {
  EXPECT_EQ(ParseUnusedGives(" ml/a/7@100 , junk, nonamespace/8@100, ml/b/0@100, ml/b/x@100, "
                             "ml/b/9@-1, ml/b/9@, ml/c@5/9, ml/d/10@200"),
            (std::vector<UnusedGive>{{"ml/a", 7, 100}, {"ml/d", 10, 200}}));
}

TEST(GiveBackoffTest, OneRecordPerPlaceholderAndOnlyRecentOnesKept) {
  std::vector<UnusedGive> gives = {{"ml/a", 7, 100}};
  EXPECT_FALSE(AddUnusedGive(gives, {"ml/a", 7, 500}, 0).has_value()) << "recorded already";
  auto added = AddUnusedGive(gives, {"ml/b", 8, 600}, 0);
  ASSERT_TRUE(added.has_value());
  EXPECT_EQ(*added, (std::vector<UnusedGive>{{"ml/a", 7, 100}, {"ml/b", 8, 600}}));
  added = AddUnusedGive(gives, {"ml/b", 8, 600}, 101);
  ASSERT_TRUE(added.has_value());
  EXPECT_EQ(*added, (std::vector<UnusedGive>{{"ml/b", 8, 600}})) << "expired records dropped";
  for (uint32_t id = 100; id < 130; ++id) gives = *AddUnusedGive(gives, {"ml/a", id, id}, 0);
  ASSERT_EQ(gives.size(), kMaxUnusedGives);
  EXPECT_EQ(gives.front().placeholder, 130 - kMaxUnusedGives);
  EXPECT_EQ(gives.back().placeholder, 129u);
}

TEST(GiveBackoffTest, TheWaitDoublesPerUnusedGiveOfThePodUpToTheMaximum) {
  SharingConfig cfg;
  cfg.give_backoff = minutes(10);
  cfg.give_backoff_max = minutes(60);
  const auto at = [](int64_t unix) { return ownership::FromUnix(unix); };
  const Clock::TimePoint now = at(6000);
  std::vector<UnusedGive> gives;
  EXPECT_FALSE(BackoffUntil(gives, "ml/a", cfg, now).has_value());
  gives.push_back({"ml/a", 1, 1000});
  EXPECT_EQ(BackoffUntil(gives, "ml/a", cfg, now), at(1000) + minutes(10));
  EXPECT_FALSE(BackoffUntil(gives, "ml/b", cfg, now).has_value())
      << "another pod is not backed off";
  gives.push_back({"ml/b", 2, 1500});
  gives.push_back({"ml/a", 3, 2000});
  EXPECT_EQ(BackoffUntil(gives, "ml/a", cfg, now), at(2000) + minutes(20)) << "from the latest";
  EXPECT_EQ(BackoffUntil(gives, "ml/b", cfg, now), at(1500) + minutes(10));
  gives.push_back({"ml/a", 4, 3000});
  EXPECT_EQ(BackoffUntil(gives, "ml/a", cfg, now), at(3000) + minutes(40));
  gives.push_back({"ml/a", 5, 4000});
  EXPECT_EQ(BackoffUntil(gives, "ml/a", cfg, now), at(4000) + minutes(60)) << "capped";
  gives.push_back({"ml/a", 6, 5000});
  EXPECT_EQ(BackoffUntil(gives, "ml/a", cfg, now), at(5000) + minutes(60));
  gives.push_back({"ml/a", 7, 99999999999});
  EXPECT_EQ(BackoffUntil(gives, "ml/a", cfg, now), now + minutes(60)) << "a future stamp is now";
}

}  // namespace
}  // namespace skb::devices
