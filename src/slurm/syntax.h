// SPDX-License-Identifier: Apache-2.0
// Slurm's little string languages, parsed without libslurm: node GRES ("gpu:h100:8(S:0-1)"),
// TRES requests from a job description ("gres:gpu:h100:2"), --constraint expressions
// ("h100&(nvlink|ib)") and the bridge's own annotation in a job's admin_comment.
//
// All input may come from a user (job descriptions) and is treated as untrusted: parsers
// never throw, cap what they return and report what they could not understand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/slurm/types.h"

namespace skb::slurm {

// GPUs listed in a node's gres or gres_used string. Entries other than "gpu" are skipped;
// counts of the same type are summed. "gpu:h100:8(S:0-1),gpu:a100:2" -> {h100 8, a100 2}.
std::vector<GpuCount> ParseNodeGpus(std::string_view gres);

// One generic-resource request: "gres:gpu:h100:2" -> {name "gpu", type "h100", count 2}.
struct GresRequest {
  std::string name;
  std::string type;  // empty = any type
  int64_t count = 1;
  friend bool operator==(const GresRequest&, const GresRequest&) = default;
};

// Parses a TRES request list as job_desc_msg_t stores it (tres_per_node, tres_per_job,
// ...): entries separated by ',' or ';', each "gres:NAME[:TYPE][:COUNT]",
// "gres/NAME[:TYPE][=COUNT]" or a bare "NAME[:TYPE][:COUNT]". Counts may carry a K/M/G
// suffix. Non-gres TRES ("cpu=2", "license/x=1") are skipped. InvalidArgument on a count
// that is not a number or too large, naming the entry.
StatusOr<std::vector<GresRequest>> ParseTresRequest(std::string_view tres);
// The GPU type a TRES request list asks for: the type of its first typed "gpu" entry
// ("gres/gpu:h100=2" -> "h100"); "" when it names none (any type) or does not parse.
std::string RequestedGpuType(std::string_view tres);
// The GPUs a TRES request list asks for: the sum of its "gpu" entries' counts (of any type);
// 0 when it names none or does not parse.
int64_t GpusInTres(std::string_view tres);

// Feature names mentioned in a --constraint expression, in order, without duplicates:
// "h100&(nvlink|ib)*2,[a*1&b*2]" -> {h100, nvlink, ib, a, b}. Counts after '*' are not
// names. InvalidArgument on characters Slurm does not allow in a constraint.
StatusOr<std::vector<std::string>> ParseConstraintFeatures(std::string_view constraint);

// The bridge's note on an accepted job, kept in admin_comment as one whitespace-free
// token: "k8s-bridge:preemptible=true" or
// "k8s-bridge:preemptible=false,signal=10@120:B,partitions=gpu+urgent,qos=normal".
// `partitions` and `qos` say where the decision was made (the partitions the job asked for,
// '+'-separated, the default one when it asked for none; the QOS it asked for, "" for the
// default): a job an admin moves afterwards (`scontrol update partition=/qos=`) is judged
// where it is now, not by this note. Notes written before they existed carry neither.
struct Annotation {
  bool preemptible = false;
  std::optional<SignalSpec> signal;
  std::optional<std::vector<std::string>> partitions;
  std::optional<std::string> qos;
  friend bool operator==(const Annotation&, const Annotation&) = default;
};

std::string FormatAnnotation(const Annotation& a);
// The bridge's token in `admin_comment`, if any.
std::optional<Annotation> ParseAnnotation(std::string_view admin_comment);
// `admin_comment` with any previous bridge token replaced by `a`; what others wrote is
// kept, in order, separated by one space.
std::string MergeAnnotation(std::string_view admin_comment, const Annotation& a);

}  // namespace skb::slurm
