// SPDX-License-Identifier: Apache-2.0
// The bookkeeping of a checker that samples the world on a fixed schedule: the invariant
// sampler (invariant_sampler.h) and the oracle (oracle.h) each own one. It holds no rule and
// reads nothing: it runs the sample function once per tick, counts what became of every
// tick, and says whether the claimed rate was kept. It includes nothing of the bridge (the
// oracle's isolation check covers this file too), so the oracle can share it.
//
// Rate: one sample per period, started at multiples of the period after construction. A
// sample that overruns makes it skip the ticks it missed (counted against the side whose
// read was the slower); a sample whose read fails is not a sample, and the ticks it overran
// are blind (counted apart: the test that restarts the apiserver knows why).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace skb::sampling {

class SampleLedger {
 public:
  using Steady = std::chrono::steady_clock;
  // `who` names the checker in reports ("sampler", "oracle"); `report_suffix` is appended
  // to the test's name in the SKB_SAMPLER_REPORT line ("" or " [oracle]"). The ticks start
  // `phase` after construction: two checkers of one test started together read at once
  // unless one is offset (the oracle runs half a period after the sampler, so that each
  // tick's reads do not queue behind the other checker's on the same apiserver and
  // slurmctld).
  SampleLedger(std::chrono::milliseconds period, std::string who, std::string report_suffix,
               std::chrono::milliseconds phase = std::chrono::milliseconds(0));

  // Runs `sample` once per tick until `stop` is set; `sample` returns false when a read
  // failed. Called on the checker's own thread.
  void Run(const std::function<bool()>& sample, const std::atomic<bool>& stop);
  // After Run returned: fixes the watched time and appends the report line.
  void Finish();

  // How long this sample's read of each side took, from the sample's start. Reads of one
  // side that run at once count as the latest of them.
  void NoteSlurmRead(Steady::time_point start);
  void NoteKubeRead(Steady::time_point start);
  void StartSample();  // forgets the previous sample's read times
  // One sample's findings: counted, the first one kept.
  void Record(const std::vector<std::string>& found);

  int samples() const { return samples_; }
  int violations() const { return violations_; }
  int64_t ticks() const { return ticks_; }
  int failed_reads() const { return failed_; }
  int64_t missed_ticks() const { return missed_; }
  int64_t blind_ticks() const { return blind_; }
  int64_t missed_while_slurm_slow() const { return missed_slurm_; }
  int64_t missed_while_apiserver_slow() const { return missed_kube_; }
  std::chrono::milliseconds period() const { return period_; }
  // Seconds from construction to Finish() (or to now while it runs).
  double seconds() const;
  std::string first_violation() const;
  // When the first and the last double-booked sample were taken (nullopt: none was).
  std::optional<Steady::time_point> first_violation_at() const;
  std::optional<Steady::time_point> last_violation_at() const;
  // When each double-booked sample was taken, in order (a sample with several findings
  // once).
  std::vector<Steady::time_point> violation_times() const;

  // Whether it sampled at least `fraction` of the ticks at which both systems answered
  // (ticks - failed reads - blind ticks), less one tick, and at least once. The one tick:
  // a window of a few ticks cannot show 90% once a single read is slow (6 of 7 is 86%);
  // over a test's usual hundreds of ticks it changes nothing. No sample at all is no
  // evidence, whatever the share.
  ::testing::AssertionResult RateCheck(double fraction) const;
  static bool RateKept(int64_t samples, int64_t answered, double fraction);
  // "812 samples in 82.3 s (one per 100 ms claimed: 823 ticks, 0 failed reads, 11 missed (9
  // while Slurm's read was the slower, 2 while the apiserver's was), 0 blind; slowest
  // reads: Slurm 240 ms, apiserver 95 ms<extra>)".
  std::string RateReport(const std::string& extra = "") const;

 private:
  // One line per checker in the file SKB_SAMPLER_REPORT names (scripts/test prints it at
  // the end of a run): one write(2) on an O_APPEND descriptor, so the lines of test
  // processes running side by side do not interleave.
  void AppendToReport() const;

  const std::chrono::milliseconds period_;
  const std::string who_, report_suffix_;
  const Steady::time_point started_;    // construction + phase: tick 0
  std::atomic<int64_t> stopped_ns_{0};  // since started_; 0 while running
  std::atomic<int> samples_{0}, violations_{0}, failed_{0};
  std::atomic<int64_t> ticks_{0}, missed_{0}, blind_{0};
  // Since started_, +1 so that 0 means none (guarded by mu_).
  int64_t first_violation_ns_ = 0, last_violation_ns_ = 0;
  std::vector<int64_t> violation_ns_;  // each double-booked sample's (guarded by mu_)
  std::atomic<int64_t> missed_slurm_{0}, missed_kube_{0};
  std::atomic<int64_t> last_slurm_ms_{0}, last_kube_ms_{0};
  std::atomic<int64_t> slowest_slurm_ms_{0}, slowest_kube_ms_{0};
  mutable std::mutex mu_;
  std::string first_;
};

}  // namespace skb::sampling
