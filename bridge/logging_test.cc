// SPDX-License-Identifier: Apache-2.0
#include "bridge/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>
#include <vector>

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// Each line a logger with SetupLogging's formatter writes.
std::vector<std::string> Lines(bool json, const std::vector<std::string>& messages) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_formatter(MakeFormatter(json));
  spdlog::logger logger("reconcile", sink);
  for (const auto& m : messages) logger.warn(m);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(LoggingTest, JsonLinesCarryTheEventAndEachFieldAsMembers) {
  auto lines =
      Lines(true, {R"(action_failed node=gpu-1 error="said "busy" twice" code=Unavailable)",
                   R"(action drain node=gpu-1 outcome=ok)"});
  ASSERT_EQ(lines.size(), 2u);
  nlohmann::json j = nlohmann::json::parse(lines[0]);  // throws on anything invalid
  EXPECT_EQ(j["level"], "warning");
  EXPECT_EQ(j["logger"], "reconcile");
  EXPECT_THAT(j["ts"].get<std::string>(),
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z"));
  EXPECT_EQ(j["event"], "action_failed");
  EXPECT_EQ(j["node"], "gpu-1");
  EXPECT_EQ(j["error"], "said \"busy\" twice");
  EXPECT_EQ(j["code"], "Unavailable");
  // Two bare words: no event, the message whole.
  nlohmann::json k = nlohmann::json::parse(lines[1]);
  EXPECT_FALSE(k.contains("event"));
  EXPECT_EQ(k["msg"], "action drain node=gpu-1 outcome=ok");
}

TEST(LoggingTest, FieldsParseQuotedValuesWithQuotesInside) {
  nlohmann::json j =
      FieldsOf(R"(action_failed node=gpu-1 error="slurmctld said "busy" twice" code=Unavailable)");
  EXPECT_EQ(j["event"], "action_failed");
  EXPECT_EQ(j["node"], "gpu-1");
  EXPECT_EQ(j["error"], "slurmctld said \"busy\" twice");
  EXPECT_EQ(j["code"], "Unavailable");
  EXPECT_FALSE(j.contains("msg"));
}

TEST(LoggingTest, FreeTextAndReservedNamesKeepTheLineUnambiguous) {
  nlohmann::json j = FieldsOf("starting the bridge, version 0.1");
  EXPECT_FALSE(j.contains("event"));
  EXPECT_EQ(j["msg"], "starting the bridge, version 0.1");
  j = FieldsOf("poll level=3 msg=x ts=now");
  EXPECT_EQ(j["event"], "poll");
  EXPECT_EQ(j["field.level"], "3");
  EXPECT_EQ(j["field.msg"], "x");
  EXPECT_EQ(j["field.ts"], "now");
  j = FieldsOf(R"(broken reason="never closed)");
  EXPECT_EQ(j["event"], "broken");
  EXPECT_EQ(j["msg"], R"(reason="never closed)");
  j = FieldsOf("");
  EXPECT_TRUE(j.empty());
}

TEST(LoggingTest, InvalidUtf8AndControlCharactersStillMakeValidJson) {
  const std::string bad = std::string("node_odd name=gpu\xff\xfe-1 note=\"tab\there\nnewline\"") +
                          std::string(1, '\x01');
  auto lines = Lines(true, {bad, "plain text with \"quotes\" and \\ backslash"});
  ASSERT_EQ(lines.size(), 2u) << "one line per message: newlines are escaped";
  nlohmann::json j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["event"], "node_odd");
  EXPECT_EQ(j["name"], "gpu\xEF\xBF\xBD\xEF\xBF\xBD-1");  // each bad byte is U+FFFD
  EXPECT_THAT(j.dump(), HasSubstr("\\t"));
  nlohmann::json k = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(k["msg"], "plain text with \"quotes\" and \\ backslash");
}

TEST(LoggingTest, TextLinesAreTheMessageAsWritten) {
  auto lines = Lines(false, {"action drain node=gpu-1"});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], MatchesRegex(".*Z W reconcile: action drain node=gpu-1"));
}

}  // namespace
}  // namespace skb::bridge
