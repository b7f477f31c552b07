#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The testbed claim (testbed_main.cc for GoogleTest binaries, on_testbed.sh for scripts),
# without a testbed: a pool of two fake testbed directories, each with the `env` file
# `scripts/testbed up` writes. Three test processes at once: two run at once, each on a
# testbed of its own with that testbed's environment loaded; the third waits until one ends
# and never shares a testbed with a running one. Without a pool a process takes
# SKB_TESTBED_DIR's testbed, waiting for it.
#   testbed_pool_test.sh PROBE_BINARY ON_TESTBED_SCRIPT
set -euo pipefail
probe="$1" on_testbed="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for i in 1 2; do
  mkdir -p "$work/tb$i"
  printf "export SKB_TESTBED_DIR='%s'\nexport SKB_POOL_PROBE_VALUE='value-%s'\nexport PATH='/nowhere'\n" \
    "$work/tb$i" "$i" >"$work/tb$i/env"
done
fail() { echo "FAIL: $*"; cat "$work/out"; exit 1; }
check_log() { # check_log FILE: never two runs on one testbed at once; each saw its env
  awk '
    $1 == "start" { if (busy[$2]) { print "two at once on " $2; bad = 1 } busy[$2] = 1
                    n = split($2, p, "/"); want = "value-" substr(p[n], 3)
                    if ($3 != want) { print $2 " got " $3 ", not " want; bad = 1 } }
    $1 == "end" { busy[$2] = 0 }
    END { exit bad }' "$1"
}

# GoogleTest binaries through testbed_main.cc.
: >"$work/out"
pids=()
for i in 1 2 3; do
  SKB_TESTBED_POOL="$work/tb1 $work/tb2" SKB_POOL_PROBE_OUT="$work/out" SKB_POOL_PROBE_HOLD_MS=700 \
    "$probe" >"$work/probe$i.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a probe failed: $(cat "$work"/probe*.log)"; done
(($(grep -c '^start' "$work/out") == 3)) || fail "not three runs"
check_log "$work/out" || fail "claims overlapped"
grep -q 'waiting' "$work"/probe*.log || fail "the third probe did not wait"
[[ "$(grep '^start' "$work/out" | head -2 | awk '{print $2}' | sort -u | wc -l)" == 2 ]] ||
  fail "the first two did not take both testbeds"

# Scripts through on_testbed.sh (the script reports what it was given the same way).
: >"$work/out"
pids=()
for i in 1 2 3; do
  SKB_TESTBED_POOL="$work/tb1 $work/tb2" "$on_testbed" bash -c \
    'echo "start $SKB_TESTBED_DIR $SKB_POOL_PROBE_VALUE" >>"$0"; [[ "$PATH" != /nowhere ]] || exit 3
     sleep 0.7; echo "end $SKB_TESTBED_DIR" >>"$0"' "$work/out" 2>"$work/script$i.log" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a script failed (PATH taken from the env file?)"; done
(($(grep -c '^start' "$work/out") == 3)) || fail "not three script runs"
check_log "$work/out" || fail "script claims overlapped"

# No pool: SKB_TESTBED_DIR's testbed, one at a time.
: >"$work/out"
pids=()
for i in 1 2; do
  SKB_TESTBED_DIR="$work/tb1" SKB_POOL_PROBE_VALUE=value-1 SKB_POOL_PROBE_OUT="$work/out" \
    SKB_POOL_PROBE_HOLD_MS=500 "$probe" >"$work/single$i.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a probe without a pool failed"; done
check_log "$work/out" || fail "two probes without a pool ran at once"
echo "testbed claims: 3 processes on a pool of 2, and 2 on one testbed, never shared"
