// SPDX-License-Identifier: Apache-2.0
#include "src/devices/gres.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "src/base/strings.h"

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

// A node as the testbed's MIG layout has it: GPUs 0-1 whole, GPU 2 in two 1g.10gb slices
// and one 2g.20gb, published in an order of the driver's own.
std::vector<SliceDevice> MigSlice() {
  return {{.name = "gpu-2-mig-14-4-2", .type = "mig", .uuid = "MIG-c", .profile = "2g.20gb"},
          {.name = "gpu-0", .type = "gpu", .uuid = "GPU-0"},
          {.name = "gpu-2-mig-19-1-1", .type = "mig", .uuid = "MIG-b", .profile = "1g.10gb"},
          {.name = "gpu-1", .type = "gpu", .uuid = "GPU-1"},
          {.name = "gpu-2-mig-19-0-1", .type = "mig", .uuid = "MIG-a", .profile = "1g.10gb"}};
}
GresDevice Slice(int64_t gpu, int64_t cap, std::string type, std::string uuid) {
  return {.files = {StrCat("/dev/nvidia", gpu), StrCat("/dev/nvidia-caps/nvidia-cap", cap)},
          .type = std::move(type),
          .mig_uuid = std::move(uuid)};
}

TEST(MapGresFiles, ProvesAMigSliceByItsUuidProfileAndGpu) {
  const std::vector<GresDevice> gres = {{.files = {"/dev/nvidia0"}},
                                        {.files = {"/dev/nvidia1"}},
                                        Slice(2, 283, "1g.10gb", "MIG-a"),
                                        Slice(2, 292, "1g.10gb", "MIG-b"),
                                        Slice(2, 301, "2g.20gb", "MIG-c")};
  DeviceMapping m = MapGresFiles(std::span<const GresDevice>(gres), MigSlice(), true);
  ASSERT_TRUE(m.proven) << m.reason;
  EXPECT_THAT(m.device_by_idx, ElementsAre("gpu-0", "gpu-1", "gpu-2-mig-19-0-1", "gpu-2-mig-19-1-1",
                                           "gpu-2-mig-14-4-2"));
  EXPECT_THAT(m.profile_by_idx, ElementsAre("", "", "1g.10gb", "1g.10gb", "2g.20gb"));
  EXPECT_EQ(MigParentMinor("gpu-12-mig-19-0-1"), 12);
  EXPECT_EQ(MigParentMinor("gpu-12"), std::nullopt);
}

