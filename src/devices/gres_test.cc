#include "src/devices/gres.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::devices {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseGresIndices, ReadsTheFormsScontrolPrints) {
  auto g = ParseGresIndices("gpu:4(IDX:0-3)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(*g, ElementsAre(GresIndices{"", 4, {0, 1, 2, 3}}));

  g = ParseGresIndices("gpu:h100:2(IDX:1,5)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(*g, ElementsAre(GresIndices{"h100", 2, {1, 5}}));

  g = ParseGresIndices("gpu:1g.10gb:1(IDX:0)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(*g, ElementsAre(GresIndices{"1g.10gb", 1, {0}}));

  g = ParseGresIndices("gpu:a100:3(IDX:0-1,6),gpu:t4:1(IDX:7),nic:1(IDX:0)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(*g, ElementsAre(GresIndices{"a100", 3, {0, 1, 6}}, GresIndices{"t4", 1, {7}}));

  g = ParseGresIndices("gpu:0(IDX:N/A)");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(*g, ElementsAre(GresIndices{"", 0, {}}));

  g = ParseGresIndices("");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->empty());
}

TEST(ParseGresIndices, RejectsMalformedInputNamingTheEntry) {
  struct Case {
    const char* gres;
    const char* error;
  } cases[] = {
      {"gpu:4", "no (IDX:...) list"},
      {"gpu:4(IDX:0-3", "unbalanced"},
      {"gpu:4(IDX:0-3))", "unbalanced"},
      {"gpu:4(0-3)", "does not start with IDX:"},
      {"gpu:x(IDX:0)", "count 'x' is not a number"},
      {"gpu:h100:2:9(IDX:0,1)", "expected gpu[:TYPE]:COUNT"},
      {"gpu::2(IDX:0,1)", "empty GPU type"},
      {"gpu:2(IDX:0,a)", "index 'a'"},
      {"gpu:2(IDX:3-1)", "runs backwards"},
      {"gpu:2(IDX:1,1)", "listed twice"},
      {"gpu:3(IDX:0-1)", "count 3 but 2 indices"},
      {"gpu:1(IDX:N/A)", "non-zero count"},
      {"gpu:1(IDX:99999)", "is not a number"},
      {"gpu:1(IDX:)", "is not a number"},
  };
  for (const Case& c : cases) {
    auto g = ParseGresIndices(c.gres);
    ASSERT_FALSE(g.ok()) << c.gres;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << c.gres;
    EXPECT_THAT(g.status().message(), HasSubstr(c.error)) << c.gres;
  }
}

TEST(ParseGpuIndices, UnitesEntriesAndRefusesAnIndexHeldTwice) {
  auto all = ParseGpuIndices("gpu:a100:1(IDX:4),gpu:t4:2(IDX:0,2)");
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(*all, ElementsAre(0, 2, 4));
  EXPECT_FALSE(ParseGpuIndices("gpu:a:1(IDX:4),gpu:b:1(IDX:4)").ok());
}

TEST(DeviceName, RoundTrips) {
  EXPECT_EQ(DeviceName(7), "gpu-7");
  EXPECT_EQ(DeviceMinor("gpu-7"), 7);
  EXPECT_EQ(DeviceMinor("gpu-07"), std::nullopt);
  EXPECT_EQ(DeviceMinor("mig-1"), std::nullopt);
  EXPECT_EQ(DeviceMinor("gpu-"), std::nullopt);
}

TEST(MapGresFiles, ProvesByMinorAttributeInSlurmsOrder) {
  const std::vector<std::string> files = {"/dev/nvidia2", "/dev/nvidia0", "/dev/nvidia1"};
  // The driver's names need not follow minors; the attribute decides.
  const std::vector<SliceDevice> devs = {{"gpu-0", 1}, {"gpu-1", 2}, {"gpu-2", 0}};
  DeviceMapping m = MapGresFiles(files, devs, /*trust_names=*/false);
  ASSERT_TRUE(m.proven) << m.reason;
  EXPECT_THAT(m.device_by_idx, ElementsAre("gpu-1", "gpu-2", "gpu-0"));
}

TEST(MapGresFiles, NamesProveNothingUnlessTrusted) {
  const std::vector<std::string> files = {"/dev/nvidia0", "/dev/nvidia1"};
  const std::vector<SliceDevice> devs = {{"gpu-1", std::nullopt}, {"gpu-0", std::nullopt}};
  DeviceMapping m = MapGresFiles(files, devs, /*trust_names=*/false);
  EXPECT_FALSE(m.proven);
  EXPECT_THAT(m.reason, HasSubstr("publishes no minor attribute"));
  EXPECT_TRUE(m.device_by_idx.empty());
  m = MapGresFiles(files, devs, /*trust_names=*/true);
  ASSERT_TRUE(m.proven) << m.reason;
  EXPECT_THAT(m.device_by_idx, ElementsAre("gpu-0", "gpu-1"));
}

TEST(MapGresFiles, SaysWhyANodeCannotBeProven) {
  struct Case {
    std::vector<std::string> files;
    std::vector<SliceDevice> devs;
    const char* reason;
  } cases[] = {
      {{}, {}, "no GPU File="},
      {{"/dev/nvidia0"}, {{"gpu-0", 0}, {"gpu-1", 1}}, "Slurm has 1 GPUs, the ResourceSlice 2"},
      {{"/dev/nvidia-caps/x"}, {{"gpu-0", 0}}, "is not /dev/nvidia<N>"},
      {{"/dev/nvidia0", "/dev/nvidia0"}, {{"gpu-0", 0}, {"gpu-1", 1}}, "share /dev/nvidia0"},
      {{"/dev/nvidia3"}, {{"gpu-0", 0}}, "no published device for /dev/nvidia3"},
      {{"/dev/nvidia0", "/dev/nvidia1"}, {{"gpu-0", 0}, {"gpu-1", 0}}, "both claim"},
      {{"/dev/nvidia0"}, {{"mig-0", std::nullopt}}, "not named gpu-<minor>"},
  };
  for (const Case& c : cases) {
    DeviceMapping m = MapGresFiles(c.files, c.devs, /*trust_names=*/true);
    EXPECT_FALSE(m.proven) << c.reason;
    EXPECT_THAT(m.reason, HasSubstr(c.reason));
  }
}

}  // namespace
}  // namespace skb::devices
