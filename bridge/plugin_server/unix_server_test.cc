// SPDX-License-Identifier: Apache-2.0
// The socket server over a real Unix socket: the handler is a plain function on text
// frames (the server does not read what it carries), the clients are blocking sockets.
#include "bridge/plugin_server/unix_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bridge/api/frame.h"
#include "bridge/api/v1/bridge.pb.h"
#include "src/base/testing/temp_dir.h"

namespace skb::bridge {
namespace {

// Far beyond any answer's normal latency; only keeps a broken server from hanging the test.
constexpr int kSafetyMs = 60'000;

class Client {
 public:
  explicit Client(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void SendRaw(const std::string& bytes) {
    ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void Send(const std::vector<std::string>& payloads) {
    std::string bytes;
    for (const auto& p : payloads) ASSERT_TRUE(api::EncodeFrame(p, &bytes));
    SendRaw(bytes);
  }
  // The next answer; "<eof>" when the server closed, "<timeout>" past kSafetyMs.
  std::string Receive() {
    std::string frame;
    for (;;) {
      auto r = decoder_.Next(&frame);
      if (r == api::FrameDecoder::Result::kFrame) return frame;
      if (r == api::FrameDecoder::Result::kError) return "<error>";
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, kSafetyMs) <= 0) return "<timeout>";
      char buf[4096];
      ssize_t n = read(fd_, buf, sizeof(buf));
      if (n <= 0) return "<eof>";
      decoder_.Append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  api::FrameDecoder decoder_{api::kMaxQueryResponseSize};
};

// Frames starting with "q" are queries (worker lane); the rest are admissions (inline).
// A query named "q-block" waits until Release().
class UnixServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    path_ = dir_.path() + "/bridge.sock";
  }
  void TearDown() override {
    Release();
    server_.reset();
  }
  void StartServer(UnixServer::Options o = {}) {
    o.path = path_;
    server_ = std::make_unique<UnixServer>(
        o,
        [this](std::string_view f, uint32_t) {
          if (f == "q-block") {
            std::unique_lock<std::mutex> lock(mu_);
            blocked_ = true;
            cv_.notify_all();
            cv_.wait(lock, [this] { return released_; });
          }
          if (f == "drop") return HandleResult{.response = "", .drop_reason = "asked to"};
          if (f.starts_with("big")) return HandleResult{.response = std::string(64 * 1024, 'x')};
          return HandleResult{.response = "re:" + std::string(f)};
        },
        [](std::string_view f) {
          return f.starts_with("q") ? UnixServer::Lane::kWorker : UnixServer::Lane::kInline;
        });
    ASSERT_TRUE(server_->Start().ok());
  }
  void WaitBlocked() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return blocked_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Polls `pred` (a server counter) until it holds or kSafetyMs pass.
  template <typename F>
  bool Eventually(F pred) {
    for (int i = 0; i < kSafetyMs / 5; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
  }

  skb::testing::TempDir dir_{"skb-unix-server"};
  std::string path_;
  std::unique_ptr<UnixServer> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false, released_ = false;
};

TEST_F(UnixServerTest, AdmissionIsAnsweredWhileAQueryHangs) {
  StartServer();
  Client bridgectl(path_), plugin(path_);
  ASSERT_TRUE(bridgectl.connected() && plugin.connected());
  bridgectl.Send({"q-block"});
  WaitBlocked();  // the worker is inside the query and stays there
  plugin.Send({"admit-1"});
  EXPECT_EQ(plugin.Receive(), "re:admit-1");
  plugin.Send({"admit-2", "ping"});
  EXPECT_EQ(plugin.Receive(), "re:admit-2");
  EXPECT_EQ(plugin.Receive(), "re:ping");
  // A second query waits behind the first (one worker) without holding up admissions.
  Client other(path_);
  other.Send({"q-2"});
  plugin.Send({"admit-3"});
  EXPECT_EQ(plugin.Receive(), "re:admit-3");
  Release();
  EXPECT_EQ(bridgectl.Receive(), "re:q-block");
  EXPECT_EQ(other.Receive(), "re:q-2");
  EXPECT_EQ(server_->stats().worker_frames, 2u);
  EXPECT_EQ(server_->stats().frames, 6u);
}

TEST_F(UnixServerTest, OneConnectionGetsItsAnswersInRequestOrder) {
  StartServer();
  Client c(path_);
  // An admission after a hanging query on the same connection waits for it: order first.
  c.Send({"q-block", "admit-after"});
  WaitBlocked();
  Release();
  EXPECT_EQ(c.Receive(), "re:q-block");
  EXPECT_EQ(c.Receive(), "re:admit-after");
}

TEST_F(UnixServerTest, PipeliningClientGetsEveryAnswerInOrder) {
  // Small bounds so that the backpressure paths run: reading stops at 4 pending frames.
  StartServer({.max_frames_per_wakeup = 2, .max_pending_frames = 4, .max_buffered_bytes = 512});
  Client c(path_);
  constexpr int kFrames = 2000;
  std::vector<std::string> frames;
  for (int i = 0; i < kFrames; ++i) frames.push_back((i % 3 == 0 ? "q" : "a") + std::to_string(i));
  // Written by a thread: the server stops reading long before the client stops writing.
  std::thread writer([&] { c.Send(frames); });
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_EQ(c.Receive(), "re:" + frames[i]) << "answer " << i;
  }
  writer.join();
  EXPECT_EQ(server_->stats().frames, static_cast<uint64_t>(kFrames));
  EXPECT_EQ(server_->stats().dropped, 0u);
}

TEST_F(UnixServerTest, StalledPartialFrameIsDropped) {
  StartServer({.stall_timeout = std::chrono::milliseconds(100)});
  Client stalled(path_), fine(path_);
  // 16 bytes announced, 3 sent.
  stalled.SendRaw(std::string{'\0', '\0', '\0', '\x10', 'a', 'b', 'c'});
  EXPECT_EQ(stalled.Receive(), "<eof>");
  EXPECT_EQ(server_->stats().stalled, 1u);
  EXPECT_EQ(server_->stats().dropped, 1u);
  // An idle connection (nothing half sent) is kept: the plugin holds one for its life.
  fine.Send({"ping"});
  EXPECT_EQ(fine.Receive(), "re:ping");
}

TEST_F(UnixServerTest, ASlowQueryIsNotTakenForAStalledPeer) {
  constexpr auto kStall = std::chrono::milliseconds(50);
  StartServer({.stall_timeout = kStall});
  Client c(path_);
  std::string bytes;
  ASSERT_TRUE(api::EncodeFrame("q-block", &bytes));
  ASSERT_TRUE(api::EncodeFrame("ping", &bytes));
  c.SendRaw(bytes.substr(0, bytes.size() - 2));  // the query, and most of the next frame
  WaitBlocked();
  std::this_thread::sleep_for(4 * kStall);  // the server, not the peer, is the slow one
  Release();
  EXPECT_EQ(c.Receive(), "re:q-block");
  c.SendRaw(bytes.substr(bytes.size() - 2));
  EXPECT_EQ(c.Receive(), "re:ping");
  EXPECT_EQ(server_->stats().stalled, 0u);
}

TEST_F(UnixServerTest, PeerThatDoesNotReadItsAnswersIsDropped) {
  StartServer({.max_buffered_bytes = 64 * 1024, .stall_timeout = std::chrono::milliseconds(100)});
  Client c(path_);
  // 64 KiB answers, never read: the server stops answering once its output holds
  // max_buffered_bytes (and the kernel buffer is full), then drops the peer.
  std::thread writer([&] {
    std::string bytes;
    for (int i = 0; i < 200; ++i) api::EncodeFrame("big", &bytes);
    (void)!write(c.fd(), bytes.data(), bytes.size());
  });
  EXPECT_TRUE(Eventually([&] { return server_->stats().stalled == 1; }));
  writer.join();
  EXPECT_LT(server_->stats().frames, 200u);  // it stopped answering well before the end
}

TEST_F(UnixServerTest, GarbageAndHandlerDropsCloseOnlyThatConnection) {
  StartServer();
  Client bad(path_), dropped(path_), good(path_);
  bad.SendRaw(std::string("\xff\xff\xff\xff", 4));  // length beyond the limit
  EXPECT_EQ(bad.Receive(), "<eof>");
  dropped.Send({"drop"});
  EXPECT_EQ(dropped.Receive(), "<eof>");
  good.Send({"ping"});
  EXPECT_EQ(good.Receive(), "re:ping");
  EXPECT_EQ(server_->stats().dropped, 2u);
}

TEST_F(UnixServerTest, MaxConnectionsRefusesTheNextPeer) {
  StartServer({.max_connections = 1});
  Client first(path_);
  first.Send({"ping"});
  ASSERT_EQ(first.Receive(), "re:ping");
  Client second(path_);  // connect() succeeds (backlog); the server closes it
  EXPECT_EQ(second.Receive(), "<eof>");
  EXPECT_EQ(server_->stats().denied, 1u);
}

// accept4() failing with EMFILE must not spin: the listening fd stays readable, so a loop
// that kept polling it would wake without pause. The fd table is filled in this process
// (the server runs in it) under a lowered RLIMIT_NOFILE; then freed, and the waiting
// client is served.
TEST_F(UnixServerTest, EmfileDoesNotSpinAndAcceptsAgainWhenFdsFree) {
  constexpr auto kBackoff = std::chrono::milliseconds(100);
  StartServer({.accept_backoff = kBackoff});
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = std::min<rlim_t>(old.rlim_cur, 1024);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> fillers;
  for (int fd; (fd = dup(2)) >= 0;) fillers.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  close(fillers.back());  // room for exactly the client's socket
  fillers.pop_back();
  auto client = std::make_unique<Client>(path_);
  ASSERT_TRUE(client->connected());  // queued in the backlog; the server cannot accept it
  ASSERT_TRUE(Eventually([&] { return server_->stats().accept_errors >= 1; }));
  const UnixServer::Stats before = server_->stats();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(10 * kBackoff);
  const UnixServer::Stats during = server_->stats();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (int fd : fillers) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  // A spinning loop wakes hundreds of thousands of times in this window; the server wakes
  // twice per backoff (the timeout, then the retried accept), plus a few spurious wakeups,
  // however long the window really was.
  const uint64_t backoffs = static_cast<uint64_t>(elapsed / kBackoff) + 1;
  const uint64_t wakeups = during.wakeups - before.wakeups;
  EXPECT_GE(during.accept_errors - before.accept_errors, 1u);
  EXPECT_LE(wakeups, 2 * backoffs + 3) << "backoffs=" << backoffs;
  client->Send({"ping"});
  EXPECT_EQ(client->Receive(), "re:ping");
  EXPECT_EQ(server_->stats().accepted, 1u);
}

// The daemon's classifier (daemon_main.cc): what the plugin asks stays on the poll thread.
TEST(AdmissionServiceIsQueryTest, AdmitAndPingAreInlineTheQueriesGoToTheWorker) {
  auto frame = [](auto set_body) {
    api::v1::Request req;
    req.set_protocol_version(api::v1::PROTOCOL_VERSION_1);
    set_body(&req);
    return req.SerializeAsString();
  };
  EXPECT_FALSE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_admit(); })));
  EXPECT_FALSE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_ping(); })));
  EXPECT_FALSE(AdmissionService::IsQuery(frame([](auto*) {})));  // no body: an Error, at once
  EXPECT_FALSE(AdmissionService::IsQuery("\xff\xff garbage"));   // dropped at once
  EXPECT_TRUE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_list_nodes(); })));
  EXPECT_TRUE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_list_jobs(); })));
  EXPECT_TRUE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_describe_node(); })));
  EXPECT_TRUE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_list_quotas(); })));
  EXPECT_TRUE(AdmissionService::IsQuery(frame([](auto* r) { r->mutable_describe_tenant(); })));
}

}  // namespace
}  // namespace skb::bridge
