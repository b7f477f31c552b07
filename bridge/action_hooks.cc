// SPDX-License-Identifier: Apache-2.0
#include "bridge/action_hooks.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include "bridge/logging.h"
#include "src/base/strings.h"

namespace skb::bridge {

StatusOr<ActionHooks> ActionHooksFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  ActionHooks hooks;
  if (const char* v = getenv("SKB_TEST_CRASH_AFTER"); v != nullptr && *v != '\0') {
    hooks.after_action = [reason = std::string(v)](const plan::Action& a) {
      if (a.event_reason != reason) return;
      auto log = Logger("main");
      log->warn("test_hook crash_after={} node={}: killing this process (SKB_TEST_CRASH_AFTER)",
                reason, a.node);
      log->flush();
      std::raise(SIGKILL);
    };
  }
  if (const char* v = getenv("SKB_TEST_PAUSE_BEFORE"); v != nullptr && *v != '\0') {
    const std::string_view spec(v);
    const size_t colon = spec.rfind(':');
    int seconds = 0;
    bool parsed = false;
    if (colon != std::string_view::npos && colon > 0) {
      const char* first = spec.data() + colon + 1;
      const char* last = spec.data() + spec.size();
      auto [end, ec] = std::from_chars(first, last, seconds);
      parsed = ec == std::errc() && end == last && first != last;
    }
    if (!parsed || seconds <= 0 || seconds > 300) {
      return InvalidArgumentError(
          StrCat("SKB_TEST_PAUSE_BEFORE=", spec, ": want <Event reason>:<seconds, 1-300>"));
    }
    hooks.before_action = [reason = std::string(spec.substr(0, colon)), seconds,
                           done =
                               std::make_shared<std::atomic<bool>>(false)](const plan::Action& a) {
      if (a.event_reason != reason || done->exchange(true)) return;
      auto log = Logger("main");
      log->warn("test_hook pause_before={} node={} seconds={} (SKB_TEST_PAUSE_BEFORE)", reason,
                a.node, seconds);
      log->flush();
      std::this_thread::sleep_for(std::chrono::seconds(seconds));
      log->warn("test_hook pause_before={} node={}: carrying on", reason, a.node);
    };
  }
  return hooks;
}

}  // namespace skb::bridge
