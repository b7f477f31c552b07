// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/slurm_poller.h"

#include <string>
#include <type_traits>
#include <utility>

#include "bridge/logging.h"

namespace skb::bridge::slurm {

std::string_view PollResultName(PollResult r) {
  switch (r) {
    case PollResult::kChanged:
      return "changed";
    case PollResult::kUnchanged:
      return "unchanged";
    case PollResult::kRepaired:
      return "repaired";
    case PollResult::kError:
      return "error";
  }
  return "error";
}

SlurmPoller::SlurmPoller(SlurmClient* client, std::chrono::milliseconds interval,
                         std::chrono::milliseconds resync, OnChange on_change)
    : client_(client), interval_(interval), resync_(resync), on_change_(std::move(on_change)) {}

SlurmPoller::~SlurmPoller() { Stop(); }

namespace {

// One kind of record read by its stamp, and read whole when `verify` asks and the stamp
// says unchanged: whether the view changed, and whether only the whole read saw it (a
// repair). A read equal to the view is no change, whatever the stamp says (slurmctld stamps
// many updates that change nothing the bridge reads; a resync does not wake the planners);
// the first read always is one.
struct Read {
  bool changed = false;
  bool repaired = false;
};

template <typename T>
StatusOr<Read> ReadInto(const std::function<StatusOr<Loaded<T>>(UnixTime)>& load, bool verify,
                        UnixTime* stamp, std::vector<T>* view) {
  const bool first = *stamp == 0;
  auto loaded = load(*stamp);
  if (!loaded.ok()) return loaded.status();
  Read r;
  if (!loaded->changed && verify && !first) {
    loaded = load(0);
    if (!loaded.ok()) return loaded.status();
    *stamp = loaded->update_time;
    if (loaded->items == *view) return r;
    r.changed = r.repaired = true;
    *view = std::move(loaded->items);
    return r;
  }
  *stamp = loaded->update_time;
  if (!loaded->changed || (!first && loaded->items == *view)) return r;
  r.changed = true;
  *view = std::move(loaded->items);
  return r;
}

}  // namespace

StatusOr<PollResult> SlurmPoller::PollOnce() {
  const auto now = std::chrono::steady_clock::now();
  const bool due = resync_.count() > 0 && now - last_resync_ >= resync_;
  return Poll(due);
}

StatusOr<PollResult> SlurmPoller::Resync() { return Poll(true); }

StatusOr<PollResult> SlurmPoller::Poll(bool resync) {
  const auto start = std::chrono::steady_clock::now();
  // What each read changed is kept in state_'s flags until a poll succeeds whole and hands
  // it on: a read that succeeded before a later one failed is not lost.
  bool repaired = false;
  auto read = [&](std::string_view what, const auto& load, bool verify, UnixTime* stamp, auto* view,
                  bool* changed) -> Status {
    using T = typename std::remove_pointer_t<decltype(view)>::value_type;
    auto r = ReadInto<T>(load, verify, stamp, view);
    if (!r.ok()) return r.status();
    *changed |= r->changed;
    if (r->repaired) {
      repaired = true;
      Logger("slurm")->warn(
          "slurm_view_repaired what={} (slurmctld answered 'no change' by its update stamp; a "
          "full read found one: the view was stale since the last full read at most)",
          what);
    }
    return OkStatus();
  };
  RETURN_IF_ERROR(read(
      "nodes", [this](UnixTime t) { return client_->LoadNodes(t); }, resync, &nodes_time_,
      &state_.nodes, &state_.nodes_changed));
  RETURN_IF_ERROR(read(
      "partitions", [this](UnixTime t) { return client_->LoadPartitions(t); }, resync,
      &partitions_time_, &state_.partitions, &state_.partitions_changed));
  RETURN_IF_ERROR(read(
      "jobs", [this](UnixTime t) { return client_->LoadJobs(t); }, resync || state_.nodes_changed,
      &jobs_time_, &state_.jobs, &state_.jobs_changed));
  if (resync) last_resync_ = start;  // a failed one is tried again at the next poll
  const bool changed = state_.nodes_changed || state_.partitions_changed || state_.jobs_changed;
  if (changed) on_change_(state_);
  state_.nodes_changed = state_.partitions_changed = state_.jobs_changed = false;
  std::lock_guard<std::mutex> lock(mu_);
  ++polls_;
  if (repaired) ++repairs_;
  last_duration_ = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  if (repaired) return PollResult::kRepaired;
  return changed ? PollResult::kChanged : PollResult::kUnchanged;
}

void SlurmPoller::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

uint64_t SlurmPoller::polls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return polls_;
}

uint64_t SlurmPoller::repairs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return repairs_;
}

std::chrono::microseconds SlurmPoller::last_poll_duration() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_duration_;
}

void SlurmPoller::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "slurm-poller");
    auto log = Logger("slurm");
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      const auto start = std::chrono::steady_clock::now();
      StatusOr<PollResult> result = PollOnce();
      const Status s = result.status();
      if (observer_) {
        observer_(result.ok() ? *result : PollResult::kError,
                  std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start));
      }
      if (!s.ok() && !failing_) {
        log->warn("poll_failed error=\"{}\" (keeping the last view; logged once per outage)",
                  s.ToString());
      } else if (s.ok() && failing_) {
        log->info("poll_recovered nodes={} jobs={}", state_.nodes.size(), state_.jobs.size());
      }
      failing_ = !s.ok();
      lock.lock();
      cv_.wait_for(lock, interval_, [this] { return stop_ || kicked_; });
      kicked_ = false;
    }
  });
}

void SlurmPoller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace skb::bridge::slurm
