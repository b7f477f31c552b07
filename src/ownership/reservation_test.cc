// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/reservation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "src/base/strings.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/schema.h"
#include "src/ownership/test_support.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership {
namespace {

using inventory::ManagedNode;
using std::chrono::minutes;
using test_support::BareNode;
using test_support::Cfg;
using test_support::Job;
using test_support::kNow;
using ::testing::HasSubstr;

// The owner reference's uid comes from the cache (no GET of the node per create); a node the
// cache knows without a uid leaves it empty, and the executor reads the node.
TEST(BuildReservation, CarriesTheNodeUidFromTheCache) {
  ManagedNode n = BareNode();
  n.k8s->uid = "6f1c-node1";
  EXPECT_EQ(BuildReservation(n, ReservationClass::kIdle, Cfg(), kNow).node_uid, "6f1c-node1");
  n.k8s->uid.clear();
  EXPECT_EQ(BuildReservation(n, ReservationClass::kIdle, Cfg(), kNow).node_uid, "");
}

// MIG slices of the device plugin's "mixed" strategy are GPUs to a pod: the reservation
// holds every one beside the whole GPUs, or a pod asking a slice lands beside Slurm's jobs.
TEST(BuildReservation, HoldsTheNodesMigSlicesBesideItsGpus) {
  ManagedNode n = BareNode();
  n.k8s->gpu_capacity = n.k8s->gpu_allocatable = 6;
  n.k8s->slices = {{"nvidia.com/mig-1g.10gb", 7}, {"nvidia.com/mig-3g.40gb", 2}};
  const plan::ReservationSpec r = BuildReservation(n, ReservationClass::kIdle, Cfg(), kNow);
  EXPECT_EQ(r.gpus, 6);
  EXPECT_EQ(r.slices, n.k8s->slices);
  EXPECT_EQ(n.Gpus(), 15);
  // Every GPU partitioned: slices only, not Slurm's count as whole GPUs.
  n.k8s->gpu_capacity = n.k8s->gpu_allocatable = 0;
  const plan::ReservationSpec all = BuildReservation(n, ReservationClass::kIdle, Cfg(), kNow);
  EXPECT_EQ(all.gpus, 0);
  EXPECT_EQ(all.slices.size(), 2u);
}

// The reservation's program, run by /bin/sh with wget stubbed as the bridge's answer and
// no annotation file: it holds through time, and once told to stop (SIGTERM, as the kubelet
// does for a deleted pod) it asks the bridge and exits on "released". Without a URL, a
// SIGTERM changes nothing: only the annotation lets it go.
int RunScript(const plan::ReservationSpec& r, const std::string& wget_answer, bool term) {
  char dir[] = "/tmp/skb-reservation-XXXXXX";
  if (mkdtemp(dir) == nullptr) return -1;
  const std::string file = StrCat(dir, "/script");
  std::string script = r.command.at(2);
  // The annotation file of a pod the bridge has not released: absent.
  const size_t at = script.find(kAnnotationsFile);
  if (at != std::string::npos) script.replace(at, strlen(kAnnotationsFile), StrCat(dir, "/none"));
  // Each turn of its loop (its `sleep`) is counted in `loops`, and takes 20 ms.
  const std::string loops = StrCat(dir, "/loops");
  {
    std::ofstream out(file);
    out << "wget() { echo " << wget_answer << "; }\n"
        << "sleep() { echo x >>" << loops << "; command sleep 0.02; }\n"
        << script << "\n";
  }
  // Started, its traps set (it has turned once), then told to stop or not, then given ten
  // more turns of its loop: one that exits there ends with its status; one still running
  // after them is killed (137). At most 10 s in all, whatever the script does.
  const std::string run = StrCat(
      "n() { cat ", loops, " 2>/dev/null | wc -l; }; sh ", file, " & pid=$!; t=0; ",
      "until [ $(n) -ge 1 ] || [ $t -ge 1000 ]; do sleep 0.01; t=$((t+1)); done; ",
      term ? "kill -TERM $pid; " : "", "base=$(n); ",
      "while kill -0 $pid 2>/dev/null && [ $(n) -lt $((base+10)) ] && [ $t -lt 1000 ]; ",
      "do sleep 0.01; t=$((t+1)); done; ",
      "if kill -0 $pid 2>/dev/null; then kill -KILL $pid; wait $pid; exit 137; fi; wait $pid");
  const int rc = std::system(StrCat("sh -c '", run, "'").c_str());
  std::filesystem::remove_all(dir);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(BuildReservation, ATerminatingReservationAsksTheBridgeWhetherItIsReleased) {
  config::Config cfg = Cfg();
  cfg.lending.release_url = "http://10.0.0.1:9464/reservation-released";
  const plan::ReservationSpec r = BuildReservation(BareNode(), ReservationClass::kIdle, cfg, kNow);
  ASSERT_EQ(r.command.size(), 3u);
  EXPECT_THAT(r.command[2], HasSubstr("http://10.0.0.1:9464/reservation-released?name=$"));
  EXPECT_EQ(RunScript(r, "released", /*term=*/true), 0);
  EXPECT_EQ(RunScript(r, "held", /*term=*/true), 137) << "exited though the bridge holds it";
  EXPECT_EQ(RunScript(r, "released", /*term=*/false), 137) << "asked before it was stopped";
  const plan::ReservationSpec plain =
      BuildReservation(BareNode(), ReservationClass::kIdle, Cfg(), kNow);
  EXPECT_THAT(plain.command[2], ::testing::Not(HasSubstr("wget")));
  EXPECT_EQ(RunScript(plain, "released", /*term=*/true), 137);
}

TEST(PlanOwnership, ReservationNameAndJobList) {
  LendingConfig l;
  EXPECT_EQ(ReservationName(l, "gpu-7.example.org"), "reserve-gpu-7.example.org");
  l.name_pattern = "{node}-hold";
  EXPECT_EQ(ReservationName(l, "n1"), "n1-hold");
  std::vector<slurm::JobView> jobs;
  for (uint32_t id = 200; id > 0; --id) jobs.push_back(Job(id));
  jobs[0].user_name = "bob smith;x";
  jobs[1].user_name.clear();
  jobs[1].user_id = 1234;
  jobs[1].account.clear();
  std::string list = FormatJobList(jobs);
  EXPECT_EQ(list.substr(0, list.find(';')), StrCat("1 alice ml 8 ", ToUnix(kNow - minutes(30))));
  EXPECT_THAT(list, HasSubstr(";+136 more"));
  EXPECT_EQ(
      FormatJobList({jobs[0], jobs[1]}),
      StrCat("199 1234 - 8 ", jobs[1].start_time, ";200 bob_smith_x ml 8 ", jobs[0].start_time));
  EXPECT_EQ(FormatJobList({}), "");
}

TEST(PlanOwnership, JobIdsOfListReadBackWhatFormatJobListWrote) {
  std::vector<slurm::JobView> jobs;
  for (uint32_t id = 70; id > 0; --id) jobs.push_back(Job(id));
  jobs[0].user_name = "bob smith;x";  // cleaned: still one entry
  size_t more = 99;
  const std::vector<uint32_t> ids = JobIdsOfList(FormatJobList(jobs), &more);
  ASSERT_EQ(ids.size(), kMaxListedJobs);
  EXPECT_EQ(ids.front(), 1u);
  EXPECT_EQ(ids.back(), 64u);
  EXPECT_EQ(more, 6u);
  EXPECT_THAT(JobIdsOfList("", &more), ::testing::IsEmpty());
  EXPECT_EQ(more, 0u);
  // Garbled entries are skipped, the others kept.
  EXPECT_THAT(JobIdsOfList("7 a b 1 2;x y;0 a;;12"), ::testing::ElementsAre(7u, 12u));
}

}  // namespace
}  // namespace skb::ownership
