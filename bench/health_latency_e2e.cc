// SPDX-License-Identifier: Apache-2.0
// End-to-end health latency on the testbed, both directions, with a bridge daemon built
// from this tree (started here, single replica):
//
//  k8s -> Slurm: a GPUHealthy=False condition patched on the Kubernetes node (t0 just before
//    the PATCH is sent) until slurmctld reports the node drained with the bridge's reason
//    (polled through libslurm every 5 ms, the same RPC `scontrol show node` makes); then the
//    clear until it is resumed. 100 flips of one node, then all testbed nodes at once.
//  Slurm -> k8s: `scontrol update state=fail` until the Kubernetes node carries
//    SlurmNodeHealthy=False (polled every 5 ms); bounded by the poll interval.
//
// Prints percentiles and writes bench/results/health_latency.json (see bench/report.py).
//
//   eval "$(scripts/testbed env)"; build/bench/health_latency_e2e [--flips N] [--out DIR]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e_results.h"
#include "bridge/slurm/libslurm_client.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "tests/testbed/bridge_daemon.h"
#include "tests/testbed/testbed_support.h"

namespace {

using skb::StrCat;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

using skb::bench::Ms;

class Bench {
 public:
  Bench(skb::k8s::KubeClient* kube, skb::bridge::slurm::LibSlurmClient* slurm)
      : kube_(kube), slurm_(slurm) {}

  skb::Status SetCondition(const std::string& node, const std::string& type,
                           const std::string& status, const std::string& message) {
    auto now = skb::k8s::FormatTime(std::chrono::system_clock::now());
    nlohmann::json patch = {{"status",
                             {{"conditions",
                               {{{"type", type},
                                 {"status", status},
                                 {"reason", "Bench"},
                                 {"message", message},
                                 {"lastTransitionTime", now}}}}}}};
    return kube_
        ->Patch(skb::k8s::Resource::Nodes(), "", node, skb::k8s::PatchType::kStrategicMerge, patch,
                {}, "status")
        .status();
  }

