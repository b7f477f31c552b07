// SPDX-License-Identifier: Apache-2.0
// The whole daemon in one process on in-memory Slurm and Kubernetes: what main wires
// (clients observed for the API metrics, the controller, the plugin/bridgectl socket, the HTTP
// endpoints, the scrape-time metrics) starts, acts, answers and stops as in production; and
// the start-up errors that must leave nothing running. Against the real apiserver and
// slurmctld the same daemon runs in tests/e2e/bridge.
#include "bridge/daemon.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "bridge/cli/daemon_connection.h"
#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/fake_kube_client.h"
#include "k8s/resource.h"
#include "k8s/time_format.h"

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

// An HTTP/1.0 GET on 127.0.0.1: the whole answer (status line, headers, body).
std::string HttpGet(uint16_t port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "write failed";
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

Json ManagedNode(const std::string& name, const std::string& gpu_healthy) {
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"uid", "uid-" + name},
        {"labels", {{"slurm-k8s-bridge.io/managed", "true"}}}}},
      {"spec", Json::object()},
      {"status",
       {{"capacity", {{"nvidia.com/gpu", "8"}}},
        {"allocatable", {{"nvidia.com/gpu", "8"}}},
        {"conditions", Json::array({{{"type", "Ready"},
                                     {"status", "True"},
                                     {"reason", "KubeletReady"},
                                     {"message", "kubelet is posting ready status"},
                                     {"lastTransitionTime", "2026-11-27T06:00:00Z"}},
                                    {{"type", "GPUHealthy"},
                                     {"status", gpu_healthy},
                                     {"reason", gpu_healthy == "True" ? "Healthy" : "Xid"},
                                     {"message", gpu_healthy == "True" ? "" : "XID 79 on GPU 3"},
                                     {"lastTransitionTime", "2026-11-27T06:00:00Z"}}})}}}};
}

class DaemonTest : public ::testing::Test {
 protected:
  DaemonTest() {
    char tmpl[] = "/tmp/skb-daemon-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    cfg_.server.socket_path = dir_ + "/bridge.sock";
    cfg_.server.http_address = "127.0.0.1:0";
    cfg_.slurm.poll_interval = std::chrono::milliseconds(50);
    slurm::NodeView n;
    n.name = "node1";
    n.base_state = skb::slurm::NodeBaseState::kIdle;
    slurm_.AddNode(n);
  }
  ~DaemonTest() override { std::filesystem::remove_all(dir_); }

  DaemonOptions Options() {
    return {.config = cfg_,
            .leader_election = false,
            .identity = "replica-a",
            .kube = &kube_,
            .slurm = &slurm_};
  }
  void AddNode(const Json& node) {
    ASSERT_TRUE(kube_.Create(k8s::Resource::Nodes(), "", node).ok());
  }

  std::string dir_;
  config::Config cfg_;
  k8s::FakeKubeClient kube_;
  slurm::FakeSlurmClient slurm_;
};

