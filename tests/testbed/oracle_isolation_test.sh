#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The invariant oracle shares no code with the bridge (tests/testbed/oracle.h): its sources
# include only system and library headers and each other, nothing from src/, k8s/, bridge/
# or the rest of tests/ (but the tick bookkeeping it shares with the invariant sampler,
# sample_ledger.h, which is held to the same rule). Usage: oracle_isolation_test.sh TESTS_TESTBED_DIR
set -euo pipefail
dir="$1"
sources=(oracle.h oracle.cc oracle_wire.h oracle_slurm_reader.cc sample_ledger.h sample_ledger.cc)
allowed='^#include "tests/testbed/(oracle|oracle_wire|sample_ledger)\.h"$'
bad=0
for f in "${sources[@]}"; do
  [[ -f "$dir/$f" ]] || { echo "missing $dir/$f"; exit 1; }
  while IFS= read -r line; do
    if [[ ! "$line" =~ $allowed ]]; then
      echo "$f: $line (the oracle may include only its own headers with quotes)"
      bad=1
    fi
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir/$f" || true)
  # Nor an angle-bracket include of the project's folders.
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(src|k8s|bridge|tests)/' "$dir/$f"; then
    bad=1
  fi
done
((bad == 0)) && echo "oracle sources include nothing of the bridge: ${sources[*]}"
exit "$bad"
