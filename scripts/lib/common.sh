# SPDX-License-Identifier: Apache-2.0
# Shared shell helpers for scripts/setup, scripts/testbed, scripts/test and scripts/demo.
# Sourced, never run. Every script that sources it runs with `set -euo pipefail`.

SKB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Pinned versions of what the testbed builds from the Go module proxy. Changing one
# invalidates its cache entry (the cache key also hashes the wrapper module's go.sum).
SKB_K8S_VERSION="v1.37.2"
SKB_KWOK_VERSION="v0.8.0"
SKB_HELM_VERSION="v3.22.0"
SKB_GO_MIN="1.26"
# The Go toolchain fetched as a module from the Go module proxy when the machine's Go is
# missing or older than SKB_GO_MIN (Debian 12's golang-go is 1.19).
SKB_GO_TOOLCHAIN="go1.27.3"

SKB_CACHE="${SKB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slurm-k8s-bridge}"
# SKB_TESTBED_SLOT (0-9, default 0): which of several testbeds that run side by side on one
# machine this is (scripts/test runs its lanes at once, each on a slot of its own). The slot
# is the one setting a testbed needs: it names the state directory (/tmp/skb-testbed for 0,
# /tmp/skb-testbed-N for N) and the ports (every port of slot 0 plus N*1000; scripts/testbed
# lists them). SKB_TESTBED_DIR, when set, names the directory instead.
SKB_TESTBED_SLOT="${SKB_TESTBED_SLOT:-0}"
[[ "$SKB_TESTBED_SLOT" =~ ^[0-9]$ ]] || {
  echo "SKB_TESTBED_SLOT must be one digit (0-9), not '$SKB_TESTBED_SLOT'" >&2
  exit 2
}
if [[ -z "${SKB_TESTBED_DIR:-}" ]]; then
  if ((SKB_TESTBED_SLOT == 0)); then SKB_TESTBED_DIR=/tmp/skb-testbed; else
    SKB_TESTBED_DIR="/tmp/skb-testbed-$SKB_TESTBED_SLOT"
  fi
fi
# SKB_TESTBED_NODES: default 4, or what the running testbed was started with (scripts/testbed).
# A Slurm release other than Debian 12's (SKB_TESTBED_SLURM) builds in a tree of its own.
if [[ "${SKB_TESTBED_SLURM:-22.05}" == 22.05 ]]; then
  SKB_BUILD_DIR="${SKB_BUILD_DIR:-$SKB_ROOT/build}"
else
  SKB_BUILD_DIR="${SKB_BUILD_DIR:-$SKB_ROOT/build-slurm$SKB_TESTBED_SLURM}"
fi
# ccache keys on paths relative to the checkout, so every clone shares one cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$SKB_ROOT}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
# Debug info names the build directory; without this a second checkout would never hit.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

skb_log() { printf '%s [%s] %s\n' "$(date -u +%H:%M:%S)" "${SKB_STEP:-skb}" "$*" >&2; }

# Stops with a message naming the step and, when given, the log file to read.
skb_die() {
  local msg="$1" logfile="${2:-}"
  printf '\nERROR [%s]: %s\n' "${SKB_STEP:-skb}" "$msg" >&2
  if [[ -n "$logfile" ]]; then
    printf '  read: %s\n' "$logfile" >&2
    if [[ -f "$logfile" ]]; then
      printf '  last lines:\n' >&2
      tail -n 15 "$logfile" | sed 's/^/    | /' >&2
    fi
  fi
  exit 1
}

skb_step() { SKB_STEP="$1"; skb_log "${2:-start}"; }

# skb_wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND (every 0.2 s) until it succeeds.
skb_wait_for() {
  local timeout="$1" what="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then return 1; fi
    sleep 0.2
  done
}

skb_have() { command -v "$1" >/dev/null 2>&1; }

# skb_progress PID EVERY DESCRIBE...: waits for PID (a child of this shell) and returns its
# exit status; every EVERY seconds while it runs, logs how long it has run and the first line
# DESCRIBE... prints (where it is), so a step that runs for minutes never looks hung. The
# report is due by time, not on an exact second: a loaded machine skips seconds.
skb_progress() {
  local pid="$1" every="$2" t0=$SECONDS next rc=0 where
  shift 2
  next=$((SECONDS + every))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)) && kill -0 "$pid" 2>/dev/null; then
      next=$((SECONDS + every))
      where="$("$@" 2>/dev/null | head -n1 || true)"
      skb_log "  ... $((SECONDS - t0)) s${where:+: $where}"
    fi
  done
  wait "$pid" || rc=$?
  return "$rc"
}

# skb_ninja_where LOG: how far the ninja writing LOG is ("[212/377] 56%: Building CXX object
# src/...").
skb_ninja_where() {
  local last
  last="$(grep -aoE '^\[[0-9]+/[0-9]+\][^/]*[^ ]*' "$1" | tail -n1 | cut -c1-100)" || return 0
  [[ "$last" =~ ^\[([0-9]+)/([0-9]+)\]\ (.*)$ ]] || return 0
  echo "[${BASH_REMATCH[1]}/${BASH_REMATCH[2]}] $((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))%: ${BASH_REMATCH[3]}"
}

# skb_ninja LOG NINJA_ARGS...: ninja with its output in LOG, saying every 20 s how far it is
# (skb_ninja_where): a cold build runs for minutes and must not look hung. SKB_NINJA_EXEC (an
# array, default empty) is a prefix to run ninja through (another Slurm release's root).
skb_ninja() {
  local log="$1"
  shift
  "${SKB_NINJA_EXEC[@]}" ninja "$@" >"$log" 2>&1 &
  skb_progress $! 20 skb_ninja_where "$log"
}

# Go version as "major.minor" (e.g. 1.26), empty when go is missing.
skb_go_version() {
  skb_have go || return 0
  go env GOVERSION 2>/dev/null | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/'
}

# Puts the toolchain scripts/setup fetched into the cache first on PATH, when there is one.
skb_use_cached_go() {
  local d="$SKB_CACHE/go/$SKB_GO_TOOLCHAIN/bin"
  if [[ -x "$d/go" ]]; then PATH="$d:$PATH"; export PATH; fi
}
skb_use_cached_go

# version_ge A B: is dotted version A >= B?
skb_version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

# Directory holding the Go-built binaries for the pinned versions.
skb_bin_dir() {
  local key
  key="$(cat "$SKB_ROOT"/tests/testbed/{k8sbin,kwokbin,helmbin}/go.sum | sha256sum | cut -c1-12)"
  echo "$SKB_CACHE/k8s-$SKB_K8S_VERSION-kwok-$SKB_KWOK_VERSION-$key/bin"
}
