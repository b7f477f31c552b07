// SPDX-License-Identifier: Apache-2.0
#include "bridge/daemon_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;

TEST(DaemonFlags, ParsesBothForms) {
  auto f = ParseDaemonFlags({"--config", "/etc/b.json", "--log-level=debug", "--check-config"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->config_path, "/etc/b.json");
  EXPECT_EQ(f->log_level, "debug");
  EXPECT_TRUE(f->check_config);
  EXPECT_FALSE(f->version);
}

TEST(DaemonFlags, PrintConfigSchema) {
  auto f = ParseDaemonFlags({"--print-config-schema"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->print_config_schema);
  EXPECT_FALSE(ParseDaemonFlags({"--print-config-schema=yes"}).ok());
}

TEST(DaemonFlags, LeaderElectionIsOnUnlessTurnedOff) {
  auto on = ParseDaemonFlags({"--identity", "bridge-0"});
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->leader_election);
  EXPECT_EQ(on->identity, "bridge-0");
  auto off = ParseDaemonFlags({"--no-leader-election"});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->leader_election);
  EXPECT_FALSE(ParseDaemonFlags({"--no-leader-election=yes"}).ok());
}

TEST(DaemonFlags, ErrorsNameTheFlag) {
  EXPECT_THAT(std::string(ParseDaemonFlags({"--config"}).status().message()),
              HasSubstr("--config needs a value"));
  EXPECT_THAT(std::string(ParseDaemonFlags({"--bogus"}).status().message()),
              HasSubstr("unknown flag '--bogus'"));
  EXPECT_THAT(std::string(ParseDaemonFlags({"--version=1"}).status().message()),
              HasSubstr("takes no value"));
}

}  // namespace
}  // namespace skb::bridge
