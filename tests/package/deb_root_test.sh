#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_root_test DEB: installs the package (built by deb_package_test) into a bare Debian 12
# root with apt, as a site would, and runs it there:
#   - apt resolves every dependency the package declares, from Debian alone;
#   - nothing the binaries or libslurm load is missing (ldd; auth_munge.so in the PluginDir);
#   - the slurm user the unit runs as exists with the chart's and the image's uid (64030);
#   - `slurm-k8s-bridge --version`, `--check-config` of the packaged config and
#     `bridgectl --help` run;
#   - the maintainer scripts (debhelper's systemd snippets): the unit is not enabled on
#     install but deb-systemd-helper knows it; a unit the admin enabled stays enabled
#     across an upgrade (a reinstall here); purge removes its symlink, the helper's state
#     and the config. The root has no systemd running, as a chroot build has none: the
#     start/stop/daemon-reload branches are not taken.
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

wants=/etc/systemd/system/multi-user.target.wants/slurm-k8s-bridge.service
state=/var/lib/systemd/deb-systemd-helper-enabled/slurm-k8s-bridge.service.dsh-also
in_root test ! -e "$wants" || fail "the unit is enabled on install"
in_root grep -qx "$wants" "$state" ||
  fail "postinst did not record the unit's symlink in $state (deb-systemd-helper update-state)"
# An admin's `systemctl enable` (the root has no systemctl): the symlink [Install] asks for.
in_root mkdir -p "$(dirname "$wants")"
in_root ln -s /lib/systemd/system/slurm-k8s-bridge.service "$wants"
in_root apt-get install -y -q --reinstall /tmp/slurm-k8s-bridge.deb >>"$ROOT/install.log" 2>&1 ||
  { tail -20 "$ROOT/install.log" >&2; fail "reinstalling the package failed"; }
in_root test -L "$wants" || fail "the upgrade (reinstall) disabled the unit the admin enabled"
in_root apt-get purge -y -q slurm-k8s-bridge >>"$ROOT/install.log" 2>&1 ||
  { tail -20 "$ROOT/install.log" >&2; fail "purging the package failed"; }
for f in "$wants" "$state" /etc/slurm-k8s-bridge/config.json; do
  in_root test ! -e "$f" || fail "$f is left after purge"
done
echo "OK"
