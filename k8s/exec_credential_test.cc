// SPDX-License-Identifier: Apache-2.0
#include "k8s/exec_credential.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "k8s/base64.h"
#include "k8s/curl_transport.h"
#include "k8s/time_format.h"
#include "src/base/testing/temp_dir.h"

namespace skb::k8s {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kV1[] = "client.authentication.k8s.io/v1";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ExecCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }

  // Writes an executable shell script `name` with `body` after the shebang.
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
    return path;
  }

  // A plugin that counts its runs in `count` and prints token tok-<run>, with `status_extra`
  // (e.g. an expirationTimestamp member) in its status. Sleeps `sleep` first.
  std::string CountingPlugin(const std::string& status_extra = "", const std::string& sleep = "0") {
    const std::string count = dir_.path() + "/count";
    return Script("counting",
                  "sleep " + sleep + "\nn=$(cat " + count +
                      " 2>/dev/null || echo 0)\nn=$((n+1))\n" + "echo $n > " + count + "\n" +
                      "printf '{\"apiVersion\":\"" + kV1 +
                      "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-%s\"" +
                      status_extra + "}}\\n' $n\n");
  }

  int Count() {
    std::string text = ReadAll(dir_.path() + "/count");
    return text.empty() ? 0 : std::stoi(text);
  }

  ExecConfig Config(const std::string& command) {
    ExecConfig c;
    c.api_version = kV1;
    c.command = command;
    c.interactive_mode = "Never";
    c.timeout = std::chrono::seconds(10);
    c.origin = "kubeconfig test users[u].user.exec";
    return c;
  }

  skb::testing::TempDir dir_{"skb-exec"};
};

TEST_F(ExecCredentialTest, CachesTheTokenUntilShortlyBeforeItExpires) {
  SimulatedClock clock(*ParseTime("2026-01-01T00:00:00Z"));
  ExecCredentialSource source(
      Config(CountingPlugin(",\"expirationTimestamp\":\"2026-01-01T00:01:00Z\"")), &clock);
  EXPECT_EQ(*source.Token(), "tok-1");
  EXPECT_EQ(*source.Token(), "tok-1");
  clock.Advance(std::chrono::seconds(49));  // 11 s left: still good
  EXPECT_EQ(*source.Token(), "tok-1");
  EXPECT_EQ(source.runs(), 1);
  clock.Advance(std::chrono::seconds(2));  // 9 s left: within the margin
  EXPECT_EQ(*source.Token(), "tok-2");
  EXPECT_EQ(Count(), 2);
}

TEST_F(ExecCredentialTest, AFailedRefreshKeepsATokenThatHasNotExpiredYet) {
  SimulatedClock clock(*ParseTime("2026-01-01T00:00:00Z"));
  const std::string plugin = CountingPlugin(",\"expirationTimestamp\":\"2026-01-01T00:01:00Z\"");
  ExecCredentialSource source(Config(plugin), &clock);
  EXPECT_EQ(*source.Token(), "tok-1");
  Script("counting", "echo 'identity provider down' >&2\nexit 1\n");
  clock.Advance(std::chrono::seconds(55));  // within the margin: refresh, which fails
  EXPECT_EQ(*source.Token(), "tok-1");
  clock.Advance(std::chrono::seconds(10));  // expired: nothing left to send
  auto t = source.Token();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("identity provider down"));
  EXPECT_EQ(source.runs(), 3);
}

TEST_F(ExecCredentialTest, WithoutExpiryTheTokenLastsUntilInvalidated) {
  ExecCredentialSource source(Config(CountingPlugin()), SystemClock::Get());
  EXPECT_EQ(*source.Token(), "tok-1");
  EXPECT_EQ(*source.Token(), "tok-1");
  source.Invalidate("some-older-token");  // a 401 to a token already replaced
  EXPECT_EQ(*source.Token(), "tok-1");
  source.Invalidate("tok-1");
  EXPECT_EQ(*source.Token(), "tok-2");
  EXPECT_EQ(Count(), 2);
}

TEST_F(ExecCredentialTest, ConcurrentCallersShareOneRun) {
  ExecCredentialSource source(Config(CountingPlugin("", "0.3")), SystemClock::Get());
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      auto t = source.Token();
      if (t.ok() && *t == "tok-1") ++good;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 16);
  EXPECT_EQ(source.runs(), 1);
  EXPECT_EQ(Count(), 1);
}

TEST_F(ExecCredentialTest, AFailingPluginReportsItsStderr) {
  ExecConfig c =
      Config(Script("failing", "echo 'token expired, run: aws sso login' >&2\nexit 1\n"));
  auto t = RunExecPlugin(c);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(t.status().message(), HasSubstr("exec credential plugin 'failing'"));
  EXPECT_THAT(t.status().message(), HasSubstr("exited with status 1"));
  EXPECT_THAT(t.status().message(), HasSubstr("stderr: token expired, run: aws sso login"));

  // Only the last KB of a long stderr.
  c.command = Script("chatty",
                     "i=0\nwhile [ $i -lt 500 ]; do echo line$i >&2; i=$((i+1)); done\n"
                     "echo THE-END >&2\nexit 3\n");
  t = RunExecPlugin(c);
  EXPECT_THAT(t.status().message(), HasSubstr("THE-END"));
  EXPECT_THAT(t.status().message(), Not(HasSubstr("line1 ")));
  EXPECT_LT(t.status().message().size(), 1400u);
}

