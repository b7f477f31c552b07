#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_package_test BUILD_DIR OUT_DIR: builds the Debian package from BUILD_DIR (cpack) into
# OUT_DIR and checks what it holds and what it asks for:
#   - exactly the daemon and bridgectl with their man pages, the plugin in Slurm's PluginDir, the
#     systemd unit, the example config (a conffile), the README, the machine-readable
#     copyright (DEP-5, Apache-2.0), changelog.Debian.gz (of the package's version) and the
#     upstream changelog.gz, lintian's overrides; no test or bench program;
#   - a real Maintainer (not @localhost); the Dockerfile's version label is the package's;
#   - Depends names the libraries the binaries link (dpkg-shlibdeps) and
#     slurm-wlm-basic-plugins of the Slurm release built against (libslurm loads
#     auth_munge.so from it at run time) and adduser (postinst makes the slurm user);
#   - the unit starts the packaged binary with the packaged config, as the slurm user.
# deb_root_test then installs the package into a bare Debian root.
set -euo pipefail
BUILD="$1" OUT="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$OUT" && mkdir -p "$OUT"
cpack --config "$BUILD/CPackConfig.cmake" -B "$OUT" >"$OUT/cpack.log" 2>&1 ||
  { cat "$OUT/cpack.log" >&2; fail "cpack failed"; }
rm -rf "$OUT/_CPack_Packages"
debs=("$OUT"/*.deb)
((${#debs[@]} == 1)) && [[ -f "${debs[0]}" ]] || fail "expected one .deb in $OUT, got: ${debs[*]}"
deb="${debs[0]}"
ln -sf "$(basename "$deb")" "$OUT/slurm-k8s-bridge.deb"
echo "package: $deb ($(stat -c %s "$deb") bytes)"

field() { dpkg-deb -f "$deb" "$1"; }
cache() { sed -n "s|^$1:[A-Z]*=||p" "$BUILD/CMakeCache.txt"; }
prefix="$(cache CMAKE_INSTALL_PREFIX)"
plugin_dir="$(cache SKB_SLURM_PLUGIN_DIR)"
[[ "$plugin_dir" == /* ]] || plugin_dir="$prefix/$plugin_dir"
config_dir="$(cache SKB_CONFIG_DIR)"
doc="$prefix/share/doc/slurm-k8s-bridge"

[[ "$(field Package)" == slurm-k8s-bridge ]] || fail "Package: $(field Package)"
depends="$(field Depends)"
echo "Depends: $depends"
for lib in adduser libslurm38 libcurl4 'libprotobuf' libspdlog libyaml-cpp 'libstdc\+\+6' 'libc6'; do
  grep -Eq "(^|, )$lib" <<<"$depends" || fail "Depends lacks $lib"
done
slurm_mm="$(sed -n 's/^Slurm_VERSION:[A-Z]*=\([0-9]*\.[0-9]*\).*/\1/p' "$BUILD/CMakeCache.txt")"
if [[ -z "$slurm_mm" ]]; then  # FindSlurm sets a normal variable: read it from the version header
  slurm_mm="$(grep -o 'built against Slurm [0-9.]*' <("$BUILD/bridge/slurm-k8s-bridge" --version) |
    awk '{print $4}' | cut -d. -f1,2)"
fi
grep -q "slurm-wlm-basic-plugins (>= $slurm_mm~)" <<<"$depends" ||
  fail "Depends lacks slurm-wlm-basic-plugins (>= $slurm_mm~)"
grep -q "slurm-wlm-basic-plugins (<< " <<<"$depends" || fail "Depends has no upper Slurm bound"
grep -q munge <<<"$(field Recommends)" || fail "Recommends lacks munge"
# The container image installs this package: its version label is the package's version.
image_version="$(sed -n 's/^ARG VERSION=//p' "$(dirname "${BASH_SOURCE[0]}")/../../Dockerfile")"
version="$(field Version)"
[[ "$image_version" == "${version%-*}" ]] ||
  fail "the Dockerfile's ARG VERSION is '$image_version', the package $version"
