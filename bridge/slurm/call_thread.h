// SPDX-License-Identifier: Apache-2.0
// Runs closures on one dedicated thread, each with a deadline for the caller.
//
// libslurm is not safe for concurrent use and its RPCs can block for as long as slurmctld
// does not answer. CallThread confines every libslurm call to one thread (started with
// an init function) and bounds how long a caller waits: past the
// deadline the caller gets Unavailable while the call finishes in the background; while
// a call is overdue, new calls fail at once instead of queueing behind it.
//
//   CallThread t("slurm", nullptr);
//   StatusOr<int> n = t.Run<int>("load_nodes", 5s, [] { return StatusOr<int>(42); });
//
// Thread-safe. The closures must not capture anything that dies with the caller: after a
// timeout they may still run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "src/base/status.h"
#include "src/base/strings.h"

namespace skb::bridge::slurm {

class CallThread {
 public:
  // `init` runs first on the thread. There is no matching clean-up: libslurm's state is
  // the process's, not one thread's (LibSlurmClient: slurm_init once, never slurm_fini).
  CallThread(std::string name, std::function<void()> init);
  // Stops the thread; if a call is stuck (slurmctld hung), waits at most `join_timeout`
  // and then leaves the thread behind (it owns only shared state).
  ~CallThread();
  CallThread(const CallThread&) = delete;
  CallThread& operator=(const CallThread&) = delete;

  template <typename T>
  StatusOr<T> Run(const std::string& what, std::chrono::milliseconds timeout,
                  std::function<StatusOr<T>()> fn) {
    auto result = std::make_shared<std::optional<StatusOr<T>>>();
    Status s = Execute(what, timeout, [result, fn = std::move(fn)] { result->emplace(fn()); });
    if (!s.ok()) return s;
    return std::move(**result);
  }

  std::chrono::milliseconds join_timeout{2000};

 private:
  struct State;
  Status Execute(const std::string& what, std::chrono::milliseconds timeout,
                 std::function<void()> task);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace skb::bridge::slurm
