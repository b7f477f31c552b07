// SPDX-License-Identifier: Apache-2.0
// The GPU-granular lane (act, for nodes shared GPU by GPU): each pass observes the cluster
// (devices::Observe), plans (devices::PlanPass) and carries out the devices::DeviceActions
// through a DeviceExecutor, per node in order, stopping a node's sequence at its first failure
// (every step is idempotent, so the next pass resumes where this one stopped).
//
//   DeviceExecutorImpl exec(slurm, kube, events, &node_actions, cfg, clock);
//   DeviceLane lane(cfg, &exec, events, clock);
//   DeviceLane::Result r = lane.RunPass(world);   // the controller's device worker, ~1/s
//   reconciler.SetGpuSharing(lane.SharingViews())  // the node lane's half of the handover
//
// The lane keeps nothing a restart would need: holds are DeviceTaintRules, Kubernetes'
// GPUs are placeholder jobs whose admin_comment records the move (devices/observe.h).
// What it keeps in memory: the last observation (SharingViews, for the node lane;
// bridgectl observes on its own, Controller::ObserveDevices, so followers answer too) and which
// violations and waiting pods it already reported (one Event each, not one per pass).
//
// The executor has one handler per device kind (devices::DeviceOperation, each kind's
// contract beside it in src/devices/device_plan.h) and re-checks at the source what the
// pass planned from caches:
//   RemoveDeviceHold  the placeholder is re-read: running, on the node, holding every
//                     device's GRES index; otherwise Aborted (plan again).
//   EndPlaceholder    of a running placeholder: its holds are read (each at least
//                     kHoldSettle old, counted from the end of its creation second), the
//                     unbound pods listed (one nominated to the node is being bound:
//                     kube-scheduler may still write its claim's allocation) and then the
//                     node's claims; a nominated pod or a claim still allocated on its
//                     devices is Aborted.
//   SubmitPlaceholder SlurmClient::SubmitPlaceholder is idempotent per key (the pod; a
//                     health hold's node, device and slot).
//   RecordUnusedGive  the Kubernetes node is re-read: a record of the placeholder already
//                     there is kUnchanged; the patch is conditional on its resourceVersion.
//   DropDeviceHold    a node leaving GPU sharing: its hold rules are deleted, none
//                     re-checked (the planner drops them once no placeholder is left).
//   SignalJobs, plan::PreemptSlurmJobs  the node lane's executor (ActionExecutor) runs the
//                     node lane's kind with the action's fields; a signal's time is then
//                     recorded on the placeholder.
// Thread-safe: one pass at a time (the controller runs one device worker).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bridge/observability/bridge_metrics.h"
#include "bridge/reconcile/action_executor.h"
#include "bridge/slurm/slurm_client.h"
#include "k8s/event_recorder.h"
#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/base/thread_annotations.h"
#include "src/config/config.h"
#include "src/devices/observe.h"
#include "src/devices/pass.h"

namespace skb::bridge {

class DeviceExecutor {
 public:
  virtual ~DeviceExecutor() = default;
  // `node` is the action's node as observed (its device names and GRES indices);
  // `k8s_node` its Kubernetes name (the driver's pool, the Events' object). kChanged when it
  // wrote something, kUnchanged when the source was already as planned (a repeat planned
  // from a cache that lags its own last write): the Event and the metrics count changes only.
  virtual StatusOr<Effect> Execute(const devices::DeviceAction& a, const devices::NodeDevices& node,
                                   const std::string& k8s_node) = 0;
  // When an action it refused for the time alone (Aborted: a hold that has not settled) may
  // go ahead, the earliest since the last call; nullopt when none was. The lane plans again
  // then instead of at the next whole second.
  virtual std::optional<Clock::TimePoint> TakeRetryAt() { return std::nullopt; }
};

class DeviceExecutorImpl : public DeviceExecutor {
 public:
  // All pointers must outlive the executor. `node_actions` carries out the checkpoint
  // signal and the preemption exactly as for whole nodes.
  DeviceExecutorImpl(slurm::SlurmClient* slurm, k8s::KubeClient* kube, k8s::EventRecorder* events,
                     ActionExecutor* node_actions, const config::Config& cfg, const Clock* clock);
  StatusOr<Effect> Execute(const devices::DeviceAction& a, const devices::NodeDevices& node,
                           const std::string& k8s_node) override;
  std::optional<Clock::TimePoint> TakeRetryAt() override;
  // Where a pod's Event finds its uid ("ns/name" -> metadata.uid, "" when not known); set
  // before the first Execute.
  void SetPodUids(std::function<std::string(const std::string&)> uid_of) {
    uid_of_ = std::move(uid_of);
  }

 private:
  // Where an action runs: the node as observed and its Kubernetes name.
  struct Target {
    const devices::NodeDevices& node;
    const std::string& k8s_node;
  };
  // One handler per kind (devices::DeviceOperation); Execute visits. Each records the
  // action's Event when it changed something (Recorded), except the node lane's kinds, whose
  // executor records it.
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::AddDeviceHold& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::RemoveDeviceHold& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::SubmitPlaceholder& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::SignalJobs& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const plan::PreemptSlurmJobs& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::RecordIdleSince& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::MarkReturning& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::EndPlaceholder& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::RecordUnusedGive& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const devices::DropDeviceHold& o,
                       const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const plan::EvictPod& o, const Target& t);
  StatusOr<Effect> Run(const devices::DeviceAction& a, const plan::SetNodeCondition& o,
                       const Target& t);

