// SPDX-License-Identifier: Apache-2.0
#include "k8s/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "k8s/base64.h"
#include "k8s/logger.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace skb::k8s {
namespace {

using nlohmann::json;

// An ExecCredential is a few KB; more is a plugin gone wrong.
constexpr size_t kMaxStdoutBytes = 1u << 20;

std::string What(const ExecConfig& config) {
  return StrCat("exec credential plugin '", ExecCommandName(config), "' (", config.origin, ")");
}

// The last kMaxStderrBytes of the plugin's stderr on one line, or "".
std::string StderrTail(std::string_view err) {
  err = StripWhitespace(err);
  if (err.size() > ExecCredentialSource::kMaxStderrBytes) {
    err = err.substr(err.size() - ExecCredentialSource::kMaxStderrBytes);
  }
  std::string tail(err);
  for (char& c : tail) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return tail.empty() ? std::string() : StrCat("; stderr: ", tail);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

Status NotFound(const ExecConfig& config, std::string_view problem) {
  std::string msg = StrCat(What(config), ": ", problem);
  std::string_view hint = StripWhitespace(config.install_hint);
  if (!hint.empty()) StrAppend(&msg, ". ", hint);
  return FailedPreconditionError(std::move(msg));
}

// A path to run: `command` itself when it names a path, else the first executable of that
// name in $PATH (as exec.LookPath, which kubectl uses).
StatusOr<std::string> ResolveCommand(const ExecConfig& config) {
  const std::string& command = config.command;
  if (command.find('/') != std::string::npos) {
    if (::access(command.c_str(), F_OK) != 0) {
      return NotFound(config, StrCat("executable ", command, " not found"));
    }
    return command;
  }
  const char* path_env = std::getenv("PATH");
  for (std::string_view dir : StrSplit(path_env == nullptr ? "" : path_env, ':', true)) {
    std::string candidate = StrCat(dir, "/", command);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return NotFound(config, StrCat("executable '", command, "' not found in $PATH"));
}

// The caller's environment, then `extra` in order, each replacing a variable of its name.
std::vector<std::string> PluginEnvironment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  for (const auto& [name, value] : extra) {
    const std::string prefix = StrCat(name, "=");
    std::erase_if(env, [&](const std::string& v) { return v.rfind(prefix, 0) == 0; });
    env.push_back(StrCat(prefix, value));
  }
  return env;
}

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct PluginResult {
  std::string out;
  std::string err;
  int wait_status = 0;
  bool status_known = true;  // false when SIGCHLD is ignored and the child reaped itself
  bool timed_out = false;
  bool too_much_output = false;
};

// Reads stdout and stderr until the child exits or the deadline passes; on the deadline (or
// too much output) kills its process group. Always reaps the child.
PluginResult Collect(pid_t pid, Fd* out_fd, Fd* err_fd, std::chrono::milliseconds timeout) {
  PluginResult r;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool exited = false;
  char buf[8192];
  while (true) {
    if (!exited) {
      pid_t w = ::waitpid(pid, &r.wait_status, WNOHANG);
      if (w == pid || (w < 0 && errno == ECHILD)) {
        exited = true;
        r.status_known = w == pid;
      }
    }
    const bool open = out_fd->get() >= 0 || err_fd->get() >= 0;
    if (exited && !open) return r;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || r.too_much_output) {
      r.timed_out = now >= deadline;
      break;
    }
    // Once the child is gone everything it wrote is in the pipes: take what is there and
    // stop (a background grandchild may hold them open).
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int wait_ms = exited ? 0 : static_cast<int>(std::min<long long>(left.count() + 1, 20));
    pollfd fds[2];
    Fd* owners[2];
    nfds_t n = 0;
    for (Fd* fd : {out_fd, err_fd}) {
      if (fd->get() < 0) continue;
      fds[n] = {fd->get(), POLLIN, 0};
      owners[n++] = fd;
    }
    int ready = ::poll(n == 0 ? nullptr : fds, n, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    bool progressed = false;
    for (nfds_t i = 0; ready > 0 && i < n; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got < 0 && errno == EINTR) continue;
      progressed = true;
      if (got <= 0) {
        owners[i]->Close();
        continue;
      }
      if (owners[i] == out_fd) {
        r.out.append(buf, static_cast<size_t>(got));
        if (r.out.size() > kMaxStdoutBytes) r.too_much_output = true;
      } else {
        r.err.append(buf, static_cast<size_t>(got));
        if (r.err.size() > 4 * ExecCredentialSource::kMaxStderrBytes) {
          r.err.erase(0, r.err.size() - 2 * ExecCredentialSource::kMaxStderrBytes);
        }
      }
    }
    if (exited && !progressed) {
      out_fd->Close();
      err_fd->Close();
    }
  }
  // Timed out, too much output or a poll failure: end the plugin and whatever it started.
  if (!exited) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &r.wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  out_fd->Close();
  err_fd->Close();
  return r;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return StrCat("killed by signal ", WTERMSIG(status));
  return StrCat("ended with wait status ", status);
}

}  // namespace

