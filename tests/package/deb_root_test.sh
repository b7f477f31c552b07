#!/usr/bin/env bash
# deb_root_test DEB: installs the package (built by deb_package_test) into a bare Debian 12
# root with apt, as a site would, and runs it there:
#   - apt resolves every dependency the package declares, from Debian alone;
#   - nothing the binaries or libslurm load is missing (ldd; auth_munge.so in the PluginDir);
#   - the slurm user the unit runs as exists with the chart's and the image's uid (64030);
#   - `slurm-k8s-bridge --version`, `--check-config` of the packaged config and
#     `bridgectl --help` run.
# Needs root (chroot). The bare root is made once with debootstrap and cached outside the
# repository ($SKB_CACHE/deb-root-bookworm, ~250 MB, a few minutes and network the first
# time); each run installs into a copy, so the cached root stays bare. Downloaded .debs are
# cached too: later runs need no network. Exit 77 (skipped) when not root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
DEB="$(readlink -f "$1")"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ((EUID != 0)); then echo "SKIP: needs root for chroot"; exit 77; fi
skb_have debootstrap || fail "debootstrap missing (scripts/setup installs it)"

MIRROR="${SKB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE="$SKB_CACHE/deb-root-bookworm"
ARCHIVES="$SKB_CACHE/deb-root-apt-archives"
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

ROOT="$(mktemp -d "${TMPDIR:-/tmp}/skb-deb-root.XXXXXX")"
cleanup() {
  for m in var/cache/apt/archives proc dev; do umount "$ROOT/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$ROOT"
}
trap cleanup EXIT
cp -a "$BASE/." "$ROOT/"
mount --bind /dev "$ROOT/dev"
mount -t proc proc "$ROOT/proc"
mount --bind "$ARCHIVES" "$ROOT/var/cache/apt/archives"
cp "$DEB" "$ROOT/tmp/slurm-k8s-bridge.deb"
in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

install_pkg() {
  in_root apt-get install -y -q --no-install-recommends /tmp/slurm-k8s-bridge.deb
}
# A stale package list (the mirror moved on) fails the download: refresh once and retry.
if ! install_pkg >"$ROOT/install.log" 2>&1; then
  in_root apt-get update -q >>"$ROOT/install.log" 2>&1 || true
  install_pkg >>"$ROOT/install.log" 2>&1 || { tail -30 "$ROOT/install.log" >&2; fail "apt-get install failed"; }
fi
echo "installed: $(in_root dpkg-query -W -f '${Package} ${Version}\n' slurm-k8s-bridge)"

for f in /usr/bin/slurm-k8s-bridge /usr/bin/bridgectl; do
  missing="$(in_root ldd "$f" | grep 'not found' || true)"
  [[ -z "$missing" ]] || fail "$f: $missing"
done
plugin="$(in_root dpkg -L slurm-k8s-bridge | grep '/job_submit_k8s_bridge\.so$')"
plugin_dir="$(dirname "$plugin")"
[[ -f "$ROOT$plugin_dir/auth_munge.so" ]] ||
  fail "auth_munge.so is not beside the plugin in $plugin_dir (libslurm cannot authenticate)"
missing="$(in_root ldd "$plugin_dir/auth_munge.so" | grep 'not found' || true)"
[[ -z "$missing" ]] || fail "auth_munge.so: $missing"
uid="$(in_root id -u slurm)" || fail "no slurm user"
[[ "$uid" == 64030 ]] || fail "slurm has uid $uid, not 64030 (the image's and the chart's)"

in_root slurm-k8s-bridge --version
in_root slurm-k8s-bridge --check-config --config /etc/slurm-k8s-bridge/config.json
in_root bridgectl --help >/dev/null || fail "bridgectl --help failed"
# The daemon as the unit runs it: as slurm.
in_root setpriv --reuid=slurm --regid=slurm --init-groups slurm-k8s-bridge --version >/dev/null ||
  fail "the daemon does not run as slurm"
echo "OK"
