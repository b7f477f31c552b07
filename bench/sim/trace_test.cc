// SPDX-License-Identifier: Apache-2.0
#include "bench/sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::sim {
namespace {

using ::testing::HasSubstr;

constexpr char kHeader[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST(ParseTasks, ReadsEveryColumnTheSimulatorUses) {
  StatusOr<std::vector<Task>> t = ParseTasks(std::string(kHeader) +
                                                 "p0,12000,16384,1,460,,LS,Running,10,200,12\n"
                                                 "p1,1000,100,8,1000,V100M32|G2,BE,Failed,5,,\r\n"
                                                 "\n"
                                                 "p2,1000,100,0,0,,Burstable,Succeeded,7,9,8\n",
                                             "tasks.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  const Task& a = (*t)[0];
  EXPECT_EQ(a.name, "p0");
  EXPECT_TRUE(a.Inference());
  EXPECT_TRUE(a.Fractional());
  EXPECT_EQ(a.Milli(), 460);
  EXPECT_EQ(a.creation, 10);
  EXPECT_EQ(a.scheduled, 12);
  EXPECT_EQ(a.deletion, 200);
  EXPECT_EQ(a.line, 2);
  const Task& b = (*t)[1];
  EXPECT_FALSE(b.Inference());
  EXPECT_EQ(b.Milli(), 8000);
  EXPECT_EQ(b.gpu_spec, (std::vector<std::string>{"V100M32", "G2"}));
  EXPECT_FALSE(b.scheduled);
  EXPECT_FALSE(b.deletion);
  EXPECT_EQ((*t)[2].line, 5);  // blank lines still count
  EXPECT_FALSE((*t)[2].UsesGpu());
}

TEST(ParseTasks, ColumnsMayComeInAnyOrder) {
  StatusOr<std::vector<Task>> t = ParseTasks(
      "qos,name,num_gpu,gpu_milli,gpu_spec,scheduled_time,creation_time,deletion_time\n"
      "BE,j,2,1000,,3,1,9\n",
      "x.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].num_gpu, 2);
  EXPECT_EQ((*t)[0].scheduled, 3);
}

struct BadTask {
  std::string row;
  std::string message;
};

class ParseTasksError : public ::testing::TestWithParam<BadTask> {};

TEST_P(ParseTasksError, NamesTheFileAndLine) {
  StatusOr<std::vector<Task>> t = ParseTasks(
      std::string(kHeader) + "ok,1,1,1,1000,,LS,Running,0,10,0\n" + GetParam().row + "\n",
      "tasks.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("tasks.csv:3: " + GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ParseTasksError,
    ::testing::Values(
        BadTask{"p,1,1,x,1000,,LS,Running,0,10,0", "column 'num_gpu': 'x' is not an integer"},
        BadTask{"p,1,1,1,1001,,LS,Running,0,10,0", "column 'gpu_milli': 1001 is outside 0-1000"},
        BadTask{"p,1,1,1,1000,,LS,Running,-5,10,0", "column 'creation_time': -5 is outside"},
        BadTask{"p,1,1,1,1000,,LS,Running,,10,0", "column 'creation_time' is empty"},
        BadTask{"p,1,1,1,1000,,LS,Running,0,10", "10 fields, the header has 11"},
        BadTask{"p,1,1,1,1000,,LS,Running,0,5,7", "deletion_time 5 is before scheduled_time 7"},
        BadTask{"p,1,1,1,1000,,LS,Running,9,20,7", "scheduled_time 7 is before creation_time 9"},
        BadTask{"p,1,1,1,1000,,,Running,0,10,0", "column 'qos' is empty"},
        BadTask{"\"p\",1,1,1,1000,,LS,Running,0,10,0", "quoted fields are not supported"}));

TEST(ParseTasks, MissingColumnOrEmptyFile) {
  StatusOr<std::vector<Task>> t = ParseTasks("name,num_gpu\np,1\n", "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("t.csv:1: missing column 'gpu_milli'"));
  t = ParseTasks("", "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("t.csv:0: empty file"));
}

TEST(ParseNodes, ReadsNodesAndRefusesBadOnes) {
  StatusOr<std::vector<GpuNode>> n =
      ParseNodes("sn,cpu_milli,memory_mib,gpu,model\na,1,1,8,G2\nb,1,1,2,T4\n", "nodes.csv");
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ((*n)[0].gpus, 8);
  EXPECT_EQ((*n)[1].model, "T4");

  n = ParseNodes("sn,gpu,model\na,8,G2\nb,0,T4\n", "nodes.csv");
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("nodes.csv:3: column 'gpu': 0 is outside 1-64"));
  n = ParseNodes("sn,gpu,model\na,8,G2\na,8,G2\n", "nodes.csv");
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("nodes.csv:3: node a listed twice"));
  n = ParseNodes("sn,gpu,model\n", "nodes.csv");
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("no nodes"));
}

}  // namespace
}  // namespace skb::sim
