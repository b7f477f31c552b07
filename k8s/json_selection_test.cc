// SPDX-License-Identifier: Apache-2.0
#include "k8s/json_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "k8s/field_selection.h"
#include "k8s/testdata.h"
#include "k8s/watch_decoder.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The realistic pod with what GPU sharing reads besides (a model selected by nodeSelector and
// node affinity, a sidecar; tolerations it already has) and what it does not (pod
// anti-affinity).
json PodWithPlacement() {
  json pod = testdata::RealisticPod();
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  pod["spec"]["affinity"] = json::parse(R"({
    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                             "values": ["NVIDIA-H100-80GB-HBM3"]}]}]}},
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
      {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}
  })");
  pod["spec"]["initContainers"] = json::parse(
      R"([{"name": "proxy", "image": "p:1", "restartPolicy": "Always",
           "resources": {"limits": {"nvidia.com/gpu": "1"}}}])");
  return pod;
}

TEST(JsonSelection, SelectedDecodeEqualsFullDecodeThenTrim) {
  for (int kind : {0, 1, 2}) {
    const bool pod = kind != 1;
    json obj = kind == 0 ? testdata::RealisticPod()
                         : (kind == 1 ? testdata::RealisticNode() : PodWithPlacement());
    std::string line = json({{"type", "MODIFIED"}, {"object", obj}}).dump();
    auto selected =
        ParseSelected(line, pod ? JsonSelection::PodWatchEvent() : JsonSelection::NodeWatchEvent());
    ASSERT_TRUE(selected.ok()) << selected.status();
    json want = pod ? SelectPodFields(json(obj)) : SelectNodeFields(json(obj));
    json got = pod ? SelectPodFields(std::move((*selected)["object"]))
                   : SelectNodeFields(std::move((*selected)["object"]));
    EXPECT_EQ(got, want) << (pod ? "pod" : "node");
    EXPECT_EQ((*selected)["type"], "MODIFIED");
  }
}

TEST(JsonSelection, ListsApplyTheSelectionPerElementAndScalarsPass) {
  JsonSelection sel = JsonSelection::Fields({{"a", JsonSelection::Fields({{"x", {}}})}});
  auto r =
      ParseSelected(R"({"a":[{"x":1,"y":2},{"y":3},"s",4],"b":{"deep":[1,2,{"k":"v"}]}})", sel);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, json::parse(R"({"a":[{"x":1},{},"s",4]})"));
}

TEST(JsonSelection, MalformedInputIsAnErrorEvenInSkippedParts) {
  JsonSelection sel = JsonSelection::Fields({{"keep", {}}});
  for (const char* bad : {R"({"keep":1,"skip":[1,2})", R"({"keep":1,"skip":"unterminated})",
                          R"({"keep":1,"skip":tru})", R"({"keep":1,"skip":"\q"})",
                          R"({"keep":1} trailing)", R"({"keep":[1,}})", "", "{",
                          R"({"keep":1,"skip":{"a" 1}})", "{\"keep\":1,\"skip\":\"\x01\"}"}) {
    auto r = ParseSelected(bad, sel);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_THAT(r.status().message(), HasSubstr("malformed JSON at byte"));
    }
  }
  std::string deep = std::string(300, '[') + std::string(300, ']');
  EXPECT_THAT(ParseSelected("{\"skip\":" + deep + "}", sel).status().message(),
              HasSubstr("nested too deeply"));
}

TEST(JsonSelection, WatchDecoderWithSelectionKeepsErrorsWhole) {
  WatchDecoder d("watch pods", 1 << 20, &JsonSelection::PodWatchEvent());
  int events = 0;
  Status s = d.Feed(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}})"
      "\n",
      [&](WatchEvent&&) { return ++events > 0; });
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s;
  EXPECT_THAT(s.message(), HasSubstr("too old resource version"));
  EXPECT_EQ(events, 0);
}

// Whole-document decoding agrees with nlohmann's own parser on valid JSON, escapes,
// unicode and number forms included.
TEST(JsonSelection, KeepAllEqualsNlohmannParse) {
  const JsonSelection all;
  std::vector<std::string> docs = {
      json({{"type", "MODIFIED"}, {"object", testdata::RealisticPod()}}).dump(),
      testdata::RealisticNode().dump(),
      R"( {"a" : [ 1 , -2 , 3.5 , -0 , 0 , 1e3 , 2E-2 , -1.25e+2 ] , "b" : { } , "c" : [ ] } )",
      R"({"big":9223372036854775807,"bigger":9223372036854775808,"neg":-9223372036854775808})",
      R"({"esc":"q\"b\\s\/b\bf\fn\nr\rt\t","u":"\u00e9\u4e2d\ud83d\ude00","raw":"é中😀"})",
      R"({"k\u0065y":1,"ke\"y":{"x":"long string spanning more than eight bytes \\ with escapes \n"}})",
      R"([true,false,null,"",{"":""}])",
      "\"just a string\"",
      "42",
  };
  for (const std::string& d : docs) {
    auto got = ParseSelected(d, all);
    json want = json::parse(d, nullptr, false);
    ASSERT_FALSE(want.is_discarded()) << d;
    ASSERT_TRUE(got.ok()) << d << ": " << got.status();
    EXPECT_EQ(*got, want) << d;
    EXPECT_EQ(got->dump(), want.dump()) << d;
  }
}

