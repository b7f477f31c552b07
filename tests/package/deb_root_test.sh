#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_root_test DEB: the package's life in a bare Debian 12 root, with apt and dpkg as a site
# would run them: installed, upgraded, removed and purged.
#   1. A package of a lower version is built here from DEB (its version below DEB's, its
#      config.json as 0.1.0 shipped it: no apiVersion) and installed on a root where
#      slurm-wlm-basic-plugins is installed but its slurm user was removed: postinst creates
#      the user again (adduser, uid/gid 64030, home /nonexistent, no shell) and gives the
#      config directory to root:slurm 0750 (dpkg-statoverride). The unit is not enabled,
#      deb-systemd-helper knows it.
#   2. The admin edits config.json and enables the unit (the symlink systemctl makes).
#   3. Upgrade to DEB (apt, --force-confold as unattended upgrades run it): DEB's version is
#      installed, the admin's config is kept (the packaged one, now with apiVersion, beside
#      it as config.json.dpkg-dist) and still accepted (read as v1, with the notice); the
#      unit is still enabled; every file the package lists is there; what check_installed
#      checks (libraries, auth_munge.so, the slurm user's uid, --version, --check-config,
#      bridgectl) holds; the daemon runs as slurm.
#   4. Remove: the programs are gone, the config, its statoverride and the user stay.
#   5. Purge: the config and its directory, the statoverride, the unit's symlink and
#      deb-systemd-helper's state are gone; the slurm user stays (it is Slurm's).
# The root has no systemd running, as a chroot build has none: the start/stop/daemon-reload
# branches of the scripts are not taken. Needs root (chroot). The bare root is made once with
# debootstrap and cached outside the repository ($SKB_CACHE/deb-root-bookworm, ~250 MB, a few
# minutes and network the first time); each run works on a copy, so the cached root stays
# bare. Downloaded .debs are cached too. Exit 77 (skipped) when not root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/deb_root_lib.sh"
DEB="$(readlink -f "$1")"
((EUID == 0)) || { echo "SKIP: needs root for chroot"; exit 77; }

