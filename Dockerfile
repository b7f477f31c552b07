# The bridge's container image (the Helm chart's image.repository): the daemon and
# bridgectl, built on Debian 12 from the Debian packages the project is fixed to, running
# as a non-root user on a read-only root filesystem (the chart's security context). The
# job_submit plugin is not in it: it belongs on the slurmctld host (see helm/README.md).
#
#   docker build -t slurm-k8s-bridge:dev .
#
# The Slurm client library must be the release slurmctld runs (22.05 on Debian 12): the
# daemon speaks Slurm's RPC protocol through libslurm.
FROM debian:12 AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libslurm-dev libcurl4-openssl-dev nlohmann-json3-dev libprotobuf-dev protobuf-compiler \
      libspdlog-dev libgtest-dev libgmock-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSKB_BUILD_BENCH=OFF -DSKB_BUILD_E2E=OFF \
    && ninja -C /build slurm-k8s-bridge bridgectl \
    && strip --strip-debug /build/bridge/slurm-k8s-bridge /build/bridge/bridgectl

FROM debian:12-slim
# Exactly the shared libraries the two binaries link (ldd), plus the CA bundle for
# in-cluster TLS.
RUN apt-get update && apt-get install -y --no-install-recommends \
      libslurm38 libcurl4 libprotobuf-lite32 libspdlog1.10 libfmt9 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bridge/slurm-k8s-bridge /build/bridge/bridgectl /usr/local/bin/
# The chart runs it as 65532 with a read-only root; the plugin socket lives on a volume.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/slurm-k8s-bridge"]
CMD ["--help"]
