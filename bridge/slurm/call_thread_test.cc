// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/call_thread.h"

#include <gtest/gtest.h>

#include <atomic>

namespace skb::bridge::slurm {
namespace {

using std::chrono::milliseconds;

TEST(CallThread, RunsInitThenCallsOnOneThread) {
  std::atomic<std::thread::id> init_id{};
  {
    CallThread t("test", [&] { init_id = std::this_thread::get_id(); });
    auto a = t.Run<std::thread::id>("a", milliseconds(2000), [] {
      return StatusOr<std::thread::id>(std::this_thread::get_id());
    });
    auto b = t.Run<std::thread::id>("b", milliseconds(2000), [] {
      return StatusOr<std::thread::id>(std::this_thread::get_id());
    });
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(*a, init_id.load());
    EXPECT_NE(*a, std::this_thread::get_id());
  }
}

TEST(CallThread, PassesErrorsThrough) {
  CallThread t("test", nullptr);
  auto r = t.Run<int>("x", milliseconds(2000), [] { return StatusOr<int>(NotFoundError("nope")); });
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(CallThread, HungCallTimesOutAndLaterCallsFailFast) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  CallThread t("test", nullptr);
  auto hung = t.Run<int>("hung rpc", milliseconds(100), [release] {
    while (!*release) std::this_thread::sleep_for(milliseconds(5));
    return StatusOr<int>(1);
  });
  EXPECT_EQ(hung.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(hung.status().message().find("within 100ms"), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  auto next = t.Run<int>("next", milliseconds(5000), [] { return StatusOr<int>(2); });
  EXPECT_EQ(next.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(next.status().message().find("'hung rpc' has been waiting"), std::string::npos)
      << next.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  *release = true;
  // Once the stuck call returns, the thread serves calls again.
  bool recovered = false;
  for (int i = 0; i < 100 && !recovered; ++i) {
    auto r = t.Run<int>("after", milliseconds(1000), [] { return StatusOr<int>(3); });
    recovered = r.ok() && *r == 3;
    if (!recovered) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(recovered);
}

TEST(CallThread, DestructorDoesNotHangOnAStuckCall) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  const auto start = std::chrono::steady_clock::now();
  {
    CallThread t("test", nullptr);
    t.join_timeout = milliseconds(100);
    (void)t.Run<int>("stuck", milliseconds(50), [release] {
      while (!*release) std::this_thread::sleep_for(milliseconds(5));
      return StatusOr<int>(1);
    });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  *release = true;
  std::this_thread::sleep_for(milliseconds(50));  // let the detached thread finish
}

}  // namespace
}  // namespace skb::bridge::slurm
