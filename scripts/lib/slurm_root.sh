# SPDX-License-Identifier: Apache-2.0
# Slurm releases beside Debian 12's: a Debian root made with debootstrap into the cache
# (once per machine, by scripts/setup), holding that release's Slurm daemons, clients and
# libslurm-dev plus the project's build toolchain, so the bridge and the plugin are built
# against the exact libslurm they are loaded into. Sourced after common.sh, never run.
#
#   SKB_TESTBED_SLURM=22.05   Debian 12's Slurm on this machine (the default)
#   SKB_TESTBED_SLURM=24.11   Debian 13's (trixie) Slurm in $(skb_slurm_root 24.11)
#   SKB_TESTBED_SLURM=26.05   Debian forky's (testing; sid has the same) in $(skb_slurm_root 26.05)
#
# skb_in_slurm_root RELEASE COMMAND... runs COMMAND inside the root, in a private mount
# namespace (nothing stays mounted when it exits) that sees /proc, /sys, /dev, /tmp, the
# checkout, the cache and the testbed's state directory at their usual paths.

# The releases scripts/setup makes roots for, and the Debian release that ships each.
SKB_SLURM_ROOT_RELEASES=(24.11 26.05)
# The releases scripts/test tests when SKB_TEST_SLURM_LANES does not say (and so the roots
# a plain scripts/setup makes): Debian 12's and every release above.
SKB_SLURM_DEFAULT_LANES="22.05 ${SKB_SLURM_ROOT_RELEASES[*]}"
skb_slurm_suite() {
  case "$1" in
    24.11) echo trixie ;;
    26.05) echo forky ;;
    *) return 1 ;;
  esac
}
SKB_SLURM_ROOT_PACKAGES=(
  slurmctld slurmd slurmdbd slurm-client libslurm-dev munge
  build-essential cmake ninja-build pkg-config ccache git ca-certificates
  libcurl4-openssl-dev nlohmann-json3-dev libprotobuf-dev protobuf-compiler libspdlog-dev
  libgtest-dev libgmock-dev prometheus-cpp-dev libcivetweb-dev libcli11-dev libyaml-cpp-dev
  curl procps iproute2 openssl jq python3 python3-yaml
)

# skb_slurm_root RELEASE: the root's directory (its name changes with the package list).
skb_slurm_root() {
  local suite key
  suite="$(skb_slurm_suite "$1")" || return 1
  key="$(printf '%s\n' "$suite" "${SKB_SLURM_ROOT_PACKAGES[@]}" | sha256sum | cut -c1-12)"
  echo "$SKB_CACHE/slurm-$1-$suite-$key"
}

# Is this shell inside a release's root already (a test calling scripts/testbed)?
skb_inside_slurm_root() { [[ -f /etc/skb-slurm-root ]]; }

