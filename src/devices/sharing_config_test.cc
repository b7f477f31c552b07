// SPDX-License-Identifier: Apache-2.0
#include "src/devices/sharing_config.h"

#include <gtest/gtest.h>

#include "src/config/config.h"

namespace skb::devices {
namespace {

TEST(SharingConfigTest, OffByDefaultWithTheNvidiaDriversNames) {
  StatusOr<config::Config> cfg = config::ParseConfig("{}");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const SharingConfig& s = cfg->gpu_sharing;
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.driver, "gpu.nvidia.com");
  EXPECT_EQ(s.extended_resource, "nvidia.com/gpu");
  EXPECT_TRUE(s.TrustNames());
  EXPECT_EQ(s.device_classes, (std::set<std::string, std::less<>>{"gpu.nvidia.com"}));
  EXPECT_EQ(s.placeholder.partition, "skb-gpu-hold");
  EXPECT_EQ(s.gres_order, GresOrder::kAuto);
  EXPECT_EQ(s.mig_device_classes, (std::set<std::string, std::less<>>{"mig.nvidia.com"}));
  EXPECT_EQ(s.mig_extended_resource_prefix, "nvidia.com/mig-");
}

TEST(SharingConfigTest, ReadsEveryKey) {
  StatusOr<config::Config> cfg = config::ParseConfig(R"({"gpu_sharing": {
      "enabled": true, "driver": "gpu.example.com", "extended_resource": "example.com/gpu",
      "device_identity": "minor-attribute", "give_timeout": "3m", "gres_order": "pci-bus",
      "device_classes": ["gpu.example.com", "gpu-large.example.com"],
      "give_backoff": "5m", "give_backoff_max": "1h",
      "gres_files": {"node7": ["/dev/nvidia1", "/dev/nvidia0"],
                     "node9": ["/dev/nvidia0", {"files": ["/dev/nvidia1",
                               "/dev/nvidia-caps/nvidia-cap147",
                               "/dev/nvidia-caps/nvidia-cap148"], "type": "1g.10gb",
                               "mig_uuid": "MIG-4f7e1c2a-0000-5000-8000-000000000001"}]},
      "mig_device_classes": ["mig.example.com"], "mig_extended_resource_prefix": "example.com/slice-",
      "placeholder": {"partition": "hold", "qos": "bridge", "account": "ops"}}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const SharingConfig& s = cfg->gpu_sharing;
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.driver, "gpu.example.com");
  EXPECT_EQ(s.extended_resource, "example.com/gpu");
  EXPECT_FALSE(s.TrustNames());
  EXPECT_EQ(s.device_classes,
            (std::set<std::string, std::less<>>{"gpu-large.example.com", "gpu.example.com"}));
  EXPECT_EQ(s.give_timeout, std::chrono::minutes(3));
  EXPECT_EQ(s.give_backoff, std::chrono::minutes(5));
  EXPECT_EQ(s.give_backoff_max, std::chrono::hours(1));
  EXPECT_EQ(s.gres_order, GresOrder::kPciBus);
  EXPECT_EQ(s.GresFilesOf("node7", 2, {}).gres,
            WholeGpus(std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia0"}));
  // A node gres_files does not list: gres_order derives its files from the devices.
  const std::vector<SliceDevice> devs = {
      {.name = "gpu-0", .minor = 0, .type = "gpu", .pci_bus_id = "0000:2a:00.0"},
      {.name = "gpu-1", .minor = 1, .type = "gpu", .pci_bus_id = "0000:18:00.0"}};
  EXPECT_EQ(s.GresFilesOf("node8", 2, devs).gres,
            WholeGpus(std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia0"}))
      << s.GresFilesOf("node8", 2, devs).unproven;
  EXPECT_EQ(s.GresFilesOf("node9", 2, {}).gres,
            (std::vector<GresDevice>{{.files = {"/dev/nvidia0"}},
                                     {.files = {"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap147",
                                                "/dev/nvidia-caps/nvidia-cap148"},
                                      .type = "1g.10gb",
                                      .mig_uuid = "MIG-4f7e1c2a-0000-5000-8000-000000000001"}}));
  EXPECT_EQ(s.mig_device_classes, (std::set<std::string, std::less<>>{"mig.example.com"}));
  EXPECT_EQ(s.mig_extended_resource_prefix, "example.com/slice-");
  EXPECT_EQ(s.placeholder.partition, "hold");
  EXPECT_EQ(s.placeholder.qos, "bridge");
  EXPECT_EQ(s.placeholder.account, "ops");
}

// "" reads no extended resource as MIG slices (a site whose pods ask only through claims).
TEST(SharingConfigTest, AnEmptyMigExtendedResourcePrefixReadsNone) {
  StatusOr<config::Config> cfg =
      config::ParseConfig(R"({"gpu_sharing": {"mig_extended_resource_prefix": ""}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->gpu_sharing.mig_extended_resource_prefix, "");
}

TEST(SharingConfigTest, BadValuesNameTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"gpu_sharing": {"enabeld": true}})", "gpu_sharing.enabeld"},
      {R"({"gpu_sharing": {"device_identity": "index"}})", "gpu_sharing.device_identity"},
      {R"({"gpu_sharing": {"gres_order": "nvml"}})", "gpu_sharing.gres_order"},
      {R"({"gpu_sharing": {"extended_resource": "gpu"}})", "gpu_sharing.extended_resource"},
      {R"({"gpu_sharing": {"driver": "GPU Driver"}})", "gpu_sharing.driver"},
      {R"({"gpu_sharing": {"device_classes": []}})", "gpu_sharing.device_classes"},
      {R"({"gpu_sharing": {"device_classes": ["GPU Class"]}})", "gpu_sharing.device_classes"},
      {R"({"gpu_sharing": {"device_classes": "gpu.nvidia.com"}})", "gpu_sharing.device_classes"},
      {R"({"gpu_sharing": {"give_timeout": "1s"}})", "gpu_sharing.give_timeout"},
      {R"({"gpu_sharing": {"give_backoff": "1s"}})", "gpu_sharing.give_backoff"},
      {R"({"gpu_sharing": {"give_backoff": "1h", "give_backoff_max": "30m"}})",
       "gpu_sharing.give_backoff_max"},
      {R"({"gpu_sharing": {"gres_files": {"node1": "/dev/nvidia0"}}})",
       "gpu_sharing.gres_files.node1"},
      {R"({"gpu_sharing": {"gres_files": {"node1": ["/dev/sda"]}}})",
       "gpu_sharing.gres_files.node1"},
      {R"({"gpu_sharing": {"gres_files": {"node1": []}}})", "gpu_sharing.gres_files.node1"},
      {R"({"gpu_sharing": {"gres_files": {"node1": [{"files": ["/dev/nvidia0"],
          "type": "1g.10gb", "mig_uuid": "MIG-1"}]}}})",
       "gpu_sharing.gres_files.node1[0].files"},
      {R"({"gpu_sharing": {"gres_files": {"node1": ["/dev/nvidia0", {"files": ["/dev/nvidia0",
          "/dev/nvidia-caps/nvidia-cap3"], "mig_uuid": "MIG-1"}]}}})",
       "gpu_sharing.gres_files.node1[1].type"},
      {R"({"gpu_sharing": {"gres_files": {"node1": [{"files": ["/dev/nvidia0",
          "/dev/nvidia-caps/nvidia-cap3"], "type": "1g.10gb", "mig_uuid": "GPU-1"}]}}})",
       "gpu_sharing.gres_files.node1[0].mig_uuid"},
      {R"({"gpu_sharing": {"gres_files": {"node1": [{"files": ["/dev/nvidia0",
          "/dev/nvidia-caps/nvidia-cap3"], "type": "1g.10gb", "mig_uuid": "MIG-1",
          "uuid": "x"}]}}})",
       "gpu_sharing.gres_files.node1[0].uuid"},
      {R"({"gpu_sharing": {"gres_files": {"node1": [3]}}})", "gpu_sharing.gres_files.node1[0]"},
      {R"({"gpu_sharing": {"gres_files": {"node1": [{"files": ["/dev/nvidia-caps/nvidia-cap3",
          "/dev/nvidia-caps/nvidia-cap4"], "type": "1g.10gb", "mig_uuid": "MIG-1"}]}}})",
       "gpu_sharing.gres_files.node1[0].files"},
      {R"({"gpu_sharing": {"mig_device_classes": ["gpu.nvidia.com"]}})",
       "gpu_sharing.mig_device_classes"},
      {R"({"gpu_sharing": {"mig_extended_resource_prefix": "mig-"}})",
       "gpu_sharing.mig_extended_resource_prefix"},
      {R"({"gpu_sharing": {"mig_extended_resource_prefix": "nvidia.com/"}})",
       "gpu_sharing.mig_extended_resource_prefix"},
      {R"({"gpu_sharing": {"mig_extended_resource_prefix": "nvidia.com/g"}})",
       "gpu_sharing.mig_extended_resource_prefix"},
      {R"({"gpu_sharing": {"mig_extended_resource_prefix": 7}})",
       "gpu_sharing.mig_extended_resource_prefix"},
      {R"({"gpu_sharing": {"placeholder": {"partition": ""}}})",
       "gpu_sharing.placeholder.partition"},
      {R"({"gpu_sharing": {"placeholder": {"qos": 1}}})", "gpu_sharing.placeholder.qos"},
  };
  for (const auto& [json, key] : cases) {
    StatusOr<config::Config> cfg = config::ParseConfig(json);
    ASSERT_FALSE(cfg.ok()) << json;
    EXPECT_NE(cfg.status().message().find(key), std::string::npos)
        << json << " -> " << cfg.status();
  }
}

}  // namespace
}  // namespace skb::devices