bool Gone(pid_t pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
}

TEST_F(ExecCredentialTest, AHangingPluginIsKilledWithItsChildren) {
  const std::string pidfile = dir_.path() + "/child.pid";
  ExecConfig c = Config(Script("hanging", "sleep 30 &\necho $! > " + pidfile + "\nwait\n"));
  c.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  auto t = RunExecPlugin(c);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(t.status().message(), HasSubstr("no answer within 300 ms"));
  pid_t child = std::stoi(ReadAll(pidfile));
  for (int i = 0; i < 100 && !Gone(child); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(Gone(child)) << "the plugin's background sleep survived";
}

TEST_F(ExecCredentialTest, BadOutputIsRefusedWithoutEchoingIt) {
  struct Case {
    std::string name;
    std::string output;
    StatusCode code;
    std::string error;
  };
  const std::string secret = "TOKEN-SECRET-VALUE";
  const std::string v1 = std::string("\"apiVersion\":\"") + kV1 + "\",\"kind\":\"ExecCredential\"";
  const Case cases[] = {
      {"garbage", "here is your token: " + secret, StatusCode::kUnauthenticated,
       "stdout is not a JSON ExecCredential"},
      {"empty", "", StatusCode::kUnauthenticated, "printed nothing on stdout"},
      {"no token", "{" + v1 + ",\"status\":{}}", StatusCode::kUnauthenticated, "no status.token"},
      {"no status", "{" + v1 + "}", StatusCode::kUnauthenticated, "has no status"},
      {"other version",
       "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
       "\"status\":{\"token\":\"" +
           secret + "\"}}",
       StatusCode::kUnauthenticated, "printed apiVersion 'client.authentication.k8s.io/v1beta1'"},
      {"client certificate",
       "{" + v1 + ",\"status\":{\"clientCertificateData\":\"" + secret + "\",\"clientKeyData\":\"" +
           secret + "\"}}",
       StatusCode::kUnimplemented, "client certificate"},
      {"bad expiry",
       "{" + v1 + ",\"status\":{\"token\":\"" + secret +
           "\",\"expirationTimestamp\":\"tomorrow\"}}",
       StatusCode::kUnauthenticated, "expirationTimestamp is not an RFC 3339 time"},
  };
  for (const Case& c : cases) {
    std::ofstream(dir_.path() + "/out") << c.output;
    auto t = RunExecPlugin(Config(Script("printer", "cat " + dir_.path() + "/out\n")));
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_EQ(t.status().code(), c.code) << c.name << ": " << t.status();
    EXPECT_THAT(t.status().message(), HasSubstr(c.error)) << c.name;
    EXPECT_THAT(t.status().message(), Not(HasSubstr(secret))) << c.name;
  }
}

TEST_F(ExecCredentialTest, SecretsNeverReachMessages) {
  // The plugin prints a token, then fails; its args and env carry secrets too.
  ExecConfig c = Config(Script("leaky",
                               "printf '{\"status\":{\"token\":\"TOKEN-SECRET\"}}'\n"
                               "echo failed >&2\nexit 2\n"));
  c.args = {"--password", "ARG-SECRET"};
  c.env = {{"PLUGIN_PASSWORD", "ENV-SECRET"}};
  auto t = RunExecPlugin(c);
  ASSERT_FALSE(t.ok());
  for (const char* secret : {"TOKEN-SECRET", "ARG-SECRET", "ENV-SECRET"}) {
    EXPECT_THAT(t.status().message(), Not(HasSubstr(secret)));
  }
  RestConfig rc;
  rc.server = "https://h:1";
  rc.exec = c;
  EXPECT_THAT(rc.Describe(), HasSubstr("auth=exec (leaky)"));
  EXPECT_THAT(rc.Describe(), Not(HasSubstr("ARG-SECRET")));
  EXPECT_THAT(rc.Describe(), Not(HasSubstr(dir_.path())));
}

TEST_F(ExecCredentialTest, MissingCommandShowsTheInstallHint) {
  ExecConfig c = Config("skb-no-such-credential-plugin");
  c.install_hint = "Install it with: apt install skb-auth-plugin\n";
  auto t = RunExecPlugin(c);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(t.status().message(),
              HasSubstr("'skb-no-such-credential-plugin' not found in $PATH. Install it with: apt "
                        "install skb-auth-plugin"));
  c.command = dir_.path() + "/bin/absent";
  t = RunExecPlugin(c);
  EXPECT_THAT(t.status().message(), HasSubstr(dir_.path() + "/bin/absent not found"));
  EXPECT_THAT(t.status().message(), HasSubstr("apt install"));
}

TEST_F(ExecCredentialTest, ABareNameIsLookedUpInPath) {
  CountingPlugin();
  const char* old = std::getenv("PATH");
  const std::string saved = old == nullptr ? "" : old;
  ::setenv("PATH", ("/nonexistent:" + dir_.path() + ":" + saved).c_str(), 1);
  auto t = RunExecPlugin(Config("counting"));
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->token, "tok-1");
  EXPECT_FALSE(t->expiry.has_value());
}

