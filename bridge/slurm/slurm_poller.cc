#include "bridge/slurm/slurm_poller.h"

#include "bridge/logging.h"

namespace skb::bridge::slurm {

SlurmPoller::SlurmPoller(SlurmClient* client, std::chrono::milliseconds interval,
                         OnChange on_change)
    : client_(client), interval_(interval), on_change_(std::move(on_change)) {}

SlurmPoller::~SlurmPoller() { Stop(); }

Status SlurmPoller::PollOnce() {
  const auto start = std::chrono::steady_clock::now();
  auto nodes = client_->LoadNodes(nodes_time_);
  if (!nodes.ok()) return nodes.status();
  auto parts = client_->LoadPartitions(partitions_time_);
  if (!parts.ok()) return parts.status();
  auto jobs = client_->LoadJobs(jobs_time_);
  if (!jobs.ok()) return jobs.status();
  state_.nodes_changed = nodes->changed;
  state_.partitions_changed = parts->changed;
  state_.jobs_changed = jobs->changed;
  if (nodes->changed) state_.nodes = std::move(nodes->items);
  if (parts->changed) state_.partitions = std::move(parts->items);
  if (jobs->changed) state_.jobs = std::move(jobs->items);
  nodes_time_ = nodes->update_time;
  partitions_time_ = parts->update_time;
  jobs_time_ = jobs->update_time;
  if (nodes->changed || parts->changed || jobs->changed) on_change_(state_);
  std::lock_guard<std::mutex> lock(mu_);
  ++polls_;
  last_duration_ = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  return OkStatus();
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
      Status s = PollOnce();
      if (observer_) {
        observer_(s, state_.nodes_changed || state_.partitions_changed || state_.jobs_changed,
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
