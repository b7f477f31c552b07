// SPDX-License-Identifier: Apache-2.0
// The job_submit plugin's per-call cost with the daemon up: BridgeConnection::Admit (the
// code slurmctld runs under its locks) against a real UnixServer + AdmissionService on a
// Unix socket, in one process. Reports mean (Google Benchmark) and p50/p99 counters.
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "bridge/logging.h"
#include "bridge/plugin_server/admission_service.h"
#include "bridge/plugin_server/unix_server.h"
#include "slurm-plugin/plugin_core.h"

namespace {

void Quiet(bool, const std::string&) {}

void BM_PluginAdmit(benchmark::State& state) {
  skb::bridge::Logger("plugin")->set_level(spdlog::level::off);  // one line per reject
  const std::string dir = "/tmp/skb-bench-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  const std::string sock = dir + "/b.sock", conf = dir + "/k8s_bridge.conf";
  std::ofstream(conf) << "SocketPath=" << sock << "\nTimeoutMs=100\n";
  skb::bridge::AdmissionService svc(skb::admission::Policy{.preemptible_partitions = {"gpu"}});
  skb::admission::Inventory inv;
  inv.known = true;
  inv.default_partition = "gpu";
  for (int i = 1; i <= 64; ++i) {
    inv.nodes.push_back({"node" + std::to_string(i),
                         {{"h100", 8}},
                         {"h100", "nvlink"},
                         {"gpu"},
                         skb::admission::NodeFacts::Availability::kAvailable,
                         ""});
  }
  svc.Publish(inv);
  skb::bridge::UnixServer server(
      {.path = sock}, [&](std::string_view f, uint32_t pid) { return svc.HandleFrame(f, pid); });
  if (!server.Start().ok()) {
    state.SkipWithError("cannot start server");
    return;
  }
  skb::plugin::BridgeConnection conn(conf, &Quiet);
  conn.Start();
  skb::api::v1::JobDescription job;
  job.set_tres_per_node(state.range(0) == 0 ? "gres:gpu:h100:2" : "gres:gpu:a100:2");
  job.set_partition("gpu");
  skb::api::v1::AdmitResponse out;
  std::string why;
  std::vector<double> us;
  us.reserve(1 << 20);
  int64_t failures = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (conn.Admit(job, &out, &why) != skb::plugin::BridgeConnection::Outcome::kAnswered)
      ++failures;
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    state.counters["p50_us"] = us[us.size() / 2];
    state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
    state.counters["max_us"] = us.back();
  }
  state.counters["unanswered"] = static_cast<double>(failures);
  conn.Stop();
  server.Stop();
  unlink(conf.c_str());
  rmdir(dir.c_str());
}
BENCHMARK(BM_PluginAdmit)->Arg(0)->Arg(1)->ArgName("reject")->UseRealTime();

}  // namespace
