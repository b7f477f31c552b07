// SPDX-License-Identifier: Apache-2.0
// The daemon's test hooks as main reads them: nothing without the variables, a clear error
// for a malformed value, and a pause that holds only the first action with its reason.
#include "bridge/action_hooks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;

StatusOr<ActionHooks> FromEnv(std::map<std::string, std::string> env) {
  return ActionHooksFromEnvironment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ActionHooksTest, NoVariablesNoHooks) {
  auto hooks = FromEnv({});
  ASSERT_TRUE(hooks.ok());
  EXPECT_FALSE(hooks->before_action);
  EXPECT_FALSE(hooks->after_action);
  hooks = FromEnv({{"SKB_TEST_CRASH_AFTER", ""}, {"SKB_TEST_PAUSE_BEFORE", ""}});
  ASSERT_TRUE(hooks.ok());
  EXPECT_FALSE(hooks->before_action);
  EXPECT_FALSE(hooks->after_action);
}

TEST(ActionHooksTest, CrashAfterInstallsAnAfterHookOnly) {
  auto hooks = FromEnv({{"SKB_TEST_CRASH_AFTER", "ReservationReleased"}});
  ASSERT_TRUE(hooks.ok());
  EXPECT_TRUE(hooks->after_action);
  EXPECT_FALSE(hooks->before_action);
  plan::Action other;
  other.event_reason = "SlurmNodeDrained";
  hooks->after_action(other);  // another reason: nothing happens (the process lives on)
}

TEST(ActionHooksTest, AMalformedPauseIsRefusedWithTheVariableNamed) {
  for (const char* bad : {"Reason", "Reason:", ":5", "Reason:0", "Reason:301", "Reason:5x",
                          "Reason:-1", "Reason: 5"}) {
    auto hooks = FromEnv({{"SKB_TEST_PAUSE_BEFORE", bad}});
    ASSERT_FALSE(hooks.ok()) << bad;
    EXPECT_EQ(hooks.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(hooks.status().message()), HasSubstr("SKB_TEST_PAUSE_BEFORE=")) << bad;
  }
}

TEST(ActionHooksTest, PauseHoldsOnlyTheFirstActionWithItsReason) {
  auto hooks = FromEnv({{"SKB_TEST_PAUSE_BEFORE", "Lend:Drained:1"}});  // the last ':' splits
  ASSERT_TRUE(hooks.ok()) << hooks.status();
  ASSERT_TRUE(hooks->before_action);
  plan::Action a;
  auto took = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    hooks->before_action(a);
    return std::chrono::steady_clock::now() - t0;
  };
  a.event_reason = "Other";
  EXPECT_LT(took(), std::chrono::milliseconds(500));
  a.event_reason = "Lend:Drained";
  EXPECT_GE(took(), std::chrono::milliseconds(1000));
  EXPECT_LT(took(), std::chrono::milliseconds(500)) << "only the first one is held";
}

}  // namespace
}  // namespace skb::bridge
