// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/node_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/config/json_reader.h"

namespace skb::inventory {
namespace {

using ::testing::HasSubstr;

StatusOr<NodeNameMap> Read(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json);
  NodeNameMap m;
  Status s = ReadNodeNames(config::JsonReader(j, "kubernetes.node_names"), &m);
  if (!s.ok()) return s;
  return m;
}

K8sNode Node(std::string name, std::map<std::string, std::string> labels = {}) {
  K8sNode n;
  n.name = std::move(name);
  n.labels = std::move(labels);
  return n;
}

TEST(NodeNames, IdentityByDefault) {
  auto m = Read("{}");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->SlurmName("gpu7.example.org"), "gpu7.example.org");
  EXPECT_EQ(m->SlurmName(Node("gpu7")), "gpu7");
  EXPECT_EQ(m->Describe(), "identity");
}

TEST(NodeNames, StripDomain) {
  auto m = Read(R"({"mode": "strip_domain", "domain": "example.org"})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->SlurmName("gpu7.example.org"), "gpu7");
  EXPECT_EQ(m->SlurmName("gpu7.other.org"), "gpu7.other.org");  // another domain: unchanged
  EXPECT_EQ(m->SlurmName(".example.org"), ".example.org");      // never an empty name
  EXPECT_EQ(m->Describe(), "strip_domain .example.org");

  auto first_dot = Read(R"({"mode": "strip_domain"})");
  ASSERT_TRUE(first_dot.ok()) << first_dot.status();
  EXPECT_EQ(first_dot->SlurmName("gpu7.a.b"), "gpu7");
  EXPECT_EQ(first_dot->SlurmName("gpu7"), "gpu7");
  EXPECT_EQ(first_dot->SlurmName(".hidden"), ".hidden");
}

TEST(NodeNames, Template) {
  auto m = Read(R"({"mode": "template", "template": "slurm-{short}"})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->SlurmName("ip-10-0-1-7.ec2.internal"), "slurm-ip-10-0-1-7");
  auto whole = Read(R"({"mode": "template", "template": "{name}-gpu"})");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->SlurmName("a.b"), "a.b-gpu");
}

TEST(NodeNames, LabelHoldsTheSlurmName) {
  auto m = Read(R"({"mode": "label", "label": "example.org/slurm-node"})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->SlurmName(Node("ip-1.ec2.internal", {{"example.org/slurm-node", "gpu3"}})), "gpu3");
  EXPECT_EQ(m->SlurmName(Node("ip-2.ec2.internal")), std::nullopt);
  EXPECT_EQ(m->SlurmName(Node("ip-2.ec2.internal", {{"example.org/slurm-node", ""}})),
            std::nullopt);
  EXPECT_EQ(m->Describe(), "label example.org/slurm-node");
}

TEST(NodeNames, ExplicitPairsWinOverTheMode) {
  auto m = Read(R"({"mode": "label", "label": "l", "map": {"odd": "gpu9"}})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->SlurmName(Node("odd")), "gpu9");
  EXPECT_EQ(m->SlurmName("odd"), "gpu9");
}

TEST(NodeNames, ErrorsNameTheKey) {
  auto bad_mode = Read(R"({"mode": "fqdn"})");
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_THAT(bad_mode.status().message(), HasSubstr("kubernetes.node_names.mode"));
  EXPECT_THAT(bad_mode.status().message(), HasSubstr("strip_domain"));  // says what is allowed
  auto no_label = Read(R"({"mode": "label"})");
  ASSERT_FALSE(no_label.ok());
  EXPECT_THAT(no_label.status().message(), HasSubstr("kubernetes.node_names.label"));
  auto constant = Read(R"({"mode": "template", "template": "gpu"})");
  ASSERT_FALSE(constant.ok());
  EXPECT_THAT(constant.status().message(), HasSubstr("{short}"));
  auto unknown_field = Read(R"({"mode": "template", "template": "{short}-{host}"})");
  ASSERT_FALSE(unknown_field.ok());
  EXPECT_THAT(unknown_field.status().message(), HasSubstr("kubernetes.node_names.template"));
  EXPECT_THAT(unknown_field.status().message(), HasSubstr("{host}"));
  auto unclosed = Read(R"({"mode": "template", "template": "{short}-{name"})");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_THAT(unclosed.status().message(), HasSubstr("'{name'"));
  auto no_template = Read(R"({"mode": "template"})");
  ASSERT_FALSE(no_template.ok());
  EXPECT_THAT(no_template.status().message(), HasSubstr("kubernetes.node_names.template"));
  auto stray = Read(R"({"mode": "identity", "domain": "example.org"})");
  ASSERT_FALSE(stray.ok());
  EXPECT_THAT(stray.status().message(), HasSubstr("kubernetes.node_names.domain"));
  auto typo = Read(R"({"mode": "identity", "lable": "x"})");
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.status().message(), HasSubstr("lable"));
  auto empty_target = Read(R"({"map": {"a": ""}})");
  ASSERT_FALSE(empty_target.ok());
}

}  // namespace
}  // namespace skb::inventory
