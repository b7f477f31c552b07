// SPDX-License-Identifier: Apache-2.0
// The GPU-granular lane end to end over fakes: Observe -> PlanPass -> DeviceExecutorImpl
// against FakeSlurmClient and FakeKubeClient (DeviceTaintRules as the apiserver stores them,
// ResourceClaims), with the clock moved through the grace and the cool-down. After every
// pass, per device: never a Slurm job and an allocated claim at once.
#include "bridge/reconcile/device_lane.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/reconcile/k8s_convert.h"
#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/fake_kube_client.h"
#include "k8s/node_info.h"
#include "k8s/resource.h"
#include "src/base/strings.h"
#include "src/devices/gres.h"
#include "src/devices/k8s_devices.h"
#include "src/devices/test_support.h"
#include "src/health/health_config.h"
#include "src/ownership/time_codec.h"

namespace skb::bridge {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A whole GPU as NVIDIA's driver publishes it (its minor and PCI bus in the same order).
devices::SliceDevice Gpu(int i) {
  return {.name = devices::DeviceName(i),
          .minor = i,
          .type = "gpu",
          .pci_bus_id = StrCat("0000:", 10 + i, ":00.0")};
}

class RecordingEvents final : public k8s::EventRecorder {
 public:
  void Record(const k8s::ObjectReference& o, k8s::EventType, const std::string& reason,
              const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    events.push_back(StrCat(o.kind, " ", o.namespace_.empty() ? "" : o.namespace_ + "/", o.name,
                            " ", reason, ": ", message));
    uids[StrCat(o.kind, " ", o.namespace_.empty() ? "" : o.namespace_ + "/", o.name, " ", reason)] =
        o.uid;
  }
  std::vector<std::string> Reasons() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.substr(0, e.find(':')));
    return out;
  }
  std::mutex mu_;
  std::vector<std::string> events;
  std::map<std::string, std::string> uids;  // "Kind ns/name Reason" -> the object's uid
};

