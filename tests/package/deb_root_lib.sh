# SPDX-License-Identifier: Apache-2.0
# Sourced by deb_root_test.sh and deb_testbed_test.sh (and, through image_lib.sh, by the
# image tests): a fresh copy of the cached bare Debian 12 root (made once by debootstrap)
# with the package installed by apt, and the checks and testbed steps they share.
#
#   source deb_root_lib.sh; deb_root_install DEB   # sets ROOT; cleaned up on exit
#   (or deb_root_setup, then deb_root_apt ARGS... / deb_root_install_deb DEB as needed)
#   in_root COMMAND...                             # runs COMMAND in the root (chroot)
#   check_installed in_root                        # the package's files, libraries, user
#   testbed_slurm_conf NAME; testbed_daemon_config PORT ...; wait_ready PID PORT LOG
# Needs root. The cached root lives in $SKB_CACHE/deb-root-bookworm (~210 MB; debootstrap
# needs network the first time, ~3 min); downloaded .debs in $SKB_CACHE/deb-root-apt-archives,
# which each root starts with as hard links in an archive directory of its own (apt locks
# its archive directory: two roots sharing one by a bind mount -- systemd_testbed_test in the
# dp lane beside image_test in the cpu lane -- failed the second's install at once, "Could
# not get lock /var/cache/apt/archives/lock") and gives back what it downloaded.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }

MIRROR="${SKB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE="$SKB_CACHE/deb-root-bookworm"
ARCHIVES="$SKB_CACHE/deb-root-apt-archives"
ROOT=""
ROOT_MOUNTS=()

deb_root_base() {
  skb_have debootstrap || fail "debootstrap missing (scripts/setup installs it)"
  mkdir -p "$SKB_CACHE" "$ARCHIVES/partial"
  exec 9>"$SKB_CACHE/deb-root.lock"
  flock 9
  if [[ ! -f "$BASE/.skb-complete" ]]; then
    echo "making the bare Debian 12 root in $BASE (debootstrap, once)"
    rm -rf "$BASE" "$BASE.tmp"
    debootstrap --variant=minbase bookworm "$BASE.tmp" "$MIRROR" >"$SKB_CACHE/deb-root.log" 2>&1 ||
      { tail -20 "$SKB_CACHE/deb-root.log" >&2; fail "debootstrap failed"; }
    echo "deb $MIRROR bookworm main" >"$BASE.tmp/etc/apt/sources.list"
    chroot "$BASE.tmp" apt-get update -q >>"$SKB_CACHE/deb-root.log" 2>&1 ||
      fail "apt-get update in the root failed"
    chroot "$BASE.tmp" apt-get clean
    touch "$BASE.tmp/.skb-complete"
    mv "$BASE.tmp" "$BASE"
  fi
  flock -u 9
}