  // Waits until every node satisfies `pred` on its Slurm view; returns the time each did.
  // One read of all nodes per round (LoadNodes(0), one RPC), not one per node: at 72 nodes a
  // per-node poll every 5 ms would itself load slurmctld and slow what is measured.
  template <typename Pred>
  std::vector<Steady::time_point> WaitSlurm(const std::vector<std::string>& nodes, Pred pred,
                                            milliseconds timeout) {
    std::vector<Steady::time_point> done(nodes.size());
    std::vector<bool> ok(nodes.size(), false);
    const auto deadline = Steady::now() + timeout;
    size_t left = nodes.size();
    while (left > 0 && Steady::now() < deadline) {
      auto all = slurm_->LoadNodes(0);
      const auto seen = Steady::now();
      if (all.ok()) {
        for (size_t i = 0; i < nodes.size(); ++i) {
          if (ok[i]) continue;
          for (const auto& v : all->items) {
            if (v.name == nodes[i] && pred(v)) {
              ok[i] = true;
              done[i] = seen;
              --left;
              break;
            }
          }
        }
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    if (left > 0) return {};
    return done;
  }

  // k8s -> Slurm: `flips` rounds of all `nodes` going bad at once and clearing. Each node's
  // latency runs from just before its own PATCH is sent. The patches go out one after the
  // other from a thread of their own (at 72 nodes the last leaves ~0.5 s after the first)
  // while this thread watches Slurm, so no node waits for the others' patches to be seen.
  bool Flips(const std::vector<std::string>& nodes, int flips, std::vector<double>* drain,
             std::vector<double>* resume) {
    for (int f = 0; f < flips; ++f) {
      const std::string msg = StrCat("bench flip ", f);
      if (!Round(
              nodes, "False", msg,
              [&](const skb::slurm::NodeView& v) {
                return v.drain && v.reason.find(msg) != std::string::npos;
              },
              drain)) {
        std::fprintf(stderr, "flip %d: not drained within 30 s\n", f);
        return false;
      }
      if (!Round(
              nodes, "True", "bench ok", [](const skb::slurm::NodeView& v) { return !v.drain; },
              resume)) {
        std::fprintf(stderr, "flip %d: not resumed within 30 s\n", f);
        return false;
      }
    }
    return true;
  }

  // One round: GPUHealthy=`status` patched on every node (from a second thread) until
  // every node satisfies `pred` in Slurm; appends each node's latency to `out`.
  template <typename Pred>
  bool Round(const std::vector<std::string>& nodes, const std::string& status,
             const std::string& msg, Pred pred, std::vector<double>* out) {
    std::vector<Steady::time_point> sent(nodes.size());
    std::atomic<bool> patch_failed{false};
    std::thread patcher([&] {
      for (size_t i = 0; i < nodes.size(); ++i) {
        sent[i] = Steady::now();
        if (auto s = SetCondition(nodes[i], "GPUHealthy", status, msg); !s.ok()) {
          std::fprintf(stderr, "patch %s: %s\n", nodes[i].c_str(), s.ToString().c_str());
          patch_failed = true;
          return;
        }
      }
    });
    auto done = WaitSlurm(nodes, pred, milliseconds(30000));
    patcher.join();
    if (patch_failed || done.empty()) return false;
    for (size_t i = 0; i < nodes.size(); ++i) out->push_back(Ms(done[i] - sent[i]));
    return true;
  }

  // Slurm -> k8s: the node set FAIL in Slurm until SlurmNodeHealthy=False on the node.
  bool Downs(const std::string& node, int rounds, std::vector<double>* out) {
    auto condition = [&]() -> std::string {
      auto obj = kube_->Get(skb::k8s::Resource::Nodes(), "", node);
      if (!obj.ok()) return "";
      for (const auto& c : (*obj)["status"].value("conditions", nlohmann::json::array())) {
        if (c.value("type", "") == "SlurmNodeHealthy") return c.value("status", "");
      }
      return "";
    };
    for (int r = 0; r < rounds; ++r) {
      if (!skb::testbed::WaitFor([&] { return condition() == "True"; }, milliseconds(30000),
                                 milliseconds(20))) {
        std::fprintf(stderr, "round %d: SlurmNodeHealthy not True before the test\n", r);
        return false;
      }
      const auto t0 = Steady::now();
      auto down = skb::testbed::RunCommand(
          // FAIL rather than DOWN: with ReturnToService=2 (the testbed's) a DOWN node whose
          // slurmd answers returns within a second, faster than some samples would see it.
          {"scontrol", "update", "nodename=" + node, "state=fail", "reason=bench fail"},
          milliseconds(30000));
      if (down.exit_code != 0) {
        std::fprintf(stderr, "scontrol down: %s\n", down.err.c_str());
        return false;
      }
      if (!skb::testbed::WaitFor([&] { return condition() == "False"; }, milliseconds(30000),
                                 milliseconds(5))) {
        std::fprintf(stderr, "round %d: no SlurmNodeHealthy=False within 30 s\n", r);
        return false;
      }
      out->push_back(Ms(Steady::now() - t0));
      skb::testbed::RunCommand({"scontrol", "update", "nodename=" + node, "state=resume"},
                               milliseconds(30000));
    }
    return true;
  }

 private:
  skb::k8s::KubeClient* const kube_;
  skb::bridge::slurm::LibSlurmClient* const slurm_;
};

void Print(const char* what, const std::vector<double>& v) {
  const nlohmann::json s = skb::bench::Percentiles(v);
  std::printf("%-44s n=%-4zu p50=%7.1f ms  p90=%7.1f ms  p99=%7.1f ms  max=%7.1f ms\n", what,
              s["samples"].get<size_t>(), s["p50"].get<double>(), s["p90"].get<double>(),
              s["p99"].get<double>(), s["max"].get<double>());
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines show up as they happen
  int flips = 100;
  std::string out_dir = "bench/results";
  std::string daemon = skb::testbed::DaemonBinary();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--flips") flips = std::atoi(argv[i + 1]);
    if (a == "--out") out_dir = argv[i + 1];
  }
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig == nullptr) {
    std::fprintf(stderr, "health_latency_e2e: eval \"$(scripts/testbed env)\" first\n");
    return 2;
  }
  auto cfg = skb::k8s::LoadKubeconfig(kubeconfig, "");
  if (!cfg.ok()) return 2;
  cfg->qps = 0;  // the benchmark's own writes are not what is measured
  auto kube = skb::k8s::NewRestClient(*cfg);
  if (!kube.ok()) return 2;
  skb::bridge::slurm::LibSlurmClient slurm({});
  const int nodes = skb::testbed::TestbedNodeCount();
  std::vector<std::string> all;
  for (int i = 1; i <= nodes; ++i) all.push_back(StrCat("node", i));
  for (const auto& n : all) {
    skb::testbed::Shell(StrCat("scontrol update nodename=", n, " state=resume 2>/dev/null"));
  }