  // `effect`, having recorded the action's Event on the node (and on `pod` when not empty)
  // if it is kChanged and the action is not quiet.
  Effect Recorded(const devices::DeviceAction& a, Effect effect, const Target& t,
                  const std::string& pod = "");
  // Re-reads the placeholder's record, applies `change`, writes it back (kUnchanged if equal).
  StatusOr<Effect> UpdateRecord(uint32_t job_id,
                                const std::function<void(devices::PlaceholderRecord*)>& change);
  // `a`'s fields with the node lane's operation `op`, run by the node lane's executor.
  StatusOr<Effect> RunOnNodeLane(const devices::DeviceAction& a, plan::Operation op,
                                 const Target& t);

  slurm::SlurmClient* const slurm_;
  k8s::KubeClient* const kube_;
  k8s::EventRecorder* const events_;
  ActionExecutor* const node_actions_;
  const config::Config& cfg_;
  const Clock* const clock_;
  std::function<std::string(const std::string&)> uid_of_;
  // The holds this executor created (or restored), by name: the rule's uid and the time its
  // write had returned (the hold exists since at the latest). A return's settle is counted
  // from that, to the millisecond; a rule it did not make (another uid, or made before a
  // restart) from its whole-second creationTimestamp, a second later to be sure. Bounded by
  // the devices' count (one rule name per device).
  struct HoldMade {
    std::string uid;
    Clock::TimePoint at;
  };
  std::map<std::string, HoldMade> holds_made_;
  std::optional<Clock::TimePoint> retry_at_;
};

class DeviceLane {
 public:
  DeviceLane(const config::Config& cfg, DeviceExecutor* executor, k8s::EventRecorder* events,
             const Clock* clock);

  struct Result {
    devices::Observation observation;
    devices::PassPlan plan;
    int executed = 0;  // actions carried out
    int failed = 0;    // a node's sequence stopped at an error
    // The acting gate closed during the pass: the actions left were not carried out.
    bool deposed = false;
    // In execution order; the error of a failed one.
    std::vector<std::pair<devices::DeviceAction, StatusOr<Effect>>> outcomes;
    // When an action refused for the time alone may go ahead (DeviceExecutor::TakeRetryAt).
    std::optional<Clock::TimePoint> retry_at;
  };
  // One pass. `acting` false: observe and plan only (a follower).
  Result RunPass(const devices::World& world, bool acting = true);
  // Asked before every action of a pass (as the node lane's Reconciler::SetActingGate): a
  // leader whose Lease may have passed to another replica stops between two actions, not
  // at the end of a pass that may hold a whole give or return. Call before the first pass.
  void SetActingGate(std::function<bool()> may_act) { may_act_ = std::move(may_act); }
  // Called after each action that succeeded, with the action's common fields (node, cause,
  // Event reason and message) as a node-lane action: the daemon's test hooks
  // (SKB_TEST_CRASH_AFTER, bridge/action_hooks.h) match Event reasons in both lanes.
  void SetAfterAction(std::function<void(const plan::Action&)> hook) {
    after_action_ = std::move(hook);
  }

  // Nodes shared GPU by GPU (handed over) in the last pass.
  std::set<std::string> GranularNodes() const;
  // What the last pass observed of each paired node, for the node lane
  // (Reconciler::SetGpuSharing): eligible, every GPU held, leaving.
  std::map<std::string, inventory::GpuSharingView> SharingViews() const;
  // The last observation's nodes.
  std::vector<devices::NodeDevices> Nodes() const;

 private:
  void Report(const devices::World& world, const Result& r);
  struct NodeStateEvents {
    std::string_view warning, normal, normal_message, log;
  };
  void ReportNodeStates(const devices::World& world, const std::map<std::string, std::string>& now,
                        std::map<std::string, std::string>* reported, const NodeStateEvents& e);

  const config::Config& cfg_;
  DeviceExecutor* const executor_;
  k8s::EventRecorder* const events_;
  const Clock* const clock_;
  std::function<bool()> may_act_;  // empty: always
  std::function<void(const plan::Action&)> after_action_;
  mutable Mutex mu_;
  std::vector<devices::NodeDevices> nodes_ GUARDED_BY(mu_);
  std::map<std::string, inventory::GpuSharingView> sharing_ GUARDED_BY(mu_);
  // What was already reported as an Event (so each is reported once until it changes).
  std::map<std::string, std::string> reported_waiting_ GUARDED_BY(mu_);
  std::set<std::string> reported_violations_ GUARDED_BY(mu_);
  std::set<uint32_t> reported_suspicious_ GUARDED_BY(mu_);
  std::set<uint32_t> reported_misplaced_ GUARDED_BY(mu_);
  std::map<std::string, std::string> reported_unreadable_ GUARDED_BY(mu_);  // node -> why
  std::map<std::string, std::string> reported_no_gives_ GUARDED_BY(mu_);    // node -> why
};

// Counts what the pass changed: skb_actions_total for each executed action, and for the
// moves that changed something skb_shared_gpu_moves_total{direction} (GPUs lent to
// Kubernetes once their holds are lifted, returned once the placeholder ends), the give and
// return durations, and the preempted jobs (skb_preemptions_total, skb_preemption_grace_seconds,
// as for whole nodes). `now_unix`: the end of the pass.
void RecordDeviceMetrics(const DeviceLane::Result& r, int64_t now_unix,
                         observability::BridgeMetrics* m);

// Sets skb_shared_gpus{owner}, skb_shared_nodes{mode} and skb_shared_gpu_violations from
// one observation of the gpu_sharing nodes (every series set, zeros included).
void ExportDeviceMetrics(const devices::Observation& o, observability::BridgeMetrics* m);

}  // namespace skb::bridge
