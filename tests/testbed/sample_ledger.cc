// SPDX-License-Identifier: Apache-2.0
#include "tests/testbed/sample_ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <utility>

namespace skb::sampling {
namespace {

int64_t MsSince(SampleLedger::Steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SampleLedger::Steady::now() - start)
      .count();
}

void RaiseTo(std::atomic<int64_t>& value, int64_t ms) {
  int64_t seen = value;
  while (ms > seen && !value.compare_exchange_weak(seen, ms)) {
  }
}

}  // namespace

SampleLedger::SampleLedger(std::chrono::milliseconds period, std::string who,
                           std::string report_suffix, std::chrono::milliseconds phase)
    : period_(period),
      who_(std::move(who)),
      report_suffix_(std::move(report_suffix)),
      started_(Steady::now() + phase) {}

void SampleLedger::Run(const std::function<bool()>& sample, const std::atomic<bool>& stop) {
  while (!stop && Steady::now() < started_) {
    std::this_thread::sleep_for(std::min<Steady::duration>(started_ - Steady::now(), period_));
  }
  int64_t tick = 0;  // the tick this sample runs for
  while (!stop) {
    StartSample();
    const bool ok = sample();
    // The first tick not yet begun: the ones in between were skipped.
    const int64_t next = (Steady::now() - started_) / period_ + 1;
    const int64_t skipped = std::max<int64_t>(0, next - tick - 1);
    if (ok) {
      missed_ += skipped;
      // Which side made this sample overrun: the slower of its reads.
      (last_slurm_ms_ >= last_kube_ms_ ? missed_slurm_ : missed_kube_) += skipped;
    } else {
      ++failed_;
      blind_ += skipped;
    }
    tick = std::max(next, tick + 1);
    ticks_ = tick;
    const auto due = started_ + tick * period_;
    while (!stop && Steady::now() < due) {
      std::this_thread::sleep_for(std::min<Steady::duration>(due - Steady::now(), period_));
    }
  }
}

void SampleLedger::Finish() {
  if (stopped_ns_ != 0) return;
  stopped_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - started_).count();
  AppendToReport();
}

void SampleLedger::StartSample() {
  last_slurm_ms_ = 0;
  last_kube_ms_ = 0;
}

void SampleLedger::NoteSlurmRead(Steady::time_point start) {
  const int64_t ms = MsSince(start);
  RaiseTo(last_slurm_ms_, ms);
  RaiseTo(slowest_slurm_ms_, ms);
}

void SampleLedger::NoteKubeRead(Steady::time_point start) {
  const int64_t ms = MsSince(start);
  RaiseTo(last_kube_ms_, ms);
  RaiseTo(slowest_kube_ms_, ms);
}

void SampleLedger::Record(const std::vector<std::string>& found) {
  if (!found.empty()) {
    violations_ += static_cast<int>(found.size());
    const int64_t at =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - started_).count() + 1;
    std::lock_guard<std::mutex> lock(mu_);
    if (first_.empty()) first_ = found.front();
    if (first_violation_ns_ == 0) first_violation_ns_ = at;
    last_violation_ns_ = at;
    violation_ns_.push_back(at);
  }
  ++samples_;
}

double SampleLedger::seconds() const {
  const int64_t stopped = stopped_ns_;
  const auto elapsed = stopped != 0 ? std::chrono::nanoseconds(stopped) : Steady::now() - started_;
  return std::chrono::duration<double>(elapsed).count();
}

std::string SampleLedger::first_violation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_;
}

std::optional<SampleLedger::Steady::time_point> SampleLedger::first_violation_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_violation_ns_ == 0) return std::nullopt;
  return started_ + std::chrono::nanoseconds(first_violation_ns_ - 1);
}

std::vector<SampleLedger::Steady::time_point> SampleLedger::violation_times() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Steady::time_point> out;
  for (int64_t ns : violation_ns_) out.push_back(started_ + std::chrono::nanoseconds(ns - 1));
  return out;
}

std::optional<SampleLedger::Steady::time_point> SampleLedger::last_violation_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (last_violation_ns_ == 0) return std::nullopt;
  return started_ + std::chrono::nanoseconds(last_violation_ns_ - 1);
}

bool SampleLedger::RateKept(int64_t samples, int64_t answered, double fraction) {
  return samples > 0 &&
         static_cast<double>(samples) >= fraction * static_cast<double>(answered) - 1.0;
}

::testing::AssertionResult SampleLedger::RateCheck(double fraction) const {
  if (RateKept(samples_, ticks_ - failed_ - blind_, fraction)) {
    return ::testing::AssertionSuccess() << RateReport();
  }
  return ::testing::AssertionFailure() << "the " << who_ << " kept less than " << fraction * 100
                                       << "% of its claimed rate (less one tick): " << RateReport();
}

std::string SampleLedger::RateReport(const std::string& extra) const {
  std::ostringstream s;
  s << who_ << ": " << samples_.load() << " samples in " << seconds() << " s (one per "
    << period_.count() << " ms claimed: " << ticks_.load() << " ticks, " << failed_.load()
    << " failed reads, " << missed_.load() << " missed (" << missed_slurm_.load()
    << " while Slurm's read was the slower, " << missed_kube_.load()
    << " while the apiserver's was), " << blind_.load() << " blind; slowest reads: Slurm "
    << slowest_slurm_ms_.load() << " ms, apiserver " << slowest_kube_ms_.load() << " ms" << extra
    << ")";
  return s.str();
}

void SampleLedger::AppendToReport() const {
  const char* path = std::getenv("SKB_SAMPLER_REPORT");
  if (path == nullptr || *path == '\0') return;
  std::string test = "-";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    test = std::string(info->test_suite_name()) + "." + info->name();
  }
  test += report_suffix_;
  const int64_t answered = ticks_ - failed_ - blind_;
  const std::string kept =
      answered > 0 ? std::to_string(100 * static_cast<int64_t>(samples_) / answered) : "-";
  std::ostringstream s;
  s << test << "\t" << samples_.load() << "\t" << static_cast<int64_t>(seconds()) << "\t"
    << ticks_.load() << "\t" << failed_.load() << "\t" << missed_.load() << "\t"
    << missed_slurm_.load() << "\t" << missed_kube_.load() << "\t" << blind_.load() << "\t" << kept
    << "\t" << slowest_slurm_ms_.load() << "\t" << slowest_kube_ms_.load() << "\t"
    << violations_.load() << "\n";
  const std::string line = s.str();
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!write(fd, line.data(), line.size());
  close(fd);
}

}  // namespace skb::sampling
