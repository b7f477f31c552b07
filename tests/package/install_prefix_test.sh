#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install_prefix_test BUILD_DIR: `cmake --install BUILD_DIR --prefix P` writes nothing
# outside P (cmake/SkbPackaging.cmake: every destination is relative to the prefix; the
# config's /etc and an absolute plugin directory are used only by an install at the
# configured prefix). Checked on the install manifest: every file it lists is under P, and
# it lists exactly the files found there. The install runs under a DESTDIR in the same
# temporary directory, so a destination that escaped the prefix lands there too (and is
# reported) instead of overwriting this host's files. The config must be in
# P/etc/slurm-k8s-bridge, where a relocated install puts it.
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
echo "OK"