  const std::string poll = "200ms";
  skb::testbed::BridgeDaemon bridge(daemon, StrCat(R"({"slurm": {"poll_interval": ")", poll,
                                                   R"("}, "features": {"labels": []}})"));
  if (auto s = bridge.Start("caches_synced", std::chrono::seconds(30)); !s.ok()) {
    std::fprintf(stderr, "bridge: %s\n", s.ToString().c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the first plans are done
  Bench b(kube->get(), &slurm);
  std::vector<double> drain1, resume1, drainN, resumeN, down;
  bool ok = b.Flips({"node1"}, flips, &drain1, &resume1) &&
            b.Flips(all, std::max(1, flips / 4), &drainN, &resumeN) && b.Downs("node1", 20, &down);
  for (const auto& n : all) b.SetCondition(n, "GPUHealthy", "True", "bench done").IgnoreError();
  bridge.Stop();
  if (!ok) {
    std::fprintf(stderr, "bridge log tail:\n%s\n", bridge.LogTail().c_str());
    return 1;
  }
  const auto &d1 = drain1, &r1 = resume1, &dN = drainN, &rN = resumeN, &dn = down;
  Print("condition set -> Slurm drained (1 node)", d1);
  Print("condition cleared -> Slurm resumed (1 node)", r1);
  Print(StrCat("condition set -> drained (", nodes, " nodes at once)").c_str(), dN);
  Print(StrCat("condition cleared -> resumed (", nodes, " at once)").c_str(), rN);
  Print("Slurm FAIL -> SlurmNodeHealthy=False", dn);

  skb::bench::WriteLatency(
      out_dir, "health_latency_drain_1", "k8s condition -> Slurm drain (1 node)",
      "GPUHealthy=False patched until slurmctld shows the node drained with the reason", d1,
      "p99 < 250 ms", StrCat(flips, " flips"));
  skb::bench::WriteLatency(out_dir, "health_latency_resume_1",
                           "k8s condition cleared -> Slurm resume (1 node)",
                           "GPUHealthy=True patched until slurmctld shows the node not drained", r1,
                           "", StrCat(flips, " flips"));
  skb::bench::WriteLatency(out_dir, StrCat("health_latency_drain_", nodes),
                           StrCat("k8s condition -> Slurm drain (", nodes, " nodes at once)"),
                           "every testbed node flips at once; per-node latency", dN, "p99 < 250 ms",
                           StrCat(std::max(1, flips / 4), " rounds"));
  skb::bench::WriteLatency(out_dir, "health_latency_slurm_down",
                           "Slurm FAIL/DOWN -> SlurmNodeHealthy=False",
                           "scontrol state=fail until the Kubernetes node condition flips", dn,
                           StrCat("bounded by the Slurm poll (", poll, ")"),
                           "20 rounds; cost of a poll in slurm_poll_bench");
  return 0;
}
