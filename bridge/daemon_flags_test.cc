// SPDX-License-Identifier: Apache-2.0
#include "bridge/daemon_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

namespace skb::bridge {
extern const char kDaemonManPage[];  // docs/slurm-k8s-bridge.8 (CMakeLists.txt)
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
  const std::string missing(ParseDaemonFlags({"--config"}).status().message());
  EXPECT_THAT(missing, HasSubstr("--config"));
  EXPECT_THAT(missing, HasSubstr("see --help"));
  EXPECT_THAT(std::string(ParseDaemonFlags({"--bogus"}).status().message()),
              HasSubstr("unknown flag '--bogus'"));
  EXPECT_THAT(std::string(ParseDaemonFlags({"--check-config", "stray"}).status().message()),
              HasSubstr("unexpected argument 'stray'"));
  EXPECT_THAT(std::string(ParseDaemonFlags({"--version=1"}).status().message()),
              HasSubstr("flag --version takes no value"));
  EXPECT_FALSE(ParseDaemonFlags({"--check-config=false"}).ok())
      << "a flag takes no value: --check-config=false would read as not given";
}

// Every flag the daemon takes, with whether it takes a value.
const std::vector<std::pair<std::string, bool>> kFlags = {
    {"--config", true},        {"-c", true},
    {"--log-level", true},     {"--log-format", true},
    {"--identity", true},      {"--no-leader-election", false},
    {"--check-config", false}, {"--print-config-schema", false},
    {"--version", false},      {"--decommission", false},
    {"--dry-run", false},      {"--force", false},
    {"--help", false},         {"-h", false}};

std::set<std::string> FlagsNamedIn(std::string text) {
  // troff's "\-" is a dash; "\fB" and friends change fonts.
  text = std::regex_replace(text, std::regex(R"(\\-)"), "-");
  text = std::regex_replace(text, std::regex(R"(\\f[BIRP])"), "");
  std::set<std::string> out;
  const std::regex flag(R"((^|[\s(\[|"])(--?[a-zA-Z][-a-z]*))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), flag); it != std::sregex_iterator();
       ++it) {
    out.insert((*it)[2].str());
  }
  return out;
}

TEST(DaemonFlags, DryRunAndForceAreForTheDecommissionOnly) {
  auto alone = ParseDaemonFlags({"--dry-run"});
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(std::string(alone.status().message()), HasSubstr("--dry-run is for --decommission"));
  EXPECT_FALSE(ParseDaemonFlags({"--force"}).ok());
  auto both = ParseDaemonFlags({"--decommission", "--dry-run", "--force"});
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->decommission);
  EXPECT_TRUE(both->dry_run);
  EXPECT_TRUE(both->force);
}

// docs/slurm-k8s-bridge.8 (installed as slurm-k8s-bridge.8.gz) and --help name every flag
// the parser takes, and no other.
TEST(DaemonFlags, TheManPageAndTheUsageNameEveryFlagAndNoOther) {
  std::set<std::string> taken;
  for (const auto& [flag, has_value] : kFlags) {
    std::vector<std::string> args = {flag};
    if (has_value) args.push_back("x");
    if (flag == "--dry-run" || flag == "--force") args.insert(args.begin(), "--decommission");
    EXPECT_TRUE(ParseDaemonFlags(args).ok()) << flag;
    taken.insert(flag);
  }
  ASSERT_THAT(std::string(kDaemonManPage), HasSubstr(".TH SLURM-K8S-BRIDGE 8"));
  const std::set<std::string> in_man = FlagsNamedIn(kDaemonManPage);
  EXPECT_EQ(in_man, taken);
  for (const std::string& f : FlagsNamedIn(DaemonUsage())) {
    EXPECT_EQ(taken.count(f), 1u) << "--help names " << f << ", which the daemon does not take";
  }
}

}  // namespace
}  // namespace skb::bridge