deb_root_unmount() {
  local i
  for ((i = ${#ROOT_MOUNTS[@]} - 1; i >= 0; i--)); do umount "${ROOT_MOUNTS[i]}" 2>/dev/null || true; done
  ROOT_MOUNTS=()
}

# The .debs this root downloaded, into the shared cache (a link each: apt writes a download
# under partial/ and renames it into place, and never changes a .deb it has; a name the
# cache has is the same file).
deb_root_keep_downloads() {
  local f
  for f in "$ROOT"/var/cache/apt/archives/*.deb; do
    [[ -f "$f" && ! -e "$ARCHIVES/${f##*/}" ]] || continue
    ln "$f" "$ARCHIVES/${f##*/}" 2>/dev/null || cp "$f" "$ARCHIVES/${f##*/}" 2>/dev/null || true
  done
}

deb_root_cleanup() {
  deb_root_unmount
  if [[ -n "$ROOT" ]]; then
    deb_root_keep_downloads
    rm -rf --one-file-system "$ROOT"
  fi
}

# deb_root_mount SOURCE TARGET_IN_ROOT [mount options...]
deb_root_mount() {
  local src="$1" dst="$ROOT$2"; shift 2
  mkdir -p "$dst"
  mount "$@" "$src" "$dst"
  ROOT_MOUNTS+=("$dst")
}

in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

# deb_root_setup: ROOT, a fresh copy of the cached bare root with /dev and /proc mounted and
# apt's archive cache linked in; removed on exit. dpkg in it does not sync each file it
# writes (force-unsafe-io, as Debian's container images): a root is thrown away after its
# test, and the syncs of its installs, upgrades and purges held the disk the testbeds' lanes
# share.
deb_root_setup() {
  ((EUID == 0)) || { echo "SKIP: needs root for chroot"; exit 77; }
  deb_root_base
  ROOT="$(mktemp -d "${TMPDIR:-/tmp}/skb-deb-root.XXXXXX")"
  trap deb_root_cleanup EXIT
  cp -a "$BASE/." "$ROOT/"
  echo force-unsafe-io >"$ROOT/etc/dpkg/dpkg.cfg.d/skb-test-unsafe-io"
  mkdir -p "$ROOT/var/cache/apt/archives/partial"
  find "$ARCHIVES" -maxdepth 1 -name '*.deb' -exec cp -l -t "$ROOT/var/cache/apt/archives/" {} + \
    2>/dev/null || find "$ARCHIVES" -maxdepth 1 -name '*.deb' -exec cp -t "$ROOT/var/cache/apt/archives/" {} +
  deb_root_mount /dev /dev --bind
  deb_root_mount proc /proc -t proc
}

# deb_root_apt ARGS...: `apt-get -y -q ARGS` in the root, output in $ROOT/install.log. A stale
# package list (the mirror moved on) fails the download: refreshed once, then tried again.
deb_root_apt() {
  if ! in_root apt-get -y -q "$@" >>"$ROOT/install.log" 2>&1; then
    in_root apt-get update -q >>"$ROOT/install.log" 2>&1 || true
    in_root apt-get -y -q "$@" >>"$ROOT/install.log" 2>&1 ||
      { tail -30 "$ROOT/install.log" >&2; fail "apt-get $* failed"; }
  fi
}

# deb_root_install_deb DEB: installs (or upgrades to) the package file DEB with apt, as a
# site would: apt resolves what it depends on from Debian.
deb_root_install_deb() {
  cp "$(readlink -f "$1")" "$ROOT/tmp/$(basename "$1")"
  deb_root_apt install --no-install-recommends "${@:2}" "/tmp/$(basename "$1")"
  echo "installed: $(in_root dpkg-query -W -f '${Package} ${Version}' slurm-k8s-bridge)"
}

deb_root_install() {
  deb_root_setup
  deb_root_install_deb "$1"
}

# check_installed RUN: the installed package, every command run through RUN (in_root, or
# the image tests' in_image): nothing the binaries or libslurm load is missing (ldd;
# auth_munge.so in the PluginDir, where the package's plugin is, and every plugin there
# with its libraries); the slurm user has the
# uid of the unit, the chart and the image (64030); the daemon runs, accepts the packaged
# config, and bridgectl runs.
check_installed() {
  local run="$1" f missing plugin plugin_dir uid
  for f in /usr/bin/slurm-k8s-bridge /usr/bin/bridgectl; do
    missing="$("$run" ldd "$f" | grep 'not found' || true)"
    [[ -z "$missing" ]] || fail "$f: $missing"
  done
  plugin="$("$run" dpkg -L slurm-k8s-bridge | grep '/job_submit_k8s_bridge\.so$')"
  plugin_dir="$(dirname "$plugin")"
  "$run" test -f "$plugin_dir/auth_munge.so" ||
    fail "auth_munge.so is not beside the plugin in $plugin_dir (libslurm cannot authenticate)"
  # Every plugin there (libslurm picks them by slurm.conf), auth_munge.so among them.
  missing="$("$run" sh -c 'for f in "$1"/*.so; do ldd "$f" | sed -n "s|^|$f:|; /not found/p"; done' \
    sh "$plugin_dir")"
  [[ -z "$missing" ]] || fail "Slurm plugins with missing libraries: $missing"
  uid="$("$run" id -u slurm)" || fail "no slurm user"
  [[ "$uid" == 64030 ]] || fail "slurm has uid $uid, not 64030 (the image's and the chart's)"

  "$run" slurm-k8s-bridge --version
  "$run" slurm-k8s-bridge --check-config --config /etc/slurm-k8s-bridge/config.json
  "$run" bridgectl --help >/dev/null || fail "bridgectl --help failed"
}

# The testbed (`eval "$(scripts/testbed env)"` first): its slurm.conf names the build
# tree's plugin directory too (for slurmctld's job_submit plugin), which does not exist in
# the root or the image, and libslurm refuses a PluginDir it cannot open. testbed_slurm_conf
# NAME writes a copy beside it (same directory, so relative paths hold) whose PluginDir is
# the package's, and prints its path; the caller removes it.
testbed_slurm_conf() {
  local conf
  conf="$(dirname "$SLURM_CONF")/slurm-$1.conf"
  sed -E 's|^[Pp]lugin[Dd]ir=.*|PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm|' "$SLURM_CONF" >"$conf"
  echo "$conf"
}

# testbed_daemon_config PORT SLURM_CONF KUBECONFIG: a daemon config for the testbed that
# manages no node (a selector nothing matches) and does not lend, so it changes nothing on
# the shared testbed; its socket in /run/slurm-k8s-bridge.
testbed_daemon_config() {
  cat <<JSON
{
  "apiVersion": "slurm-k8s-bridge/v1",
  "logging": {"level": "info", "format": "json"},
  "kubernetes": {"kubeconfig": "$3", "namespace": "slurm-bridge",
                 "node_selector": "slurm-k8s-bridge.io/managed=deb-root-test-none"},
  "slurm": {"conf": "$2"},
  "server": {"socket_path": "/run/slurm-k8s-bridge/bridge.sock",
             "http_address": "127.0.0.1:$1"},
  "lending": {"enabled": false}
}
JSON
}

# wait_ready PID PORT LOG: waits (30 s) until the daemon (PID: it, or what it runs under)
# answers /readyz with ok ("ready" needs the node and pod caches synced and one Slurm poll
# done) and its metrics show the Slurm poll; fails with the log's tail otherwise.
wait_ready() {
  local pid="$1" port="$2" log="$3" ready=""
  for _ in $(seq 1 150); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -20 "$log" >&2
      fail "the daemon exited"
    fi
    ready="$(curl -fsS "http://127.0.0.1:$port/readyz" 2>/dev/null || true)"
    [[ "$ready" == ok* ]] && break
    sleep 0.2
  done
  if [[ "$ready" != ok* ]]; then
    tail -20 "$log" >&2
    curl -sS "http://127.0.0.1:$port/readyz" >&2 || true
    fail "/readyz never said ready"
  fi
  echo "/readyz: $ready"
  grep -q '^skb_cache_synced{source="slurm"} 1' <(curl -fsS "http://127.0.0.1:$port/metrics") ||
    fail "metrics do not show a Slurm poll"
}

# stop_pid PID: SIGTERM, then SIGKILL after 10 s; reaps it.
stop_pid() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
