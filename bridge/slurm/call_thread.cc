// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/call_thread.h"

namespace skb::bridge::slurm {

struct CallThread::State {
  std::mutex mu;
  std::condition_variable cv;
  struct Task {
    std::string what;
    std::chrono::steady_clock::time_point deadline;
    std::function<void()> fn;
  };
  std::deque<Task> queue;
  bool stop = false;
  bool finished = false;
  // The call in progress and when it started (empty when idle).
  std::string running;
  std::chrono::steady_clock::time_point running_since;
  std::chrono::steady_clock::time_point running_deadline;
  uint64_t completed = 0;
};

CallThread::CallThread(std::string name, std::function<void()> init)
    : state_(std::make_shared<State>()) {
  thread_ = std::thread([st = state_, name = std::move(name), init = std::move(init)] {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    if (init) init();
    std::unique_lock<std::mutex> lock(st->mu);
    for (;;) {
      st->cv.wait(lock, [&] { return st->stop || !st->queue.empty(); });
      if (st->queue.empty()) break;  // stop requested and nothing left
      State::Task task = std::move(st->queue.front());
      st->queue.pop_front();
      const auto now = std::chrono::steady_clock::now();
      if (now > task.deadline) continue;  // its caller has given up already
      st->running = task.what;
      st->running_since = now;
      st->running_deadline = task.deadline;
      lock.unlock();
      task.fn();
      lock.lock();
      st->running.clear();
      ++st->completed;
      st->cv.notify_all();
    }
    st->finished = true;
    st->cv.notify_all();
  });
}

CallThread::~CallThread() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stop = true;
  state_->queue.clear();
  state_->cv.notify_all();
  const bool done = state_->cv.wait_for(lock, join_timeout, [&] { return state_->finished; });
  lock.unlock();
  if (done) {
    thread_.join();
  } else {
    thread_.detach();  // stuck in a call; it touches only the shared state
  }
}

Status CallThread::Execute(const std::string& what, std::chrono::milliseconds timeout,
                           std::function<void()> task) {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = now + timeout;
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->stop) return UnavailableError(StrCat(what, ": the Slurm call thread is stopping"));
  if (!state_->running.empty() && now > state_->running_deadline) {
    const auto secs =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - state_->running_since).count() /
        1000.0;
    return UnavailableError(StrCat(what, ": slurmctld is not answering (the call '",
                                   state_->running, "' has been waiting for ", secs, "s)"));
  }
  auto finished = std::make_shared<bool>(false);
  state_->queue.push_back({what, deadline, [task = std::move(task), finished, st = state_] {
                             task();
                             std::lock_guard<std::mutex> l(st->mu);
                             *finished = true;
                           }});
  state_->cv.notify_all();
  const bool ok = state_->cv.wait_until(lock, deadline, [&] { return *finished; });
  if (!ok) {
    return UnavailableError(
        StrCat(what, ": no answer from slurmctld within ", timeout.count(), "ms"));
  }
  return OkStatus();
}

}  // namespace skb::bridge::slurm
