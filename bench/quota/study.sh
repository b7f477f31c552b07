#!/usr/bin/env bash
# The guaranteed-quota study: replays the Philly trace (bench/quota/README.md says where to
# get it) through skb_quota_study, writes bench/results/quota_study{,_teams}.csv, the printed
# report quota_study.txt and, with python3-matplotlib, quota_study.png.
#
#   bench/quota/study.sh BUILD_DIR RESULTS_DIR [PHILLY_DIR]
# PHILLY_DIR defaults to $SKB_PHILLY_DIR; without either the study is skipped (exit 0).
set -euo pipefail
build="$1" results="$2"
dir="${3:-${SKB_PHILLY_DIR:-}}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -z "$dir" || ! -f "$dir/philly_vc_sep_oct.csv" ]]; then
  echo "quota-study: set SKB_PHILLY_DIR to the folder holding philly_vc_sep_oct.csv: skipped" >&2
  exit 0
fi
mkdir -p "$results"
"$build/bench/skb_quota_study" --trace "$dir/philly_vc_sep_oct.csv" --out "$results" |
  tee "$results/quota_study.txt"
if python3 -c 'import matplotlib' 2>/dev/null; then
  python3 "$root/bench/quota/plot.py" "$results/quota_study.csv" "$results/quota_study.png"
fi
