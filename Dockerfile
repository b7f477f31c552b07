# The bridge's container image (the Helm chart's image.repository): the Debian package this
# tree builds (cmake/SkbPackaging.cmake), installed on Debian 12 with apt, so the image holds
# exactly what the package depends on -- including slurm-wlm-basic-plugins, whose
# auth_munge.so libslurm loads to talk to slurmctld. The job_submit plugin comes with the
# package but is used only on the slurmctld host (docs/deploy.md).
#
#   docker build -t slurm-k8s-bridge:dev .     (or: podman build / buildah bud)
#
# The Slurm client library must be the release slurmctld runs (22.05 on Debian 12): the
# daemon speaks Slurm's RPC protocol through libslurm.
#
# uid: the daemon runs as SlurmUser, Debian's `slurm` (uid/gid 64030, created by
# slurm-wlm-basic-plugins), in the image, the chart and the systemd unit alike: Slurm takes
# its drain/requeue RPCs as an administrator's, and slurmctld may connect to its socket.
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config dpkg-dev file \
      libslurm-dev libcurl4-openssl-dev nlohmann-json3-dev libprotobuf-dev protobuf-compiler \
      libspdlog-dev libgtest-dev libgmock-dev prometheus-cpp-dev libcivetweb-dev \
      libcli11-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSKB_BUILD_BENCH=OFF -DSKB_BUILD_E2E=OFF \
    && ninja -C /build slurm-k8s-bridge bridgectl job_submit_k8s_bridge \
    && cpack --config /build/CPackConfig.cmake -B /pkg \
    && mv /pkg/slurm-k8s-bridge_*.deb /pkg/slurm-k8s-bridge.deb

FROM debian:12-slim
COPY --from=build /pkg/slurm-k8s-bridge.deb /tmp/
RUN apt-get update \
    && apt-get install -y --no-install-recommends /tmp/slurm-k8s-bridge.deb ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/slurm-k8s-bridge.deb \
    && test "$(id -u slurm)" = 64030
# The chart runs it with a read-only root; the plugin socket lives on a volume.
USER 64030:64030
ENTRYPOINT ["/usr/bin/slurm-k8s-bridge"]
CMD ["--help"]