// Bad input is an error (never a crash, never an exception), selected or skipped, and
// agrees with nlohmann about what is bad.
TEST(JsonSelection, MalformedInputsAgreeWithNlohmann) {
  const JsonSelection keep = JsonSelection::Fields({{"keep", {}}});
  const JsonSelection all;
  const std::vector<std::string> values = {
      "01",
      "1.",
      "-",
      "1e",
      "1e+",
      ".5",
      "+1",
      "--1",
      "0x10",
      "1.5.2",
      "tru",
      "nul",
      "falsey",
      R"("\x")",
      R"("\u12")",
      R"("\u12g4")",
      R"("\ud800")",
      R"("\udc00")",
      R"("\ud800\u0041")",
      R"("\ud800x")",
      "\"\xff\"",
      "\"\xc0\xaf\"",
      "\"\xed\xa0\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xe4\xb8\"",
      "\"a\tb\"",
      "\"\x7f\"",
      "[1 2]",
      R"({"a":1,})",
      "[1,]",
      R"({"a"})",
      "{1:2}",
      "[",
      "{",
      "\"",
      "\"\\",
      "\"\\u",
      "\"abcdefghijklmnop",
      "",
      "]",
      "}",
      R"("ok \u00e9 \ud83d\ude00 é")",
      "123456789012345678901234567890",
  };
  for (const std::string& v : values) {
    for (const char* key : {"keep", "skip"}) {
      const std::string doc = StrCat("{\"", key, "\":", v, "}");
      json want = json::parse(doc, nullptr, false);
      auto got = ParseSelected(doc, keep);
      EXPECT_EQ(got.ok(), !want.is_discarded()) << doc;
      if (!got.ok()) {
        EXPECT_THAT(got.status().message(), HasSubstr("malformed JSON at byte")) << doc;
      } else if (std::string_view(key) == "keep") {
        EXPECT_EQ((*got)["keep"], want["keep"]) << doc;
        EXPECT_EQ(*ParseSelected(doc, all), want) << doc;
      }
    }
  }
}

// A number beyond double's range is an error where it is decoded; skipped parts only have
// their grammar checked.
TEST(JsonSelection, OverflowingNumbersFailOnlyWhereDecoded) {
  const JsonSelection keep = JsonSelection::Fields({{"keep", {}}});
  EXPECT_FALSE(ParseSelected(R"({"keep":1e400})", keep).ok());
  EXPECT_FALSE(ParseSelected(R"({"keep":-1e400})", keep).ok());
  EXPECT_TRUE(ParseSelected(R"({"skip":1e400})", keep).ok());
}

// Strings are scanned 16 and 8 bytes at a time: a special byte at every offset of every
// length up to past two blocks, selected and skipped, agrees with nlohmann.
TEST(JsonSelection, SpecialBytesAtEveryOffsetOfAString) {
  const JsonSelection keep = JsonSelection::Fields({{"keep", {}}});
  for (size_t len = 0; len < 40; ++len) {
    for (size_t at = 0; at <= len; ++at) {
      for (std::string_view special :
           {std::string_view("\\n"), std::string_view("\\u00e9"), std::string_view("\xc3\xa9"),
            std::string_view("\x01"), std::string_view("\xff"), std::string_view("\\q")}) {
        std::string str = std::string(at, 'a') + std::string(special) + std::string(len - at, 'b');
        for (const char* key : {"keep", "skip"}) {
          const std::string doc = StrCat("{\"", key, "\":\"", str, "\",\"z\":1}");
          json want = json::parse(doc, nullptr, false);
          auto got = ParseSelected(doc, keep);
          ASSERT_EQ(got.ok(), !want.is_discarded()) << doc;
          if (got.ok() && std::string_view(key) == "keep") {
            EXPECT_EQ((*got)["keep"], want["keep"]) << doc;
          }
        }
      }
    }
  }
}

TEST(JsonSelection, EveryTruncationOfAnEventIsAnError) {
  const std::string line =
      json({{"type", "MODIFIED"}, {"object", testdata::RealisticPod()}}).dump();
  for (size_t n = 0; n < line.size(); ++n) {
    auto r = ParseSelected(std::string_view(line).substr(0, n), JsonSelection::PodWatchEvent());
    ASSERT_FALSE(r.ok()) << n;
  }
  EXPECT_TRUE(ParseSelected(line, JsonSelection::PodWatchEvent()).ok());
}

TEST(JsonSelection, DeepNestingIsAnErrorInSelectedPartsToo) {
  const JsonSelection all;
  std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(ParseSelected(ok, all).ok());
  for (const std::string& deep :
       {std::string(300, '[') + std::string(300, ']'), std::string(100000, '['),
        "{\"keep\":" + std::string(300, '[') + std::string(300, ']') + "}"}) {
    auto r = ParseSelected(deep, JsonSelection::Fields({{"keep", {}}}));
    EXPECT_THAT(r.status().message(), HasSubstr("nested too deeply"));
    EXPECT_THAT(ParseSelected(deep, all).status().message(), HasSubstr("nested too deeply"));
  }
}

// Selected fields of unexpected types are kept as they are; the typed views report them.
TEST(JsonSelection, WrongTypesAreKeptAsTheyAre) {
  auto r = ParseSelected(
      R"({"type":"MODIFIED","object":{"metadata":{"name":7,"labels":["x"]},"spec":"s","status":{"conditions":{"a":1}}}})",
      JsonSelection::PodWatchEvent());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)["object"]["metadata"]["name"], 7);
  EXPECT_EQ((*r)["object"]["metadata"]["labels"], json::array({"x"}));
  EXPECT_EQ((*r)["object"]["spec"], "s");
  EXPECT_EQ((*r)["object"]["status"]["conditions"], json::object());
}

TEST(JsonSelection, DuplicateKeysKeepTheLastValueAsNlohmann) {
  const std::string doc = R"({"a":1,"a":2,"b":{"c":1},"b":{"d":2}})";
  auto r = ParseSelected(doc, JsonSelection());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, json::parse(doc));
}

}  // namespace
}  // namespace skb::k8s
