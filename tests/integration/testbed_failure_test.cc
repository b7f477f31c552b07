// SPDX-License-Identifier: Apache-2.0
// A testbed step that fails stops with a message naming the step and the log file to read,
// and `down` still cleans up what was started. Provoked for real: a second testbed (its own
// state directory) is started while the first one holds the ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

TEST(TestbedFailure, PortInUseNamesTheStepAndDownCleansUp) {
  ASSERT_TRUE(TestbedDir().ok()) << TestbedDir().status().message();
  std::string dir =
      StrCat(std::filesystem::temp_directory_path().string(), "/skb-second-", std::rand() % 100000);
  // A second testbed in the same slot as the running one: the same ports.
  const char* slot_env = std::getenv("SKB_TESTBED_SLOT");
  const int slot = slot_env != nullptr ? std::atoi(slot_env) : 0;
  std::string env = StrCat("SKB_TESTBED_DIR=", dir, " SKB_TESTBED_SLOT=", slot, " ");
  std::string testbed = StrCat(skb::testbed::SourceDir(), "/scripts/testbed");

  CommandResult up = Shell(StrCat(env, testbed, " up --no-bridge"), seconds(120));
  EXPECT_NE(up.exit_code, 0);
  // munged starts first (its own socket), then accounting's MariaDB finds its port taken.
  EXPECT_THAT(up.err, HasSubstr("ERROR [testbed/mariadb]"));
  EXPECT_THAT(up.err,
              HasSubstr(StrCat("port ", 16306 + 1000 * slot, " (for MariaDB) is already in use")));

  // What did start is recorded and running ...
  std::ifstream pidfile(dir + "/pids/munged.pid");
  int munged_pid = 0;
  pidfile >> munged_pid;
  ASSERT_GT(munged_pid, 0) << "munged of the second testbed was not recorded";
  EXPECT_EQ(kill(munged_pid, 0), 0);
  CommandResult status = Shell(StrCat(env, testbed, " status"), seconds(30));
  EXPECT_THAT(status.out, HasSubstr("munged"));
  EXPECT_THAT(status.out, ::testing::ContainsRegex("slurmctld +stopped"));

  // ... and `down` stops exactly that, leaving the first testbed alone.
  CommandResult down = Shell(StrCat(env, testbed, " down --purge"), seconds(60));
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_TRUE(WaitFor([&] { return kill(munged_pid, 0) != 0; }, seconds(10)));
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(Shell("scontrol ping").out.find("is UP") != std::string::npos, true)
      << "the main testbed's slurmctld was disturbed";
}

TEST(TestbedFailure, UnknownComponentAndCommandAreClearErrors) {
  std::string testbed = StrCat(skb::testbed::SourceDir(), "/scripts/testbed");
  CommandResult r = RunCommand({testbed, "restart", "kube-nothing"}, seconds(30));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("unknown component 'kube-nothing'"));
  CommandResult bad = RunCommand({testbed, "explode"}, seconds(30));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("scripts/testbed up"));
}

}  // namespace
}  // namespace skb::testbed