# The lower version: DEB's contents under a version that sorts below it, with 0.1.0's config.
version="$(dpkg-deb -f "$DEB" Version)"
old_version="${version%-*}-0~older"
dpkg --compare-versions "$old_version" lt "$version" || fail "$old_version is not below $version"
work="$(mktemp -d "${TMPDIR:-/tmp}/skb-deb-old.XXXXXX")"
dpkg-deb -R "$DEB" "$work/pkg"
sed -i "s/^Version: .*/Version: $old_version/" "$work/pkg/DEBIAN/control"
conf=etc/slurm-k8s-bridge/config.json
grep -q '"apiVersion"' "$work/pkg/$conf" || fail "the packaged config has no apiVersion"
sed -i '/"apiVersion"/d' "$work/pkg/$conf"
(cd "$work/pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | sort | xargs md5sum >DEBIAN/md5sums)
old_deb="$work/slurm-k8s-bridge_${old_version}_amd64.deb"
dpkg-deb --root-owner-group -b "$work/pkg" "$old_deb" >/dev/null
rm -rf "$work/pkg"

deb_root_setup
trap 'deb_root_cleanup; rm -rf "$work"' EXIT

# 1. A root whose slurm user is gone (slurm-wlm-basic-plugins created it on install).
deb_root_apt install --no-install-recommends slurm-wlm-basic-plugins
in_root deluser --quiet slurm >/dev/null 2>&1 || true
in_root getent group slurm >/dev/null && in_root delgroup --quiet slurm
in_root getent passwd slurm >/dev/null && fail "could not remove the slurm user"
deb_root_install_deb "$old_deb"
[[ "$(in_root dpkg-query -W -f '${Version}' slurm-k8s-bridge)" == "$old_version" ]] ||
  fail "the lower version is not installed"
user="$(in_root getent passwd slurm)" || fail "postinst did not create the slurm user"
echo "user: $user"
IFS=: read -r _ _ uid gid _ home shell <<<"$user"
[[ "$uid:$gid" == 64030:64030 ]] || fail "postinst made slurm $uid:$gid, not 64030:64030"
[[ "$home" == /nonexistent && "$shell" == /usr/sbin/nologin ]] ||
  fail "the slurm user is no system user (home $home, shell $shell)"
confdir_is() {
  local got
  got="$(in_root stat -c '%U:%G %a' /etc/slurm-k8s-bridge)"
  [[ "$got" == "$1" ]] || fail "/etc/slurm-k8s-bridge is $got, not $1"
}
confdir_is "root:slurm 750"
in_root dpkg-statoverride --list /etc/slurm-k8s-bridge | grep -qx 'root slurm 750 /etc/slurm-k8s-bridge' ||
  fail "no dpkg-statoverride of /etc/slurm-k8s-bridge"
wants=/etc/systemd/system/multi-user.target.wants/slurm-k8s-bridge.service
state=/var/lib/systemd/deb-systemd-helper-enabled/slurm-k8s-bridge.service.dsh-also
in_root test ! -e "$wants" || fail "the unit is enabled on install"
in_root grep -qx "$wants" "$state" ||
  fail "postinst did not record the unit's symlink in $state (deb-systemd-helper update-state)"

# 2. The admin's edits: a config of their own, the unit enabled (the root has no systemctl:
# the symlink its [Install] asks for).
in_root sed -i 's/"level": "info"/"level": "debug"/' "/$conf"
in_root grep -q '"level": "debug"' "/$conf" || fail "could not edit the config"
edited="$(in_root md5sum "/$conf")"
in_root mkdir -p "$(dirname "$wants")"
in_root ln -s /lib/systemd/system/slurm-k8s-bridge.service "$wants"

# 3. The upgrade.
deb_root_install_deb "$DEB" -o Dpkg::Options::=--force-confold
[[ "$(in_root dpkg-query -W -f '${Version}' slurm-k8s-bridge)" == "$version" ]] ||
  fail "the upgrade did not install $version"
[[ "$(in_root md5sum "/$conf")" == "$edited" ]] || fail "the upgrade replaced the admin's config"
in_root grep -q '"apiVersion"' "/$conf.dpkg-dist" ||
  fail "the new packaged config is not beside the admin's as config.json.dpkg-dist"
check="$(in_root slurm-k8s-bridge --check-config --config "/$conf")" ||
  fail "the kept config (no apiVersion) is refused after the upgrade"
grep -q '^notice: config: no apiVersion: read as slurm-k8s-bridge/v1' <<<"$check" ||
  fail "the kept config is read without the notice of its missing apiVersion: $check"
in_root test -L "$wants" || fail "the upgrade disabled the unit the admin enabled"
confdir_is "root:slurm 750"
in_root dpkg -L slurm-k8s-bridge | while read -r f; do
  in_root test -e "$f" || fail "$f of the package is missing"
done
check_installed in_root
# The daemon as the unit runs it: as slurm, reading its config through the 0750 directory.
in_root setpriv --reuid=slurm --regid=slurm --init-groups \
  slurm-k8s-bridge --check-config --config "/$conf" >/dev/null ||
  fail "the daemon, as slurm, cannot read its config"

# 4. Remove: the conffile, its directory's statoverride and the user stay.
deb_root_apt remove slurm-k8s-bridge
in_root test ! -e /usr/bin/slurm-k8s-bridge || fail "remove left the daemon"
in_root test -f "/$conf" || fail "remove took the config (a conffile stays until purge)"
in_root dpkg-statoverride --list /etc/slurm-k8s-bridge >/dev/null || fail "remove dropped the statoverride"

# 5. Purge.
deb_root_apt purge slurm-k8s-bridge
for f in "$wants" "$state" "/$conf" "/$conf.dpkg-dist" /etc/slurm-k8s-bridge; do
  in_root test ! -e "$f" || fail "$f is left after purge"
done
in_root dpkg-statoverride --list /etc/slurm-k8s-bridge >/dev/null && fail "purge left the statoverride"
in_root getent passwd slurm >/dev/null || fail "purge removed the slurm user (Slurm's, not ours)"
echo "OK"
