// SPDX-License-Identifier: Apache-2.0
#include "tests/testbed/sample_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace skb::sampling {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(SampleLedgerRate, OneSlowTickInAShortWindowIsKept) {
  // CI stop 38: 6 samples of 7 answered ticks (one apiserver read of 114 ms at 100 ms).
  EXPECT_TRUE(SampleLedger::RateKept(6, 7, 0.9));
  EXPECT_TRUE(SampleLedger::RateKept(9, 10, 0.9));
}

TEST(SampleLedgerRate, TwoMissedOfTenOrAFifthOfALongWindowIsNot) {
  EXPECT_FALSE(SampleLedger::RateKept(7, 10, 0.9));
  EXPECT_FALSE(SampleLedger::RateKept(880, 1000, 0.9));  // the 88% sampler of issue 31
  EXPECT_TRUE(SampleLedger::RateKept(900, 1000, 0.9));
  EXPECT_FALSE(SampleLedger::RateKept(898, 1000, 0.9));
}

TEST(SampleLedgerRate, NoSampleIsNoEvidence) {
  EXPECT_FALSE(SampleLedger::RateKept(0, 0, 0.9));
  EXPECT_FALSE(SampleLedger::RateKept(0, 1, 0.9));
}

// These ledgers are not a test's watch: no line in the run's sampler report.
class SampleLedgerRun : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("SKB_SAMPLER_REPORT"); }
};

TEST_F(SampleLedgerRun, CountsSamplesFailuresAndTheTicksASlowSampleSkipped) {
  SampleLedger ledger(20ms, "test checker", "");
  std::atomic<bool> stop{false};
  int calls = 0;
  std::thread runner([&] {
    ledger.Run(
        [&] {
          ++calls;
          const auto t0 = SampleLedger::Steady::now();
          if (calls == 2) {
            std::this_thread::sleep_for(70ms);  // overruns: skips about three ticks
            ledger.NoteSlurmRead(t0);
            ledger.NoteKubeRead(t0 - 0ms);
            ledger.Record({});
            return true;
          }
          if (calls == 4) return false;  // a failed read: not a sample
          if (calls == 5)
            ledger.Record({"node1: job 7 and pod ns/p"});
          else
            ledger.Record({});
          if (calls >= 8) stop = true;
          return true;
        },
        stop);
  });
  runner.join();
  ledger.Finish();
  EXPECT_EQ(calls, 8);
  EXPECT_EQ(ledger.samples(), 7);
  EXPECT_EQ(ledger.failed_reads(), 1);
  EXPECT_EQ(ledger.violations(), 1);
  EXPECT_EQ(ledger.first_violation(), "node1: job 7 and pod ns/p");
  EXPECT_GE(ledger.missed_ticks(), 2);
  EXPECT_EQ(ledger.missed_ticks(),
            ledger.missed_while_slurm_slow() + ledger.missed_while_apiserver_slow());
  EXPECT_GE(ledger.ticks(), ledger.samples() + ledger.failed_reads() + ledger.missed_ticks());
  EXPECT_THAT(ledger.RateReport(), HasSubstr("test checker: 7 samples in"));
  // Finish fixes the watched time.
  const double watched = ledger.seconds();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(ledger.seconds(), watched);
}

TEST_F(SampleLedgerRun, ACheckThatNeverSampledFailsTheRateCheck) {
  SampleLedger ledger(20ms, "test checker", "");
  std::atomic<bool> stop{false};
  int calls = 0;
  ledger.Run(
      [&] {
        if (++calls == 3) stop = true;
        return false;
      },
      stop);
  ledger.Finish();
  EXPECT_EQ(ledger.samples(), 0);
  EXPECT_FALSE(ledger.RateCheck(0.9));
}

TEST_F(SampleLedgerRun, ALedgerWithAPhaseSamplesThatLongAfterItWasMade) {
  // The oracle's: half a period after the sampler made at the same moment.
  const auto made = SampleLedger::Steady::now();
  SampleLedger ledger(40ms, "test checker", "", 20ms);
  std::atomic<bool> stop{false};
  std::vector<SampleLedger::Steady::duration> at;
  ledger.Run(
      [&] {
        at.push_back(SampleLedger::Steady::now() - made);
        ledger.Record({});
        if (at.size() == 3) stop = true;
        return true;
      },
      stop);
  ledger.Finish();
  ASSERT_EQ(at.size(), 3u);
  EXPECT_GE(at[0], 20ms);  // tick 0 is the phase
  EXPECT_GE(at[1], 60ms);  // then one per period from it
  EXPECT_GE(at[2], 100ms);
  EXPECT_EQ(ledger.samples(), 3);
  EXPECT_GE(ledger.ticks(), 3);
}

}  // namespace
}  // namespace skb::sampling
