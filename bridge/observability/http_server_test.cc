// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bridge/observability/exposition_parser.h"
#include "bridge/observability/metrics.h"

namespace skb::observability {
namespace {

using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A connected TCP socket to the server (IPv4 or IPv6 loopback).
int Connect(uint16_t port, bool ipv6 = false) {
  int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int rc;
  if (ipv6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the server closes the connection (sets *eof) or 5 s pass.
std::string ReadAll(int fd, bool* eof = nullptr) {
  std::string out;
  char buf[4096];
  if (eof != nullptr) *eof = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (eof != nullptr) *eof = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends `raw` and returns the whole response ("" when the connection failed).
std::string Exchange(uint16_t port, const std::string& raw, bool ipv6 = false) {
  int fd = Connect(port, ipv6);
  if (fd < 0) return "";
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out = ReadAll(fd);
  ::close(fd);
  return out;
}

std::string Get(uint16_t port, const std::string& path) {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

std::string Body(const std::string& response) {
  size_t p = response.find("\r\n\r\n");
  return p == std::string::npos ? "" : response.substr(p + 4);
}

TEST(QueryValueTest, FindsAKeyAmongOthers) {
  EXPECT_EQ(QueryValue("name=reserve-n1&uid=6f-1c", "uid"), "6f-1c");
  EXPECT_EQ(QueryValue("name=reserve-n1&uid=6f-1c", "name"), "reserve-n1");
  EXPECT_EQ(QueryValue("name=&uid", "name"), "");
  EXPECT_EQ(QueryValue("name=&uid", "uid"), "");
  EXPECT_EQ(QueryValue("names=a", "name"), std::nullopt);
  EXPECT_EQ(QueryValue("", "name"), std::nullopt);
}

TEST(ParseHostPortTest, AcceptsTheConfigForms) {
  auto a = ParseHostPort("127.0.0.1:9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9464);
  auto b = ParseHostPort("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  auto c = ParseHostPort(":9464");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "");
  auto d = ParseHostPort("localhost:65535");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 65535);
}

TEST(ParseHostPortTest, RejectsMalformedAddressesNamingThem) {
  for (const char* bad : {"9464", "127.0.0.1", "127.0.0.1:", "1.2.3.4:65536", "host:http",
                          "::1:9464", "[::1]9464", "[::1", "[]:1", "h:-1", "h:123456"}) {
    auto r = ParseHostPort(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("'") + bad + "'"));
  }
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}) {
    options.address =
        options.address == HttpServerOptions{}.address ? "127.0.0.1:0" : options.address;
    server_ = std::make_unique<HttpServer>(options);
    AddStandardHandlers(server_.get(), &registry_, [this]() -> Status {
      if (ready_.load()) return OkStatus();
      return UnavailableError("informer caches not synced");
    });
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_NE(server_->port(), 0);
  }

  Registry registry_;
  std::atomic<bool> ready_{false};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesHealthzReadyzMetricsAnd404) {
  Counter& c = registry_.AddCounterFamily("skb_test_total", "t", {"k"}).WithLabels({"a\"b"});
  c.Increment(7);
  StartServer();
  uint16_t port = server_->port();

  std::string healthz = Get(port, "/healthz");
  EXPECT_THAT(healthz, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(healthz, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(Body(healthz), "ok\n");

  std::string notready = Get(port, "/readyz");
  EXPECT_THAT(notready, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_EQ(Body(notready), "not ready: informer caches not synced\n");
  ready_ = true;
  EXPECT_THAT(Get(port, "/readyz"), StartsWith("HTTP/1.1 200 OK\r\n"));

  std::string metrics = Get(port, "/metrics?name[]=x");  // query strings are ignored
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  std::string body = Body(metrics);
  EXPECT_THAT(metrics, HasSubstr("Content-Length: " + std::to_string(body.size()) + "\r\n"));
  auto parsed = ParseExposition(body);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("skb_test_total", {{"k", "a\"b"}}), 7);

  EXPECT_THAT(Get(port, "/nope"), StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(Get(port, "/metricsX"), StartsWith("HTTP/1.1 404 "));
}

TEST_F(HttpServerTest, RejectsWhatItDoesNotServe) {
  StartServer();
  uint16_t port = server_->port();
  std::string post = Exchange(port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_THAT(post, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(post, HasSubstr("Allow: GET, HEAD\r\n"));
  // civetweb's own answers echo the request's version (or say 1.0 when it has none).
  EXPECT_THAT(Exchange(port, "garbage\r\n\r\n"), ContainsRegex("^HTTP/1\\.[01] 400 "));
  EXPECT_THAT(Exchange(port, "GET /healthz HTTP/2.0\r\n\r\n"), ContainsRegex("^HTTP/2\\.0 505 "));
  // A proxy's absolute form is not served (civetweb closes without an answer).
  EXPECT_THAT(Exchange(port, "GET http://x/healthz HTTP/1.1\r\n\r\n"), Not(HasSubstr(" 200 ")));

  std::string head = Exchange(port, "HEAD /healthz HTTP/1.0\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(head, EndsWith("\r\n\r\n"));  // no body

  // Bare LF line ends are tolerated (curl never sends them, people with nc do).
  EXPECT_THAT(Exchange(port, "GET /healthz HTTP/1.1\n\n"), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpServerTest, OversizedRequestsAreRefusedAndTheServerKeepsServing) {
  HttpServerOptions o;
  o.max_request_bytes = 1024;
  StartServer(o);
  uint16_t port = server_->port();
  std::string big = "GET /healthz HTTP/1.1\r\nX-Pad: " + std::string(4000, 'a') + "\r\n\r\n";
  EXPECT_THAT(Exchange(port, big), ContainsRegex("^HTTP/1\\.[01] 400 "));  // civetweb's answer
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpServerTest, SlowAndIdleClientsAreCutOffWithoutBlockingOthers) {
  HttpServerOptions o;
  o.connection_timeout = std::chrono::milliseconds(1500);
  StartServer(o);
  uint16_t port = server_->port();
  // An idle connection and a half-sent request.
  auto t0 = std::chrono::steady_clock::now();
  int idle = Connect(port);
  int slow = Connect(port);
  ASSERT_GE(idle, 0);
  ASSERT_GE(slow, 0);
  ::send(slow, "GET /hea", 8, MSG_NOSIGNAL);
  // Others are served meanwhile, well before the two time out.
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 200 "));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
  // Both are closed by the server after the timeout (EOF, not our own 5 s read limit),
  // civetweb saying 400 to the half-sent one.
  bool eof = false;
  EXPECT_THAT(ReadAll(idle, &eof), Not(HasSubstr(" 200 ")));
  EXPECT_TRUE(eof);
  EXPECT_THAT(ReadAll(slow, &eof), Not(HasSubstr(" 200 ")));
  EXPECT_TRUE(eof);
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(elapsed, std::chrono::milliseconds(1400));
  EXPECT_LT(elapsed, std::chrono::milliseconds(4500));
  ::close(idle);
  ::close(slow);
}

TEST_F(HttpServerTest, ConnectionLimitQueuesInsteadOfFailing) {
  HttpServerOptions o;
  o.max_connections = 2;
  o.connection_timeout = std::chrono::milliseconds(400);
  StartServer(o);
  uint16_t port = server_->port();
  int a = Connect(port);
  int b = Connect(port);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  // A third client waits in the backlog until the idle two time out, then is served.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 200 "));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  ::close(a);
  ::close(b);
}

TEST_F(HttpServerTest, ManyConcurrentClients) {
  StartServer();
  uint16_t port = server_->port();
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (Get(port, "/healthz").starts_with("HTTP/1.1 200 ")) ok.fetch_add(1);
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(ok.load(), 400);
}

TEST_F(HttpServerTest, StopClosesEverythingAndIsIdempotent) {
  StartServer();
  uint16_t port = server_->port();
  int idle = Connect(port);
  ASSERT_GE(idle, 0);
  auto t0 = std::chrono::steady_clock::now();
  server_->Stop();
  // A worker notices the stop between polls of up to 2 s (civetweb's quantum), well before
  // the idle client's 5 s timeout; the idle client is never answered.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  bool eof = false;
  EXPECT_THAT(ReadAll(idle, &eof), Not(HasSubstr(" 200 ")));
  ::close(idle);
  EXPECT_EQ(Connect(port), -1);  // nothing listens any more
  server_->Stop();
  // Start again after Stop works (a new port may be chosen).
  Status s = server_->Start();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(Get(server_->port(), "/healthz"), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpServerTest, StartErrors) {
  StartServer();
  EXPECT_EQ(server_->Start().code(), StatusCode::kFailedPrecondition);

  HttpServer taken({.address = "127.0.0.1:" + std::to_string(server_->port())});
  Status s = taken.Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("127.0.0.1:" + std::to_string(server_->port())));
  EXPECT_THAT(s.message(), HasSubstr("in use"));

  HttpServer malformed({.address = "no-port"});
  EXPECT_EQ(malformed.Start().code(), StatusCode::kInvalidArgument);
  HttpServer not_local({.address = "192.0.2.1:0"});  // TEST-NET-1: not on this host
  EXPECT_EQ(not_local.Start().code(), StatusCode::kUnavailable);
}

TEST_F(HttpServerTest, WildcardAddressServesIpv4AndIpv6Loopback) {
  HttpServerOptions o;
  o.address = ":0";
  StartServer(o);
  uint16_t port = server_->port();
  EXPECT_THAT(Get(port, "/healthz"), StartsWith("HTTP/1.1 200 "));
  int v6 = Connect(port, /*ipv6=*/true);
  if (v6 < 0) GTEST_SKIP() << "no IPv6 loopback on this host";
  ::close(v6);
  EXPECT_THAT(Exchange(port, "GET /healthz HTTP/1.1\r\n\r\n", true), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpServerTest, Ipv6LoopbackAddress) {
  HttpServer probe({.address = "[::1]:0"});
  if (!probe.Start().ok()) GTEST_SKIP() << "no IPv6 loopback on this host";
  probe.Stop();
  HttpServerOptions o;
  o.address = "[::1]:0";
  StartServer(o);
  EXPECT_THAT(Exchange(server_->port(), "GET /healthz HTTP/1.1\r\n\r\n", true),
              StartsWith("HTTP/1.1 200 "));
  EXPECT_EQ(Connect(server_->port(), false), -1);  // IPv6 only: 127.0.0.1 is not bound
}

TEST_F(HttpServerTest, AThrowingHandlerGets500) {
  server_ = std::make_unique<HttpServer>(HttpServerOptions{.address = "127.0.0.1:0"});
  server_->Handle("/boom",
                  [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
  ASSERT_TRUE(server_->Start().ok());
  EXPECT_THAT(Get(server_->port(), "/boom"), StartsWith("HTTP/1.1 500 "));
}

}  // namespace
}  // namespace skb::observability
