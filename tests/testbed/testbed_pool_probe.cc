// SPDX-License-Identifier: Apache-2.0
// A testbed test that only reports which testbed it was given (testbed_pool_test.sh runs it
// several at once against a pool of fake testbeds): the claim in testbed_main.cc, tested.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

TEST(TestbedPoolProbe, ReportsItsTestbed) {
  const char* dir = std::getenv("SKB_TESTBED_DIR");
  const char* marker = std::getenv("SKB_POOL_PROBE_VALUE");
  ASSERT_NE(dir, nullptr);
  ASSERT_NE(marker, nullptr);
  const char* out = std::getenv("SKB_POOL_PROBE_OUT");
  ASSERT_NE(out, nullptr);
  std::ofstream(out, std::ios::app) << "start " << dir << " " << marker << "\n";
  const char* hold = std::getenv("SKB_POOL_PROBE_HOLD_MS");
  std::this_thread::sleep_for(std::chrono::milliseconds(hold ? std::atoi(hold) : 0));
  std::ofstream(out, std::ios::app) << "end " << dir << "\n";
}