maintainer="$(field Maintainer)"
echo "Maintainer: $maintainer"
[[ "$maintainer" == *"<"*@*">" && "$maintainer" != *@localhost* ]] ||
  fail "Maintainer is no real address: $maintainer"

# The file list, exactly (directories left out).
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort >"$OUT/files"
cat >"$OUT/expected" <<LIST
$prefix/bin/bridgectl
$prefix/bin/slurm-k8s-bridge
$prefix/lib/systemd/system/slurm-k8s-bridge.service
$doc/README.md
$doc/changelog.Debian.gz
$doc/changelog.gz
$doc/copyright
$prefix/share/lintian/overrides/slurm-k8s-bridge
$prefix/share/man/man1/bridgectl.1.gz
$prefix/share/man/man8/slurm-k8s-bridge.8.gz
$config_dir/config.json
$plugin_dir/job_submit_k8s_bridge.so
LIST
sort -o "$OUT/expected" "$OUT/expected"
diff -u "$OUT/expected" "$OUT/files" || fail "package contents differ from the expected list"

ctl="$OUT/control" && rm -rf "$ctl" && dpkg-deb -e "$deb" "$ctl"
grep -qx "$config_dir/config.json" "$ctl/conffiles" || fail "config.json is no conffile"
for s in postinst prerm postrm; do [[ -x "$ctl/$s" ]] || fail "no executable $s"; done

root="$OUT/root" && rm -rf "$root" && dpkg-deb -x "$deb" "$root"
unit="$root$prefix/lib/systemd/system/slurm-k8s-bridge.service"
grep -qx "ExecStart=$prefix/bin/slurm-k8s-bridge --config $config_dir/config.json" "$unit" ||
  fail "the unit does not start the packaged daemon with the packaged config"
grep -qx 'User=slurm' "$unit" || fail "the unit does not run as slurm"
grep -qx 'RuntimeDirectory=slurm-k8s-bridge' "$unit" || fail "the unit has no RuntimeDirectory"
# Debian Policy 12.5 and 12.7: the copyright file in the DEP-5 format, Apache-2.0 by
# reference to common-licenses; the changelog's top entry is this package's version.
copyright="$root$doc/copyright"
head -1 "$copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
  fail "the copyright file is not machine-readable (DEP-5)"
grep -qx 'License: Apache-2.0' "$copyright" || fail "the copyright file names no License: Apache-2.0"
grep -q '/usr/share/common-licenses/Apache-2.0' "$copyright" ||
  fail "the copyright file does not point to /usr/share/common-licenses/Apache-2.0"
changelog_version="$(gzip -dc "$root$doc/changelog.Debian.gz" | head -1 | sed -n 's/^slurm-k8s-bridge (\([^)]*\)).*/\1/p')"
[[ "$changelog_version" == "$(field Version)" ]] ||
  fail "changelog.Debian.gz's top entry is '$changelog_version', the package $(field Version) (bridge/dist/changelog.Debian)"
# The example config is valid for the packaged daemon, and its socket lives in the unit's
# RuntimeDirectory.
"$root$prefix/bin/slurm-k8s-bridge" --check-config --config "$root$config_dir/config.json" ||
  fail "the packaged daemon rejects the packaged config"
grep -q '"/run/slurm-k8s-bridge/' "$root$config_dir/config.json" ||
  fail "the example config's socket is not under /run/slurm-k8s-bridge"
# The plugin exports Slurm's plugin symbols and is built for the release slurmctld runs.
syms="$(nm -D --defined-only "$root$plugin_dir/job_submit_k8s_bridge.so" | awk '{print $3}')"
for s in plugin_name plugin_type plugin_version init fini job_submit job_modify; do
  grep -qx "$s" <<<"$syms" || fail "the plugin does not export $s"
done
rm -rf "$root" "$ctl"
echo "OK"