class DeviceLaneTest : public ::testing::Test {
 protected:
  DeviceLaneTest() {
    cfg_.gpu_sharing.enabled = true;
    cfg_.lending.enabled = true;
    skb::slurm::NodeView n;
    n.name = "node1";
    n.base_state = skb::slurm::NodeBaseState::kMixed;
    n.gpus = {{"h100", 8}};
    slurm_.AddNode(n);
    // Job 10 (preemptible) on GPUs 0-3, job 11 (not) on 4-7.
    slurm_.AddJob(Job(10, true));
    slurm_.StartJob(10, "node1", {0, 1, 2, 3});
    slurm_.AddJob(Job(11, false));
    slurm_.StartJob(11, "node1", {4, 5, 6, 7});
    slurm_.SetClock(&clock_);
    // The Kubernetes node: the lane writes its GPU health condition there.
    EXPECT_TRUE(
        kube_
            .Create(k8s::Resource::Nodes(), "",
                    {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node1"}}}})
            .ok());
  }

  static skb::slurm::JobView Job(uint32_t id, bool preemptible) {
    skb::slurm::JobView j;
    j.job_id = id;
    j.name = "train";
    j.partition = "gpu";
    j.state = skb::slurm::JobState::kPending;
    j.requeue = true;
    j.admin_comment = preemptible ? "k8s-bridge:preemptible=true" : "k8s-bridge:preemptible=false";
    return j;
  }

  devices::World World() {
    devices::World w;
    auto nodes = slurm_.LoadNodes(0);
    auto jobs = slurm_.LoadJobs(0);
    EXPECT_TRUE(nodes.ok() && jobs.ok());
    w.slurm_nodes = nodes->items;
    w.jobs = jobs->items;
    w.paired = {{"node1", {.name = "node1", .handover = handover_}}};
    if (auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1"); node.ok()) {
      w.paired["node1"].unused_gives =
          devices::ParseUnusedGives((*node)["metadata"]
                                        .value("annotations", nlohmann::json::object())
                                        .value(devices::kUnusedGivesAnnotation, ""));
      // As Reconciler::PairedNodes reads it, from the node as the informer converts it.
      auto info = k8s::ParseNode(*node);
      EXPECT_TRUE(info.ok()) << info.status();
      if (info.ok()) {
        const inventory::K8sNode k = ToK8sNode(*info);
        if (const inventory::NodeCondition* c =
                k.FindCondition(health::kGpuDevicesHealthyCondition)) {
          w.paired["node1"].devices_condition = *c;
        }
      }
    }
    for (int i = 0; i < published_; ++i) {
      w.slices["node1"].push_back(Gpu(i));
      if (auto t = taints_.find(i); t != taints_.end()) w.slices["node1"].back().taint = t->second;
    }
    if (!drained_.empty()) w.drained["node1"] = drained_;
    auto rules = kube_.List(k8s::Resource::DeviceTaintRules(), "", {});
    EXPECT_TRUE(rules.ok());
    w.held = devices::HeldDevices(rules->items);
    auto claims = kube_.List(k8s::Resource::ResourceClaims(), "", {});
    w.claims = devices::ClaimsByNode(claims->items, "gpu.nvidia.com");
    if (pod_pending_) w.pending.push_back({"ml/infer", 2, 1'000'000, ""});
    if (pod_exists_) w.pod_node["ml/infer"] = pod_pending_ ? "" : "node1";
    return w;
  }

  DeviceLane::Result Pass() {
    DeviceLane::Result r = lane_.RunPass(World());
    RecordDeviceMetrics(r, ownership::ToUnix(clock_.Now()), &metrics_);
    for (const auto& [a, s] : r.outcomes)
      log_.push_back(
          StrCat(devices::ToString(a), " -> ", s.ok() ? EffectName(*s) : s.status().message()));
    ExpectInvariant();
    return r;
  }

  // Per device: never a Slurm job (not a placeholder) and an allocated claim.
  void ExpectInvariant() {
    devices::Observation o = devices::Observe(World(), cfg_, clock_.Now());
    for (const devices::NodeDevices& n : o.nodes) {
      for (const devices::DeviceView& v : devices::Owners(n)) {
        EXPECT_FALSE(v.job != 0 && !v.pods.empty())
            << v.name << " job " << v.job << " and pod " << v.pods[0];
      }
    }
  }

  void AllocateClaim(std::vector<std::string> devs) {
    nlohmann::json results = nlohmann::json::array();
    for (const auto& d : devs) {
      results.push_back(
          {{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node1"}, {"device", d}});
    }
    nlohmann::json claim = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"metadata", {{"name", "infer-gpu"}, {"namespace", "ml"}}},
        {"status",
         {{"allocation", {{"devices", {{"results", results}}}}},
          {"reservedFor", {{{"resource", "pods"}, {"name", "infer"}, {"uid", "u1"}}}}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::ResourceClaims(), "ml", claim).ok());
  }

  std::set<std::string> Held() {
    auto held = devices::HeldDevices(kube_.List(k8s::Resource::DeviceTaintRules(), "", {})->items);
    return held["node1"];
  }

  // The pending and running placeholders (health holds included), by job id.
  std::vector<uint32_t> LivePlaceholders() {
    std::vector<uint32_t> out;
    const auto jobs = slurm_.LoadJobs(0);  // kept: its items are iterated below
    for (const auto& j : jobs->items) {
      if (devices::IsPlaceholder(j) && (j.state == skb::slurm::JobState::kPending ||
                                        j.state == skb::slurm::JobState::kRunning)) {
        out.push_back(j.job_id);
      }
    }
    return out;
  }

  uint32_t PlaceholderId() {
    auto jobs = slurm_.LoadJobs(0);
    for (const auto& j : jobs->items) {
      if (devices::IsPlaceholder(j)) return j.job_id;
    }
    return 0;
  }

  // The give of the first passes, its placeholder started on GPUs 1 and 2, and the action
  // that ends it.
  void GiveOnTwoGpusThenEnd(uint32_t* ph, devices::DeviceAction* end) {
    Pass();
    Pass();
    *ph = PlaceholderId();
    ASSERT_TRUE(slurm_.StartJob(*ph, "node1", {1, 2}));
    end->op = devices::EndPlaceholder{.placeholder_job = *ph};
    end->node = "node1";
  }
  config::Config cfg_;
  // After the fake apiserver's creationTimestamp (2026-01-01) of every object.
  SimulatedClock clock_{ownership::FromUnix(1'800'000'000)};
  slurm::FakeSlurmClient slurm_;
  k8s::FakeKubeClient kube_;
  RecordingEvents events_;
  ActionExecutor node_actions_{&slurm_, &kube_, &events_, &clock_, cfg_.lending};
  DeviceExecutorImpl exec_{&slurm_, &kube_, &events_, &node_actions_, cfg_, &clock_};
  DeviceLane lane_{cfg_, &exec_, &events_, &clock_};
  observability::Registry registry_;
  observability::BridgeMetrics metrics_{&registry_, "test", "22.05"};
  int published_ = 8;                           // the devices node1's slice publishes (gpu-0..)
  std::map<int, std::string> taints_;           // the driver's taint of gpu-<i> in the slice
  std::map<std::string, std::string> drained_;  // an admin's GPU drains: device -> why
  bool pod_pending_ = true;
  bool pod_exists_ = true;
  plan::Handover handover_ = plan::Handover::kHandedOver;
  std::vector<std::string> log_;
};

TEST_F(DeviceLaneTest, AGiveTakesTheGpusOfThePreemptibleJobOnlyAndTheReturnBringsThemBack) {
  exec_.SetPodUids([](const std::string& pod) { return pod == "ml/infer" ? "uid-infer" : ""; });
  // Pass 1: the node enters GPU granularity: every device is held for Slurm, and no give
  // counts a device no hold guards yet.
  DeviceLane::Result r = Pass();
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(Held().size(), 8u);
  EXPECT_EQ(PlaceholderId(), 0u);
  EXPECT_THAT(r.plan.waiting.at("ml/infer"), HasSubstr("cannot free them"));
  // Pass 2: the give asks Slurm for 2 GPUs (job 10 the victim, job 11 is not preemptible).
  Pass();
  const uint32_t ph = PlaceholderId();
  ASSERT_NE(ph, 0u);
  auto rec = devices::ParsePlaceholderRecord(slurm_.Job(ph).admin_comment);
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->victims, std::vector<uint32_t>{10});
  EXPECT_EQ(rec->pod, "ml/infer");

  // Pass 2: the victim gets its checkpoint signal, recorded on the placeholder to the
  // millisecond.
  clock_.Advance(std::chrono::milliseconds(250));
  const Clock::TimePoint signalled = clock_.Now();
  DeviceLane::Result signal = Pass();
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr("SignalJob 10 10")));
  rec = devices::ParsePlaceholderRecord(slurm_.Job(ph).admin_comment);
  EXPECT_EQ(rec->signalled_at, ownership::ToUnix(signalled));
  EXPECT_EQ(rec->signalled_at_ms, ownership::ToUnixMillis(signalled));
  // Nothing new within the grace (no second signal, no preemption), and the plan names its end.
  DeviceLane::Result within = Pass();
  EXPECT_EQ(within.plan.recheck_at, signalled + cfg_.lending.default_grace);
  EXPECT_EQ(slurm_.Calls("SignalJob"), 1);
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 0);

  // Grace over: job 10 is requeued; job 11 is never touched.
  clock_.Set(*within.plan.recheck_at);
  Pass();
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr("RequeueJob 10")));
  // Slurm starts the placeholder on two of job 10's GPUs.
  ASSERT_TRUE(slurm_.StartJob(ph, "node1", {1, 2}));
  Pass();
  EXPECT_EQ(Held(), (std::set<std::string>{"gpu-0", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"}));

  // kube-scheduler places the pod on the two lent devices.
  pod_pending_ = false;
  AllocateClaim({"gpu-1", "gpu-2"});
  Pass();
  clock_.Advance(std::chrono::minutes(10));
  Pass();
  EXPECT_EQ(slurm_.Job(ph).state, skb::slurm::JobState::kRunning);  // in use: no return

  // The pod leaves; after the cool-down the devices are held again, then the placeholder ends.
  pod_exists_ = false;
  ASSERT_TRUE(kube_.Delete(k8s::Resource::ResourceClaims(), "ml", "infer-gpu").ok());
  Pass();  // idle since now
  clock_.Advance(std::chrono::minutes(3));
  Pass();  // returning + holds again
  EXPECT_EQ(Held().size(), 8u);
  const Clock::TimePoint held = clock_.Now();
  // The holds are this executor's, just made: the placeholder stays until they have settled,
  // and the pass says when that is (the lane plans again then, not at the next second).
  DeviceLane::Result settling = Pass();
  EXPECT_EQ(slurm_.Calls("CancelJob"), 0);
  EXPECT_EQ(settling.retry_at, held + devices::kHoldSettle);
  clock_.Set(*settling.retry_at);
  Pass();  // no claim on them: the placeholder ends
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr(StrCat("CancelJob ", ph))));
  for (const std::string& w : slurm_.Writes()) EXPECT_THAT(w, Not(HasSubstr(" 11"))) << w;
  EXPECT_THAT(events_.Reasons(), Contains("Node node1 GpusLent"));
  EXPECT_THAT(events_.Reasons(), Contains("Pod ml/infer GpusLent"));
  EXPECT_EQ(events_.uids.at("Pod ml/infer GpusLent"), "uid-infer")
      << "kubectl describe pod shows it";
  EXPECT_THAT(events_.Reasons(), Contains("Node node1 GpusReturned"));

  // What moved, once each: 2 GPUs each way, one job preempted after its grace.
  const std::string text = registry_.Render();
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_moves_total{direction=\"to-k8s\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_moves_total{direction=\"to-slurm\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("skb_preemptions_total{mode=\"requeue\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("skb_preemption_grace_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("skb_preemption_grace_seconds_sum 60\n"));  // signal -> requeue
  // Submitted at the second pass, lifted 60 s later (the grace, to the millisecond: the
  // metrics count whole seconds); idle 3 min and the holds' settle before the end.
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_give_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_give_duration_seconds_sum 60\n"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_return_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_return_duration_seconds_sum 185\n"));
  EXPECT_THAT(text,
              HasSubstr("skb_actions_total{kind=\"SubmitPlaceholder\",outcome=\"success\"} 1\n"));
}

