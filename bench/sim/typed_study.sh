#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The trace replay on GPU-type-constrained variants (typed_trace.py): for each share of
# inference tasks naming GPU models and each seed, a variant of the trace on a seeded node
# sample, replayed in every mode; prints one row per variant (inference wait p99 per mode,
# GPU-hours against static-peak, device violations) and writes it to
# RESULTS_DIR/typed_study.txt (bench/report.py shows it), each run's JSON under
# RESULTS_DIR/typed/. The variants themselves are written to a temporary directory.
#
#   bench/sim/typed_study.sh BUILD_DIR RESULTS_DIR [TRACE_DIR]
#
# SKB_TYPED_SHARES (default "0 0.1 0.33 0.5"), SKB_TYPED_SEEDS ("1 2 3"),
# SKB_TYPED_NODE_FRACTION (0.008: about 10 nodes, below the trace's peak demand).
# TRACE_DIR as bench/sim/study.sh (missing: skipped, exit 0).
set -euo pipefail
build="$1" results="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
trace="${3:-${SKB_TRACE_DIR:-}}"
tasks="$trace/openb_pod_list_default.csv" nodes="$trace/openb_node_list_gpu_node.csv"
if [[ ! -f "$tasks" || ! -f "$nodes" ]]; then
  echo "typed-study: no trace at $trace (set SKB_TRACE_DIR): skipped" >&2
  exit 0
fi
mkdir -p "$results/typed"
variants="$(mktemp -d)"
trap 'rm -rf "$variants"' EXIT
for share in ${SKB_TYPED_SHARES:-0 0.1 0.33 0.5}; do
  for seed in ${SKB_TYPED_SEEDS:-1 2 3}; do
    v="$variants/typed-s$share-seed$seed"
    python3 "$root/bench/sim/typed_trace.py" --tasks "$tasks" --nodes "$nodes" --share "$share" \
      --seed "$seed" --node-fraction "${SKB_TYPED_NODE_FRACTION:-0.008}" --out-dir "$v"
    "$build/bench/skb_trace_sim" --tasks "$v/tasks.csv" --nodes "$v/nodes.csv" --seed "$seed" \
      --mode all --name "typed variant: share $share, seed $seed" \
      --out "$results/typed/typed-s$share-seed$seed.json" >/dev/null
  done
done
python3 - "$results" <<'PY' | tee "$results/typed_study.txt"
import glob, json, re, sys
rows = []
for path in sorted(glob.glob(sys.argv[1] + "/typed/typed-s*-seed*.json")):
    share, seed = re.search(r"typed-s([0-9.]+)-seed(\d+)\.json$", path).groups()
    d = json.load(open(path))
    f = d["figures"]
    f["violations"] = d["modes"]["bridge-gpu"]["device_violations"]
    rows.append((float(share), int(seed), f))
print("| share | seed | inf p99 s: static-peak | bridge | bridge-gpu | GPU-h vs static-peak: bridge | bridge-gpu | bridge-gpu preempted/needed | device violations |")
print("|---|---|---|---|---|---|---|---|---|")
for share, seed, f in sorted(rows):
    sp = f["static-peak GPU-h"] or 1
    print(f"| {share:g} | {seed} | {f['static-peak inf-wait p99 s']:,.0f} | "
          f"{f['bridge inf-wait p99 s']:,.0f} | {f['bridge-gpu inf-wait p99 s']:,.0f} | "
          f"{f['bridge GPU-h'] / sp:.3f}x | {f['bridge-gpu GPU-h'] / sp:.3f}x | "
          f"{f['bridge-gpu preempted/needed GPUs']:.3f} | {f['violations']} |")
PY
