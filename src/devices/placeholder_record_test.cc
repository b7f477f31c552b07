// SPDX-License-Identifier: Apache-2.0
#include "src/devices/placeholder_record.h"

#include <gtest/gtest.h>

namespace skb::devices {
namespace {

TEST(PlaceholderRecordTest, RoundTrips) {
  const PlaceholderRecord r{.node = "node1",
                            .pod = "infer/llama-0",
                            .gpus = 2,
                            .victims = {41, 42},
                            .signalled_at = 1700000000,
                            .returning = true,
                            .idle_since = 1700000100};
  const std::string s = FormatPlaceholderRecord(r);
  EXPECT_EQ(
      s,
      "skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;victims=41,42;signalled=1700000000;"
      "returning=1;idle=1700000100");
  EXPECT_EQ(ParsePlaceholderRecord(s), r);
  EXPECT_EQ(ParsePlaceholderRecord("admin note " + s + " more"), r);
  const PlaceholderRecord bare{.node = "n", .pod = "a/b", .gpus = 1};
  EXPECT_EQ(ParsePlaceholderRecord(FormatPlaceholderRecord(bare)), bare);
  // A give of MIG slices records their profile; an older version ignores the field.
  const PlaceholderRecord mig{.node = "n", .pod = "a/b", .gpus = 1, .profile = "1g.10gb"};
  EXPECT_EQ(FormatPlaceholderRecord(mig),
            "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;victims=;signalled=0;returning=0;idle=0;"
            "profile=1g.10gb");
  EXPECT_EQ(ParsePlaceholderRecord(FormatPlaceholderRecord(mig)), mig);
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;profile="), std::nullopt);
}

TEST(PlaceholderRecordTest, TheSignalTimeKeepsItsMillisecondsBesideTheSeconds) {
  const PlaceholderRecord r{.node = "node1",
                            .pod = "infer/llama-0",
                            .gpus = 2,
                            .victims = {41},
                            .signalled_at = 1700000000,
                            .signalled_at_ms = 1700000000250};
  const std::string s = FormatPlaceholderRecord(r);
  EXPECT_EQ(s,
            "skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;victims=41;signalled=1700000000;"
            "signalled_ms=1700000000250;returning=0;idle=0");
  EXPECT_EQ(ParsePlaceholderRecord(s), r);
  // A version that keeps seconds only reads the seconds (the unknown key is ignored) and
  // writes them back without the milliseconds.
  PlaceholderRecord seconds = r;
  seconds.signalled_at_ms = 0;
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;victims=41;"
                                   "signalled=1700000000;returning=0;idle=0"),
            seconds);
  // Milliseconds of another second than the seconds say (an edit by hand) are dropped.
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;"
                                   "victims=41;signalled=1700000000;signalled_ms=1700000009250"),
            seconds);
  EXPECT_EQ(
      ParsePlaceholderRecord("skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;signalled=1;signalled_ms=-5"),
      std::nullopt);
}

TEST(PlaceholderRecordTest, TheIdleSinceKeepsItsMillisecondsBesideTheSeconds) {
  const PlaceholderRecord r{.node = "node1",
                            .pod = "infer/llama-0",
                            .gpus = 2,
                            .idle_since = 1700000000,
                            .idle_since_ms = 1700000000750};
  const std::string s = FormatPlaceholderRecord(r);
  EXPECT_EQ(s,
            "skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;victims=;signalled=0;"
            "returning=0;idle=1700000000;idle_ms=1700000000750");
  EXPECT_EQ(ParsePlaceholderRecord(s), r);
  PlaceholderRecord seconds = r;
  seconds.idle_since_ms = 0;
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;"
                                   "idle=1700000000"),
            seconds);
  // Milliseconds of another second (an edit by hand, or a version that cleared the seconds
  // alone) are dropped: the seconds are what every version reads.
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;"
                                   "idle=1700000000;idle_ms=1700000005000"),
            seconds);
  seconds.idle_since = 0;
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=node1;pod=infer/llama-0;gpus=2;"
                                   "idle=0;idle_ms=1700000000750"),
            seconds);
  EXPECT_EQ(ParsePlaceholderRecord("skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;idle=1;idle_ms=x"),
            std::nullopt);
}