TEST_F(DaemonTest, StartsBecomesReadyDrainsAnUnhealthyNodeAndAnswersOnBothEndpoints) {
  AddNode(ManagedNode("node1", "False"));
  auto daemon = Daemon::Create(Options());
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE((*daemon)->Start().ok());
  const uint16_t port = (*daemon)->http_port();
  ASSERT_NE(port, 0);
  EXPECT_THAT(HttpGet(port, "/healthz"), StartsWith("HTTP/1.1 200 "));

  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/readyz").rfind("HTTP/1.1 200 ", 0) == 0; }))
      << HttpGet(port, "/readyz");
  // The node condition became a Slurm drain with a reason that says why.
  ASSERT_TRUE(WaitFor([&] { return slurm_.Node("node1").drain; }));
  EXPECT_THAT(slurm_.Node("node1").reason, HasSubstr("GPUHealthy=False: XID 79 on GPU 3"));

  // /metrics: the action, the owner the plan counted the node under, the scrape-time
  // gauges, the API requests through the observed clients, the process metrics.
  // The drain counter goes up once the drain call has returned, after the fake shows the
  // drain (a clean run's sanitizer build read /metrics in between): waited for too.
  std::string metrics;
  ASSERT_TRUE(WaitFor([&] {
    metrics = HttpGet(port, "/metrics");
    return metrics.find("skb_nodes{owner=\"unhealthy\"} 1\n") != std::string::npos &&
           metrics.find("skb_slurm_node_drains_total{cause=\"health\"} 1\n") != std::string::npos;
  })) << metrics;
  EXPECT_THAT(metrics, HasSubstr("skb_gpus{owner=\"unhealthy\"} 8\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_leader 1\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_cache_synced{source=\"slurm\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_informer_lists_total{source=\"nodes\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_kubernetes_api_requests_total{group=\"\",resource=\"nodes\","
                                 "verb=\"list\"}"));
  EXPECT_THAT(metrics, HasSubstr("process_resident_memory_bytes "));

  // The socket answers bridgectl from the same caches.
  cli::DaemonConnection conn(cfg_.server.socket_path, std::chrono::seconds(5));
  api::v1::Request req;
  req.mutable_list_nodes();
  auto resp = conn.Call(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->list_nodes().nodes_size(), 1);
  EXPECT_EQ(resp->list_nodes().nodes(0).name(), "node1");
  EXPECT_EQ(resp->list_nodes().nodes(0).owner(), "unhealthy");
  EXPECT_EQ(resp->list_nodes().leader(), "replica-a");
  EXPECT_TRUE(resp->list_nodes().ready());
  // Growth of totals kept elsewhere is exported once: the socket call above is counted,
  // and a second scrape does not count it again.
  metrics = (*daemon)->RenderMetrics();
  EXPECT_THAT(metrics, HasSubstr("skb_socket_connections_total{result=\"accepted\"} 1\n"));
  metrics = (*daemon)->RenderMetrics();
  EXPECT_THAT(metrics, HasSubstr("skb_socket_connections_total{result=\"accepted\"} 1\n"));

  // Healed: the bridge resumes the drain it made.
  ASSERT_TRUE(
      kube_.Update(k8s::Resource::Nodes(), "", ManagedNode("node1", "True"), {}, "status").ok());
  ASSERT_TRUE(WaitFor([&] { return !slurm_.Node("node1").drain; }));

  (*daemon)->Stop();
  EXPECT_FALSE(std::filesystem::exists(cfg_.server.socket_path)) << "the socket goes on Stop";
  EXPECT_EQ(HttpGet(port, "/healthz"), "connect failed");
  EXPECT_FALSE((*daemon)->lost_leadership());
  (*daemon)->Stop();  // idempotent
}