TEST_F(ExecCredentialTest, ThePluginSeesExecInfoEnvAndNoTerminal) {
  // A descriptor of ours without O_CLOEXEC must not reach the plugin either.
  const std::string marker = dir_.path() + "/leak-marker";
  int leaky = ::open(marker.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(leaky, 0);
  const std::string d = dir_.path();
  ExecConfig c = Config(
      Script("echoing", "printf '%s' \"$KUBERNETES_EXEC_INFO\" > " + d + "/info\n" +
                            "printf '%s' \"$FROM_CONFIG $HOME\" > " + d + "/env\n" +
                            "readlink /proc/$$/fd/0 > " + d + "/stdin\n" + "ls -l /proc/$$/fd/ > " +
                            d + "/fds\n" + "printf '{\"apiVersion\":\"" + kV1 +
                            "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n"));
  c.env = {{"FROM_CONFIG", "yes"}};
  c.provide_cluster_info = true;
  c.cluster_server = "https://api.example:6443";
  c.cluster_ca_pem = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
  c.cluster_tls_server_name = "kubernetes";
  c.cluster_config_json = R"({"audience":"bridge"})";
  auto t = RunExecPlugin(c);
  ::close(leaky);
  ASSERT_TRUE(t.ok()) << t.status();

  auto info = nlohmann::json::parse(ReadAll(d + "/info"));
  EXPECT_EQ(info["apiVersion"], kV1);
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://api.example:6443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], Base64Encode(c.cluster_ca_pem));
  EXPECT_EQ(info["spec"]["cluster"]["tls-server-name"], "kubernetes");
  EXPECT_EQ(info["spec"]["cluster"]["config"]["audience"], "bridge");
  EXPECT_FALSE(info["spec"]["cluster"].contains("insecure-skip-tls-verify"));
  EXPECT_EQ(ReadAll(d + "/env"), "yes " + std::string(std::getenv("HOME")));
  EXPECT_EQ(ReadAll(d + "/stdin"), "/dev/null\n");
  EXPECT_THAT(ReadAll(d + "/fds"), Not(HasSubstr("leak-marker")));

  // Without provideClusterInfo only spec.interactive.
  c.provide_cluster_info = false;
  ASSERT_TRUE(RunExecPlugin(c).ok());
  EXPECT_EQ(nlohmann::json::parse(ReadAll(d + "/info"))["spec"],
            nlohmann::json::parse(R"({"interactive":false})"));
}

// A plain-HTTP server on 127.0.0.1 that answers each connection with the next status of
// `statuses` and records the Authorization header it got.
class TinyServer {
 public:
  explicit TinyServer(std::vector<int> statuses) : statuses_(std::move(statuses)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TinyServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> authorizations() {
    std::lock_guard<std::mutex> lock(mu_);
    return auth_;
  }

 private:
  void Serve() {
    for (int status : statuses_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      size_t at = req.find("Authorization: ");
      {
        std::lock_guard<std::mutex> lock(mu_);
        auth_.push_back(
            at == std::string::npos ? "" : req.substr(at + 15, req.find("\r\n", at) - at - 15));
      }
      std::string reply = "HTTP/1.1 " + std::to_string(status) +
                          " X\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                          "Connection: close\r\n\r\n{}";
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }

  std::vector<int> statuses_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> auth_;
};

TEST_F(ExecCredentialTest, A401MakesTheTransportRunThePluginAgain) {
  TinyServer server({200, 401, 200, 200});
  ASSERT_NE(server.port(), 0);
  RestConfig rc;
  rc.server = "http://127.0.0.1:" + std::to_string(server.port());
  rc.exec = Config(CountingPlugin());
  auto transport = CurlTransport::Create(rc);
  ASSERT_TRUE(transport.ok()) << transport.status();
  HttpRequest req;
  req.path = "/api/v1/nodes";
  for (long want : {200, 401, 200, 200}) {
    auto r = (*transport)->Send(req);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, want);
  }
  EXPECT_THAT(server.authorizations(), ::testing::ElementsAre("Bearer tok-1", "Bearer tok-1",
                                                              "Bearer tok-2", "Bearer tok-2"));
  EXPECT_EQ(Count(), 2);
}

TEST_F(ExecCredentialTest, TransportsOfOneConfigShareTheSource) {
  ExecConfig c = Config(CountingPlugin());
  auto a = ExecCredentialSource::ForConfig(c);
  auto b = ExecCredentialSource::ForConfig(c);
  EXPECT_EQ(a.get(), b.get());
  c.args = {"--other"};
  EXPECT_NE(ExecCredentialSource::ForConfig(c).get(), a.get());
}

}  // namespace
}  // namespace skb::k8s
