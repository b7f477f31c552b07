// SPDX-License-Identifier: Apache-2.0
#include "k8s/yaml_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(YamlReader, KubectlStyleDocument) {
  auto doc = ParseYamlDocument(R"(apiVersion: v1
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

TEST(YamlReader, IndentedSequencesAndNesting) {
  auto doc =
      ParseYamlDocument("a:\n  - x\n  - y: 1\n    z: 2\n  -\n    w: 3\nb:\n  c:\n    d: e\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], json::parse(R"(["x", {"y":"1","z":"2"}, {"w":"3"}])"));
  EXPECT_EQ((*doc)["b"]["c"]["d"], "e");
}

TEST(YamlReader, QuotedScalarsAndEscapes) {
  auto doc = ParseYamlDocument(
      "a: \"x\\ty \\\"q\\\" \\u00e9 # not a comment\"\nb: 'it''s'\n\"c d\": \"\"\ne: a#b\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], "x\ty \"q\" \xc3\xa9 # not a comment");
  EXPECT_EQ((*doc)["b"], "it's");
  EXPECT_EQ((*doc)["c d"], "");
  EXPECT_EQ((*doc)["e"], "a#b");
}

// Every scalar is text, whatever it looks like; only a plain null form is null.
TEST(YamlReader, ScalarsKeepTheirTextAndOnlyPlainNullFormsAreNull) {
  auto doc = ParseYamlDocument(
      "octal: 0123\nbool: true\nfloat: 1e3\nneg: -1\nplain_null: null\ncap: Null\nup: NULL\n"
      "tilde: ~\nempty:\nquoted_null: 'null'\ndq_null: \"null\"\nquoted_tilde: \"~\"\n"
      "quoted_empty: ''\nquoted_true: \"true\"\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const json& d = *doc;
  EXPECT_EQ(d["octal"], "0123");
  EXPECT_EQ(d["bool"], "true");
  EXPECT_EQ(d["float"], "1e3");
  EXPECT_EQ(d["neg"], "-1");
  for (const char* k : {"plain_null", "cap", "up", "tilde", "empty"}) {
    EXPECT_TRUE(d[k].is_null()) << k;
  }
  EXPECT_EQ(d["quoted_null"], "null");
  EXPECT_EQ(d["dq_null"], "null");
  EXPECT_EQ(d["quoted_tilde"], "~");
  EXPECT_EQ(d["quoted_empty"], "");
  EXPECT_EQ(d["quoted_true"], "true");
}

TEST(YamlReader, NonStringKeysAreTheirText) {
  auto doc = ParseYamlDocument("1: one\n2.5: two\ntrue: t\n0123: o\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(*doc, json({{"1", "one"}, {"2.5", "two"}, {"true", "t"}, {"0123", "o"}}));
}

TEST(YamlReader, JsonDocumentAndDocumentMarkers) {
  auto j = ParseYamlDocument(R"({"kind":"Config","clusters":[]})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["kind"], "Config");
  // JSON's numbers, booleans and null follow the YAML rules: text, except null.
  auto typed =
      ParseYamlDocument(R"({"a": true, "b": 1.5, "c": null, "d": "x\/y\u00e9", "e": [1]})");
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(*typed, json::parse(R"({"a":"true","b":"1.5","c":null,"d":"x/y\u00e9","e":["1"]})"));
  auto y = ParseYamlDocument("# head\n---\nkind: Config\n...\n# trailing comment\n");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, json({{"kind", "Config"}}));
  auto directive = ParseYamlDocument("%YAML 1.2\n---\nkind: Config\n");
  ASSERT_TRUE(directive.ok()) << directive.status();
  EXPECT_EQ(*directive, json({{"kind", "Config"}}));
  auto crlf = ParseYamlDocument(
      "\xef\xbb\xbf"
      "a: 1\r\nb: 'x'\r\n");
  ASSERT_TRUE(crlf.ok()) << crlf.status();
  EXPECT_EQ(*crlf, json({{"a", "1"}, {"b", "x"}}));
  auto empty = ParseYamlDocument("\n# nothing\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_null());
  auto nothing = ParseYamlDocument("");
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->is_null());
}

// What the hand-written reader this replaced rejected and kubectl accepts.
TEST(YamlReader, FlowCollectionsBlockScalarsAndAnchors) {
  auto flow = ParseYamlDocument(
      "contexts:\n- context: {cluster: c, user: u}\n  name: x\nargs: [get, token, '--x']\n");
  ASSERT_TRUE(flow.ok()) << flow.status();
  EXPECT_EQ((*flow)["contexts"][0]["context"], json({{"cluster", "c"}, {"user", "u"}}));
  EXPECT_EQ((*flow)["args"], json({"get", "token", "--x"}));

  auto block = ParseYamlDocument("lit: |\n  line one\n  line two\nfold: >-\n  a\n  b\nnext: n\n");
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ((*block)["lit"], "line one\nline two\n");
  EXPECT_EQ((*block)["fold"], "a b");
  EXPECT_EQ((*block)["next"], "n");

  auto anchors = ParseYamlDocument(
      "base: &cluster\n  server: https://h:6443\n  insecure-skip-tls-verify: true\n"
      "copy: *cluster\ntoken: &t abc\nagain: *t\n");
  ASSERT_TRUE(anchors.ok()) << anchors.status();
  EXPECT_EQ((*anchors)["copy"], (*anchors)["base"]);
  EXPECT_EQ((*anchors)["copy"]["server"], "https://h:6443");
  EXPECT_EQ((*anchors)["again"], "abc");

  auto multi = ParseYamlDocument("a: multi\n  line plain\n");
  ASSERT_TRUE(multi.ok()) << multi.status();
  EXPECT_EQ((*multi)["a"], "multi line plain");
}

TEST(YamlReader, RejectsWithLineNumbers) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"a: 1\nb: *x\n", "line 2: the referenced anchor is not defined"},
      {"a: &x [*x]\n", "line 1: alias to a node that contains it"},
      {"a: !!str 1\n", "line 1: explicit tags"},
      {"a: !custom {}\n", "line 1: explicit tags"},
      {"<<: {a: 1}\n", "line 1: merge keys"},
      {"? [a]\n: 1\n", "line 1: mapping keys must be scalars"},
      {"~: 1\n", "line 1: null mapping key"},
      {"a: 1\na: 2\n", "line 2: duplicate key 'a'"},
      {"a: 1\n   b: 2\n", "line 2:"},
      {"a:\n\tb: 1\n", "line 2:"},
      {"a: \"open\n", "line 1: quoted string not closed"},
      {"a: 1\nb: 'open\n\n", "line 2: quoted string not closed"},
      {"a: \"open", "line 1: illegal EOF in scalar"},
      {"a: 'x' y\n", "line 1:"},
      {"a: b\n---\nc: d\n", "line 2: a second YAML document"},
      {"a: b\n---\n", "line 2: a second YAML document"},
      {"kind: Config\n...\nignored: after end\n", "line 3: a second YAML document"},
      {"a:\n  - x\n - y\n", "line 3:"},
      {"{\"a\": 1", "line 1:"},
      {"a: \"\\q\"\n", "line 1: unknown escape character"},
  };
  for (const Case& c : cases) {
    auto r = ParseYamlDocument(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.error)) << c.text;
  }
}

