# SPDX-License-Identifier: Apache-2.0
# The bridge's container image (the Helm chart's image.repository): the Debian package this
# tree builds (cmake/SkbPackaging.cmake), installed on Debian 12 with apt, so the image holds
# exactly what the package depends on -- including slurm-wlm-basic-plugins, whose
# auth_munge.so libslurm loads to talk to slurmctld. The job_submit plugin comes with the
# package but is used only on the slurmctld host (docs/install.md, which also says how to
# build this image).
#
#   docker build -t ghcr.io/slurm-k8s-bridge/slurm-k8s-bridge:0.1.0 .   (or buildah bud, podman build)
#
# compiles the project in a debian:12 stage (the chart's default image: its appVersion is the
# project's version), through ccache in a cache mount: built again after a change, it
# compiles only what changed (the first build compiles everything: 6 minutes on two idle
# cores, 25 on two busy ones). With a package built already (cpack, docs/install.md), the build
# context is a directory that holds it as slurm-k8s-bridge.deb, with the tree's LICENSE and
# NOTICE beside it, and nothing compiles:
#
#   docker build --build-arg DEB_FROM=prebuilt -f Dockerfile -t ... DIR
#
# Docker needs BuildKit (its default since 23.0): the legacy builder builds the unused stage
# too, and fails (and has no cache mounts). BUILD_IMAGE and RUNTIME_IMAGE name the base images
# (a site's mirror; the tests give a Debian 12 root made by debootstrap: no registry).
# tests/package/image_test.sh builds this file as above, compiling; image_testbed_test.sh
# from a package (DEB_FROM=prebuilt).
#
# The Slurm client library must be the release slurmctld runs (22.05 on Debian 12): the
# daemon speaks Slurm's RPC protocol through libslurm.
#
# uid: the daemon runs as SlurmUser, Debian's `slurm` (uid/gid 64030, created by
# slurm-wlm-basic-plugins), in the image, the chart and the systemd unit alike: Slurm takes
# its drain/requeue RPCs as an administrator's, and slurmctld may connect to its socket.
ARG BUILD_IMAGE=debian:12
ARG RUNTIME_IMAGE=debian:12-slim
# build: compile here; prebuilt: take slurm-k8s-bridge.deb from the build context.
ARG DEB_FROM=build

FROM ${BUILD_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config dpkg-dev file ccache \
      libslurm-dev libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libprotobuf-dev \
      protobuf-compiler libspdlog-dev libgtest-dev libgmock-dev prometheus-cpp-dev libcivetweb-dev \
      libcli11-dev libyaml-cpp-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The compiler cache lives in a cache mount (BuildKit, buildah): a rebuild after a change
# compiles only what changed. Keyed on paths relative to /src (CCACHE_BASEDIR). The build
# tree goes once the package is made: only /pkg is used, and the layer stays small.
ENV CCACHE_DIR=/root/.cache/ccache CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1
RUN --mount=type=cache,target=/root/.cache/ccache \
    cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSKB_BUILD_BENCH=OFF -DSKB_BUILD_E2E=OFF \
    && ninja -C /build slurm-k8s-bridge bridgectl job_submit_k8s_bridge \
    && cpack --config /build/CPackConfig.cmake -B /pkg \
    && mv /pkg/slurm-k8s-bridge_*.deb /pkg/slurm-k8s-bridge.deb \
    && cp LICENSE NOTICE /pkg/ \
    && rm -rf /build

FROM scratch AS prebuilt
COPY slurm-k8s-bridge.deb LICENSE NOTICE /pkg/

# Only the stage DEB_FROM names is built (BuildKit, buildah). The fallback in the expansion
# is needed: buildah 1.28 (Debian 12's) picks the stages to build from --build-arg values
# alone, without the ARG defaults above, and would otherwise skip `build` and then miss it.
FROM ${DEB_FROM:-build} AS deb

FROM ${RUNTIME_IMAGE}
# The project's version: the chart's appVersion and the package's (deb_package_test and
# image_test check that they agree).
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="slurm-k8s-bridge" \
      org.opencontainers.image.description="Slurm and Kubernetes sharing GPU nodes: the bridge daemon and bridgectl" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/slurm-k8s-bridge/slurm-k8s-bridge" \
      org.opencontainers.image.version="${VERSION}"
# The licence as the tree has it (the package's copyright file refers to Debian's copy).
COPY --from=deb /pkg/LICENSE /pkg/NOTICE /usr/share/licenses/slurm-k8s-bridge/
COPY --from=deb /pkg/slurm-k8s-bridge.deb /tmp/
RUN apt-get update \
    && apt-get install -y --no-install-recommends /tmp/slurm-k8s-bridge.deb ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/slurm-k8s-bridge.deb \
    && test "$(id -u slurm):$(id -g slurm)" = 64030:64030
# The chart runs it with a read-only root; the plugin socket lives on a volume.
USER 64030:64030
ENTRYPOINT ["/usr/bin/slurm-k8s-bridge"]
CMD ["--help"]