std::string ExecCommandName(const ExecConfig& config) {
  size_t slash = config.command.rfind('/');
  return slash == std::string::npos ? config.command : config.command.substr(slash + 1);
}

std::string ExecInfo(const ExecConfig& config) {
  json spec = {{"interactive", false}};
  if (config.provide_cluster_info) {
    json cluster = {{"server", config.cluster_server}};
    if (!config.cluster_tls_server_name.empty()) {
      cluster["tls-server-name"] = config.cluster_tls_server_name;
    }
    if (config.cluster_insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!config.cluster_ca_pem.empty()) {
      cluster["certificate-authority-data"] = Base64Encode(config.cluster_ca_pem);
    }
    if (!config.cluster_config_json.empty()) {
      cluster["config"] = json::parse(config.cluster_config_json, nullptr, false);
    }
    spec["cluster"] = std::move(cluster);
  }
  json info = {{"apiVersion", config.api_version}, {"kind", "ExecCredential"}, {"spec", spec}};
  return info.dump();
}

StatusOr<ExecCredential> ParseExecCredential(std::string_view output,
                                             const std::string& api_version,
                                             const std::string& what) {
  if (StripWhitespace(output).empty()) {
    return UnauthenticatedError(StrCat(what, ": printed nothing on stdout"));
  }
  json doc = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return UnauthenticatedError(
        StrCat(what, ": stdout is not a JSON ExecCredential (", output.size(), " bytes)"));
  }
  // apiVersion and kind are echoed (short, never secret); nothing else of the output is.
  auto short_string = [&](const char* key) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_string()) return std::string("(none)");
    std::string v = it->get<std::string>();
    return v.size() > 80 ? v.substr(0, 80) + "..." : v;
  };
  if (short_string("apiVersion") != api_version) {
    return UnauthenticatedError(StrCat(what, ": printed apiVersion '", short_string("apiVersion"),
                                       "', configured for '", api_version, "'"));
  }
  if (short_string("kind") != "ExecCredential") {
    return UnauthenticatedError(
        StrCat(what, ": printed kind '", short_string("kind"), "', expected 'ExecCredential'"));
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return UnauthenticatedError(StrCat(what, ": the ExecCredential has no status"));
  }
  for (const char* key : {"clientCertificateData", "clientKeyData"}) {
    auto it = status->find(key);
    const bool empty = it == status->end() || it->is_null() ||
                       (it->is_string() && it->get_ref<const std::string&>().empty());
    if (!empty) {
      return UnimplementedError(
          StrCat(what, ": returned a client certificate (status.", key,
                 "), which the bridge does not support; only status.token is"));
    }
  }
  ExecCredential cred;
  auto token = status->find("token");
  if (token != status->end() && token->is_string()) cred.token = token->get<std::string>();
  if (cred.token.empty()) {
    return UnauthenticatedError(StrCat(what, ": the ExecCredential has no status.token"));
  }
  auto expiry = status->find("expirationTimestamp");
  if (expiry != status->end() && !expiry->is_null()) {
    auto t = expiry->is_string() ? ParseTime(expiry->get<std::string>())
                                 : StatusOr<Clock::TimePoint>(InvalidArgumentError("not a string"));
    if (!t.ok()) {
      return UnauthenticatedError(
          StrCat(what, ": status.expirationTimestamp is not an RFC 3339 time"));
    }
    cred.expiry = *t;
  }
  return cred;
}

