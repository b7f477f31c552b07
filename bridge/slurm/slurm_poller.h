// Polls Slurm's nodes and partitions by update_time on its own thread and hands every
// changed view to a callback (the daemon publishes it as the admission snapshot). An
// unchanged cluster costs two cheap RPCs per interval; errors keep the last view and are
// logged once per outage, not once per poll.
//
//   SlurmPoller poller(client, 500ms, [&](const auto& nodes, const auto& parts) {...});
//   poller.Start();
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "bridge/slurm/slurm_client.h"

namespace skb::bridge::slurm {

class SlurmPoller {
 public:
  using OnChange = std::function<void(const std::vector<NodeView>& nodes,
                                      const std::vector<PartitionView>& partitions)>;

  SlurmPoller(SlurmClient* client, std::chrono::milliseconds interval, OnChange on_change);
  ~SlurmPoller();  // Stop()s

  void Start();
  void Stop();
  // One poll, on the caller's thread (used by Start's loop and by tests).
  Status PollOnce();

 private:
  SlurmClient* const client_;
  const std::chrono::milliseconds interval_;
  const OnChange on_change_;
  UnixTime nodes_time_ = 0, partitions_time_ = 0;
  std::vector<NodeView> nodes_;
  std::vector<PartitionView> partitions_;
  bool failing_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace skb::bridge::slurm