# skb_slurm_exec RELEASE: sets SKB_SLURM_EXEC to the command prefix that runs a program
# with RELEASE's Slurm: empty for Debian 12's and inside a root, else unshare + chroot.
# The prefix execs all the way down, so a launched daemon keeps the PID it started with.
skb_slurm_exec() {
  SKB_SLURM_EXEC=()
  [[ "$1" == 22.05 ]] && return 0
  skb_inside_slurm_root && return 0
  local root
  root="$(skb_slurm_root "$1")" || skb_die "no root for Slurm $1 (known: 22.05 ${SKB_SLURM_ROOT_RELEASES[*]})"
  [[ -f "$root/etc/skb-slurm-root" ]] ||
    skb_die "Slurm $1's root is missing ($root): run SKB_TESTBED_SLURM=$1 scripts/setup --testbed-only"
  local binds=(/proc /sys /dev /tmp "$SKB_ROOT" "$SKB_CACHE" "$SKB_TESTBED_DIR"
    "${CCACHE_DIR:-$HOME/.cache/ccache}")
  [[ "$SKB_BUILD_DIR" == "$SKB_ROOT"/* ]] || binds+=("$SKB_BUILD_DIR")
  mkdir -p "${binds[@]}"
  # The host's names too, as every node of a cluster resolves them: slurmctld 24.11 looks
  # up an srun's host by name when it requeues a heterogeneous job (10 s of retries, the
  # RPC blocked, when the root's own /etc/hosts does not know this machine's name).
  binds+=(/etc/hosts)
  # env -C: the working directory inside is the caller's (bind-mounted at the same path).
  local script='set -e; root="$1"; n="$2"; shift 2
    for ((i = 0; i < n; i++)); do
      if [[ -d "$1" ]]; then mkdir -p "$root$1"; else touch "$root$1"; fi
      mount --rbind "$1" "$root$1"; shift
    done
    exec chroot "$root" /usr/bin/env -C "$PWD" "$@"'
  SKB_SLURM_EXEC=(unshare --mount --propagation private bash -c "$script" skb-slurm-root
    "$root" "${#binds[@]}" "${binds[@]}")
}

skb_in_slurm_root() {
  local SKB_SLURM_EXEC
  skb_slurm_exec "$1"
  shift
  "${SKB_SLURM_EXEC[@]}" "$@"
}

# debootstrap_step LOG: how many steps the debootstrap writing LOG has made, and its last.
debootstrap_step() { echo "$(grep -c '^I: ' "$1") steps: $(grep '^I: ' "$1" | tail -n1)"; }

# skb_make_slurm_root RELEASE: debootstraps the root (once; into a temporary directory
# first, so an interrupted run never leaves a half-made root behind; under a lock, so two
# callers at once -- scripts/setup, a `scripts/testbed up` of that release -- make it once).
skb_make_slurm_root() {
  local release="$1" root suite log
  root="$(skb_slurm_root "$release")" || skb_die "no root for Slurm $release (known: ${SKB_SLURM_ROOT_RELEASES[*]})"
  [[ -f "$root/etc/skb-slurm-root" ]] && { skb_log "Slurm $release root: $root"; return 0; }
  suite="$(skb_slurm_suite "$release")"
  log="$SKB_CACHE/logs/debootstrap-$suite.log"
  mkdir -p "$(dirname "$log")"
  skb_have debootstrap || skb_die "debootstrap is missing (apt-get install debootstrap)"
  local lock
  exec {lock}>"$root.lock"
  if ! flock -n "$lock"; then
    skb_log "another process makes the Slurm $release root: waiting for it"
    flock "$lock"
  fi
  if [[ -f "$root/etc/skb-slurm-root" ]]; then
    exec {lock}>&-
    skb_log "Slurm $release root: $root"
    return 0
  fi
  skb_log "debootstrap Debian $suite with Slurm $release into $root (once per machine, ~7 min; log: $log)"
  local t0=$SECONDS pkgs script=()
  pkgs="$(IFS=,; echo "${SKB_SLURM_ROOT_PACKAGES[*]}")"
  # Debian 12's debootstrap knows no suite named after it (forky): the script of sid,
  # which every release since uses, is named instead.
  [[ -e "/usr/share/debootstrap/scripts/$suite" ]] || script=(/usr/share/debootstrap/scripts/sid)
  rm -rf "$root.tmp"
  nice debootstrap --variant=minbase --include="$pkgs" "$suite" "$root.tmp" \
    http://deb.debian.org/debian "${script[@]}" >"$log" 2>&1 &
  local rc=0
  skb_progress $! 30 debootstrap_step "$log" || rc=$?
  ((rc == 0)) || skb_die "debootstrap failed" "$log"
  chroot "$root.tmp" slurmctld -V >>"$log" 2>&1 || skb_die "slurmctld does not run in the new root" "$log"
  echo "$release $suite" >"$root.tmp/etc/skb-slurm-root"
  mv "$root.tmp" "$root"
  exec {lock}>&-
  skb_log "Slurm $release root ready in $((SECONDS - t0)) s: slurmctld $(chroot "$root" dpkg-query -W -f '${Version}' slurmctld)"
}
