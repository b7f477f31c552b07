// SPDX-License-Identifier: Apache-2.0
#include "src/slurm/syntax.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseNodeGpus, ReadsSlurmsNodeGresStrings) {
  EXPECT_THAT(ParseNodeGpus("gpu:h100:8(S:0-1)"), ElementsAre(GpuCount{"h100", 8}));
  EXPECT_THAT(ParseNodeGpus("gpu:h100:8(S:0-1),gpu:a100:2(S:0),shard:16"),
              ElementsAre(GpuCount{"h100", 8}, GpuCount{"a100", 2}));
  EXPECT_THAT(ParseNodeGpus("gpu:4"), ElementsAre(GpuCount{"", 4}));
  EXPECT_THAT(ParseNodeGpus("gpu:h100:2(IDX:0,2),gpu:h100:1(IDX:5)"),
              ElementsAre(GpuCount{"h100", 3}));
  EXPECT_THAT(ParseNodeGpus("gpu:h100:0(IDX:N/A)"), ElementsAre(GpuCount{"h100", 0}));
  EXPECT_TRUE(ParseNodeGpus("").empty());
  EXPECT_TRUE(ParseNodeGpus("(null)").empty());
  EXPECT_TRUE(ParseNodeGpus("mps:100").empty());
}

struct TresCase {
  std::string input;
  std::vector<GresRequest> want;
};

TEST(ParseTresRequest, Forms) {
  const TresCase cases[] = {
      {"gres:gpu:h100:2", {{"gpu", "h100", 2}}},
      {"gres:gpu:2", {{"gpu", "", 2}}},
      {"gres:gpu", {{"gpu", "", 1}}},
      {"gres:gpu:h100", {{"gpu", "h100", 1}}},
      {"gres/gpu:h100=4", {{"gpu", "h100", 4}}},
      {"gres/gpu=3", {{"gpu", "", 3}}},
      {"gpu:a100:1", {{"gpu", "a100", 1}}},
      {"gres:gpu:0", {{"gpu", "", 0}}},
      {"gres:gpu:1K", {{"gpu", "", 1024}}},
      {"cpu=4,gres:gpu:h100:1;gres:foo:2", {{"gpu", "h100", 1}, {"foo", "", 2}}},
      {"license/matlab=1,mem=4G", {}},
      {"", {}},
  };
  for (const auto& c : cases) {
    auto got = ParseTresRequest(c.input);
    ASSERT_TRUE(got.ok()) << c.input << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.input;
  }
}

TEST(ParseTresRequest, RejectsGarbageWithTheEntry) {
  EXPECT_THAT(ParseTresRequest("gres:gpu:h100:lots").status().message(),
              HasSubstr("count 'lots' is not a number"));
  EXPECT_FALSE(ParseTresRequest("gres:gpu:a:b:c").ok());
  EXPECT_FALSE(ParseTresRequest("gres::2").ok());
  EXPECT_FALSE(ParseTresRequest("gres:gpu:h100:99999999999999999999").ok());
  std::string many;
  for (int i = 0; i < 100; ++i) many += "gres:gpu:1,";
  EXPECT_FALSE(ParseTresRequest(many).ok());
}

TEST(GpusInTres, TheGpuEntriesCountsOfAnyTypeOrZero) {
  EXPECT_EQ(GpusInTres("gres/gpu:4"), 4);
  EXPECT_EQ(GpusInTres("gres/gpu:a100:2,gres/gpu:h100=1,cpu=8"), 3);
  EXPECT_EQ(GpusInTres("gres:gpu"), 1) << "no count: one";
  EXPECT_EQ(GpusInTres("gres/shard:4"), 0);
  EXPECT_EQ(GpusInTres(""), 0);
  EXPECT_EQ(GpusInTres("gres/gpu:h100:many"), 0) << "does not parse";
}

TEST(RequestedGpuType, TheFirstTypedGpuEntryOrAny) {
  EXPECT_EQ(RequestedGpuType("gres/gpu:h100=4"), "h100");
  EXPECT_EQ(RequestedGpuType("cpu=4,gres:foo:bar:1,gres:gpu:a100:2"), "a100");
  EXPECT_EQ(RequestedGpuType("gres:gpu:2"), "");
  EXPECT_EQ(RequestedGpuType(""), "");
  EXPECT_EQ(RequestedGpuType("gres:gpu:h100:lots"), "") << "does not parse: any";
}

TEST(ParseConstraintFeatures, NamesWithoutOperatorsOrCounts) {
  auto f = ParseConstraintFeatures("h100&(nvlink|ib)*2,[a*1&b*2]");
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(*f, ElementsAre("h100", "nvlink", "ib", "a", "b"));
  EXPECT_THAT(*ParseConstraintFeatures("h100&h100"), ElementsAre("h100"));
  EXPECT_TRUE(ParseConstraintFeatures("")->empty());
  EXPECT_THAT(ParseConstraintFeatures("a;rm -rf").status().message(), HasSubstr("';'"));
}

TEST(Annotation, FormatParseAndMerge) {
  Annotation a{true, SignalSpec{10, 120, true}};
  EXPECT_EQ(FormatAnnotation(a), "k8s-bridge:preemptible=true,signal=10@120:B");
  EXPECT_EQ(ParseAnnotation("ticket-42 " + FormatAnnotation(a)), a);
  EXPECT_EQ(ParseAnnotation(FormatAnnotation(Annotation{})), Annotation{});
  EXPECT_FALSE(ParseAnnotation("nothing here").has_value());
  // Where the decision was made: the partitions asked for and the QOS ("" = the default).
  Annotation where{
      .preemptible = true, .partitions = std::vector<std::string>{"gpu", "urgent"}, .qos = ""};
  EXPECT_EQ(FormatAnnotation(where), "k8s-bridge:preemptible=true,partitions=gpu+urgent,qos=");
  EXPECT_EQ(ParseAnnotation(FormatAnnotation(where)), where);
  where.qos = "scavenger";
  where.signal = SignalSpec{12, 60, false};
  EXPECT_EQ(ParseAnnotation("x " + FormatAnnotation(where) + " y"), where);
  // A note written before partitions/qos existed has neither: it is not "moved".
  Annotation old = *ParseAnnotation("k8s-bridge:preemptible=true");
  EXPECT_FALSE(old.partitions.has_value());
  EXPECT_FALSE(old.qos.has_value());
  EXPECT_FALSE(ParseAnnotation("").has_value());

  EXPECT_EQ(MergeAnnotation("", Annotation{}), "k8s-bridge:preemptible=false");
  // What someone else wrote stays byte for byte; an older bridge token is replaced.
  EXPECT_EQ(MergeAnnotation("ticket  42\nsee wiki k8s-bridge:preemptible=true", Annotation{}),
            "ticket  42\nsee wiki k8s-bridge:preemptible=false");
  EXPECT_EQ(MergeAnnotation("k8s-bridge:preemptible=true keep", Annotation{}),
            "keep k8s-bridge:preemptible=false");
  EXPECT_EQ(MergeAnnotation("xk8s-bridge:preemptible=true", Annotation{}),
            "xk8s-bridge:preemptible=true k8s-bridge:preemptible=false");
}

}  // namespace
}  // namespace skb::slurm
