// SPDX-License-Identifier: Apache-2.0
#include "src/config/json_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::config {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST(ParseDuration, AcceptsGoSyntax) {
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("30s"), milliseconds(30'000));
  EXPECT_EQ(*ParseDuration("5m"), milliseconds(300'000));
  EXPECT_EQ(*ParseDuration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(*ParseDuration("1m30s"), milliseconds(90'000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1'500));
}

TEST(ParseDuration, RejectsGarbageWithAReason) {
  for (const char* bad : {"", "30", "s", "-5s", "5 s", "5d", "1e9h", "..s"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(std::string(ParseDuration("5d").status().message()), HasSubstr("unit must be"));
}

TEST(JsonReader, ReadsTypedFieldsAndKeepsDefaults) {
  auto j = nlohmann::json::parse(R"({"name":"x","on":true,"n":7,"q":2.5,"list":["a","b"]})");
  JsonReader r(j, "root");
  std::string name, absent = "default";
  bool on = false;
  int64_t n = 0;
  double q = 0;
  std::vector<std::string> list;
  r.String("name", &name);
  r.String("absent", &absent);
  r.Bool("on", &on);
  r.Int("n", &n, 0, 10);
  r.Double("q", &q, 0, 10);
  r.StringList("list", &list);
  ASSERT_TRUE(r.Finish().ok());
  EXPECT_EQ(name, "x");
  EXPECT_EQ(absent, "default");
  EXPECT_TRUE(on);
  EXPECT_EQ(n, 7);
  EXPECT_DOUBLE_EQ(q, 2.5);
  EXPECT_THAT(list, ::testing::ElementsAre("a", "b"));
}

TEST(JsonReader, WrongTypeNamesTheKeyAndKeepsDefault) {
  auto j = nlohmann::json::parse(R"({"n":"seven"})");
  JsonReader r(j, "slurm");
  int64_t n = 3;
  r.Int("n", &n, 0, 10);
  Status s = r.Finish();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'slurm.n'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("expected an integer, got string"));
  EXPECT_EQ(n, 3);
}

TEST(JsonReader, OutOfRangeAndHugeUnsigned) {
  auto j = nlohmann::json::parse(R"({"a":11,"b":18446744073709551615})");
  JsonReader r(j, "");
  int64_t a = 0, b = 0;
  r.Int("a", &a, 0, 10);
  r.Int("b", &b, 0, 10);
  EXPECT_THAT(std::string(r.Finish().message()), HasSubstr("between 0 and 10, got 11"));
  JsonReader r2(j, "");
  r2.Int("b", &b, 0, 10);
  r2.Int("a", &a, 0, 100);
  EXPECT_THAT(std::string(r2.Finish().message()), HasSubstr("'b'"));
  EXPECT_EQ(b, 0);
}

TEST(JsonReader, UnknownKeyIsAnError) {
  auto j = nlohmann::json::parse(R"({"known":1,"knwon":2})");
  JsonReader r(j, "x");
  int64_t v = 0;
  r.Int("known", &v, 0, 10);
  EXPECT_THAT(std::string(r.Finish().message()), HasSubstr("unknown key 'x.knwon'"));
}

TEST(JsonReader, NestedObjectOfWrongType) {
  auto j = nlohmann::json::parse(R"({"sub":[1,2]})");
  JsonReader r(j, "");
  JsonReader sub = r.Object("sub");
  EXPECT_THAT(std::string(sub.Finish().message()), HasSubstr("key 'sub': expected an object"));
}

TEST(JsonReader, EnumListsTheChoices) {
  auto j = nlohmann::json::parse(R"({"format":"yaml"})");
  JsonReader r(j, "logging");
  std::string f = "text";
  r.Enum("format", &f, {"text", "json"});
  EXPECT_THAT(std::string(r.Finish().message()),
              HasSubstr("must be one of text, json, got 'yaml'"));
  EXPECT_EQ(f, "text");
}

TEST(JsonReader, TypeOfTellsTheFormWithoutMarkingTheKeyKnown) {
  auto j = nlohmann::json::parse(R"({"n":7,"o":{"a":1},"z":null})");
  JsonReader r(j, "root");
  EXPECT_EQ(r.TypeOf("n"), "number");
  EXPECT_EQ(r.TypeOf("o"), "object");
  EXPECT_EQ(r.TypeOf("z"), "");
  EXPECT_EQ(r.TypeOf("absent"), "");
  Status s = r.Finish();  // nothing was read: "n" is still unknown
  EXPECT_THAT(std::string(s.message()), HasSubstr("root.n"));
}

TEST(JsonReader, SchemaRecorderRecordsEachReadAndLeavesDefaults) {
  nlohmann::json schema;
  JsonReader r = JsonReader::SchemaRecorder(&schema);
  std::string name = "default";
  int64_t n = 3;
  std::string mode = "a";
  r.String("name", &name);
  r.Int("n", &n, 1, 9);
  r.Enum("mode", &mode, {"a", "b"});
  JsonReader sub = r.Object("sub");
  std::chrono::milliseconds d{5};
  sub.Duration("every", &d);
  sub.Fail("every", "cross-key checks are the parser's, not the schema's");
  r.ObjectList("items", [](JsonReader& item) {
    bool b = false;
    item.Bool("on", &b);
  });
  EXPECT_TRUE(r.Finish().ok());
  EXPECT_EQ(name, "default");
  EXPECT_EQ(n, 3);
  EXPECT_EQ(d, std::chrono::milliseconds(5));
  EXPECT_EQ(schema, nlohmann::json::parse(R"({
    "type": "object", "additionalProperties": false, "properties": {
      "name": {"type": ["string", "null"]},
      "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 9},
      "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
      "sub": {"type": ["object", "null"], "additionalProperties": false, "properties": {
        "every": {"type": ["string", "null"], "pattern": "^([0-9.]+(ms|s|m|h))+$"}}},
      "items": {"type": ["array", "null"], "items": {
        "type": "object", "additionalProperties": false, "properties": {
          "on": {"type": ["boolean", "null"]}}}}}})"))
      << schema.dump(2);
}

TEST(JsonReader, SchemaRecorderOpensMapsAndKeysOfSeveralForms) {
  nlohmann::json schema;
  JsonReader r = JsonReader::SchemaRecorder(&schema);
  std::map<std::string, std::string> labels;
  EXPECT_TRUE(r.Object("labels").StringMap(&labels).ok());
  JsonReader data = r.Object("data");
  EXPECT_TRUE(data.Keys().empty());
  EXPECT_EQ(r.TypeOf("either"), "");
  int64_t n = 0;
  r.Int("either", &n, 0, 1);  // after TypeOf: stays "any form"
  EXPECT_EQ(schema["properties"]["labels"]["additionalProperties"],
            nlohmann::json::parse(R"({"type": "string"})"));
  EXPECT_EQ(schema["properties"]["data"]["additionalProperties"], true);
  EXPECT_FALSE(schema["properties"]["either"].contains("type")) << schema.dump(2);
}

}  // namespace
}  // namespace skb::config
