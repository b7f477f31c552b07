// SPDX-License-Identifier: Apache-2.0
// The bridge's persisted state: the names of the labels, annotations, taints and finalizer it
// writes on Kubernetes objects. The daemon keeps no state of its own, so these are what it
// reads back after a restart (docs/architecture.md "Node ownership"); renaming one strands
// every record written under the old name. How a value is written and read back is with
// its user: the time annotations in time_codec.h and internal/records.h, the job list in
// reservation.h (FormatJobList), a job's preemption record in preemption_record.h.
//
//   pod.labels[kRoleLabel] == kReservationRole   // the bridge's reservation pod
//   node.annotations.contains(kLentAtAnnotation) // the node is lent to Kubernetes
#pragma once

namespace skb::ownership {

// The finalizer that holds a deleted reservation pod until Slurm has vacated the node.
inline constexpr char kFinalizer[] = "slurm-k8s-bridge.io/reservation";
// Labels of a reservation pod. The role label marks the pod as the bridge's (a pod with the
// reservation's name but without it is someone else's and is never touched).
inline constexpr char kRoleLabel[] = "slurm-k8s-bridge.io/role";
inline constexpr char kReservationRole[] = "reservation";
inline constexpr char kClassLabel[] = "slurm-k8s-bridge.io/class";
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";

// The ResourceQuota the bridge keeps in each tenant namespace (src/quota/guarantee_quota.h),
// labelled managed-by and with its tenant's name.
inline constexpr char kGuaranteeQuotaName[] = "skb-guarantee";
inline constexpr char kTenantLabel[] = "slurm-k8s-bridge.io/tenant";

// Annotations on the reservation pod.
//   jobs: the Slurm jobs on the node, "id user account gpus start;..." (batched).
inline constexpr char kJobsAnnotation[] = "slurm-k8s-bridge.io/jobs";
inline constexpr char kJobsUpdatedAtAnnotation[] = "slurm-k8s-bridge.io/jobs-updated-at";
inline constexpr char kSlurmNodeAnnotation[] = "slurm-k8s-bridge.io/slurm-node";
//   class-wanted: "<class>@<unix>": a lazy class change wanted since then (hysteresis).
inline constexpr char kClassWantedAnnotation[] = "slurm-k8s-bridge.io/class-wanted";
//   replacing=true: the bridge deletes this pod to replace it (a class change), not to
//   lend the node. Set before the delete.
inline constexpr char kReplacingAnnotation[] = "slurm-k8s-bridge.io/replacing";
//   released=true: the pod's container may exit (it reads this through the downward API).
inline constexpr char kReleasedAnnotation[] = "slurm-k8s-bridge.io/released";

// Annotations on the Kubernetes node (they outlive the reservation pod).
//   lent-at: Unix seconds the lend started; its presence marks the node Kubernetes-owned.
inline constexpr char kLentAtAnnotation[] = "slurm-k8s-bridge.io/lent-at";
//   lent-to: "ns/pod" of the preemptor, or "kubernetes".
inline constexpr char kLentToAnnotation[] = "slurm-k8s-bridge.io/lent-to";
//   signalled-at: "jobid:unix.ms,...": when each job got its checkpoint signal (whole
//   seconds, as 0.1.0 wrote them, read too).
inline constexpr char kSignalledAtAnnotation[] = "slurm-k8s-bridge.io/signalled-at";
//   lend-blocked: "jobid,...": non-preemptible jobs a lend waits for (with a Warning).
inline constexpr char kLendBlockedAnnotation[] = "slurm-k8s-bridge.io/lend-blocked";
//   return-blocked: "ns/name" of a pod that is not the bridge's but has the reservation's
//   name, which keeps the lent node from returning (with a Warning).
inline constexpr char kReturnBlockedAnnotation[] = "slurm-k8s-bridge.io/return-blocked";
//   lend-refused-at: Unix seconds a preemption of the reservation was refused (LendRefused):
//   the swap taint stays on until lending.cooldown later, so the preemptor does not preempt
//   every new reservation at once again.
inline constexpr char kLendRefusedAtAnnotation[] = "slurm-k8s-bridge.io/lend-refused-at";
//   idle-since: Unix seconds since when no Kubernetes GPU pod is on the lent node.
inline constexpr char kIdleSinceAnnotation[] = "slurm-k8s-bridge.io/idle-since";
//   gpu-shared-since: Unix seconds the node lane handed the node over to the device lane
//   (gpu_sharing). A record for people and Events, not a guard: which lane has the node is
//   derived (ownership.h "Switching modes").
inline constexpr char kGpuSharedSinceAnnotation[] = "slurm-k8s-bridge.io/gpu-shared-since";

// NoSchedule taints the bridge sets on the node.
//   reservation-swap: while a reservation is replaced (its GPUs are briefly uncounted).
inline constexpr char kSwapTaintKey[] = "slurm-k8s-bridge.io/reservation-swap";
// The label that goes on and off with the swap taint, in the same write: the selector of
// the chart's swap-guard ValidatingAdmissionPolicy. While a node carries it, the apiserver
// refuses to bind any pod to it (kube-scheduler's pods/binding, whatever the pod
// tolerates) and to create a GPU pod with spec.nodeName on it, except for the bridge
// itself: the two ways around a NoSchedule taint during the swap's uncounted window.
inline constexpr char kSwapGuardLabel[] = "slurm-k8s-bridge.io/swap-guard";
//   slurm-busy: Slurm work remains on a lent node whose reservation no longer (or soon no
//   longer) holds the GPUs in Kubernetes' count, or whose signalled jobs outlived their grace.
inline constexpr char kBusyTaintKey[] = "slurm-k8s-bridge.io/slurm-busy";
// NoSchedule on a lent node taken back for Slurm (quotas): no new pod lands while its pods
// are evicted. Removed once Slurm runs there and the reclaim is over.
inline constexpr char kReclaimTaintKey[] = "slurm-k8s-bridge.io/reclaiming";

// The downward-API file the reservation container watches for the released annotation.
inline constexpr char kAnnotationsMountPath[] = "/etc/reservation";
inline constexpr char kAnnotationsFile[] = "/etc/reservation/annotations";
// The reservation container's environment (downward API): its own name and uid, with which
// it asks the bridge whether it is released (LendingConfig::release_url).
inline constexpr char kPodNameEnv[] = "SKB_POD_NAME";
inline constexpr char kPodUidEnv[] = "SKB_POD_UID";

}  // namespace skb::ownership
