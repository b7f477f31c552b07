# SPDX-License-Identifier: Apache-2.0
# Sourced by image_test.sh and image_testbed_test.sh: the container image of the top-level
# Dockerfile, built by buildah from the package deb_package_test made, with no registry.
#
#   source image_lib.sh; image_build DEB     # sets IMAGE (built, or reused: see below)
#   image_container                          # sets CTR, a container of IMAGE; removed on exit
#   in_image COMMAND...                      # runs COMMAND in CTR as the image's USER
#
# The base is the cached bare Debian 12 root of deb_root_lib.sh (debootstrap, no registry),
# committed once as localhost/skb-debian12-base:<root's stamp> and given to the Dockerfile as
# RUNTIME_IMAGE; DEB_FROM=prebuilt takes the package from a build context holding it (and
# the tree's LICENSE and NOTICE) alone, so nothing compiles (the build stage is skipped: its BUILD_IMAGE names no image, and the
# build fails if it is used). apt's downloads go to the archive cache the root shares.
#
# Cached outside the repository, in $SKB_CACHE: buildah's storage (buildah/<driver>, ~240 MB:
# the base, 121 MB, and the last test image's layer above it), the tests' own (containers of
# others are left alone, untagged images pruned), and the apt archive (deb-root-apt-archives).
# An image built from the same Dockerfile, base and package contents (its label
# skb.test.inputs) is reused. Needs root and buildah (scripts/setup); exit 77 when not root.
source "$(dirname "${BASH_SOURCE[0]}")/deb_root_lib.sh"

IMAGE=localhost/slurm-k8s-bridge:test
BASE_REPO=localhost/skb-debian12-base
# overlay where the kernel has it (storage and runs are faster), else vfs (copies).
DRIVER="${SKB_BUILDAH_DRIVER:-$(grep -qw overlay /proc/filesystems && echo overlay || echo vfs)}"
STORE="$SKB_CACHE/buildah/$DRIVER"
export BUILDAH_ISOLATION=chroot  # no OCI runtime, no user namespaces: runs as root in a sandbox
BUILDAH=(buildah --root "$STORE" --storage-driver "$DRIVER"
  --runroot "${XDG_RUNTIME_DIR:-/run}/skb-buildah-$(sha256sum <<<"$STORE" | cut -c1-12)")
CTR=""
IMAGE_TMP=""

# The containers of these tests (named skb-test-*) and those buildah 1.28's bud leaves of a
# stage with no instruction (`deb`: <image id>-working-container) and of the build stage
# built alone (--target, from the layer cache: <its tag's name>-working-container[-N]), not
# others in the store. A container left holds its image, and the layers under it, from
# being pruned.
image_rm_containers() {
  "${BUILDAH[@]}" containers -a --format '{{.ContainerName}}' |
    grep -E '^(skb-test-|[0-9a-f]{12}-working-container|slurm-k8s-bridge-build-stage-working-container)' |
    xargs -r "${BUILDAH[@]}" rm >/dev/null
}

image_cleanup() {
  if [[ -n "$CTR" ]]; then "${BUILDAH[@]}" rm "$CTR" >/dev/null 2>&1 || true; fi
  if [[ -n "$IMAGE_TMP" ]]; then rm -rf "$IMAGE_TMP"; fi
}

