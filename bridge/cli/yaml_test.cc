// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/yaml.h"

#include <gtest/gtest.h>

namespace skb::bridge::cli {
namespace {

using json = nlohmann::json;

TEST(Yaml, BlockStyleAsKubectlWritesIt) {
  json j = {
      {"leader", "bridge-0"},
      {"ready", true},
      {"nodes", json::array({{{"name", "node1"}, {"jobs", json::array({12, 13})}, {"gpus", 8}},
                             {{"name", "node2"}, {"jobs", json::array()}, {"owner", json()}}})},
      {"empty", json::object()},
      {"nested", {{"a", {{"b", 1.5}}}}},
      {"matrix", json::array({json::array({1, 2}), json::array({"x"})})}};
  EXPECT_EQ(ToYaml(j),
            "empty: {}\n"
            "leader: bridge-0\n"
            "matrix:\n"
            "- - 1\n"
            "  - 2\n"
            "- - x\n"
            "nested:\n"
            "  a:\n"
            "    b: 1.5\n"
            "nodes:\n"
            "- gpus: 8\n"
            "  jobs:\n"
            "  - 12\n"
            "  - 13\n"
            "  name: node1\n"
            "- jobs: []\n"
            "  name: node2\n"
            "  owner: null\n"
            "ready: true\n");
}

TEST(Yaml, QuotesWhatYamlWouldReadAsSomethingElse) {
  json j = {{"a", "12"},
            {"b", "true"},
            {"c", "no"},
            {"d", ""},
            {"e", "x: y"},
            {"f", " lead"},
            {"g", "trail "},
            {"h", "a #b"},
            {"i", "-dash"},
            {"j", "2024-01-02T03:04:05Z"},
            {"k", "line\nbreak"},
            {"l", "say \"hi\""},
            {"m", "slurm 5 / k8s 3"},
            {"n", "GPUHealthy=False"},
            {"o", "Null"},
            {"p", "ns/pod-1"},
            {"q", "k8s-bridge: XID 79"}};
  EXPECT_EQ(ToYaml(j),
            "a: \"12\"\n"
            "b: \"true\"\n"
            "c: \"no\"\n"
            "d: \"\"\n"
            "e: \"x: y\"\n"
            "f: \" lead\"\n"
            "g: \"trail \"\n"
            "h: \"a #b\"\n"
            "i: \"-dash\"\n"
            "j: \"2024-01-02T03:04:05Z\"\n"
            "k: \"line\\nbreak\"\n"
            "l: \"say \\\"hi\\\"\"\n"
            "m: slurm 5 / k8s 3\n"
            "\"n\": \"GPUHealthy=False\"\n"
            "o: \"Null\"\n"
            "p: ns/pod-1\n"
            "q: \"k8s-bridge: XID 79\"\n");
  EXPECT_EQ(ToYaml(json::object({{"on", 1}, {"my key", 2}})), "my key: 2\n\"on\": 1\n");
}

TEST(Yaml, ScalarsAndEmptiesAtTheTop) {
  EXPECT_EQ(ToYaml(json::array()), "[]\n");
  EXPECT_EQ(ToYaml(json::object()), "{}\n");
  EXPECT_EQ(ToYaml("x"), "x\n");
  EXPECT_EQ(ToYaml(7), "7\n");
}

}  // namespace
}  // namespace skb::bridge::cli
