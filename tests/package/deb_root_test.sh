#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
source "$(dirname "${BASH_SOURCE[0]}")/deb_root_lib.sh"
deb_root_install "$1"

check_installed in_root
# The daemon as the unit runs it: as slurm.
in_root setpriv --reuid=slurm --regid=slurm --init-groups slurm-k8s-bridge --version >/dev/null ||
  fail "the daemon does not run as slurm"
echo "OK"