// A step planned again from a cache that has not seen its own last write (the poll lags
// Slurm, the informer the apiserver) finds it done: kUnchanged, no second Event, nothing
// counted twice.
TEST_F(DeviceLaneTest, AStepRepeatedOnALaggingCacheChangesNothingAndIsCountedOnce) {
  Pass();  // holds
  Pass();  // the placeholder
  const uint32_t ph = PlaceholderId();
  ASSERT_NE(ph, 0u);
  pod_pending_ = false;
  ASSERT_TRUE(slurm_.StartJob(ph, "node1", {1, 2}));
  const devices::NodeDevices before = lane_.Nodes().at(0);  // the holds still on gpu-1, gpu-2
  devices::DeviceAction lift;
  lift.op = devices::RemoveDeviceHold{
      .devices = {"gpu-1", "gpu-2"}, .placeholder_job = ph, .pod = "ml/infer"};
  lift.node = "node1";
  lift.event_reason = "GpusLent";
  lift.event_message = "devices gpu-1,gpu-2 lent to ml/infer";
  StatusOr<Effect> first = exec_.Execute(lift, before, "node1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, Effect::kChanged);
  StatusOr<Effect> again = exec_.Execute(lift, before, "node1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, Effect::kUnchanged);
  const std::vector<std::string> reasons = events_.Reasons();
  const auto lent = std::count(reasons.begin(), reasons.end(), "Node node1 GpusLent");
  EXPECT_EQ(lent, 1);

  DeviceLane::Result r;
  r.outcomes.emplace_back(lift, *first);
  r.outcomes.emplace_back(lift, *again);
  RecordDeviceMetrics(r, ownership::ToUnix(clock_.Now()), &metrics_);
  const std::string text = registry_.Render();
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_moves_total{direction=\"to-k8s\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("skb_actions_total{kind=\"RemoveDeviceHold\",outcome=\"success\"} 2\n"));

  // The same for the submission (the poll had not seen the placeholder) and the end.
  devices::DeviceAction submit;
  submit.op = devices::SubmitPlaceholder{.pod = "ml/infer", .gpus = 2};
  submit.node = "node1";
  EXPECT_EQ(exec_.Execute(submit, before, "node1").value(), Effect::kUnchanged);
  devices::DeviceAction end;
  end.op = devices::EndPlaceholder{.placeholder_job = 999};  // gone already
  end.node = "node1";
  EXPECT_EQ(exec_.Execute(end, before, "node1").value(), Effect::kUnchanged);
}

// A give whose lifted GPUs kube-scheduler gave to another pod: the new give for the pod that
// still waits first hands the old placeholder to the pod that took its GPUs (its record),
// then submits the pod's own; run again, it changes nothing.
TEST_F(DeviceLaneTest, AGiveForAPodWhosePlaceholderWasTakenHandsTheOldOneToTheTaker) {
  Pass();  // holds
  Pass();  // the placeholder
  const uint32_t ph = PlaceholderId();
  ASSERT_NE(ph, 0u);
  const devices::NodeDevices before = lane_.Nodes().at(0);
  devices::DeviceAction again;
  again.op = devices::SubmitPlaceholder{
      .pod = "ml/infer", .gpus = 2, .taken_job = ph, .taken_by = "ml/thief"};
  again.node = "node1";
  StatusOr<Effect> first = exec_.Execute(again, before, "node1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, Effect::kChanged);
  // Placeholder job -> the pod its record names.
  auto pods = [&] {
    std::map<uint32_t, std::string> out;
    auto jobs = slurm_.LoadJobs(0);
    for (const auto& j : jobs->items) {
      if (auto r = devices::ParsePlaceholderRecord(j.admin_comment)) out[j.job_id] = r->pod;
    }
    return out;
  };
  std::map<uint32_t, std::string> now = pods();
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[ph], "ml/thief");
  EXPECT_EQ(std::count_if(now.begin(), now.end(), [](auto& e) { return e.second == "ml/infer"; }),
            1);
  StatusOr<Effect> twice = exec_.Execute(again, before, "node1");
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ(*twice, Effect::kUnchanged);
  EXPECT_EQ(pods(), now);
}

// A victim that dies of its checkpoint signal (it does not trap it) instead of waiting for
// the grace is requeued like a preempted job, as on whole nodes, not left FAILED (found by
// the chaos suite in dra mode: two jobs lost).
TEST_F(DeviceLaneTest, AVictimThatDiesOfItsSignalIsRequeuedNotLost) {
  Pass();  // holds
  Pass();  // the placeholder, job 10 its victim
  Pass();  // job 10 signalled
  ASSERT_THAT(slurm_.Writes(), Contains(HasSubstr("SignalJob 10 10")));
  skb::slurm::JobView died = slurm_.Job(10);
  died.state = skb::slurm::JobState::kFailed;
  died.exit_signal = 10;
  died.end_time = ownership::ToUnix(clock_.Now());
  died.gpu_indices.clear();
  slurm_.AddJob(died);
  clock_.Advance(std::chrono::seconds(1));
  Pass();
  EXPECT_THAT(slurm_.Writes(), Contains("RequeueJob 10 hold=0"));
  EXPECT_EQ(slurm_.Job(10).state, skb::slurm::JobState::kPending);
  EXPECT_THAT(events_.Reasons(), Contains("Node node1 EndedJobRequeued"));
  Pass();  // requeued: not again
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 1);
  EXPECT_THAT(registry_.Render(), HasSubstr("skb_preemptions_total{mode=\"requeue\"} 1\n"));
}

// The bridge as a process that dies after `budget` device actions: every later one fails
// without effect (the process is gone), and `after_each` checks the world after every
// action that ran. A budget < 0 never dies.
class KilledAfter final : public DeviceExecutor {
 public:
  KilledAfter(DeviceExecutor* inner, int budget, std::function<void()> after_each)
      : inner_(inner), budget_(budget), after_each_(std::move(after_each)) {}
  StatusOr<Effect> Execute(const devices::DeviceAction& a, const devices::NodeDevices& n,
                           const std::string& k8s_node) override {
    if (budget_ == 0) return UnavailableError("the bridge was killed (kill -9)");
    if (budget_ > 0) --budget_;
    StatusOr<Effect> s = inner_->Execute(a, n, k8s_node);
    ++ran_;
    after_each_();
    return s;
  }
  bool dead() const { return budget_ == 0; }
  int ran() const { return ran_; }

 private:
  DeviceExecutor* const inner_;
  int budget_;
  std::function<void()> after_each_;
  int ran_ = 0;
};

// The story of AGiveTakes... with the world reacting to state instead of to a script, and
// the bridge killed after its k-th action for every k, then started again from nothing
// but what Slurm and Kubernetes hold (in-memory state such as the signal dedup is lost).
// After every action and every pass: no GPU is given to both sides, no device without a
// hold runs a Slurm job that is not the placeholder; the story always ends with the pod
// served, the devices held again, the placeholder gone, job 11 never touched.
class DeviceLaneCrashTest : public DeviceLaneTest {
 protected:
  // The placeholder while it is pending or running, else 0.
  uint32_t ActivePlaceholder() {
    const uint32_t ph = PlaceholderId();
    if (ph == 0) return 0;
    const skb::slurm::JobState st = slurm_.Job(ph).state;
    return st == skb::slurm::JobState::kPending || st == skb::slurm::JobState::kRunning ? ph : 0;
  }

  // Every device without a hold is the placeholder's or free: never a real job's.
  void ExpectUnheldIsNeverAJobs() {
    const std::set<std::string> held = Held();
    devices::Observation o = devices::Observe(World(), cfg_, clock_.Now());
    for (const devices::NodeDevices& n : o.nodes) {
      for (const devices::DeviceView& v : devices::Owners(n)) {
        if (!held.contains(v.name) && ActivePlaceholder() != 0) {
          EXPECT_EQ(v.job, 0u) << v.name << " has no hold and runs job " << v.job;
        }
      }
    }
  }

  // Slurm and kube-scheduler, reacting to what the bridge did.
  void React() {
    const uint32_t ph = ActivePlaceholder();
    if (ph != 0 && slurm_.Job(ph).state == skb::slurm::JobState::kPending &&
        slurm_.Job(10).state != skb::slurm::JobState::kRunning) {
      // Slurm starts the placeholder on GPUs no running job uses.
      std::set<int64_t> busy;
      auto jobs = slurm_.LoadJobs(0);
      ASSERT_TRUE(jobs.ok());
      for (const skb::slurm::JobView& j : jobs->items) {
        if (j.state != skb::slurm::JobState::kRunning) continue;
        for (const auto& entry : j.gpu_indices) {
          busy.insert(entry.second.begin(), entry.second.end());
        }
      }
      std::vector<int64_t> free;
      for (int64_t i = 0; i < 8 && free.size() < 2; ++i) {
        if (!busy.contains(i)) free.push_back(i);
      }
      if (free.size() == 2) {
        EXPECT_TRUE(slurm_.StartJob(ph, "node1", free));
      }
    }
    if (pod_pending_ && ph != 0 && slurm_.Job(ph).state == skb::slurm::JobState::kRunning) {
      // kube-scheduler binds the pod on two devices without a hold, if there are two.
      const std::set<std::string> held = Held();
      std::vector<std::string> open;
      for (int i = 0; i < 8; ++i) {
        if (!held.contains(devices::DeviceName(i))) open.push_back(devices::DeviceName(i));
      }
      if (open.size() >= 2) {
        AllocateClaim({open[0], open[1]});
        pod_pending_ = false;
        pod_started_ = clock_.Now();
      }
    }
    if (!pod_pending_ && pod_exists_ && clock_.Now() - pod_started_ > std::chrono::minutes(10)) {
      pod_exists_ = false;  // the inference pod is done
      EXPECT_TRUE(kube_.Delete(k8s::Resource::ResourceClaims(), "ml", "infer-gpu").ok());
    }
  }

  bool Done() { return !pod_exists_ && ActivePlaceholder() == 0 && Held().size() == 8u; }

  // Runs the story with the bridge killed after its `kill_after`-th action (-1: never);
  // returns how many actions the bridge ran in all.
  int Story(int kill_after) {
    int ran = 0;
    int budget = kill_after;
    for (int life = 0; life < 2; ++life) {
      // A new process: executors and lane start from nothing.
      ActionExecutor node_actions(&slurm_, &kube_, &events_, &clock_, cfg_.lending);
      DeviceExecutorImpl impl(&slurm_, &kube_, &events_, &node_actions, cfg_, &clock_);
      KilledAfter exec(&impl, budget, [&] {
        ExpectInvariant();
        ExpectUnheldIsNeverAJobs();
      });
      DeviceLane lane(cfg_, &exec, &events_, &clock_);
      for (int pass = 0; pass < 200 && !Done(); ++pass) {
        lane.RunPass(World());
        ExpectInvariant();
        ExpectUnheldIsNeverAJobs();
        if (exec.dead()) break;
        React();
        clock_.Advance(std::chrono::seconds(10));
      }
      ran += exec.ran();
      if (!exec.dead()) break;
      budget = -1;  // restarted: lives on
    }
    return ran;
  }

  Clock::TimePoint pod_started_;
};

// Kills after action 1 .. kMaxActions; the story without a kill must run fewer actions, so
// every one of its actions is a kill point.
constexpr int kMaxActions = 12;

TEST_F(DeviceLaneCrashTest, TheStoryEndsWellWithoutAKill) {
  const int actions = Story(-1);
  EXPECT_TRUE(Done());
  EXPECT_GE(actions, 6) << "holds, placeholder, signal, preemption, lift, hold again, end";
  EXPECT_LT(actions, kMaxActions) << "raise kMaxActions: some kill points are not tested";
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 1);
}

