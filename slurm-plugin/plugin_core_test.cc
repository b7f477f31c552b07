// SPDX-License-Identifier: Apache-2.0
#include "slurm-plugin/plugin_core.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "bridge/api/frame.h"
#include "bridge/plugin_server/admission_service.h"
#include "bridge/plugin_server/unix_server.h"

namespace skb::plugin {
namespace {

namespace v1 = ::skb::api::v1;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST(ParsePluginConfig, KeysDefaultsAndErrors) {
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(
      ParsePluginConfig("# comment\nSocketPath=/tmp/x.sock\n timeoutms = 20 \n"
                        "FailurePolicy=closed # trailing\n",
                        &c, &err))
      << err;
  EXPECT_EQ(c.socket_path, "/tmp/x.sock");
  EXPECT_EQ(c.budget, milliseconds(20));
  EXPECT_TRUE(c.fail_closed);
  PluginConfig d;
  ASSERT_TRUE(ParsePluginConfig("", &d, &err));
  EXPECT_EQ(d.budget, milliseconds(5));
  EXPECT_FALSE(d.fail_closed);
  EXPECT_FALSE(ParsePluginConfig("TimeoutMs=0", &d, &err));
  EXPECT_THAT(err, HasSubstr("1..1000"));
  EXPECT_FALSE(ParsePluginConfig("TimeoutMs=5x", &d, &err));
  EXPECT_FALSE(ParsePluginConfig("FailurePolicy=maybe", &d, &err));
  EXPECT_FALSE(ParsePluginConfig("SocketPath=relative", &d, &err));
  EXPECT_FALSE(ParsePluginConfig("Socket=/x", &d, &err));
  EXPECT_THAT(err, HasSubstr("unknown key 'socket'"));
  EXPECT_FALSE(ParsePluginConfig("no equals sign", &d, &err));
  EXPECT_EQ(d.budget, milliseconds(5)) << "a rejected file changes nothing";
}

TEST(ParsePluginConfig, TheDocumentedExample) {
  std::ifstream in(SKB_EXAMPLE_PLUGIN_CONF);
  ASSERT_TRUE(in) << SKB_EXAMPLE_PLUGIN_CONF;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(ParsePluginConfig(text, &c, &err)) << err;
  EXPECT_EQ(c.socket_path, "/run/slurm-k8s-bridge/bridge.sock");
}

TEST(InterpretAdmitResponse, ChecksIdBodyAndLimits) {
  v1::Response r;
  r.set_request_id(3);
  r.mutable_admit()->set_decision(v1::AdmitResponse::REJECT);
  r.mutable_admit()->set_user_message("no");
  v1::AdmitResponse out;
  std::string why;
  EXPECT_TRUE(InterpretAdmitResponse(r.SerializeAsString(), 3, &out, &why));
  EXPECT_EQ(out.user_message(), "no");
  EXPECT_FALSE(InterpretAdmitResponse(r.SerializeAsString(), 4, &out, &why));
  EXPECT_THAT(why, HasSubstr("expected 4"));
  EXPECT_FALSE(InterpretAdmitResponse("\xff\xff garbage", 3, &out, &why));
  r.mutable_admit()->set_decision(v1::AdmitResponse::DECISION_UNSPECIFIED);
  EXPECT_FALSE(InterpretAdmitResponse(r.SerializeAsString(), 3, &out, &why));
  r.mutable_error()->set_message("boom");
  EXPECT_FALSE(InterpretAdmitResponse(r.SerializeAsString(), 3, &out, &why));
  EXPECT_THAT(why, HasSubstr("boom"));
}

std::vector<std::string>* g_lines = nullptr;
void Capture(bool, const std::string& line) {
  if (g_lines != nullptr) g_lines->push_back(line);
}

class BridgeConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skb-plugin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/bridge.sock";
    conf_ = dir_ + "/k8s_bridge.conf";
    WriteConf("open", 200);
    g_lines = &lines_;
  }
  void TearDown() override {
    g_lines = nullptr;
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  void WriteConf(const std::string& policy, int ms) {
    std::ofstream(conf_) << "SocketPath=" << socket_ << "\nTimeoutMs=" << ms
                         << "\nFailurePolicy=" << policy << "\n";
  }
  std::unique_ptr<bridge::UnixServer> StartDaemon(bridge::AdmissionService* svc) {
    auto server = std::make_unique<bridge::UnixServer>(
        bridge::UnixServer::Options{.path = socket_},
        [svc](std::string_view f, uint32_t pid) { return svc->HandleFrame(f, pid); });
    EXPECT_TRUE(server->Start().ok());
    return server;
  }

  std::string dir_, socket_, conf_;
  std::vector<std::string> lines_;
};

admission::Inventory H100Inventory() {
  admission::Inventory inv;
  inv.known = true;
  inv.default_partition = "gpu";
  for (int i = 1; i <= 4; ++i) {
    inv.nodes.push_back({"node" + std::to_string(i),
                         {{"h100", 8}},
                         {"h100"},
                         {"gpu"},
                         admission::NodeFacts::Availability::kAvailable,
                         ""});
  }
  return inv;
}

TEST_F(BridgeConnectionTest, AsksTheDaemonAndGetsDecisions) {
  bridge::AdmissionService svc(admission::Policy{.preemptible_partitions = {"gpu"}});
  svc.Publish(H100Inventory());
  auto server = StartDaemon(&svc);
  BridgeConnection conn(conf_, &Capture);
  conn.Start();
  v1::JobDescription job;
  job.set_tres_per_node("gres:gpu:h100:2");
  v1::AdmitResponse out;
  std::string why;
  ASSERT_EQ(conn.Admit(job, &out, &why), BridgeConnection::Outcome::kAnswered) << why;
  EXPECT_EQ(out.decision(), v1::AdmitResponse::ACCEPT);
  EXPECT_EQ(out.admin_comment(), "k8s-bridge:preemptible=true,partitions=gpu,qos=");
  job.set_tres_per_node("gres:gpu:a100:1");
  ASSERT_EQ(conn.Admit(job, &out, &why), BridgeConnection::Outcome::kAnswered) << why;
  EXPECT_EQ(out.decision(), v1::AdmitResponse::REJECT);
  EXPECT_THAT(out.user_message(),
              HasSubstr("no node has gpu type a100; available: h100 x8 on 4 nodes"));

  // The daemon restarts: the first call after it notices the dead connection and reconnects.
  server->Stop();
  EXPECT_EQ(conn.Admit(job, &out, &why), BridgeConnection::Outcome::kUnavailable);
  EXPECT_THAT(why, HasSubstr("not reachable"));
  server = StartDaemon(&svc);
  EXPECT_EQ(conn.Admit(job, &out, &why), BridgeConnection::Outcome::kAnswered) << why;
  conn.Stop();
}

TEST_F(BridgeConnectionTest, ASilentDaemonCostsAtMostTheBudget) {
  WriteConf("closed", 20);
  // A listener that accepts and never answers.
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket_.c_str());
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(lfd, 8), 0);
  BridgeConnection conn(conf_, &Capture);
  conn.Start();
  EXPECT_TRUE(conn.config().fail_closed);
  v1::JobDescription job;
  v1::AdmitResponse out;
  std::string why;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(conn.Admit(job, &out, &why), BridgeConnection::Outcome::kUnavailable);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(why, HasSubstr("no answer within the budget of 20ms"));
  EXPECT_LT(took, milliseconds(500));  // generous: a loaded CI machine, not a timing test
  conn.Stop();
  close(lfd);
}

