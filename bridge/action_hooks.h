// SPDX-License-Identifier: Apache-2.0
// The daemon's two test hooks, read from the environment by main and handed to the daemon as
// plain callbacks (the controller and the reconciler never read the environment):
//
//   SKB_TEST_CRASH_AFTER=<Event reason>           SIGKILL right after the first action with
//                                                  that reason took effect (the
//                                                  crash-at-every-step e2e test)
//   SKB_TEST_PAUSE_BEFORE=<Event reason>:<1-300>  hold the first action with that reason
//                                                  that many seconds between plan and act
//                                                  (the window in which the world changes
//                                                  under a plan, made wide for a test)
//
// Never set them in production; the daemon logs a warning each time one fires.
#pragma once

#include <functional>
#include <string>

#include "src/base/status.h"
#include "src/plan/action.h"

namespace skb::bridge {

struct ActionHooks {
  // Called on a reconcile worker before / after each action; empty: none.
  std::function<void(const plan::Action&)> before_action;
  std::function<void(const plan::Action&)> after_action;
};

// The hooks the two variables ask for; `getenv` is injected (std::getenv in main).
// InvalidArgument, naming the variable, for a malformed value.
StatusOr<ActionHooks> ActionHooksFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

}  // namespace skb::bridge
