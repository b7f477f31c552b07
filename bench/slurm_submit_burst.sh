#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Submit throughput of sbatch bursts on the testbed, for the plugin's added latency:
#   bench/slurm_submit_burst.sh [--jobs N]      N held jobs (default 500), cancelled after
# Prints jobs/s. Run it once with the plugin answering (a daemon on the plugin's socket)
# and once with slurmctld started with SKB_TESTBED_NO_PLUGIN=1, and compare. With
# --keep the jobs stay (to fill slurmctld for slurm_poll_bench); scancel -n skb-bench later.
set -euo pipefail
jobs=500 keep=0
while (($#)); do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--jobs N] [--keep]" >&2; exit 2 ;;
  esac
done
: "${SLURM_CONF:?eval \"\$(scripts/testbed env)\" first}"
start=$(date +%s.%N)
for ((i = 0; i < jobs; i++)); do
  sbatch --hold --parsable --job-name=skb-bench --output=/dev/null --gres=gpu:h100:1 \
    --wrap true >/dev/null
done
end=$(date +%s.%N)
python3 -c "print(f'submitted {$jobs} jobs in {$end-$start:.2f}s: {$jobs/($end-$start):.1f} jobs/s')"
((keep)) || scancel --name=skb-bench --quiet || true
