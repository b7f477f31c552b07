#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install_prefix_test BUILD_DIR: `cmake --install BUILD_DIR --prefix P` writes nothing
# outside P (cmake/SkbPackaging.cmake: every destination is relative to the prefix; the
# config's /etc and an absolute plugin directory are used only by an install at the
# configured prefix). Checked on the install manifest: every file it lists is under P, and
# it lists exactly the files found there. Installed twice:
#   1. under a DESTDIR in the same temporary directory, so a destination that escaped the
#      prefix lands there too (and is reported) instead of overwriting this host's files;
#   2. as a user would, DESTDIR empty, in a mount namespace where everything but the
#      temporary directory and the build tree is read-only: a write outside P fails the
#      install there (and names the file) instead of landing on this host. Needs root
#      (unshare, mount); exit 77 (skipped) after step 1 otherwise.
# The config must be in P/etc/slurm-k8s-bridge, where a relocated install puts it.
#
# Needs the installed targets built (the daemon, bridgectl, the plugin). The build tree's
# install_manifest.txt (cpack and every install write it) is put back as it was.
set -euo pipefail
BUILD="$(cd "$1" && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/skb-install-prefix.XXXXXX")"
manifest="$BUILD/install_manifest.txt"
saved=""
if [[ -f "$manifest" ]]; then saved="$tmp/install_manifest.saved" && cp -p "$manifest" "$saved"; fi
restore() {
  if [[ -n "$saved" ]]; then cp -p "$saved" "$manifest"; else rm -f "$manifest"; fi
  rm -rf "$tmp"
}
trap restore EXIT

prefix="$tmp/prefix" destdir="$tmp/destdir"
DESTDIR="$destdir" cmake --install "$BUILD" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
[[ -s "$manifest" ]] || fail "no install manifest in $BUILD"
sort -o "$tmp/listed" "$manifest"
echo "installed $(wc -l <"$tmp/listed") files under the prefix $prefix"

not_under() { awk -v p="$prefix/" 'index($0, p) != 1' "$1"; }
outside="$(not_under "$tmp/listed")"
[[ -z "$outside" ]] || fail "installed outside the prefix $prefix:
$outside"
# What was written: everything under DESTDIR, which must all be under DESTDIR/prefix.
(cd "$destdir" && find . ! -type d | sed 's|^\.||') | sort >"$tmp/written"
stray="$(not_under "$tmp/written")"
[[ -z "$stray" ]] || fail "written outside the prefix $prefix:
$stray"
diff -u "$tmp/listed" "$tmp/written" || fail "the manifest and the files written differ"
grep -qx "$prefix/etc/slurm-k8s-bridge/config.json" "$tmp/listed" ||
  fail "the config is not in $prefix/etc/slurm-k8s-bridge"
echo "OK: with DESTDIR, every file under the prefix"

((EUID == 0)) || { echo "SKIP: the install without DESTDIR needs root (a read-only mount namespace)"; exit 77; }
prefix2="$tmp/prefix2"
# In the namespace: every mount read-only, then the temporary directory and the build tree
# (the manifest) writable again; a probe outside them must fail before the install runs.
unshare --mount --propagation private -- bash -c '
  set -u
  tmp="$1" build="$2"; shift 2
  awk "{print \$5}" /proc/self/mountinfo | sort -u | while read -r mp; do
    mount -o remount,bind,ro "$mp" 2>/dev/null || true
  done
  for d in "$tmp" "$build"; do  # a bind mount takes its source mount'"'"'s read-only flag
    mount --bind "$d" "$d" && mount -o remount,bind,rw "$d" || exit 3
  done
  probe="$(dirname "$tmp")/skb-install-prefix-probe.$$"
  if touch "$probe" 2>/dev/null; then rm -f "$probe"; echo "the probe $probe was writable" >&2; exit 3; fi
  exec env -u DESTDIR "$@"' _ "$tmp" "$BUILD" \
  cmake --install "$BUILD" --prefix "$prefix2" >"$tmp/install2.log" 2>&1 || {
  rc=$?
  cat "$tmp/install2.log" >&2
  ((rc == 3)) && fail "could not make a read-only mount namespace to install in"
  fail "cmake --install --prefix $prefix2 without DESTDIR failed (a write outside the prefix is refused here: read the log above)"
}
sort -o "$tmp/listed2" "$manifest"
outside="$(awk -v p="$prefix2/" 'index($0, p) != 1' "$tmp/listed2")"
[[ -z "$outside" ]] || fail "installed outside the prefix $prefix2 (DESTDIR empty):
$outside"
(cd "$prefix2" && find . ! -type d | sed "s|^\.|$prefix2|") | sort >"$tmp/written2"
diff -u "$tmp/listed2" "$tmp/written2" || fail "the manifest and the files written differ (DESTDIR empty)"
[[ "$(wc -l <"$tmp/listed2")" == "$(wc -l <"$tmp/listed")" ]] ||
  fail "the two installs differ in their number of files"
echo "OK: without DESTDIR, $(wc -l <"$tmp/listed2") files under $prefix2 and nothing written elsewhere"
