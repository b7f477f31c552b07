// SPDX-License-Identifier: Apache-2.0
#include "src/reconcile/work_queue.h"

#include <algorithm>
#include <vector>

namespace skb::reconcile {

WorkQueue::WorkQueue(const Clock& clock, WorkQueueOptions options)
    : clock_(clock), options_(options) {}

void WorkQueue::EnqueueLocked(const std::string& key) {
  waiting_.erase(key);
  if (in_flight_.count(key)) {
    dirty_in_flight_.insert(key);
    return;
  }
  if (queued_.try_emplace(key, clock_.Now()).second) {
    ready_.push_back(key);
    if (options_.metrics != nullptr) options_.metrics->Added();
  }
}

void WorkQueue::Add(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    EnqueueLocked(key);
  }
  Notify();
}

void WorkQueue::AddAt(const std::string& key, Clock::TimePoint at) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (at <= clock_.Now()) {
      EnqueueLocked(key);
    } else if (!queued_.count(key)) {  // already ready: sooner than `at`
      auto [it, inserted] = waiting_.try_emplace(key, at);
      if (!inserted && at < it->second) it->second = at;
    }
  }
  Notify();
}

void WorkQueue::Notify() const {
  if (options_.on_change) options_.on_change();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  Clock::Duration delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int n = failures_[key]++;
    if (options_.metrics != nullptr) options_.metrics->Retried();
    delay = options_.base_delay;
    for (int i = 0; i < n && delay < options_.max_delay; ++i) delay *= 2;
    delay = std::min(delay, options_.max_delay);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked(Clock::TimePoint now) {
  // Due keys become ready in the order of their due times.
  std::vector<std::pair<Clock::TimePoint, std::string>> due;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second <= now) {
      due.emplace_back(it->second, it->first);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(due.begin(), due.end());
  for (auto& [t, key] : due) EnqueueLocked(key);
}

std::optional<std::string> WorkQueue::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  PromoteDueLocked(clock_.Now());
  if (ready_.empty()) return std::nullopt;
  std::string key = std::move(ready_.front());
  ready_.pop_front();
  const Clock::TimePoint now = clock_.Now();
  auto q = queued_.find(key);
  if (options_.metrics != nullptr) options_.metrics->Started(now - q->second);
  queued_.erase(q);
  in_flight_.emplace(key, now);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = in_flight_.find(key); it != in_flight_.end()) {
      if (options_.metrics != nullptr) options_.metrics->Finished(clock_.Now() - it->second);
      in_flight_.erase(it);
    }
    if (dirty_in_flight_.erase(key)) EnqueueLocked(key);
  }
  Notify();
}

std::optional<Clock::TimePoint> WorkQueue::NextReadyTime() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ready_.empty()) return clock_.Now();
  std::optional<Clock::TimePoint> next;
  for (const auto& [key, at] : waiting_) {
    if (!next || at < *next) next = at;
  }
  return next;
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size() + waiting_.size();
}

size_t WorkQueue::ReadyLen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size();
}

InFlightWork WorkQueue::InFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::TimePoint now = clock_.Now();
  InFlightWork w;
  for (const auto& [key, since] : in_flight_) {
    ++w.keys;
    w.total += now - since;
    w.longest = std::max(w.longest, now - since);
  }
  return w;
}

}  // namespace skb::reconcile
