#include "k8s/json_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/field_selection.h"
#include "k8s/testdata.h"
#include "k8s/watch_decoder.h"

namespace skb::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(JsonSelection, SelectedDecodeEqualsFullDecodeThenTrim) {
  for (bool pod : {true, false}) {
    json obj = pod ? testdata::RealisticPod() : testdata::RealisticNode();
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

}  // namespace
}  // namespace skb::k8s
