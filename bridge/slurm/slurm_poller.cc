#include "bridge/slurm/slurm_poller.h"

#include "bridge/logging.h"

namespace skb::bridge::slurm {

SlurmPoller::SlurmPoller(SlurmClient* client, std::chrono::milliseconds interval,
                         OnChange on_change)
    : client_(client), interval_(interval), on_change_(std::move(on_change)) {}

SlurmPoller::~SlurmPoller() { Stop(); }

Status SlurmPoller::PollOnce() {
  auto nodes = client_->LoadNodes(nodes_time_);
  if (!nodes.ok()) return nodes.status();
  auto parts = client_->LoadPartitions(partitions_time_);
  if (!parts.ok()) return parts.status();
  const bool changed = nodes->changed || parts->changed;
  if (nodes->changed) nodes_ = std::move(nodes->items);
  if (parts->changed) partitions_ = std::move(parts->items);
  nodes_time_ = nodes->update_time;
  partitions_time_ = parts->update_time;
  if (changed) on_change_(nodes_, partitions_);
  return OkStatus();
}

void SlurmPoller::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "slurm-poller");
    auto log = Logger("slurm");
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      Status s = PollOnce();
      if (!s.ok() && !failing_) {
        log->warn("poll_failed error=\"{}\" (keeping the last view; logged once per outage)",
                  s.ToString());
      } else if (s.ok() && failing_) {
        log->info("poll_recovered nodes={}", nodes_.size());
      }
      failing_ = !s.ok();
      lock.lock();
      cv_.wait_for(lock, interval_, [this] { return stop_; });
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
