// SPDX-License-Identifier: Apache-2.0
// The record a placeholder Slurm job carries: everything a give or a return needs to
// resume after a restart, kept on the job itself (its admin_comment), so the bridge keeps
// no state of its own.
//
//   "skb-gpu-hold:v1;node=node1;pod=ns/name;gpus=2;victims=41,42;signalled=1700000000;
//    signalled_ms=1700000000250;returning=0;idle=0[;idle_ms=...][;profile=1g.10gb]"
//    (one token)
//
// A health hold (a GPU the driver tainted, kept from Slurm too) names no pod:
//   "skb-gpu-hold:v1;node=node1;pod=;gpus=1;victims=;signalled=0;returning=0;idle=0;
//    health=gpu-5;slot=2"
// and one that follows the Slurm job running on the bad GPU names that job (`under`; its
// victims are that job's components when it may be preempted):
//   "skb-gpu-hold:v1;node=node1;pod=;gpus=4;victims=41;signalled=1700000000;returning=0;
//    idle=0;health=gpu-5;slot=3;under=41"
//
//   std::string comment = FormatPlaceholderRecord(r);          // sbatch --admin-comment
//   std::optional<PlaceholderRecord> r = ParsePlaceholderRecord(job.admin_comment);
//
// One whitespace-free token; anything else in the comment is kept when a field changes
// (MergePlaceholderRecord), as for the bridge's other admin_comment notes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skb::devices {

// The job name of every placeholder (squeue shows what Kubernetes holds by it).
inline constexpr char kPlaceholderJobName[] = "skb-gpu-hold";
// The job priority a placeholder is submitted with (only operators may set one): above every
// priority Slurm computes (priority/basic counts down from 0xffff0000; multifactor stays far
// below), below NO_VAL and INFINITE, which Slurm reserves. Within its partition's
// PriorityTier the placeholder is considered first (docs/gpu-granular.md).
inline constexpr uint32_t kPlaceholderPriority = 0xffffff00;

struct PlaceholderRecord {
  std::string node;  // the Slurm node it holds GPUs on (a pending job has no node yet)
  std::string pod;   // "ns/name" the give is for
  int64_t gpus = 0;
  std::vector<uint32_t> victims;  // jobs the give preempts
  int64_t signalled_at = 0;       // unix seconds the victims got the checkpoint signal; 0: not
  // The same instant in unix milliseconds, so the grace ends on time rather than at the
  // next whole second; 0 when the record has seconds only (written by an older version, or
  // garbled: not the same second as `signalled_at`).
  int64_t signalled_at_ms = 0;
  bool returning = false;  // its devices go back to Slurm
  int64_t idle_since = 0;  // unix seconds since no allocated claim uses them; 0: in use
  // The same instant in unix milliseconds, so the cool-down ends on time rather than up to a
  // second early; 0 as for signalled_at_ms.
  int64_t idle_since_ms = 0;
  // The MIG profile of the slices it holds ("" = whole GPUs; written only when set, so a
  // whole-GPU record reads as before).
  std::string profile;
  // A health hold: the device the driver tainted that it was submitted to hold from Slurm
  // ("" for a give, which names its pod instead), and which of the holds submitted
  // together it is (1..n; one key each, so a submission is idempotent per slot).
  std::string health;
  int64_t slot = 0;
  // A health hold submitted while a Slurm job ran on the bad GPU: that job (its whole job's
  // id as Slurm lists it on the node); it asks for the job's GPUs of the kind and every free
  // one, so that it starts, on the bad GPU too, the moment the job ends. 0 for the others.
  uint32_t under_job = 0;
  friend bool operator==(const PlaceholderRecord&, const PlaceholderRecord&) = default;
};

// What makes a placeholder one of a kind (SlurmClient::SubmitPlaceholder submits none when
// a pending or running one has the same key): its pod for a give; node, device and slot
// for a health hold; node, device and job for one that follows a job.
std::string PlaceholderKey(const PlaceholderRecord& r);
// Whom a health hold's victims are preempted for, as recorded on them and in its Events:
// "health:<node>:<device>" (one token, as a give's pod is).
std::string HealthHoldPreemptor(std::string_view node, std::string_view device);

std::string FormatPlaceholderRecord(const PlaceholderRecord& r);
// The record in `admin_comment`, or nullopt (no record, or a malformed one: a job whose
// record cannot be read is not treated as a placeholder's state; the caller reports it).
std::optional<PlaceholderRecord> ParsePlaceholderRecord(std::string_view admin_comment);
// `admin_comment` with its record replaced by `r` (or appended); other text is kept.
std::string MergePlaceholderRecord(std::string_view admin_comment, const PlaceholderRecord& r);

}  // namespace skb::devices
