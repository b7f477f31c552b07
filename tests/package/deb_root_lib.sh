# Sourced by deb_root_test.sh and deb_testbed_test.sh: a fresh copy of the cached bare
# Debian 12 root (made once by debootstrap) with the package installed by apt.
#
#   source deb_root_lib.sh; deb_root_install DEB   # sets ROOT; cleaned up on exit
#   in_root COMMAND...                             # runs COMMAND in the root (chroot)
# Needs root. The cached root lives in $SKB_CACHE/deb-root-bookworm (~210 MB; debootstrap
# needs network the first time, ~3 min); downloaded .debs in $SKB_CACHE/deb-root-apt-archives.
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

deb_root_cleanup() {
  local i
  for ((i = ${#ROOT_MOUNTS[@]} - 1; i >= 0; i--)); do umount "${ROOT_MOUNTS[i]}" 2>/dev/null || true; done
  [[ -n "$ROOT" ]] && rm -rf --one-file-system "$ROOT"
}

# deb_root_mount SOURCE TARGET_IN_ROOT [mount options...]
deb_root_mount() {
  local src="$1" dst="$ROOT$2"; shift 2
  mkdir -p "$dst"
  mount "$@" "$src" "$dst"
  ROOT_MOUNTS+=("$dst")
}

in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

deb_root_install() {
  local deb
  deb="$(readlink -f "$1")"
  ((EUID == 0)) || { echo "SKIP: needs root for chroot"; exit 77; }
  deb_root_base
  ROOT="$(mktemp -d "${TMPDIR:-/tmp}/skb-deb-root.XXXXXX")"
  trap deb_root_cleanup EXIT
  cp -a "$BASE/." "$ROOT/"
  deb_root_mount /dev /dev --bind
  deb_root_mount proc /proc -t proc
  deb_root_mount "$ARCHIVES" /var/cache/apt/archives --bind
  cp "$deb" "$ROOT/tmp/slurm-k8s-bridge.deb"
  install_pkg() { in_root apt-get install -y -q --no-install-recommends /tmp/slurm-k8s-bridge.deb; }
  # A stale package list (the mirror moved on) fails the download: refresh once and retry.
  if ! install_pkg >"$ROOT/install.log" 2>&1; then
    in_root apt-get update -q >>"$ROOT/install.log" 2>&1 || true
    install_pkg >>"$ROOT/install.log" 2>&1 ||
      { tail -30 "$ROOT/install.log" >&2; fail "apt-get install failed"; }
  fi
  echo "installed: $(in_root dpkg-query -W -f '${Package} ${Version}' slurm-k8s-bridge)"
}
