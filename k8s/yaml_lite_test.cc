#include "k8s/yaml_lite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(YamlLite, KubectlStyleDocument) {
  auto doc = ParseYamlSubset(R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: QUJD
    server: https://127.0.0.1:6443   # comment
  name: local
contexts:
- context:
    cluster: local
    user: "admin"
  name: 'admin@local'
current-context: admin@local
kind: Config
preferences: {}
users:
- name: admin
  user:
    token: 0123
    empty:
    nulled: ~
)");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const json& d = *doc;
  EXPECT_EQ(d["clusters"][0]["cluster"]["server"], "https://127.0.0.1:6443");
  EXPECT_EQ(d["clusters"][0]["name"], "local");
  EXPECT_EQ(d["contexts"][0]["name"], "admin@local");
  EXPECT_EQ(d["contexts"][0]["context"]["user"], "admin");
  EXPECT_EQ(d["preferences"], json::object());
  EXPECT_EQ(d["users"][0]["user"]["token"], "0123");  // text kept exactly
  EXPECT_TRUE(d["users"][0]["user"]["empty"].is_null());
  EXPECT_TRUE(d["users"][0]["user"]["nulled"].is_null());
}

TEST(YamlLite, IndentedSequencesAndNesting) {
  auto doc = ParseYamlSubset("a:\n  - x\n  - y: 1\n    z: 2\n  -\n    w: 3\nb:\n  c:\n    d: e\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], json::parse(R"(["x", {"y":"1","z":"2"}, {"w":"3"}])"));
  EXPECT_EQ((*doc)["b"]["c"]["d"], "e");
}

TEST(YamlLite, QuotedScalarsAndEscapes) {
  auto doc = ParseYamlSubset(
      "a: \"x\\ty \\\"q\\\" \\u00e9 # not a comment\"\nb: 'it''s'\n\"c d\": \"\"\ne: a#b\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], "x\ty \"q\" \xc3\xa9 # not a comment");
  EXPECT_EQ((*doc)["b"], "it's");
  EXPECT_EQ((*doc)["c d"], "");
  EXPECT_EQ((*doc)["e"], "a#b");
}

TEST(YamlLite, JsonDocumentAndDocumentMarkers) {
  auto j = ParseYamlSubset(R"({"kind":"Config","clusters":[]})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["kind"], "Config");
  auto y = ParseYamlSubset("# head\n---\nkind: Config\n...\nignored: after end\n");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, json({{"kind", "Config"}}));
  auto empty = ParseYamlSubset("\n# nothing\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_null());
}

TEST(YamlLite, RejectsWhatItDoesNotUnderstandWithLineNumbers) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"a: &x 1\n", "line 1: anchors"},
      {"a: 1\nb: *x\n", "line 2: anchors"},
      {"a: !!str 1\n", "tags"},
      {"a: |\n  text\n", "block scalars"},
      {"a: 1\na: 2\n", "line 2: duplicate key 'a'"},
      {"a: 1\n   b: 2\n", "line 2: unexpected indentation"},
      {"a:\n\tb: 1\n", "line 2: tabs"},
      {"a: \"open\n", "line 1: unterminated"},
      {"a: 'x' y\n", "unexpected text after a quoted string"},
      {"a: [x, y]\n", "flow collections"},
      {"a: b\n---\nc: d\n", "line 2: multiple YAML documents"},
      {"just text\nmore\n", "line 2"},
      {"a:\n- x\n- y\nb\n", "line 4: expected 'key: value'"},
      {"{\"a\": 1", "not valid JSON"},
      {"a: \"\\q\"\n", "unknown escape"},
  };
  for (const Case& c : cases) {
    auto r = ParseYamlSubset(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.error)) << c.text;
  }
}

TEST(YamlLite, ErrorsDoNotQuoteValues) {
  auto r = ParseYamlSubset("token: \"s3cr3t\\q\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("s3cr3t")));
}

TEST(YamlLite, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
  auto r = ParseYamlSubset(text);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nesting too deep"));
}

}  // namespace
}  // namespace skb::k8s
