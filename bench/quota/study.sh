#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The guaranteed-quota study: replays the Philly trace (bench/quota/README.md says where to
# get it) through skb_quota_study, writes bench/results/quota_study{,_teams}.csv, the printed
# report quota_study.txt and, with python3-matplotlib, quota_study.png. With the Alibaba GPU
# trace too, the mixed case (its inference pods as one more tenant) writes the same files
# as quota_study_mixed{.txt,.csv,_teams.csv,.png}.
#
#   bench/quota/study.sh BUILD_DIR RESULTS_DIR [PHILLY_DIR [ALIBABA_DIR]]
# PHILLY_DIR defaults to $SKB_PHILLY_DIR; without either the study is skipped (exit 0).
# ALIBABA_DIR (the folder of openb_pod_list_default.csv) defaults to $SKB_TRACE_DIR, as for
# bench/sim/study.sh; without either only the mixed case is skipped.
set -euo pipefail
build="$1" results="$2"
dir="${3:-${SKB_PHILLY_DIR:-}}"
alibaba="${4:-${SKB_TRACE_DIR:-}}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -z "$dir" || ! -f "$dir/philly_vc_sep_oct.csv" ]]; then
  echo "quota-study: set SKB_PHILLY_DIR to the folder holding philly_vc_sep_oct.csv: skipped" >&2
  exit 0
fi
mkdir -p "$results"
plot() {  # NAME TITLE
  if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$root/bench/quota/plot.py" "$results/$1.csv" "$results/$1.png" "$2"
  else
    echo "quota-study: python3-matplotlib not installed: $1.csv written, no PNG" >&2
  fi
}
"$build/bench/skb_quota_study" --trace "$dir/philly_vc_sep_oct.csv" --out "$results" |
  tee "$results/quota_study.txt"
plot quota_study "Philly trace, 11 teams: static split vs one pool vs guaranteed quotas"
if [[ -z "$alibaba" || ! -f "$alibaba/openb_pod_list_default.csv" ]]; then
  echo "quota-study: set SKB_TRACE_DIR to the folder holding openb_pod_list_default.csv for" \
    "the mixed case: skipped" >&2
  exit 0
fi
"$build/bench/skb_quota_study" --trace "$dir/philly_vc_sep_oct.csv" \
  --inference-trace "$alibaba/openb_pod_list_default.csv" --out "$results" |
  tee "$results/quota_study_mixed.txt"
plot quota_study_mixed "Philly's 11 teams + Alibaba inference pods (one tenant, not preemptible)"
