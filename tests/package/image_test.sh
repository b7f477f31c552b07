#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image_test DEB: builds the container image from the top-level Dockerfile with buildah, the
# package (built by deb_package_test) preinstalled and a Debian 12 root made by debootstrap
# as its base: no registry, nothing compiled again (image_lib.sh). Then, in the image:
#   - its OCI labels: licenses Apache-2.0, source, version the chart's appVersion; the
#     tree's LICENSE and NOTICE in /usr/share/licenses/slurm-k8s-bridge/;
#   - it runs as uid/gid 64030 (Debian's slurm: the chart's runAsUser, the unit's user), its
#     entrypoint is the daemon, and `slurm-k8s-bridge --version` runs as that user, with
#     the chart's appVersion (the tag the chart deploys);
#   - what deb_root_test checks of the installed package (check_installed): every shared
#     library of the daemon and bridgectl resolves, auth_munge.so is in the PluginDir
#     libslurm loads it from, with its libraries; the packaged config is accepted.
# image_testbed_test runs the image's daemon against the testbed. Needs root; exit 77 when
# not root. The first run makes the Debian root and the base (a few minutes, network).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
image_build "$1"

user="$("${BUILDAH[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$IMAGE")"
[[ "$user" == 64030:64030 ]] || fail "the image runs as '$user', not 64030:64030"
entrypoint="$("${BUILDAH[@]}" inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$IMAGE")"
[[ "$entrypoint" == "[/usr/bin/slurm-k8s-bridge]" ]] || fail "entrypoint $entrypoint"

label() { "${BUILDAH[@]}" inspect --type image --format "{{index .OCIv1.Config.Labels \"$1\"}}" "$IMAGE"; }
app="$(sed -n 's/^appVersion: *"\(.*\)"$/\1/p' "$SKB_ROOT/helm/slurm-k8s-bridge/Chart.yaml")"
[[ "$(label org.opencontainers.image.licenses)" == Apache-2.0 ]] ||
  fail "label org.opencontainers.image.licenses is '$(label org.opencontainers.image.licenses)'"
[[ "$(label org.opencontainers.image.source)" == https://github.com/slurm-k8s-bridge/slurm-k8s-bridge ]] ||
  fail "label org.opencontainers.image.source is '$(label org.opencontainers.image.source)'"
[[ "$(label org.opencontainers.image.version)" == "$app" ]] ||
  fail "label org.opencontainers.image.version is '$(label org.opencontainers.image.version)', the chart's appVersion $app"

image_container
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
