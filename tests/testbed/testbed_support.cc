// SPDX-License-Identifier: Apache-2.0
#include "tests/testbed/testbed_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "src/base/strings.h"

namespace skb::testbed {
namespace {

using Clock = std::chrono::steady_clock;

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         const std::string& stdin_text) {
  CommandResult result;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = "pipe failed";
    return result;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = "fork failed";
    return result;
  }
  setpgid(pid, pid);

  // Write stdin from a thread so a large input cannot deadlock against full output pipes.
  std::thread writer([fd = in_pipe[1], &stdin_text] {
    signal(SIGPIPE, SIG_IGN);
    size_t off = 0;
    while (off < stdin_text.size()) {
      ssize_t n = write(fd, stdin_text.data() + off, stdin_text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  });

  SetNonBlocking(out_pipe[0]);
  SetNonBlocking(err_pipe[0]);
  auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      kill(-pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    int r = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  writer.join();
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

CommandResult Shell(const std::string& script, std::chrono::milliseconds timeout) {
  return RunCommand({"sh", "-c", script}, timeout);
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

std::string HoldsFor(const std::function<std::string()>& check, std::chrono::milliseconds window,
                     std::chrono::milliseconds interval) {
  const auto deadline = Clock::now() + window;
  for (;;) {
    if (std::string broken = check(); !broken.empty()) return broken;
    if (Clock::now() >= deadline) return "";
    std::this_thread::sleep_for(interval);
  }
}

skb::StatusOr<std::string> TestbedDir() {
  const char* dir = std::getenv("SKB_TESTBED_DIR");
  if (dir == nullptr || *dir == '\0') {
    return skb::FailedPreconditionError(
        "SKB_TESTBED_DIR is not set: run `scripts/testbed up` and "
        "`eval \"$(scripts/testbed env)\"` first (scripts/test does both)");
  }
  return std::string(dir);
}

nlohmann::json PodManifest(const TestPod& pod) {
  const std::string n = std::to_string(pod.gpus);
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : pod.labels) labels[k] = v;
  nlohmann::json m = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", pod.name}, {"namespace", pod.namespace_name}, {"labels", labels}}},
      {"spec",
       {{"terminationGracePeriodSeconds", pod.grace_seconds},
        {"containers",
         {{{"name", "main"},
           {"image", "inference:1"},
           {"resources",
            {{"requests", {{pod.resource, n}}}, {"limits", {{pod.resource, n}}}}}}}}}}};
  if (!pod.finalizers.empty()) m["metadata"]["finalizers"] = pod.finalizers;
  nlohmann::json& spec = m["spec"];
  if (!pod.priority_class.empty()) spec["priorityClassName"] = pod.priority_class;
  if (!pod.node_name.empty()) spec["nodeName"] = pod.node_name;
  if (!pod.node_selector.empty()) {
    spec["nodeSelector"] = {{"kubernetes.io/hostname", pod.node_selector}};
  }
  if (pod.tolerate_all) spec["tolerations"] = {{{"operator", "Exists"}}};
  return m;
}

TestPod InferenceTestPod(const std::string& name, const std::string& label, int gpus) {
  TestPod p;
  p.name = name;
  p.labels = {{"skb-e2e", label}};
  p.gpus = gpus;
  p.priority_class = "inference-high";
  return p;
}

nlohmann::json InferencePod(const std::string& name, const std::string& label, int gpus) {
  return PodManifest(InferenceTestPod(name, label, gpus));
}

nlohmann::json NodeNamePod(const std::string& name, const std::string& label,
                           const std::string& node, int gpus) {
  TestPod p = InferenceTestPod(name, label, gpus);
  p.node_name = node;
  return PodManifest(p);
}

nlohmann::json TolerateAllPod(const std::string& name, const std::string& label, int gpus) {
  TestPod p = InferenceTestPod(name, label, gpus);
  p.tolerate_all = true;
  return PodManifest(p);
}

CommandResult Bridgectl(const std::string& socket, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BridgectlBinary(), "--socket", socket};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, std::chrono::seconds(30));
}

Status CreateNamespace(const std::string& ns, std::chrono::milliseconds timeout) {
  CommandResult r = RunCommand({"kubectl", "create", "namespace", ns}, std::chrono::seconds(30));
  if (r.exit_code != 0 && r.err.find("AlreadyExists") == std::string::npos) {
    return UnavailableError(StrCat("kubectl create namespace ", ns, ": ", r.err));
  }
  return WaitForDefaultServiceAccount(ns, timeout);
}

Status WaitForDefaultServiceAccount(const std::string& ns, std::chrono::milliseconds timeout) {
  const bool ok = WaitFor(
      [&] {
        return RunCommand({"kubectl", "get", "serviceaccount", "default", "-n", ns},
                          std::chrono::seconds(30))
                   .exit_code == 0;
      },
      timeout);
  if (ok) return OkStatus();
  return DeadlineExceededError(
      StrCat("namespace ", ns, " has no default ServiceAccount (kube-controller-manager down?)"));
}

CommandResult TestbedCommand(const std::vector<std::string>& args,
                             std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {StrCat(skb::testbed::SourceDir(), "/scripts/testbed")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(const std::string& s) { return std::string(StripWhitespace(s)); }

std::string SqueueState(const std::string& job_id) {
  return Trim(Shell(StrCat("squeue -h -j ", job_id, " -o %T")).out);
}

std::string SlurmGpuIndices(const std::string& job_id) {
  const std::string out = Shell(StrCat("scontrol -d show job ", job_id)).out;
  const size_t at = out.find("(IDX:");
  if (at == std::string::npos) return "";
  const size_t end = out.find(')', at);
  return out.substr(at + 5, end - at - 5);
}

Status WriteServiceAccountKubeconfig(const std::string& ns, const std::string& service_account,
                                     const std::string& path) {
  auto token =
      RunCommand({"kubectl", "create", "token", "-n", ns, service_account, "--duration=2h"},
                 std::chrono::seconds(30));
  if (token.exit_code != 0) return InternalError(StrCat("kubectl create token: ", token.err));
  const std::string server =
      Trim(Shell("kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'").out);
  if (server.empty()) return InternalError("no server in $KUBECONFIG");
  const std::string ca = path + ".ca.crt";
  if (Shell(StrCat("kubectl config view --minify --raw -o "
                   "jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > ",
                   ca, " && test -s ", ca))
          .exit_code != 0) {
    return InternalError("no certificate-authority-data in $KUBECONFIG");
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"set-cluster", "testbed", "--server", server, "--certificate-authority", ca},
           {"set-credentials", service_account, "--token", Trim(token.out)},
           {"set-context", service_account, "--cluster", "testbed", "--user", service_account},
           {"use-context", service_account}}) {
    std::vector<std::string> argv = {"kubectl", "config", "--kubeconfig", path};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunCommand(argv, std::chrono::seconds(30));
    if (r.exit_code != 0) return InternalError(StrCat("kubectl config ", args[0], ": ", r.err));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<k8s::KubeClient>> AdminKubeClient() {
  const char* path = std::getenv("KUBECONFIG");
  if (path == nullptr) {
    return FailedPreconditionError("KUBECONFIG is not set: eval \"$(scripts/testbed env)\"");
  }
  ASSIGN_OR_RETURN(k8s::RestConfig cfg, k8s::LoadKubeconfig(path, ""));
  cfg.qps = 0;
  return k8s::NewRestClient(cfg);
}

PluginPointer::PluginPointer(const std::string& socket, const std::string& failure_policy) {
  auto dir = TestbedDir();
  if (!dir.ok()) return;
  conf_ = *dir + "/slurm/k8s_bridge.conf";
  log_ = *dir + "/logs/slurmctld.log";
  original_ = ReadAll(conf_);
  ok_ = Repoint(socket, failure_policy);
}

PluginPointer::~PluginPointer() {
  if (conf_.empty()) return;
  // Restored, and waited for until slurmctld's plugin has loaded it again: the next test on
  // this testbed (it may start the moment this process ends) must not submit through a
  // config that points at this test's daemon, fail-closed (seen: a Slurm client test's
  // sbatch refused by a policy=closed left by PluginE2E.FailClosedRefuses...).
  const size_t log_size = ReadAll(log_).size();
  std::ofstream(conf_) << original_;
  WaitFor(
      [&] {
        return ReadAll(log_).find(StrCat("config loaded from ", conf_), log_size) !=
               std::string::npos;
      },
      std::chrono::seconds(20));
}

bool PluginPointer::Repoint(const std::string& socket, const std::string& failure_policy,
                            int timeout_ms) {
  const size_t log_size = ReadAll(log_).size();
  std::ofstream(conf_) << "# written by a test (tests/testbed/testbed_support.cc)\nSocketPath="
                       << socket << "\nTimeoutMs=" << timeout_ms
                       << "\nFailurePolicy=" << failure_policy << "\n";
  const std::string want =
      skb::StrCat("socket=", socket, " timeout_ms=", timeout_ms, " policy=", failure_policy);
  return WaitFor([&] { return ReadAll(log_).find(want, log_size) != std::string::npos; },
                 std::chrono::seconds(20));
}

int TestbedNodeCount() {
  const char* n = std::getenv("SKB_TESTBED_NODES");
  int v = (n != nullptr) ? std::atoi(n) : 0;
  return v > 0 ? v : 4;
}

bool DraMode() {
  const char* mode = std::getenv("SKB_TESTBED_GPU_ALLOCATION");
  return mode != nullptr && std::string_view(mode) == "dra";
}

nlohmann::json KubectlGetJson(std::vector<std::string> args) {
  args.insert(args.begin(), {"kubectl", "get"});
  args.insert(args.end(), {"-o", "json"});
  CommandResult r = RunCommand(args, std::chrono::seconds(30));
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

void DeleteTestNamespace(const std::string& ns) {
  using std::chrono::seconds;
  RunCommand({"kubectl", "delete", "pods", "--all", "-n", ns, "--grace-period=0"}, seconds(60));
  RunCommand({"kubectl", "delete", "resourceclaims", "--all", "-n", ns}, seconds(60));
  RunCommand({"kubectl", "delete", "namespace", ns, "--wait=false"}, seconds(30));
}

}  // namespace skb::testbed