TEST_F(DaemonTest, AFollowerNeverActsAndALeaderThatLosesItsLeaseSaysSo) {
  AddNode(ManagedNode("node1", "False"));
  cfg_.leader_election.lease_duration = std::chrono::milliseconds(1500);
  cfg_.leader_election.renew_deadline = std::chrono::milliseconds(1000);
  cfg_.leader_election.retry_period = std::chrono::milliseconds(100);
  int lost_calls = 0;
  DaemonOptions o = Options();  // the config as cfg_ holds it now
  o.leader_election = true;
  o.on_lost_leadership = [&] { ++lost_calls; };
  // Another replica holds the Lease and keeps renewing it.
  const auto lease_res = k8s::Resource::Leases();
  auto holder = [&](const std::string& who) {
    auto now = std::chrono::time_point_cast<Clock::Duration>(std::chrono::system_clock::now());
    return Json{{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata",
                 {{"name", cfg_.leader_election.lease_name},
                  {"namespace", cfg_.kubernetes.namespace_name}}},
                {"spec",
                 {{"holderIdentity", who},
                  {"leaseDurationSeconds", 2},
                  {"renewTime", k8s::FormatMicroTime(now)},
                  {"acquireTime", k8s::FormatMicroTime(now)}}}};
  };
  ASSERT_TRUE(kube_.Create(lease_res, cfg_.kubernetes.namespace_name, holder("replica-b")).ok());
  auto daemon = Daemon::Create(std::move(o));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE((*daemon)->Start().ok());
  std::atomic<bool> renewing{true};
  std::thread other([&] {
    while (renewing) {
      auto cur =
          kube_.Get(lease_res, cfg_.kubernetes.namespace_name, cfg_.leader_election.lease_name);
      if (cur.ok() && (*cur)["spec"].value("holderIdentity", "") == "replica-b") {
        Json next = *cur;
        next["spec"]["renewTime"] = k8s::FormatMicroTime(
            std::chrono::time_point_cast<Clock::Duration>(std::chrono::system_clock::now()));
        (void)kube_.Update(lease_res, cfg_.kubernetes.namespace_name, next);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  // A follower is ready (it knows the leader) and answers, but never drains.
  ASSERT_TRUE(WaitFor([&] { return (*daemon)->controller().Ready(nullptr); }));
  EXPECT_EQ((*daemon)->controller().Leader(), "replica-b");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(slurm_.Node("node1").drain) << "a follower acted";
  EXPECT_THAT((*daemon)->RenderMetrics(), HasSubstr("skb_leader 0\n"));

  // replica-b stops renewing: this replica takes over and drains.
  renewing = false;
  other.join();
  ASSERT_TRUE(WaitFor([&] { return slurm_.Node("node1").drain; }));
  EXPECT_TRUE((*daemon)->controller().IsLeader());

  // The Lease is taken from it (as by an admin, or a partition that outlived it): the
  // daemon notices at its next renewal, stops acting and reports the loss once.
  auto cur = kube_.Get(lease_res, cfg_.kubernetes.namespace_name, cfg_.leader_election.lease_name);
  ASSERT_TRUE(cur.ok());
  Json stolen = holder("replica-c");
  stolen["metadata"]["resourceVersion"] = (*cur)["metadata"]["resourceVersion"];
  ASSERT_TRUE(kube_.Update(lease_res, cfg_.kubernetes.namespace_name, stolen).ok());
  ASSERT_TRUE(WaitFor([&] { return (*daemon)->lost_leadership(); }));
  EXPECT_EQ(lost_calls, 1);
  EXPECT_FALSE((*daemon)->controller().IsLeader());
  (*daemon)->Stop();
}

TEST_F(DaemonTest, AKubeconfigThatCannotBeReadIsAClearErrorAtCreate) {
  cfg_.kubernetes.kubeconfig = dir_ + "/missing.kubeconfig";
  DaemonOptions o = Options();  // the config as cfg_ holds it now
  o.kube = nullptr;
  auto daemon = Daemon::Create(std::move(o));
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(daemon.status().message()), HasSubstr("missing.kubeconfig"));
  EXPECT_FALSE(std::filesystem::exists(cfg_.server.socket_path));
}

TEST_F(DaemonTest, AnUnknownClientUserIsRefusedBeforeAnythingStarts) {
  cfg_.server.client_user = "skb-no-such-user";
  auto daemon = Daemon::Create(Options());
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(daemon.status().message()), HasSubstr("skb-no-such-user"));
  EXPECT_EQ(kube_.list_calls(), 0) << "nothing may have started";
}

TEST_F(DaemonTest, AFailedStartLeavesNothingRunning) {
  // The socket's directory is a regular file: the socket cannot be bound.
  { std::ofstream(dir_ + "/file") << "x"; }
  cfg_.server.socket_path = dir_ + "/file/bridge.sock";
  auto daemon = Daemon::Create(Options());
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  Status s = (*daemon)->Start();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(cfg_.server.socket_path));
  EXPECT_EQ(kube_.open_watches(), 0);
  EXPECT_EQ((*daemon)->http_port(), 0) << "HTTP is started last";

  // HTTP's address taken: the controller that started is stopped again.
  cfg_.server.socket_path = dir_ + "/bridge.sock";
  int busy = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(busy, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(busy, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(busy, reinterpret_cast<sockaddr*>(&addr), &len);
  cfg_.server.http_address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto second = Daemon::Create(Options());
  ASSERT_TRUE(second.ok()) << second.status();
  s = (*second)->Start();
  close(busy);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(cfg_.server.http_address));
  EXPECT_EQ(kube_.open_watches(), 0) << "the controller's informers were stopped";
  EXPECT_FALSE(std::filesystem::exists(cfg_.server.socket_path));
}

}  // namespace
}  // namespace skb::bridge