TEST(MapGresFiles, SaysWhyAMigSliceCannotBeProven) {
  const GresDevice g0{.files = {"/dev/nvidia0"}}, g1{.files = {"/dev/nvidia1"}};
  struct Case {
    std::vector<GresDevice> gres;
    const char* reason;
  } cases[] = {
      // Slurm's index 2 names a UUID the driver does not publish.
      {{g0, g1, Slice(2, 283, "1g.10gb", "MIG-x"), Slice(2, 292, "1g.10gb", "MIG-b"),
        Slice(2, 301, "2g.20gb", "MIG-c")},
       "no published MIG device has uuid MIG-x"},
      // The profiles disagree.
      {{g0, g1, Slice(2, 283, "2g.20gb", "MIG-a"), Slice(2, 292, "1g.10gb", "MIG-b"),
        Slice(2, 301, "2g.20gb", "MIG-c")},
       "is a 2g.20gb slice in Slurm, device gpu-2-mig-19-0-1 (MIG-a) is 1g.10gb"},
      // The slice is of another GPU than the file Slurm lists.
      {{g0, g1, Slice(1, 283, "1g.10gb", "MIG-a"), Slice(2, 292, "1g.10gb", "MIG-b"),
        Slice(2, 301, "2g.20gb", "MIG-c")},
       "is not a slice of GPU 1"},
      // One UUID twice.
      {{g0, g1, Slice(2, 283, "1g.10gb", "MIG-a"), Slice(2, 292, "1g.10gb", "MIG-a"),
        Slice(2, 301, "2g.20gb", "MIG-c")},
       "are both MIG-a"},
      // Slurm lists the sliced GPU whole: a slice is never a whole GPU's device.
      {{g0,
        g1,
        {.files = {"/dev/nvidia2"}},
        Slice(2, 292, "1g.10gb", "MIG-b"),
        Slice(2, 301, "2g.20gb", "MIG-c")},
       "no published device for /dev/nvidia2"},
      // Several files but no UUID.
      {{g0,
        g1,
        {.files = {"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap283"}},
        Slice(2, 292, "1g.10gb", "MIG-b"),
        Slice(2, 301, "2g.20gb", "MIG-c")},
       "names several files but no MIG UUID"},
  };
  for (const Case& c : cases) {
    DeviceMapping m = MapGresFiles(std::span<const GresDevice>(c.gres), MigSlice(), true);
    EXPECT_FALSE(m.proven) << c.reason;
    EXPECT_THAT(m.reason, HasSubstr(c.reason));
    EXPECT_TRUE(m.profile_by_idx.empty());
  }
  // Partitionable devices: the whole GPU and its slices published side by side.
  std::vector<SliceDevice> both = {
      {.name = "gpu-0", .type = "gpu"},
      {.name = "gpu-0-mig-19-0-1", .type = "mig", .uuid = "MIG-a", .profile = "1g.10gb"}};
  const std::vector<GresDevice> gres = {g0, Slice(0, 12, "1g.10gb", "MIG-a")};
  DeviceMapping m = MapGresFiles(std::span<const GresDevice>(gres), both, true);
  EXPECT_FALSE(m.proven);
  EXPECT_THAT(m.reason, HasSubstr("is all of GPU 0 in Slurm, the driver publishes its MIG slice"));
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

// Four GPUs as a board's PCI buses order them; `minors` gives the kernel's minor of each
// device in that bus order (named gpu-<minor> as the driver names them).
std::vector<SliceDevice> Board(const std::vector<int64_t>& minors) {
  const char* buses[] = {"0000:18:00.0", "0000:2A:00.0", "0000:3a:00.0", "0000:5d:00.0"};
  std::vector<SliceDevice> out;
  for (size_t i = 0; i < minors.size(); ++i) {
    out.push_back({.name = DeviceName(minors[i]), .type = "gpu", .pci_bus_id = buses[i]});
  }
  // Published in name order, not bus order.
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}
std::vector<std::string> FilesOf(const DerivedGres& d) {
  std::vector<std::string> out;
  for (const GresDevice& g : d.gres) out.push_back(StrJoin(g.files, ","));
  return out;
}

TEST(DeriveGresFiles, AutoAcceptsANodeWhoseMinorsFollowTheBusOrder) {
  const DerivedGres d = DeriveGresFiles(4, Board({0, 1, 2, 3}), GresOrder::kAuto, true);
  ASSERT_EQ(d.unproven, "");
  EXPECT_THAT(FilesOf(d),
              ElementsAre("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"));
}

// The kernel numbered the GPUs on buses 18 and 2a the other way round: gres.conf's
// /dev/nvidia0..3 and AutoDetect=nvml's bus order give different indices to two GPUs, and
// the bridge cannot tell which one Slurm uses.
TEST(DeriveGresFiles, AutoRefusesANodeWhereFileAndBusOrderDiffer) {
  const DerivedGres d = DeriveGresFiles(4, Board({1, 0, 2, 3}), GresOrder::kAuto, true);
  EXPECT_TRUE(d.gres.empty());
  EXPECT_THAT(d.unproven, HasSubstr("the GPUs' minors are not in PCI bus order (gpu-1@0000:18:00.0 "
                                    "gpu-0@0000:2a:00.0 gpu-2@0000:3a:00.0"));
  EXPECT_THAT(d.unproven, HasSubstr("set gpu_sharing.gres_order"));
  // Stated by the admin, either order maps.
  EXPECT_THAT(FilesOf(DeriveGresFiles(4, Board({1, 0, 2, 3}), GresOrder::kPciBus, true)),
              ElementsAre("/dev/nvidia1", "/dev/nvidia0", "/dev/nvidia2", "/dev/nvidia3"));
  EXPECT_THAT(FilesOf(DeriveGresFiles(4, Board({1, 0, 2, 3}), GresOrder::kFiles, true)),
              ElementsAre("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"));
  // And the mapping that follows proves each index against the device of its minor.
  const DerivedGres pci = DeriveGresFiles(4, Board({1, 0, 2, 3}), GresOrder::kPciBus, true);
  const std::vector<SliceDevice> devs = Board({1, 0, 2, 3});
  const DeviceMapping m = MapGresFiles(std::span<const GresDevice>(pci.gres), devs, true);
  ASSERT_TRUE(m.proven) << m.reason;
  EXPECT_THAT(m.device_by_idx, ElementsAre("gpu-1", "gpu-0", "gpu-2", "gpu-3"));
}

TEST(DeriveGresFiles, AutoAndPciBusSayWhyTheBusOrderCannotBeRead) {
  std::vector<SliceDevice> no_bus = Board({0, 1});
  no_bus[1].pci_bus_id.clear();
  std::vector<SliceDevice> same_bus = Board({0, 1});
  same_bus[1].pci_bus_id = same_bus[0].pci_bus_id;
  std::vector<SliceDevice> mig = Board({0, 1});
  mig[1] = {.name = "gpu-1-mig-19-0-1", .type = "mig", .uuid = "MIG-a", .profile = "1g.10gb"};
  struct Case {
    std::vector<SliceDevice> devs;
    bool trust_names;
    const char* reason;
  } cases[] = {
      {no_bus, true, "device 'gpu-1' publishes no resource.kubernetes.io/pciBusID"},
      {same_bus, true, "devices gpu-0 and gpu-1 share PCI bus id 0000:18:00.0"},
      {mig, true, "the driver publishes MIG slice gpu-1-mig-19-0-1"},
      {Board({0, 1}), false, "device 'gpu-0' shows no minor"},
  };
  for (const Case& c : cases) {
    for (GresOrder order : {GresOrder::kAuto, GresOrder::kPciBus}) {
      const DerivedGres d = DeriveGresFiles(2, c.devs, order, c.trust_names);
      EXPECT_TRUE(d.gres.empty()) << c.reason;
      EXPECT_THAT(d.unproven, HasSubstr(c.reason));
    }
    // gres.conf's order needs nothing of the driver.
    EXPECT_EQ(DeriveGresFiles(2, c.devs, GresOrder::kFiles, c.trust_names).unproven, "");
  }
  // A count that differs is left to MapGresFiles, which names both counts.
  EXPECT_EQ(DeriveGresFiles(3, Board({0, 1}), GresOrder::kAuto, true).gres.size(), 3u);
}

}  // namespace
}  // namespace skb::devices