TEST_F(BridgeConnectionTest, ReloadsItsConfigWhenTheFileChanges) {
  BridgeConnection conn(conf_, &Capture);
  conn.Start();
  EXPECT_FALSE(conn.config().fail_closed);
  std::this_thread::sleep_for(milliseconds(20));
  WriteConf("closed", 7);
  bool reloaded = false;
  for (int i = 0; i < 50 && !reloaded; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    reloaded = conn.config().fail_closed;
  }
  EXPECT_TRUE(reloaded);
  EXPECT_EQ(conn.config().budget, milliseconds(7));
  conn.Stop();
  bool logged = false;
  for (const auto& l : lines_) logged |= l.find("policy=closed") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(AdmissionServiceWire, GarbageIsDroppedOddRequestsGetErrors) {
  bridge::AdmissionService svc(admission::Policy{});
  EXPECT_FALSE(svc.HandleFrame("\xff\xff\xff\xff\x0f").drop_reason.empty());
  v1::Request empty;
  empty.set_protocol_version(1);
  v1::Response r;
  ASSERT_TRUE(r.ParseFromString(svc.HandleFrame(empty.SerializeAsString()).response));
  EXPECT_EQ(r.error().code(), v1::Error::BAD_REQUEST);
  v1::Request old;
  old.mutable_ping();
  ASSERT_TRUE(r.ParseFromString(svc.HandleFrame(old.SerializeAsString()).response));
  EXPECT_EQ(r.error().code(), v1::Error::UNSUPPORTED_VERSION);
  v1::Request ping;
  ping.set_protocol_version(1);
  ping.set_request_id(9);
  ping.mutable_ping();
  ASSERT_TRUE(r.ParseFromString(svc.HandleFrame(ping.SerializeAsString()).response));
  EXPECT_EQ(r.request_id(), 9u);
  EXPECT_EQ(r.ping().snapshot_age_ms(), -1);
}

}  // namespace
}  // namespace skb::plugin
