#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# lintian_test DEB: the package (built by deb_package_test) is lintian clean. lintian runs
# with every info tag shown (and the pedantic ones, printed only); the test fails on
#   - any error (E:), warning (W:) or info (I:) tag that the package's overrides file,
#     /usr/share/lintian/overrides/slurm-k8s-bridge (bridge/dist/lintian-overrides), does not
#     list -- lintian's own unused-override and mismatched-override tags included, so an
#     override that is no longer needed fails too;
#   - an override without a comment saying why: each paragraph of the file that holds
#     overrides starts with a comment;
#   - a run that checked nothing: lintian must report the package and apply every override;
#   - maintainer scripts whose systemd parts are not debhelper's: each snippet that
#     `dh_installsystemd --no-enable --no-start` would put at the DEBHELPER token (debhelper's
#     autoscripts of the installed debhelper, the unit's name filled in) is in the script
#     verbatim.
# As root, lintian runs as nobody (it refuses nothing as root, but says not to).
set -euo pipefail
DEB="$(readlink -f "$1")"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v lintian >/dev/null || fail "lintian missing (scripts/setup installs it)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/skb-lintian.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
cp "$DEB" "$tmp/slurm-k8s-bridge.deb"
chmod 0644 "$tmp/slurm-k8s-bridge.deb"
run=()
if ((EUID == 0)); then run=(setpriv --reuid=nobody --regid=nogroup --clear-groups); fi
t0=$SECONDS
"${run[@]}" env HOME="$tmp" lintian --display-info --pedantic --show-overrides \
  --tag-display-limit 0 --fail-on none "$tmp/slurm-k8s-bridge.deb" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out" >&2; fail "lintian did not run"; }
echo "lintian $(lintian --version | awk '{print $2}') in $((SECONDS - t0)) s:"
cat "$tmp/out"

grep -q 'internal error\|^Unknown\|^warning: ' "$tmp/out" && fail "lintian reported a problem of its own"
# The overrides the package ships, as lintian read them.
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/lintian/overrides/slurm-k8s-bridge \
  >"$tmp/overrides" 2>/dev/null || fail "the package ships no usr/share/lintian/overrides/slurm-k8s-bridge"
overrides="$(grep -c '^slurm-k8s-bridge: ' "$tmp/overrides" || true)"
((overrides > 0)) || fail "the overrides file lists no override"
# Each paragraph with an override starts with a comment (its reason).
awk '
  /^[[:space:]]*$/ { para = 0; next }
  { if (para == 0) { first = $0 } para++ }
  /^slurm-k8s-bridge: / && first !~ /^#/ { print "override without a comment: " $0; bad = 1 }
  END { exit bad }' "$tmp/overrides" || fail "an override says not why (bridge/dist/lintian-overrides)"
grep -vE '^(#|slurm-k8s-bridge: |[[:space:]]*$)' "$tmp/overrides" &&
  fail "lines in the overrides file that are neither a comment nor an override"

# Tags: "X: package[ type]: tag [context]".
tags="$(grep -E '^[EWIPO]: slurm-k8s-bridge' "$tmp/out" || true)"
[[ -n "$tags" ]] || fail "lintian reported nothing about the package (did it check it?)"
applied="$(grep -c '^O: ' <<<"$tags" || true)"
((applied >= overrides)) ||
  fail "lintian applied $applied overrides of the $overrides listed (is the file where lintian looks?)"
bad="$(grep -E '^[EWI]: ' <<<"$tags" || true)"
[[ -z "$bad" ]] || fail "lintian tags that bridge/dist/lintian-overrides does not accept (fix them, or override one with its reason):
$bad"
# debhelper's snippets, as dh_installsystemd --no-enable --no-start would inline them.
autoscripts=/usr/share/debhelper/autoscripts
[[ -d "$autoscripts" ]] || fail "debhelper missing (scripts/setup installs it): $autoscripts"
dpkg-deb -e "$DEB" "$tmp/control"
python3 - "$autoscripts" "$tmp/control" <<'PY' || fail "a maintainer script lacks debhelper's snippet"
import sys
autoscripts, control = sys.argv[1:]
want = {"postinst": ["postinst-systemd-dont-enable", "postinst-systemd-restartnostart"],
        "prerm": ["prerm-systemd-restart"],
        "postrm": ["postrm-systemd", "postrm-systemd-reload-only"]}
bad = 0
for script, snippets in want.items():
    text = open(f"{control}/{script}").read()
    for name in snippets:
        snippet = open(f"{autoscripts}/{name}").read()
        for key, value in (("#UNITFILES#", "'slurm-k8s-bridge.service'"),
                           ("#UNITFILE#", "'slurm-k8s-bridge.service'"),
                           ("#RESTART_ACTION#", "try-restart")):
            snippet = snippet.replace(key, value)
        if snippet not in text:
            print(f"{script} lacks debhelper's {name}:", snippet, sep="\n", file=sys.stderr)
            bad = 1
        else:
            print(f"{script}: debhelper's {name}")
    if text.count("# End automatically added section") != len(snippets):
        print(f"{script}: not one marked section per snippet", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
echo "OK: no error, warning or info tag; $applied overridden ($overrides overrides), $(grep -c '^P: ' <<<"$tags" || true) pedantic"
