// SPDX-License-Identifier: Apache-2.0
#include "tests/testbed/bridge_daemon.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {

BridgeDaemon::BridgeDaemon(std::string binary, std::string config_overlay,
                           std::vector<std::string> extra_args)
    : binary_(std::move(binary)),
      overlay_(std::move(config_overlay)),
      extra_args_(std::move(extra_args)) {}

BridgeDaemon::~BridgeDaemon() {
  Stop();
  if (dir_.empty()) return;
  // SKB_KEEP_DAEMON_LOGS=<dir>: keep each daemon's whole log there (debugging a failure),
  // named after the test that ran it (scripts/test sets it for every run).
  if (const char* keep = std::getenv("SKB_KEEP_DAEMON_LOGS"); keep != nullptr && *keep) {
    std::string test = "no-test";
    if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
      test = StrCat(info->test_suite_name(), ".", info->name());
      for (char& c : test) {
        if (c == '/' || c == '\'' || c == ' ') c = '_';
      }
    }
    Shell(StrCat("mkdir -p '", keep, "' && cp '", dir_, "/daemon.log' '", keep, "/", test, "-",
                 dir_.substr(dir_.find_last_of('/') + 1), ".log'"));
  }
  Shell(StrCat("rm -rf '", dir_, "'"));
}

Status BridgeDaemon::Start(const std::string& ready_line, std::chrono::milliseconds timeout) {
  if (pid_ > 0) return FailedPreconditionError("already running");
  const char* kubeconfig = std::getenv("KUBECONFIG");
  const char* slurm_conf = std::getenv("SLURM_CONF");
  if (kubeconfig == nullptr || slurm_conf == nullptr) {
    return FailedPreconditionError(
        "KUBECONFIG and SLURM_CONF must be set: eval \"$(scripts/testbed env)\"");
  }
  // The testbed's own bridge (scripts/testbed up without --no-bridge, or scripts/demo)
  // would act on the same nodes and make every result meaningless.
  if (auto tb = TestbedDir(); tb.ok()) {
    pid_t other = 0;
    std::ifstream(*tb + "/pids/bridge.pid") >> other;
    std::string cmdline;
    if (other > 0) std::getline(std::ifstream(StrCat("/proc/", other, "/cmdline")), cmdline, '\0');
    if (cmdline.find("slurm-k8s-bridge") != std::string::npos) {
      return FailedPreconditionError(
          StrCat("the testbed's own bridge (pid ", other,
                 ") is running and would act on the nodes this test drives: "
                 "scripts/testbed stop bridge"));
    }
  }
  if (dir_.empty()) {
    char tmpl[] = "/tmp/skb-bridge-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return InternalError("mkdtemp failed");
    dir_ = tmpl;
    socket_ = dir_ + "/bridge.sock";
  }
  nlohmann::json cfg = {{"logging", {{"level", "info"}}},
                        {"kubernetes", {{"kubeconfig", kubeconfig}, {"namespace", "slurm-bridge"}}},
                        {"slurm", {{"conf", slurm_conf}, {"poll_interval", "200ms"}}},
                        {"server", {{"socket_path", socket_}, {"http_address", ""}}}};
  if (!overlay_.empty()) {
    auto overlay = nlohmann::json::parse(overlay_, nullptr, false);
    if (overlay.is_discarded()) return InvalidArgumentError("config overlay is not JSON");
    cfg.merge_patch(overlay);
  }
  std::ofstream(dir_ + "/config.json") << cfg.dump(2);
  const std::string log = dir_ + "/daemon.log";
  const size_t log_start = Log().size();
  std::vector<std::string> args = {binary_, "--config", dir_ + "/config.json"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) return InternalError("fork failed");
  if (pid_ == 0) {
    // Dies with the test: a test killed mid-run (a ctest timeout, ^C) must not leave a
    // daemon acting on the testbed's nodes under the next run. The signal comes when the
    // forking *thread* ends, so start daemons from a thread that outlives them.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(125);
    if (freopen(log.c_str(), "a", stderr) == nullptr) _exit(126);
    if (freopen(log.c_str(), "a", stdout) == nullptr) _exit(126);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary_.c_str(), argv.data());
    _exit(127);
  }
  bool ready = WaitFor(
      [&] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          return true;
        }
        return Log().find(ready_line, log_start) != std::string::npos;
      },
      timeout, std::chrono::milliseconds(50));
  if (pid_ < 0) return InternalError(StrCat("the daemon exited at startup:\n", LogTail()));
  if (!ready)
    return DeadlineExceededError(StrCat("no '", ready_line, "' in the log:\n", LogTail()));
  return OkStatus();
}

int BridgeDaemon::Stop() {
  if (pid_ <= 0) return 0;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

bool BridgeDaemon::Exited() {
  if (pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

void BridgeDaemon::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string BridgeDaemon::Log() const {
  std::ifstream in(dir_ + "/daemon.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BridgeDaemon::HttpBase() const {
  // The last http_listening line: a restarted daemon appends to the same log, on a new port.
  const std::string log = Log();
  const std::regex line("http_listening [^\n]* port=([0-9]+)");
  std::string port;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
       ++it) {
    port = (*it)[1].str();
  }
  return port.empty() ? "" : "http://127.0.0.1:" + port;
}

std::string BridgeDaemon::LogTail(size_t bytes) const {
  std::string l = Log();
  return l.size() <= bytes ? l : l.substr(l.size() - bytes);
}

}  // namespace skb::testbed