# The Debian root as an image (made when the root is made or remade); older ones removed.
# Like debian:12-slim, whose place it takes, dpkg in it does not sync each file it writes
# (the official images' /etc/dpkg/dpkg.cfg.d/docker-apt-speedup, force-unsafe-io): the
# syncs of the image's installs held the disk the testbed lanes beside this test share. The
# tag's -u1 marks a base made so.
image_base() {
  local stamp tag ctr mnt old
  stamp="$(stat -c %Y "$BASE/.skb-complete")"
  tag="$BASE_REPO:r$stamp-u1"
  if ! "${BUILDAH[@]}" inspect --type image "$tag" >/dev/null 2>&1; then
    echo "committing the Debian 12 root as $tag (once)"
    ctr="$("${BUILDAH[@]}" from --pull=never --name skb-test-base scratch)"
    mnt="$("${BUILDAH[@]}" mount "$ctr")"
    # Without the package lists, as debian:12-slim (the Dockerfile runs apt-get update).
    tar -C "$BASE" --exclude=./.skb-complete --exclude='./var/lib/apt/lists/*' -cf - . |
      tar -C "$mnt" -xpf -
    echo force-unsafe-io >"$mnt/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
    "${BUILDAH[@]}" umount "$ctr" >/dev/null
    "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --cmd bash "$ctr"
    "${BUILDAH[@]}" commit -q --rm "$ctr" "$tag" >/dev/null
    for old in $("${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}}' | grep "^$BASE_REPO:"); do
      [[ "$old" == "$tag" ]] || "${BUILDAH[@]}" rmi "$old" >/dev/null
    done
  fi
  BASE_IMAGE="$tag"
}

# image_begin: what every build starts with: root and buildah there (exit 77 without root),
# the Debian root and its base image, and $SKB_CACHE/image.lock (fd 8) held until the test
# ends: one checkout at a time uses the storage.
image_begin() {
  ((EUID == 0)) || { echo "SKIP: needs root for buildah"; exit 77; }
  skb_have buildah || fail "buildah missing (scripts/setup installs it)"
  deb_root_base
  exec 8>"$SKB_CACHE/image.lock"
  flock 8
  trap image_cleanup EXIT
  # Leftovers of an interrupted run (the lock is held: no other run has containers).
  image_rm_containers || true
  image_base
}

# image_build DEB: IMAGE from the Dockerfile with DEB preinstalled, built unless an image of
# the same inputs exists (DEB_FROM=prebuilt: nothing compiles).
image_build() {
  local deb inputs have log t0=$SECONDS
  deb="$(readlink -f "$1")"
  image_begin
  # The package's contents, not its bytes (cpack stamps every build anew).
  inputs="$({
    cat "$SKB_ROOT/Dockerfile" "$SKB_ROOT/LICENSE" "$SKB_ROOT/NOTICE"
    "${BUILDAH[@]}" inspect --type image --format '{{.FromImageID}}' "$BASE_IMAGE"
    dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./control
    dpkg-deb --fsys-tarfile "$deb" | tar -t
    dpkg-deb --fsys-tarfile "$deb" | tar -xO
  } | sha256sum | cut -c1-64)"
  have="$("${BUILDAH[@]}" inspect --type image --format '{{index .OCIv1.Config.Labels "skb.test.inputs"}}' \
    "$IMAGE" 2>/dev/null || true)"
  if [[ "$have" == "$inputs" ]]; then
    echo "reusing $IMAGE (built from the same Dockerfile, base and package contents)"
    return
  fi
  IMAGE_TMP="$(mktemp -d "${TMPDIR:-/tmp}/skb-image.XXXXXX")"
  mkdir "$IMAGE_TMP/context"
  cp "$deb" "$IMAGE_TMP/context/slurm-k8s-bridge.deb"
  cp "$SKB_ROOT/LICENSE" "$SKB_ROOT/NOTICE" "$IMAGE_TMP/context/"
  log="$IMAGE_TMP/build.log"
  if ! "${BUILDAH[@]}" bud --pull=never --layers=false -f "$SKB_ROOT/Dockerfile" \
    --build-arg DEB_FROM=prebuilt --build-arg RUNTIME_IMAGE="$BASE_IMAGE" \
    --build-arg BUILD_IMAGE=localhost/skb-build-stage-must-be-skipped \
    --label "skb.test.inputs=$inputs" \
    -v "$ARCHIVES:/var/cache/apt/archives" \
    -t "$IMAGE" "$IMAGE_TMP/context" >"$log" 2>&1; then
    tail -30 "$log" >&2
    grep -q skb-build-stage-must-be-skipped "$log" &&
      fail "buildah ran the build stage with DEB_FROM=prebuilt"
    fail "buildah bud failed"
  fi
  # The image it replaced, now untagged, and the prebuilt stage's (buildah 1.28 leaves a
  # container of the `deb` stage behind, which holds it).
  image_rm_containers || true
  "${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true
  echo "built $IMAGE in $((SECONDS - t0))s ($("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE"))"
}

# image_build_documented: DOC_IMAGE, the image built the way docs/install.md says
# (`buildah bud -t ... .`, the source tree as the build context, DEB_FROM left at `build`: the
# package is compiled and made by cpack in the Dockerfile's build stage), with the base image
# above as BUILD_IMAGE and RUNTIME_IMAGE (no registry) and apt's archive cache mounted. Two
# caches keep it cheap, as they would for anyone who builds it twice:
#   - the layer cache (--layers): the build stage is built first and tagged (BUILD_STAGE), so
#     its layers -- the build dependencies' install above all -- stay cached (an untagged
#     layer is pruned) and the whole build after it reuses them;
#   - the compiler cache: the Dockerfile's ccache cache mount, which buildah keeps in
#     /var/tmp/buildah-cache on this machine: a changed tree compiles only what changed.
# Prints each build's time.
DOC_IMAGE=localhost/slurm-k8s-bridge:documented
BUILD_STAGE=localhost/slurm-k8s-bridge-build-stage:test
image_build_documented() {
  local t0=$SECONDS t1 args
  image_begin
  IMAGE_TMP="$(mktemp -d "${TMPDIR:-/tmp}/skb-image.XXXXXX")"
  args=(--pull=never --layers -f "$SKB_ROOT/Dockerfile"
    --build-arg BUILD_IMAGE="$BASE_IMAGE" --build-arg RUNTIME_IMAGE="$BASE_IMAGE"
    -v "$ARCHIVES:/var/cache/apt/archives")
  if ! "${BUILDAH[@]}" bud "${args[@]}" --target build -t "$BUILD_STAGE" "$SKB_ROOT" \
    >"$IMAGE_TMP/build-stage.log" 2>&1; then
    tail -40 "$IMAGE_TMP/build-stage.log" >&2
    fail "buildah bud --target build (the Dockerfile's build stage) failed"
  fi
  t1=$SECONDS
  echo "built the Dockerfile's build stage in $((t1 - t0))s" \
    "($(grep -c 'Using cache' "$IMAGE_TMP/build-stage.log" || true) steps from the layer cache)"
  if ! "${BUILDAH[@]}" bud "${args[@]}" -t "$DOC_IMAGE" "$SKB_ROOT" >"$IMAGE_TMP/build.log" 2>&1; then
    tail -40 "$IMAGE_TMP/build.log" >&2
    fail "buildah bud (the documented build) failed"
  fi
  echo "built $DOC_IMAGE in $((SECONDS - t1))s more" \
    "($(grep -c 'Using cache' "$IMAGE_TMP/build.log" || true) steps from the layer cache)"
  # What older builds left: replaced images and their layers, no longer tagged.
  image_rm_containers || true
  "${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true
}

# image_container [IMAGE]: CTR, a container of IMAGE (default $IMAGE); removed on exit.
image_container() {
  CTR="$("${BUILDAH[@]}" from --pull=never --name skb-test-image "${1:-$IMAGE}")"
}

in_image() { "${BUILDAH[@]}" run "$CTR" -- "$@"; }