class DeviceLaneKillTest : public DeviceLaneCrashTest, public ::testing::WithParamInterface<int> {};

TEST_P(DeviceLaneKillTest, KilledAfterThisActionTheRestartedBridgeFinishesTheStory) {
  Story(GetParam());
  EXPECT_TRUE(Done()) << "pod " << (pod_exists_ ? "still there" : "gone") << ", placeholder "
                      << ActivePlaceholder() << ", " << Held().size() << " held";
  // The victim is preempted once; a kill right after a signal may repeat the signal once.
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 1);
  EXPECT_LE(slurm_.Calls("SignalJob"), 2);
  for (const std::string& w : slurm_.Writes()) EXPECT_THAT(w, Not(HasSubstr(" 11"))) << w;
}

INSTANTIATE_TEST_SUITE_P(EveryAction, DeviceLaneKillTest, ::testing::Range(1, kMaxActions));

TEST_F(DeviceLaneTest, HoldsAreNotLiftedUnlessThePlaceholderRunsOnThoseDevices) {
  Pass();
  Pass();
  const uint32_t ph = PlaceholderId();
  ASSERT_NE(ph, 0u);
  // Forge the state a stale cache could show: a lift planned while Slurm moved on.
  devices::NodeDevices n = lane_.Nodes().at(0);
  devices::DeviceAction lift;
  lift.op =
      devices::RemoveDeviceHold{.devices = {"gpu-1"}, .placeholder_job = ph};  // still pending
  lift.node = "node1";
  Status s = exec_.Execute(lift, n, "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  ASSERT_TRUE(slurm_.StartJob(ph, "node1", {5, 6}));  // running, on other devices
  s = exec_.Execute(lift, n, "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(Held(), Contains("gpu-1"));
}

// Path 7 of the device-lane review: a pass planned on a Slurm poll from before a return was
// recorded sees the placeholder giving and plans to lift the holds the return has just put
// back. Before: lifted (and a pod could take the devices again). Now the executor reads the
// placeholder's record in Slurm and keeps them.
TEST_F(DeviceLaneTest, HoldsAReturnPutBackAreNotLiftedByAPassPlannedBeforeIt) {
  Pass();
  Pass();
  const uint32_t ph = PlaceholderId();
  ASSERT_NE(ph, 0u);
  ASSERT_TRUE(slurm_.StartJob(ph, "node1", {1, 2}));
  auto record = devices::ParsePlaceholderRecord(slurm_.Job(ph).admin_comment);
  ASSERT_TRUE(record.has_value());
  record->returning = true;
  ASSERT_TRUE(slurm_
                  .SetAdminComment(
                      ph, devices::MergePlaceholderRecord(slurm_.Job(ph).admin_comment, *record))
                  .ok());
  devices::DeviceAction lift;
  lift.op = devices::RemoveDeviceHold{.devices = {"gpu-1", "gpu-2"}, .placeholder_job = ph};
  lift.node = "node1";
  Status s = exec_.Execute(lift, lane_.Nodes().at(0), "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("returning"));
  EXPECT_THAT(Held(), Contains("gpu-1"));
}

// Someone edits a hold (effect None: kube-scheduler would hand the device out) or points it
// at another device: the lane reads the rule as holding nothing, and the hold it adds again
// finds the name taken, reads the rule and makes it the hold again.
TEST_F(DeviceLaneTest, AHoldEditedBySomeoneElseIsMadeTheHoldAgain) {
  Pass();
  ASSERT_THAT(Held(), Contains("gpu-1"));
  const std::string name = devices::HoldRuleName("node1", "gpu-1");
  auto rule = kube_.Get(k8s::Resource::DeviceTaintRules(), "", name);
  ASSERT_TRUE(rule.ok());
  (*rule)["spec"]["taint"]["effect"] = "None";
  ASSERT_TRUE(kube_.Update(k8s::Resource::DeviceTaintRules(), "", *rule).ok());
  ASSERT_THAT(Held(), Not(Contains("gpu-1")));
  Pass();
  EXPECT_THAT(Held(), Contains("gpu-1"));
  EXPECT_EQ((*kube_.Get(k8s::Resource::DeviceTaintRules(), "", name))["spec"]["taint"]["effect"],
            "NoSchedule");

  rule = kube_.Get(k8s::Resource::DeviceTaintRules(), "", name);
  (*rule)["spec"]["deviceSelector"]["device"] = "gpu-7";
  ASSERT_TRUE(kube_.Update(k8s::Resource::DeviceTaintRules(), "", *rule).ok());
  ASSERT_THAT(Held(), Not(Contains("gpu-1")));
  Pass();
  EXPECT_THAT(Held(), Contains("gpu-1"));
  EXPECT_EQ(
      (*kube_.Get(k8s::Resource::DeviceTaintRules(), "", name))["spec"]["deviceSelector"]["device"],
      "gpu-1");
}

TEST_F(DeviceLaneTest, APlaceholderIsNotEndedWhileAClaimIsStillAllocatedOnItsDevices) {
  Pass();
  Pass();
  const uint32_t ph = PlaceholderId();
  ASSERT_TRUE(slurm_.StartJob(ph, "node1", {1, 2}));
  AllocateClaim({"gpu-2"});
  devices::DeviceAction end;
  end.op = devices::EndPlaceholder{.placeholder_job = ph};
  end.node = "node1";
  clock_.Advance(devices::kHoldSettle);  // the holds have settled
  Status s = exec_.Execute(end, lane_.Nodes().at(0), "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("gpu-2"));
  EXPECT_EQ(slurm_.Job(ph).state, skb::slurm::JobState::kRunning);
}

// Path 6 of the device-lane review: a node leaving GPU sharing because its index-to-device
// mapping went ends its running placeholders. Before: the placeholder's indices mapped to no
// device, so nothing was checked (no hold, no claim) and it ended with a pod's claim still
// allocated on the node. Now every device of the node counts.
TEST_F(DeviceLaneTest, APlaceholderOfANodeWithoutAMappingIsNotEndedWhileAnyClaimIsAllocated) {
  uint32_t ph = 0;
  devices::DeviceAction end;
  ASSERT_NO_FATAL_FAILURE(GiveOnTwoGpusThenEnd(&ph, &end));
  devices::NodeDevices unmapped = lane_.Nodes().at(0);
  for (devices::Device& d : unmapped.devices) d.index = -1;
  AllocateClaim({"gpu-5"});
  Status s = exec_.Execute(end, unmapped, "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_EQ(slurm_.Job(ph).state, skb::slurm::JobState::kRunning);
}

TEST_F(DeviceLaneTest, APlaceholderIsNotEndedUntilItsHoldsHaveSettled) {
  uint32_t ph = 0;
  devices::DeviceAction end;
  ASSERT_NO_FATAL_FAILURE(GiveOnTwoGpusThenEnd(&ph, &end));
  // This executor made the holds in the first pass, at clock_'s time then (1.8e9 s): until
  // kHoldSettle later kube-scheduler may still write an allocation it decided before them.
  // The executor counts from its own write, to the millisecond, and says when to try again.
  const Clock::TimePoint made = ownership::FromUnix(1'800'000'000);
  ASSERT_EQ(exec_.TakeRetryAt(), std::nullopt);
  clock_.Set(made + devices::kHoldSettle - std::chrono::milliseconds(1));
  Status s = exec_.Execute(end, lane_.Nodes().at(0), "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("younger than 5 s"));
  EXPECT_EQ(exec_.TakeRetryAt(), made + devices::kHoldSettle);
  EXPECT_EQ(exec_.TakeRetryAt(), std::nullopt) << "taken";
  clock_.Set(made + devices::kHoldSettle);
  EXPECT_TRUE(exec_.Execute(end, lane_.Nodes().at(0), "node1").ok());
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr(StrCat("CancelJob ", ph))));
}

// A restarted bridge did not make the holds it finds (nor does a bridge whose rule someone
// deleted and made again): it counts from their creationTimestamp, which keeps whole seconds,
// so from the second after it.
TEST_F(DeviceLaneTest, HoldsMadeBeforeARestartSettleFromTheirCreationTimestamp) {
  uint32_t ph = 0;
  devices::DeviceAction end;
  ASSERT_NO_FATAL_FAILURE(GiveOnTwoGpusThenEnd(&ph, &end));
  DeviceExecutorImpl restarted{&slurm_, &kube_, &events_, &node_actions_, cfg_, &clock_};
  // The holds were created at 2026-01-01T00:00:00Z (the fake's creationTimestamp).
  clock_.Set(ownership::FromUnix(1'767'225'602));
  Status s = restarted.Execute(end, lane_.Nodes().at(0), "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("younger than 5 s"));
  EXPECT_EQ(restarted.TakeRetryAt(), ownership::FromUnix(1'767'225'606));
  // Five seconds after the second it was created in may be only four after the hold.
  clock_.Set(ownership::FromUnix(1'767'225'605));
  s = restarted.Execute(end, lane_.Nodes().at(0), "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  clock_.Set(ownership::FromUnix(1'767'225'606));
  EXPECT_TRUE(restarted.Execute(end, lane_.Nodes().at(0), "node1").ok());
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr(StrCat("CancelJob ", ph))));
}

// kube-scheduler names the node in a pod's status.nominatedNodeName before it writes the
// allocation of the pod's claim (its binding cycle, which an apiserver restart can stretch
// far beyond the settle time): while an unbound pod is nominated there, the placeholder stays.
TEST_F(DeviceLaneTest, APlaceholderIsNotEndedWhileAPodIsBeingBoundToTheNode) {
  uint32_t ph = 0;
  devices::DeviceAction end;
  ASSERT_NO_FATAL_FAILURE(GiveOnTwoGpusThenEnd(&ph, &end));
  clock_.Advance(devices::kHoldSettle);  // the holds have settled
  nlohmann::json pod = {
      {"metadata", {{"name", "late"}, {"namespace", "ml"}}},
      {"spec",
       {{"containers",
         {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}},
      {"status", {{"phase", "Pending"}, {"nominatedNodeName", "node1"}}}};
  ASSERT_TRUE(kube_.Create(k8s::Resource::Pods(), "ml", pod).ok());
  // Nominated elsewhere, asking no GPU, or already bound (its claim is then written): no
  // matter.
  nlohmann::json other = pod;
  other["metadata"]["name"] = "elsewhere";
  other["status"]["nominatedNodeName"] = "node2";
  ASSERT_TRUE(kube_.Create(k8s::Resource::Pods(), "ml", other).ok());
  nlohmann::json cpu_only = pod;
  cpu_only["metadata"]["name"] = "cpu-only";
  cpu_only["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "1"}}}};
  ASSERT_TRUE(kube_.Create(k8s::Resource::Pods(), "ml", cpu_only).ok());
  Status s = exec_.Execute(end, lane_.Nodes().at(0), "node1").status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("pod ml/late is being bound to node1"));
  EXPECT_EQ(slurm_.Job(ph).state, skb::slurm::JobState::kRunning);
  pod["spec"]["nodeName"] = "node1";
  ASSERT_TRUE(kube_.Update(k8s::Resource::Pods(), "ml", pod).ok());
  EXPECT_TRUE(exec_.Execute(end, lane_.Nodes().at(0), "node1").ok());
}

// kube-scheduler never places the pod on the GPUs given to it (a rule the bridge does not
// judge): the give returns after the cool-down, recorded on the Kubernetes node first, and
// the node gets no give for that pod again until the back-off ends, however often the lane
// passes. The record survives a restart: it is read back from the node.
TEST_F(DeviceLaneTest, AGiveThePodDidNotUseIsRecordedOnTheNodeAndNotRepeatedUntilTheBackoffEnds) {
  ASSERT_TRUE(kube_
                  .Patch(k8s::Resource::Nodes(), "", "node1", k8s::PatchType::kJsonMerge,
                         {{"metadata", {{"annotations", {{"other", "kept"}}}}}})
                  .ok());
  Pass();  // holds
  Pass();  // the give: job 10 is the victim
  const uint32_t ph = PlaceholderId();
  ASSERT_NE(ph, 0u);
  Pass();  // signal
  clock_.Advance(std::chrono::seconds(61));
  Pass();  // requeue
  ASSERT_TRUE(slurm_.StartJob(ph, "node1", {1, 2}));
  Pass();  // holds lifted; the pod stays pending
  Pass();  // idle since now
  clock_.Advance(cfg_.lending.min_lend_time);
  DeviceLane::Result r = Pass();  // recorded unused, returning, held again
  ASSERT_EQ(r.failed, 0) << StrJoin(log_, "\n");
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  const nlohmann::json& ann = (*node)["metadata"]["annotations"];
  EXPECT_EQ(ann.value("other", ""), "kept");
  EXPECT_EQ(ann.value(devices::kUnusedGivesAnnotation, ""),
            StrCat("ml/infer/", ph, "@", ownership::ToUnix(clock_.Now())));
  EXPECT_THAT(events_.Reasons(), Contains("Pod ml/infer GiveUnused"));
  EXPECT_THAT(events_.Reasons(), Contains("Node node1 GiveUnused"));
  clock_.Advance(std::chrono::seconds(10));  // the holds settle
  Pass();                                    // the placeholder ends
  EXPECT_EQ(slurm_.Job(ph).state, skb::slurm::JobState::kCancelled);
  EXPECT_EQ(Held().size(), 8u);

  // Passes over the back-off (10 min by default) start no give for the pod, and say why.
  const int submitted = slurm_.Calls("SubmitPlaceholder");
  for (int i = 0; i < 9; ++i) {
    clock_.Advance(std::chrono::minutes(1));
    r = Pass();
    EXPECT_THAT(r.plan.waiting.at("ml/infer"), HasSubstr("1 give(s) there went unused"));
  }
  EXPECT_EQ(slurm_.Calls("SubmitPlaceholder"), submitted);
  EXPECT_THAT(events_.Reasons(), Contains("Pod ml/infer GpusNotFreed"));
  clock_.Advance(std::chrono::minutes(1));
  Pass();
  EXPECT_EQ(slurm_.Calls("SubmitPlaceholder"), submitted + 1) << "tried again after the back-off";
}

// The record is appended to what the node holds (one per placeholder), written against the
// node as read: a node changed since is a conflict, and the next pass writes it again.
// A pending pod whose GPU demand cannot be sized (a claim of allocationMode All) gets no give
// and is told why, once.
TEST_F(DeviceLaneTest, APodWhoseDemandCannotBeSizedIsToldWhy) {
  pod_pending_ = false;
  devices::World w = World();
  w.not_counted["ml/every"] = "ResourceClaim ml/every-gpu: request gpu asks for every device";
  w.pod_uid["ml/every"] = "uid-every";
  DeviceLane::Result r = lane_.RunPass(w);
  EXPECT_EQ(PlaceholderId(), 0u);
  lane_.RunPass(w);
  // Named by uid too, as kubectl describe pod selects its Events.
  EXPECT_EQ(events_.uids.at("Pod ml/every GpusNotFreed"), "uid-every");
  int told = 0;
  for (const std::string& e : events_.events) {
    if (e.find("Pod ml/every GpusNotFreed") == std::string::npos) continue;
    ++told;
    EXPECT_THAT(e, HasSubstr("frees no GPUs for this pod yet: ResourceClaim ml/every-gpu: request "
                             "gpu asks for every device"));
  }
  EXPECT_EQ(told, 1);
}

TEST_F(DeviceLaneTest, AnUnusedGiveRecordIsConditionalOnTheNodeAsRead) {
  devices::DeviceAction a;
  a.op =
      devices::RecordUnusedGive{.placeholder_job = 42, .pod = "ml/infer", .at_unix = 1'800'000'000};
  a.node = "node1";
  devices::NodeDevices nd;
  nd.node = "node1";
  auto first = exec_.Execute(a, nd, "node1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, Effect::kChanged);
  auto again = exec_.Execute(a, nd, "node1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, Effect::kUnchanged) << "one record per placeholder";
  a.As<devices::RecordUnusedGive>().placeholder_job = 43;
  a.As<devices::RecordUnusedGive>().at_unix += 60;
  ASSERT_TRUE(exec_.Execute(a, nd, "node1").ok());
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  EXPECT_EQ((*node)["metadata"]["annotations"].value(devices::kUnusedGivesAnnotation, ""),
            "ml/infer/42@1800000000,ml/infer/43@1800000060");
  // A stale resourceVersion is refused by the apiserver (the fake is as strict).
  auto stale = kube_.Patch(k8s::Resource::Nodes(), "", "node1", k8s::PatchType::kJsonMerge,
                           {{"metadata", {{"resourceVersion", "1"}, {"labels", {{"a", "b"}}}}}});
  EXPECT_FALSE(stale.ok());
  EXPECT_THAT(stale.status().message(), HasSubstr("Conflict"));
}

TEST_F(DeviceLaneTest, ANodeSequenceStopsAtItsFirstFailureAndResumesNextPass) {
  Pass();  // holds
  slurm_.FailNext("SubmitPlaceholder", UnavailableError("slurmctld down"));
  DeviceLane::Result r = Pass();
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(PlaceholderId(), 0u);
  r = Pass();
  EXPECT_EQ(r.failed, 0);
  EXPECT_NE(PlaceholderId(), 0u);
}

// Switching modes: the lane plans a node only once the node lane has handed it over; before,
// it only holds every GPU when the node lane asks (its reservation's claim on them is no
// violation: a hold keeps only new allocations off).
TEST_F(DeviceLaneTest, ANodeNotHandedOverIsOnlyHeldWhenTheNodeLaneAsks) {
  AllocateClaim({devices::DeviceName(0), devices::DeviceName(1)});  // the reservation's
  handover_ = plan::Handover::kWinding;
  DeviceLane::Result r = Pass();
  EXPECT_THAT(r.outcomes, IsEmpty());
  EXPECT_THAT(r.observation.node_granular.at("node1"),
              HasSubstr("waiting for the node lane to hand it over"));
  EXPECT_TRUE(lane_.SharingViews().at("node1").eligible);
  EXPECT_FALSE(lane_.SharingViews().at("node1").all_held);

  handover_ = plan::Handover::kHoldsWanted;
  r = Pass();
  EXPECT_EQ(r.executed, 1);
  EXPECT_EQ(Held().size(), 8u);
  EXPECT_THAT(r.plan.violations, IsEmpty());
  for (const std::string& e : events_.Reasons()) EXPECT_THAT(e, Not(HasSubstr("GpuDoubleBooked")));
  Pass();
  EXPECT_TRUE(lane_.SharingViews().at("node1").all_held);
  EXPECT_THAT(lane_.GranularNodes(), IsEmpty());
}

TEST_F(DeviceLaneTest, ANodeLeavingGpuSharingDropsItsHoldsOnceNoPlaceholderIsLeft) {
  pod_pending_ = pod_exists_ = false;
  Pass();  // every GPU held for Slurm
  ASSERT_EQ(Held().size(), 8u);
  slurm::NodeView n = *slurm_.LoadNode("node1");
  n.gpus = {{"h100", 4}};  // the mapping no longer holds
  slurm_.AddNode(n);
  // The 8 devices are still published: which of them Slurm's jobs use is no longer known,
  // so every hold stays (the node is Slurm's alone).
  DeviceLane::Result r = Pass();
  EXPECT_TRUE(lane_.SharingViews().at("node1").leaving);
  EXPECT_TRUE(r.outcomes.empty());
  EXPECT_EQ(Held().size(), 8u);
  published_ = 6;  // two lost: still the other six are allocatable
  EXPECT_TRUE(Pass().outcomes.empty());
  EXPECT_EQ(Held().size(), 8u);
  published_ = 0;  // the slice goes: nothing left to allocate, the holds go
  r = Pass();
  EXPECT_TRUE(lane_.SharingViews().at("node1").leaving);
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_TRUE(r.outcomes[0].first.Is<devices::DropDeviceHold>())
      << devices::ToString(r.outcomes[0].first);
  EXPECT_THAT(Held(), IsEmpty());
  Pass();
  EXPECT_FALSE(lane_.SharingViews().count("node1")) << "the node lane's again";
}

TEST_F(DeviceLaneTest, AFollowerPlansButDoesNotAct) {
  DeviceLane::Result r = lane_.RunPass(World(), /*acting=*/false);
  EXPECT_FALSE(r.plan.actions.empty());
  EXPECT_THAT(r.outcomes, IsEmpty());
  EXPECT_THAT(Held(), IsEmpty());
  EXPECT_EQ(lane_.GranularNodes(), std::set<std::string>{"node1"});
}

// A leader whose Lease may have passed stops between two actions of a pass, not at its end:
// the actions left (and the pass's Events) are the next leader's, who plans them again.
TEST_F(DeviceLaneTest, ALeaderThatMayHaveLostItsLeaseStopsBetweenTwoActions) {
  // No pod waits; a second idle node: the first pass holds the devices of both, one action
  // each.
  pod_pending_ = pod_exists_ = false;
  skb::slurm::NodeView n;
  n.name = "node2";
  n.base_state = skb::slurm::NodeBaseState::kIdle;
  n.gpus = {{"h100", 8}};
  slurm_.AddNode(n);
  auto world = [&] {
    devices::World w = World();
    w.paired["node2"] = {.name = "node2"};
    for (int i = 0; i < 8; ++i) w.slices["node2"].push_back(Gpu(i));
    // Each node's GPU health condition written already: one action per node.
    for (const devices::NodeDevices& nd : devices::Observe(w, cfg_, clock_.Now()).nodes) {
      if (auto c = devices::PlanDevicesCondition(nd)) {
        w.paired[nd.node].devices_condition =
            devices::test_support::AsWritten(c->As<plan::SetNodeCondition>().condition);
      }
    }
    return w;
  };
  const devices::PassPlan planned = lane_.RunPass(world(), /*acting=*/false).plan;
  ASSERT_EQ(planned.actions.size(), 2u) << "one hold per node";
  int asked = 0;
  lane_.SetActingGate([&] { return ++asked <= 1; });
  DeviceLane::Result r = lane_.RunPass(world());
  EXPECT_TRUE(r.deposed);
  EXPECT_EQ(r.executed, 1);
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(asked, 2) << "asked before each action, and no action after the gate closed";
  auto held = devices::HeldDevices(kube_.List(k8s::Resource::DeviceTaintRules(), "", {})->items);
  EXPECT_EQ(held.size(), 1u) << "one node's hold only";

  // Leading again (or the next leader): the pass carries out what is left.
  lane_.SetActingGate([] { return true; });
  r = lane_.RunPass(world());
  EXPECT_FALSE(r.deposed);
  EXPECT_EQ(r.executed, 1);
  held = devices::HeldDevices(kube_.List(k8s::Resource::DeviceTaintRules(), "", {})->items);
  EXPECT_EQ(held["node1"].size(), 8u);
  EXPECT_EQ(held["node2"].size(), 8u);
}

// The device metrics count each GPU of the shared nodes once, by owner, and every GPU both
// sides claim; nodes that fell back to node granularity are counted apart.
TEST(ExportDeviceMetrics, CountsEachSharedGpuByOwnerAndEveryViolation) {
  devices::NodeDevices n;
  n.node = "node1";
  for (int i = 0; i < 4; ++i) {
    n.devices.push_back({.index = i, .name = StrCat("gpu-", i), .k8s_hold = i != 2});
  }
  devices::Placeholder give;  // holds gpu-1 (still under the hold: to-k8s) and gpu-2 (k8s)
  give.job_id = 50;
  give.running = true;
  give.indices = {1, 2};
  n.placeholders.push_back(give);
  devices::NodeJob job;  // a Slurm job on gpu-0, and a pod's claim on it too: a violation
  job.view.job_id = 7;
  job.view.state = skb::slurm::JobState::kRunning;
  job.indices = {0};
  n.jobs.push_back(job);
  n.claims.push_back({.pod = "ml/infer-0", .devices = {"gpu-0", "gpu-2"}});
  devices::Observation o;
  o.nodes.push_back(n);
  o.node_granular["node2"] = "GPU mapping not proven";

  observability::Registry registry;
  observability::BridgeMetrics m(&registry, "test", "22.05");
  ExportDeviceMetrics(o, &m);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("skb_shared_gpus{owner=\"slurm\"} 2"));  // gpu-0, gpu-3
  EXPECT_THAT(text, HasSubstr("skb_shared_gpus{owner=\"to-k8s\"} 1"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpus{owner=\"k8s\"} 1"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpus{owner=\"to-slurm\"} 0"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpus{owner=\"unguarded\"} 0"));
  EXPECT_THAT(text, HasSubstr("skb_shared_nodes{mode=\"shared\"} 1"));
  EXPECT_THAT(text, HasSubstr("skb_shared_nodes{mode=\"whole\"} 1"));
  EXPECT_THAT(text, HasSubstr("skb_shared_gpu_violations 1"));
}

// The driver taints gpu-5 under job 11, which may not be preempted: a health hold that
// follows the job is submitted (its 4 GPUs, no victim) and the job is left alone. Slurm
// starts the hold as the job ends; it shrinks to 1-GPU holds, the one on gpu-5 stays until
// the driver clears it, and then nothing more moves.
TEST_F(DeviceLaneTest, AGpuTheDriverTaintsIsHeldFromSlurmUntilItIsHealthyAgain) {
  pod_pending_ = false;
  pod_exists_ = false;
  taints_[5] = "gpu.nvidia.com/xid=79:NoSchedule";
  Pass();                                // holds, and the hold that follows job 11
  clock_.Advance(devices::kHoldSettle);  // the holds have settled before anything ends
  const std::vector<uint32_t> follow = LivePlaceholders();
  ASSERT_EQ(follow.size(), 1u) << StrJoin(log_, "\n");
  auto r = devices::ParsePlaceholderRecord(slurm_.Job(follow[0]).admin_comment);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->under_job, 11u);
  EXPECT_EQ(r->gpus, 4);
  EXPECT_THAT(r->victims, IsEmpty()) << "job 11 may not be preempted";
  EXPECT_EQ(r->health, "gpu-5");
  EXPECT_THAT(events_.Reasons(), Contains("Node node1 GpuUnhealthyUnderJob"));
  Pass();
  EXPECT_EQ(LivePlaceholders(), follow) << "nothing twice";
  EXPECT_EQ(slurm_.Calls("SignalJob"), 0);
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 0);

  ASSERT_TRUE(slurm_.CancelJob(11).ok());
  ASSERT_TRUE(slurm_.StartJob(follow[0], "node1", {4, 5, 6, 7}));  // as the job ends
  Pass();  // it shrinks: 1-GPU holds pend on its GPUs
  std::vector<uint32_t> holds = LivePlaceholders();
  std::erase(holds, follow[0]);
  ASSERT_EQ(holds.size(), 4u) << StrJoin(log_, "\n");
  for (uint32_t id : holds) {
    r = devices::ParsePlaceholderRecord(slurm_.Job(id).admin_comment);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->health, "gpu-5");
    EXPECT_EQ(r->gpus, 1);
    EXPECT_EQ(r->under_job, 0u);
  }
  Pass();  // the hold that followed the job ends
  EXPECT_EQ(slurm_.Job(follow[0]).state, skb::slurm::JobState::kCancelled) << StrJoin(log_, "\n");
  for (size_t k = 0; k < holds.size(); ++k) {
    ASSERT_TRUE(slurm_.StartJob(holds[k], "node1", {static_cast<int64_t>(4 + k)}));
  }
  Pass();
  EXPECT_THAT(LivePlaceholders(), ::testing::ElementsAre(holds[1])) << StrJoin(log_, "\n");
  EXPECT_EQ(Held().count("gpu-5"), 1u);

  taints_.clear();  // the driver's health check finds it healthy again
  Pass();
  EXPECT_THAT(LivePlaceholders(), IsEmpty()) << StrJoin(log_, "\n");
  const std::vector<std::string> after = events_.Reasons();
  EXPECT_EQ(std::count(after.begin(), after.end(), "Node node1 GpuHealthy"), 1);
  const size_t writes = slurm_.Writes().size();
  Pass();
  EXPECT_EQ(slurm_.Writes().size(), writes) << "nothing more moves";
}

// The driver taints gpu-2 under job 10, which may be preempted: the hold that follows it
// names it its victim; it gets its checkpoint signal (recorded on the hold), is requeued
// once its grace is over (the preemption recorded on it names the bad GPU), and the hold
// then takes its GPUs. Job 11 on the node's other GPUs is never touched.
TEST_F(DeviceLaneTest, APreemptibleJobOnAGpuTheDriverTaintsIsRequeuedAfterItsGrace) {
  pod_pending_ = false;
  pod_exists_ = false;
  taints_[2] = "gpu.nvidia.com/xid=48:NoSchedule";
  Pass();
  const std::vector<uint32_t> follow = LivePlaceholders();
  ASSERT_EQ(follow.size(), 1u) << StrJoin(log_, "\n");
  auto r = devices::ParsePlaceholderRecord(slurm_.Job(follow[0]).admin_comment);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->victims, std::vector<uint32_t>{10});
  EXPECT_EQ(r->under_job, 10u);

  clock_.Advance(std::chrono::milliseconds(250));
  const Clock::TimePoint signalled = clock_.Now();
  Pass();
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr("SignalJob 10 10")));
  r = devices::ParsePlaceholderRecord(slurm_.Job(follow[0]).admin_comment);
  EXPECT_EQ(r->signalled_at_ms, ownership::ToUnixMillis(signalled));
  DeviceLane::Result within = Pass();
  ASSERT_EQ(within.plan.recheck_at, signalled + cfg_.lending.default_grace);
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 0);

  clock_.Set(*within.plan.recheck_at);
  Pass();
  EXPECT_THAT(slurm_.Writes(), Contains(HasSubstr("RequeueJob 10")));
  EXPECT_THAT(slurm_.Job(10).admin_comment, HasSubstr("@health:node1:gpu-2"));
  ASSERT_TRUE(slurm_.StartJob(follow[0], "node1", {0, 1, 2, 3}));
  Pass();
  EXPECT_EQ(LivePlaceholders().size(), 5u) << "it shrinks to 1-GPU holds";
  EXPECT_EQ(slurm_.Calls("SignalJob"), 1);
  EXPECT_EQ(slurm_.Job(11).state, skb::slurm::JobState::kRunning);
}

// An admin drains gpu-2 under job 10 (`bridgectl drain --gpu`): unlike the driver's taint,
// a drain lets the job finish, even one that may be preempted: the hold that follows it
// names no victim, and the job is never signalled.
TEST_F(DeviceLaneTest, AGpuAnAdminDrainedWaitsForTheJobOnItToFinish) {
  pod_pending_ = false;
  pod_exists_ = false;
  drained_["gpu-2"] = "RMA (bridgectl drain by alice@login1)";
  Pass();
  const std::vector<uint32_t> follow = LivePlaceholders();
  ASSERT_EQ(follow.size(), 1u) << StrJoin(log_, "\n");
  auto r = devices::ParsePlaceholderRecord(slurm_.Job(follow[0]).admin_comment);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->under_job, 10u);
  EXPECT_THAT(r->victims, IsEmpty());
  clock_.Advance(std::chrono::hours(1));
  Pass();
  Pass();
  EXPECT_EQ(slurm_.Calls("SignalJob"), 0);
  EXPECT_EQ(slurm_.Calls("RequeueJob"), 0);
  EXPECT_EQ(slurm_.Job(10).state, skb::slurm::JobState::kRunning);
}

// A give of MIG slices asks Slurm for slices of the pod's profile (Slurm picks which), and
// its record keeps the profile for every pass after it.
TEST_F(DeviceLaneTest, AMigGiveAsksSlurmForSlicesOfItsProfile) {
  devices::DeviceAction submit;
  submit.op = devices::SubmitPlaceholder{
      .pod = "ml/mig", .gpus = 2, .gres_type = "1g.10gb", .profile = "1g.10gb"};
  submit.node = "node1";
  StatusOr<Effect> e = exec_.Execute(submit, devices::NodeDevices{.node = "node1"}, "node1");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, Effect::kChanged);
  ASSERT_THAT(slurm_.Writes(), Contains(HasSubstr("SubmitPlaceholder node1 gpus=2 type=1g.10gb")));
  const uint32_t id = PlaceholderId();
  ASSERT_NE(id, 0u);
  EXPECT_EQ(slurm_.Job(id).gpu_type, "1g.10gb");
  const auto record = devices::ParsePlaceholderRecord(slurm_.Job(id).admin_comment);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->profile, "1g.10gb");
}

}  // namespace
}  // namespace skb::bridge
