#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# on_testbed.sh COMMAND...: runs COMMAND holding a testbed, as testbed_main.cc does for the
# GoogleTest binaries (read its header): an exclusive flock on the testbed's test.lock for as
# long as COMMAND runs; with SKB_TESTBED_POOL, the first free testbed of the pool, its `env`
# file loaded (PATH kept). For the tests that are scripts (label integration: the chart's
# dry run, the Debian package and the image against the testbed).
set -euo pipefail
read -r -a dirs <<<"${SKB_TESTBED_POOL:-}"
pool=1
if ((${#dirs[@]} == 0)); then
  pool=0
  [[ -n "${SKB_TESTBED_DIR:-}" ]] || exec "$@"
  dirs=("$SKB_TESTBED_DIR")
fi
said=0
while :; do
  for d in "${dirs[@]}"; do
    exec {fd}>>"$d/test.lock" || { echo "[testbed] cannot open $d/test.lock: is the testbed up?" >&2; exit 1; }
    if flock -n "$fd"; then
      if ((pool)); then
        [[ -s "$d/env" ]] || { echo "[testbed] $d/env is missing: is that testbed up?" >&2; exit 1; }
        while read -r line; do
          [[ "$line" == "export PATH="* ]] || eval "$line"
        done <"$d/env"
      fi
      echo "[testbed] $d" >&2
      exec "$@"  # the descriptor, and with it the lock, goes with COMMAND
    fi
    exec {fd}>&-
  done
  ((said)) || echo "[testbed] every testbed of the pool is in use by another test: waiting" >&2
  said=1
  sleep 0.1
done
