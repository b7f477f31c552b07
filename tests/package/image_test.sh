#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image_test DEB: builds the container image from the top-level Dockerfile with buildah, the
# package (built by deb_package_test) preinstalled and a Debian 12 root made by debootstrap
# as its base: no registry, nothing compiled again (image_lib.sh). Then, in the image:
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

image_container
ids="$(in_image id -u):$(in_image id -g)"
[[ "$ids" == 64030:64030 ]] || fail "commands in the image run as $ids, not 64030:64030"
check_installed in_image
# The chart deploys the image tagged with its appVersion: the version of the daemon in it.
app="$(sed -n 's/^appVersion: *"\(.*\)"$/\1/p' "$SKB_ROOT/helm/slurm-k8s-bridge/Chart.yaml")"
version="$(in_image slurm-k8s-bridge --version)"
[[ "$version" == "slurm-k8s-bridge $app "* ]] ||
  fail "the chart's appVersion '$app' is not the image's daemon version ($version)"
echo "OK"