TEST(PlaceholderRecordTest, MalformedRecordsAreNotRead) {
  for (const char* bad :
       {"", "skb-gpu-hold:v1;", "skb-gpu-hold:v1;pod=a/b;gpus=1",
        "skb-gpu-hold:v1;node=;pod=a/b;gpus=1", "skb-gpu-hold:v1;node=n;pod=a/b",
        "skb-gpu-hold:v1;gpus=2", "skb-gpu-hold:v1;node=n;pod=nons;gpus=1",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=0", "skb-gpu-hold:v1;node=n;pod=a/b;gpus=x",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;victims=1,x",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;victims=0",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;returning=2",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;idle=-4",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;junk",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=99999999999999999999"}) {
    EXPECT_EQ(ParsePlaceholderRecord(bad), std::nullopt) << bad;
  }
  // A later version's keys are ignored.
  EXPECT_TRUE(ParsePlaceholderRecord("skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;future=3").has_value());
}

// A health hold names its device and slot and no pod; it is one of a kind per node,
// device and slot, a give per pod. An older version reads a health hold as no placeholder
// (it has no pod): it never mistakes one for a give.
TEST(PlaceholderRecordTest, AHealthHoldNamesItsDeviceAndSlotAndNoPod) {
  const PlaceholderRecord r{.node = "node1", .gpus = 1, .health = "gpu-5", .slot = 2};
  const std::string text = FormatPlaceholderRecord(r);
  EXPECT_EQ(text,
            "skb-gpu-hold:v1;node=node1;pod=;gpus=1;victims=;signalled=0;returning=0;idle=0;"
            "health=gpu-5;slot=2");
  EXPECT_EQ(ParsePlaceholderRecord(text), r);
  EXPECT_EQ(PlaceholderKey(r), "health:node1:gpu-5:2");
  EXPECT_EQ(PlaceholderKey({.node = "node1", .pod = "ml/a", .gpus = 2}), "ml/a");
  for (const char* bad :
       {"skb-gpu-hold:v1;node=n;pod=;gpus=1", "skb-gpu-hold:v1;node=n;pod=;gpus=1;health=gpu-1",
        "skb-gpu-hold:v1;node=n;pod=;gpus=1;health=gpu-1;slot=0",
        "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;health=gpu-1;slot=1",
        "skb-gpu-hold:v1;node=n;pod=;gpus=1;health=;slot=1",
        "skb-gpu-hold:v1;node=n;pod=;gpus=1;health=a:b;slot=1"}) {
    EXPECT_EQ(ParsePlaceholderRecord(bad), std::nullopt) << bad;
  }
}

// A health hold that follows the job on its bad GPU names that job and its victims; it is
// one of a kind per node, device and job (its slot says nothing then), and only a health
// hold may follow a job.
TEST(PlaceholderRecordTest, AHealthHoldThatFollowsAJobNamesIt) {
  const PlaceholderRecord r{.node = "node1",
                            .gpus = 4,
                            .victims = {41},
                            .signalled_at = 1700000000,
                            .health = "gpu-5",
                            .slot = 3,
                            .under_job = 41};
  const std::string text = FormatPlaceholderRecord(r);
  EXPECT_EQ(text,
            "skb-gpu-hold:v1;node=node1;pod=;gpus=4;victims=41;signalled=1700000000;returning=0;"
            "idle=0;health=gpu-5;slot=3;under=41");
  EXPECT_EQ(ParsePlaceholderRecord(text), r);
  EXPECT_EQ(PlaceholderKey(r), "health:node1:gpu-5:under:41");
  PlaceholderRecord other_slot = r;
  other_slot.slot = 4;
  EXPECT_EQ(PlaceholderKey(other_slot), PlaceholderKey(r));
  for (const char* bad : {"skb-gpu-hold:v1;node=n;pod=;gpus=1;health=gpu-1;slot=1;under=0",
                          "skb-gpu-hold:v1;node=n;pod=;gpus=1;health=gpu-1;slot=1;under=x",
                          "skb-gpu-hold:v1;node=n;pod=a/b;gpus=1;under=41"}) {
    EXPECT_EQ(ParsePlaceholderRecord(bad), std::nullopt) << bad;
  }
}

TEST(PlaceholderRecordTest, MergeReplacesOnlyTheRecord) {
  PlaceholderRecord r{.node = "n", .pod = "a/b", .gpus = 1};
  EXPECT_EQ(MergePlaceholderRecord("", r), FormatPlaceholderRecord(r));
  const std::string first = MergePlaceholderRecord("ops: keep", r);
  EXPECT_EQ(first, "ops: keep " + FormatPlaceholderRecord(r));
  r.returning = true;
  const std::string second = MergePlaceholderRecord(first + " tail", r);
  EXPECT_EQ(second, "ops: keep " + FormatPlaceholderRecord(r) + " tail");
  EXPECT_EQ(ParsePlaceholderRecord(second), r);
}

}  // namespace
}  // namespace skb::devices
