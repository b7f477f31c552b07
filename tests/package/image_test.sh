#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image_test DEB: builds the container image from the top-level Dockerfile as docs/install.md
# says (`buildah bud -t ... .` on the source tree: the Dockerfile's build stage compiles the
# project and makes the package with cpack, the runtime stage installs it with apt), with a
# Debian 12 root made by debootstrap as both base images (no registry) and the layer and
# compiler caches of image_lib.sh (image_build_documented). Then:
#   - the package the build stage made holds the same files, modes and control fields as
#     DEB (built from this tree by deb_package_test): the two ways to the image agree;
#   - the image's OCI labels: licenses Apache-2.0, source, version the chart's appVersion;
#     the tree's LICENSE and NOTICE in /usr/share/licenses/slurm-k8s-bridge/;
#   - it runs as uid/gid 64030 (Debian's slurm: the chart's runAsUser, the unit's user), its
#     entrypoint is the daemon, and `slurm-k8s-bridge --version` runs as that user, with
#     the chart's appVersion (the tag the chart deploys);
#   - what deb_root_test checks of the installed package (check_installed): every shared
#     library of the daemon and bridgectl resolves, auth_munge.so is in the PluginDir
#     libslurm loads it from, with its libraries; the packaged config is accepted.
# The build from a package (DEB_FROM=prebuilt) is image_testbed_test's, which runs that
# image's daemon against the testbed. Needs root; exit 77 when not root. The first run on a
# machine makes the Debian root and the base (a few minutes, network) and compiles the
# project in the image with a cold compiler cache (tens of minutes on 2 cores).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
DEB="$(readlink -f "$1")"
image_build_documented

# The package made inside, against DEB.
stage="$("${BUILDAH[@]}" from --pull=never --name skb-test-build-stage "$BUILD_STAGE")"
stage_mnt="$("${BUILDAH[@]}" mount "$stage")"
cp "$stage_mnt/pkg/slurm-k8s-bridge.deb" "$IMAGE_TMP/built-inside.deb"
"${BUILDAH[@]}" umount "$stage" >/dev/null
"${BUILDAH[@]}" rm "$stage" >/dev/null
contents() { dpkg-deb -c "$1" | awk '{print $1, $6}' | sort; }
diff -u <(contents "$DEB") <(contents "$IMAGE_TMP/built-inside.deb") ||
  fail "the package the Dockerfile builds differs in its files from the tree's (deb_package_test)"
control() { dpkg-deb -f "$1" | grep -v '^Installed-Size:'; }
diff -u <(control "$DEB") <(control "$IMAGE_TMP/built-inside.deb") ||
  fail "the package the Dockerfile builds differs in its control fields from the tree's"
echo "the build stage's package: $(dpkg-deb -f "$IMAGE_TMP/built-inside.deb" Package Version | paste -sd' ')," \
  "$(contents "$DEB" | wc -l) entries, as the tree's"

user="$("${BUILDAH[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$DOC_IMAGE")"
[[ "$user" == 64030:64030 ]] || fail "the image runs as '$user', not 64030:64030"
entrypoint="$("${BUILDAH[@]}" inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$DOC_IMAGE")"
[[ "$entrypoint" == "[/usr/bin/slurm-k8s-bridge]" ]] || fail "entrypoint $entrypoint"

label() { "${BUILDAH[@]}" inspect --type image --format "{{index .OCIv1.Config.Labels \"$1\"}}" "$DOC_IMAGE"; }
app="$(sed -n 's/^appVersion: *"\(.*\)"$/\1/p' "$SKB_ROOT/helm/slurm-k8s-bridge/Chart.yaml")"
[[ "$(label org.opencontainers.image.licenses)" == Apache-2.0 ]] ||
  fail "label org.opencontainers.image.licenses is '$(label org.opencontainers.image.licenses)'"
[[ "$(label org.opencontainers.image.source)" == https://github.com/slurm-k8s-bridge/slurm-k8s-bridge ]] ||
  fail "label org.opencontainers.image.source is '$(label org.opencontainers.image.source)'"
[[ "$(label org.opencontainers.image.version)" == "$app" ]] ||
  fail "label org.opencontainers.image.version is '$(label org.opencontainers.image.version)', the chart's appVersion $app"

image_container "$DOC_IMAGE"
for f in LICENSE NOTICE; do
  in_image cat "/usr/share/licenses/slurm-k8s-bridge/$f" | cmp -s - "$SKB_ROOT/$f" ||
    fail "/usr/share/licenses/slurm-k8s-bridge/$f in the image is not the tree's $f"
done
ids="$(in_image id -u):$(in_image id -g)"
[[ "$ids" == 64030:64030 ]] || fail "commands in the image run as $ids, not 64030:64030"
check_installed in_image
# The chart deploys the image tagged with its appVersion: the version of the daemon in it.
version="$(in_image slurm-k8s-bridge --version)"
[[ "$version" == "slurm-k8s-bridge $app "* ]] ||
  fail "the chart's appVersion '$app' is not the image's daemon version ($version)"
echo "OK"