// Kubeconfig values can be secrets: no error quotes value text, even where yaml-cpp's own
// message would end with it.
TEST(YamlReader, ErrorsDoNotQuoteValues) {
  const char* secret = "s3cr3tTok3n";
  const std::string cases[] = {
      StrCat("token: \"", secret, "\\q\"\n"),
      StrCat("token: \"", secret, "\\U", "0011ffff", "\"\n"),  // beyond Unicode
      StrCat("token: \"", secret, "\\x4", "\"\n"),
      StrCat("token: \"", secret, "\n"),
      StrCat("token: ", secret, "\n  bad: indentation\n"),
      StrCat("token: [", secret, "\n"),
      StrCat("token: ", secret, "\ntoken: ", secret, "\n"),
      StrCat("token: !", secret, " x\n"),
      StrCat("token: &", secret, " x\nb: *", secret, "x\n"),
      StrCat("%YAML ", secret, "\n---\na: 1\n"),
  };
  for (const std::string& text : cases) {
    auto r = ParseYamlDocument(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.status().message(), Not(HasSubstr("s3cr3t"))) << text;
    EXPECT_THAT(r.status().message(), Not(HasSubstr("ffff"))) << text;
  }
}

TEST(YamlReader, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
  auto r = ParseYamlDocument(text);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nesting too deep"));
  auto flow = ParseYamlDocument(std::string(100'000, '['));
  ASSERT_FALSE(flow.ok());
}

TEST(YamlReader, AliasExpansionIsBounded) {
  // Each level doubles: 2^40 values if expanded without a bound.
  std::string text = "l0: &l0 [x, x]\n";
  for (int i = 1; i <= 40; ++i) {
    text += StrCat("l", i, ": &l", i, " [*l", i - 1, ", *l", i - 1, "]\n");
  }
  auto r = ParseYamlDocument(text);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("too many values"));
}

}  // namespace
}  // namespace skb::k8s