StatusOr<ExecCredential> RunExecPlugin(const ExecConfig& config) {
  const std::string what = What(config);
  ASSIGN_OR_RETURN(std::string path, ResolveCommand(config));

  std::vector<std::pair<std::string, std::string>> extra = config.env;
  extra.emplace_back("KUBERNETES_EXEC_INFO", ExecInfo(config));
  std::vector<std::string> env = PluginEnvironment(extra);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args{config.command};
  args.insert(args.end(), config.args.begin(), config.args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return UnavailableError(StrCat(what, ": pipe: ", std::strerror(errno)));
  }
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return UnavailableError(StrCat(what, ": pipe: ", std::strerror(errno)));
  }
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  // No terminal (stdin is /dev/null), its own process group (a timeout kills all of it),
  // default signal dispositions and an empty mask (the daemon blocks its shutdown signals),
  // and no descriptor of ours beyond the three.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  out_w.Close();
  err_w.Close();
  if (rc == ENOENT) return NotFound(config, StrCat("executable ", path, " not found"));
  if (rc == EACCES || rc == ENOEXEC) {
    return FailedPreconditionError(StrCat(what, ": cannot run ", path, ": ", std::strerror(rc)));
  }
  if (rc != 0) return UnavailableError(StrCat(what, ": cannot start: ", std::strerror(rc)));

  PluginResult r = Collect(pid, &out_r, &err_r, config.timeout);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (r.timed_out) {
    return UnavailableError(StrCat(what, ": no answer within ", config.timeout.count(),
                                   " ms, killed", StderrTail(r.err)));
  }
  if (r.too_much_output) {
    return UnauthenticatedError(
        StrCat(what, ": printed more than ", kMaxStdoutBytes, " bytes, killed", StderrTail(r.err)));
  }
  if (r.status_known && !(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 0)) {
    return UnauthenticatedError(
        StrCat(what, ": ", DescribeWaitStatus(r.wait_status), StderrTail(r.err)));
  }
  auto cred = ParseExecCredential(r.out, config.api_version, what);
  if (!cred.ok()) {
    return Status(cred.status().code(), StrCat(cred.status().message(), StderrTail(r.err)));
  }
  Logger()->debug("k8s_exec_credential_run command={} ms={} expiry={}", ExecCommandName(config), ms,
                  cred->expiry ? FormatTime(*cred->expiry) : std::string("none"));
  return cred;
}

ExecCredentialSource::ExecCredentialSource(ExecConfig config, const Clock* clock)
    : config_(std::move(config)), clock_(clock) {}

std::shared_ptr<ExecCredentialSource> ExecCredentialSource::ForConfig(const ExecConfig& config) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<ExecCredentialSource>> sources;
  json key = {config.api_version,
              config.command,
              config.args,
              config.env,
              config.install_hint,
              config.interactive_mode,
              config.provide_cluster_info,
              config.cluster_server,
              config.cluster_ca_pem,
              config.cluster_tls_server_name,
              config.cluster_insecure_skip_tls_verify,
              config.cluster_config_json,
              config.timeout.count()};
  const std::string k = key.dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu);
  std::erase_if(sources, [](const auto& entry) { return entry.second.expired(); });
  if (auto existing = sources[k].lock()) return existing;
  auto source = std::make_shared<ExecCredentialSource>(config, SystemClock::Get());
  sources[k] = source;
  return source;
}

StatusOr<std::string> ExecCredentialSource::Token() {
  MutexLock lock(&mu_);
  const Clock::TimePoint now = clock_->Now();
  if (!token_.empty() && (!expiry_ || now + kExpiryMargin < *expiry_)) return token_;
  ++runs_;
  auto fresh = RunExecPlugin(config_);
  if (!fresh.ok()) {
    if (!token_.empty() && expiry_ && now < *expiry_) {
      Logger()->warn("k8s_exec_credential_refresh_failed keeping=unexpired-token error=\"{}\"",
                     fresh.status().message());
      return token_;
    }
    token_.clear();
    expiry_.reset();
    return fresh.status();
  }
  token_ = std::move(fresh->token);
  expiry_ = fresh->expiry;
  return token_;
}

void ExecCredentialSource::Invalidate(const std::string& token) {
  MutexLock lock(&mu_);
  if (!token.empty() && token == token_) {
    token_.clear();
    expiry_.reset();
  }
}

int ExecCredentialSource::runs() const {
  MutexLock lock(&mu_);
  return runs_;
}

}  // namespace skb::k8s
