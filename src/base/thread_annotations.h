// SPDX-License-Identifier: Apache-2.0
// Lock annotations the compiler checks (clang's -Wthread-safety; leveldb's
// port/thread_annotations.h is the model), and a mutex they apply to. GCC ignores them;
// scripts/thread_safety runs clang over the files that use them, as the test command does.
//
//   class Cache {
//    public:
//     void Put(std::string k) EXCLUDES(mu_) { MutexLock lock(&mu_); keys_.insert(std::move(k)); }
//    private:
//     Mutex mu_;
//     std::set<std::string> keys_ GUARDED_BY(mu_);
//   };
//
// std::mutex carries no annotation (libstdc++), so members guarded by one cannot be
// checked: guard them with skb::Mutex and lock it with skb::MutexLock.
#pragma once

#include <mutex>

#if defined(__clang__)
#define SKB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SKB_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) SKB_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SKB_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) SKB_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SKB_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_AFTER(...) SKB_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) SKB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) SKB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SKB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SKB_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) SKB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS SKB_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace skb {

// A std::mutex the analysis knows. Also a BasicLockable, for std::condition_variable_any.
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope (std::lock_guard for skb::Mutex).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() RELEASE() { mu_->unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace skb
