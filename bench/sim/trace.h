// SPDX-License-Identifier: Apache-2.0
// The input of the trace simulator: GPU tasks and GPU nodes in the CSV format of the
// Alibaba GPU cluster trace (clusterdata cluster-trace-gpu-v2023, "openb" files).
//
//   tasks: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//          creation_time,deletion_time,scheduled_time
//   nodes: sn,cpu_milli,memory_mib,gpu,model
//
// Columns are found by header name, so their order may differ and extra columns are
// ignored; cpu and memory are not read (the simulator schedules GPUs only). Every error
// names the file's line ("tasks.csv:12: column 'num_gpu': 'x' is not an integer").
//
//   StatusOr<std::vector<sim::Task>> tasks = sim::ParseTasks(text, "tasks.csv");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace skb::sim {

struct Task {
  std::string name;
  int64_t num_gpu = 0;                // whole GPUs (1 with gpu_milli < 1000: a share of one GPU)
  int64_t gpu_milli = 0;              // thousandths of one GPU, for sharing tasks
  std::vector<std::string> gpu_spec;  // allowed GPU models; empty = any
  std::string qos;                    // LS, BE, Burstable, Guaranteed
  int64_t creation = 0;               // seconds from the trace's start
  std::optional<int64_t> scheduled;   // unset: never ran in the recorded cluster
  std::optional<int64_t> deletion;    // unset: still running when the trace was taken
  int line = 0;                       // line in the CSV (1 = header)

  // LS (latency-sensitive) tasks are inference pods; all others are training jobs.
  bool Inference() const { return qos == "LS"; }
  bool UsesGpu() const { return num_gpu > 0 && (num_gpu > 1 || gpu_milli > 0); }
  // Demand in thousandths of a GPU: a share of one GPU, or whole GPUs.
  int64_t Milli() const { return num_gpu == 1 ? gpu_milli : num_gpu * 1000; }
  // Whole GPUs a scheduler without GPU sharing (Slurm gres) allocates.
  int64_t WholeGpus() const { return num_gpu; }
  bool Fractional() const { return num_gpu == 1 && gpu_milli < 1000; }
};

struct GpuNode {
  std::string name;
  int64_t gpus = 0;
  std::string model;
  int line = 0;
};

// Parses the whole file. An empty file, a missing column, a malformed number, a negative
// time, a deletion before the scheduling time or a gpu_milli outside 0-1000 is an
// InvalidArgument error naming `file` and the line.
StatusOr<std::vector<Task>> ParseTasks(std::string_view text, std::string_view file);
// Every node needs 1-64 GPUs and a unique name.
StatusOr<std::vector<GpuNode>> ParseNodes(std::string_view text, std::string_view file);

// The file's contents; NotFound when it cannot be read.
StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace skb::sim
