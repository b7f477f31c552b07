// SPDX-License-Identifier: Apache-2.0
#include "k8s/compact_json.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "k8s/field_selection.h"
#include "k8s/testdata.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

void ExpectRoundTrip(const json& v) {
  CompactJson c = CompactJson::Encode(v);
  json back = c.Decode();
  EXPECT_EQ(back, v) << v.dump();
  // Same types too (== treats 1 and 1.0 alike): the dump shows them.
  EXPECT_EQ(back.dump(), v.dump());
}

TEST(CompactJson, RoundTripsRealisticObjectsWholeAndTrimmed) {
  ExpectRoundTrip(testdata::RealisticPod());
  ExpectRoundTrip(testdata::RealisticNode());
  ExpectRoundTrip(SelectPodFields(testdata::RealisticPod()));
  ExpectRoundTrip(SelectNodeFields(testdata::RealisticNode()));
}

TEST(CompactJson, RoundTripsEveryKindOfValue) {
  for (const json& v : std::vector<json>{
           nullptr,
           true,
           false,
           0,
           63,
           64,
           -1,
           -64,
           127,
           128,
           1000000,
           std::numeric_limits<int64_t>::min(),
           std::numeric_limits<int64_t>::max(),
           std::numeric_limits<uint64_t>::max(),
           0.5,
           -1.25e300,
           0.0,
           "",
           "x",
           std::string(200, 'y'),
           "True",
           "Tru",
           "Truee",
           "nvidia.com/gpu",
           "é中😀",
           std::string("nul\0in", 6),
           json::array(),
           json::object(),
           json::array({1, "a", nullptr, json::array({json::object()})}),
           json({{"", ""}, {"metadata", {{"name", "n"}}}, {"True", "False"}, {"k", {1, 2.5}}}),
       }) {
    ExpectRoundTrip(v);
  }
  std::string deep = std::string(200, '[') + std::string(200, ']');
  ExpectRoundTrip(json::parse(deep));
}

TEST(CompactJson, StringAtWalksWithoutDecoding) {
  CompactJson pod = CompactJson::Encode(SelectPodFields(testdata::RealisticPod()));
  EXPECT_EQ(pod.StringAt({"metadata", "name"}), "llm-inference-7d9f8b6c5d-x2k4p");
  EXPECT_EQ(pod.StringAt({"metadata", "resourceVersion"}), "48213907");
  EXPECT_EQ(pod.StringAt({"status", "phase"}), "Running");  // a dictionary string
  EXPECT_EQ(pod.StringAt({"metadata", "missing"}), "");
  EXPECT_EQ(pod.StringAt({"spec", "priority"}), "");            // a number
  EXPECT_EQ(pod.StringAt({"metadata", "name", "x"}), "");       // through a string
  EXPECT_EQ(pod.StringAt({"spec", "containers", "name"}), "");  // through a list
  EXPECT_EQ(pod.StringAt({}), "");
  EXPECT_EQ(CompactJson::Encode("top").StringAt({}), "top");
  EXPECT_EQ(CompactJson().StringAt({"metadata"}), "");
  EXPECT_EQ(CompactJson().Decode(), json(nullptr));
}

TEST(CompactJson, EqualityCopyAndSize) {
  json trimmed = SelectPodFields(testdata::RealisticPod());
  CompactJson a = CompactJson::Encode(trimmed);
  CompactJson b = a.Copy();
  EXPECT_TRUE(a == b);
  trimmed["metadata"]["resourceVersion"] = "48213908";
  EXPECT_FALSE(a == CompactJson::Encode(trimmed));
  EXPECT_TRUE(CompactJson() == CompactJson().Copy());
  // Well under the minified JSON it encodes.
  EXPECT_LT(a.size() * 3, trimmed.dump().size() * 2);
}

}  // namespace
}  // namespace skb::k8s
