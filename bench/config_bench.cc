// SPDX-License-Identifier: Apache-2.0
// Cost of parsing and validating a full configuration document (done at start and on
// every reload).
#include <benchmark/benchmark.h>

#include "src/config/config.h"

namespace {

constexpr char kFullConfig[] = R"({
  "logging": {"level": "info", "format": "json"},
  "kubernetes": {"kubeconfig": "/etc/kubeconfig", "namespace": "slurm-bridge",
                 "node_selector": "slurm-k8s-bridge.io/managed=true", "qps": 20, "burst": 40},
  "slurm": {"conf": "/etc/slurm/slurm.conf", "poll_interval": "500ms", "call_timeout": "5s"},
  "server": {"socket_path": "/run/slurm-k8s-bridge/bridge.sock", "http_address": ":9464"}
})";

void BM_ParseConfig(benchmark::State& state) {
  for (auto _ : state) {
    auto cfg = skb::config::ParseConfig(kFullConfig);
    benchmark::DoNotOptimize(cfg);
  }
}
BENCHMARK(BM_ParseConfig);

}  // namespace
