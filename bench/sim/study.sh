#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The utilization study (issue 8, section 3): replays the Alibaba GPU trace through the
# static splits and the bridge (skb_trace_sim) in two scenarios, writes the e2e-format
# results bench/report.py reads, the allocation time series (CSV) and, when
# python3-matplotlib is installed, a PNG of allocated GPUs over time per mode.
#
#   bench/sim/study.sh BUILD_DIR RESULTS_DIR [TRACE_DIR]
#
#   as recorded  every node of the trace (1,213 nodes, 6,212 GPUs)
#   contended    a seeded 0.8% sample of the nodes (12 nodes, 59 GPUs): below the trace's
#                peak concurrent GPU demand (65.6), so inference has to take Slurm's nodes
#   not preemptible  the same nodes, no training job preemptible (as if every QOS were
#                Guaranteed): only idle GPUs (GPU mode) or idle nodes (node mode) can be lent
# TRACE_DIR defaults to $SKB_TRACE_DIR: a directory holding the public Alibaba GPU trace
# v2023 (github.com/alibaba/clusterdata, cluster-trace-gpu-v2023: openb_pod_list_default.csv
# and openb_node_list_gpu_node.csv). Missing trace: says so and exits 0 (the study is
# skipped, not failed).
set -euo pipefail
build="$1" results="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
trace="${3:-${SKB_TRACE_DIR:-}}"
tasks="$trace/openb_pod_list_default.csv" nodes="$trace/openb_node_list_gpu_node.csv"
if [[ ! -f "$tasks" || ! -f "$nodes" ]]; then
  echo "trace-sim: no trace at $trace (set SKB_TRACE_DIR): utilization study skipped" >&2
  exit 0
fi
sim="$build/bench/skb_trace_sim"
mkdir -p "$results"

run() {  # NAME LABEL ARGS...
  local name="$1" label="$2"
  shift 2
  echo "trace-sim: $label" >&2
  "$sim" --tasks "$tasks" --nodes "$nodes" --seed 1 --mode all --name "trace replay: $label" \
    --out "$results/$name.json" --series "$results/$name.csv" "$@"
  if python3 -c "import matplotlib" 2>/dev/null; then
    python3 "$root/bench/sim/plot.py" "$results/$name.csv" "$results/$name.png" "$label"
  else
    echo "trace-sim: python3-matplotlib not installed: $name.csv written, no PNG" >&2
  fi
}

run trace_sim "Alibaba GPU 2023, as recorded (1213 nodes)"
run trace_sim_contended "Alibaba GPU 2023, contended (0.8% of the nodes)" --node-fraction 0.008
run trace_sim_not_preemptible "Alibaba GPU 2023, contended, training not preemptible" \
  --node-fraction 0.008 --config "$root/bench/sim/not_preemptible.json"
