// bridgectl: the admin CLI. Asks the daemon over its Unix socket (protobuf) for what lives
// in its caches (nodes, jobs) and talks to Kubernetes directly, with the admin's own
// kubeconfig, where Kubernetes is the source (the Events of past preemptions, the drain
// condition). Thin: the connection, the formatting and the Kubernetes helpers live in
// bridge/cli/.
#include <pwd.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bridge/cli/daemon_connection.h"
#include "bridge/cli/format.h"
#include "bridge/cli/node_drain.h"
#include "bridge/cli/preemption_history.h"
#include "bridge/cli/quota_format.h"
#include "bridge/version.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/health/health_config.h"

namespace {

namespace v1 = ::skb::api::v1;
namespace cli = ::skb::bridge::cli;

constexpr char kUsage[] = R"(usage: bridgectl [flags] COMMAND [-o table|wide|json]

From the daemon (its Unix socket):
  get nodes             the merged inventory: GPUs, owner (per side on a node shared GPU
                        by GPU: "slurm 5 / k8s 3"), Kubernetes health, Slurm state, jobs
                        and GPU pods of every managed node
  describe node NAME    why the node is in its state: conditions, taints, the rules that
                        fired, and what the bridge would do now; its GPU mode and, shared
                        GPU by GPU, each GPU's owner, job or pods, and since when
  get jobs [--all]      Slurm jobs (queued and running; --all: finished ones too) with the
                        owner of their nodes, whether the bridge may preempt them and why,
                        and how often it has
  get quotas            guaranteed GPU quotas per tenant: floor, limit, GPUs in use in Slurm
                        and Kubernetes, borrowed beyond the floor, pending, reclaiming
  describe tenant NAME  each job and pod of the tenant: guaranteed or borrowed, and why
From Kubernetes (--kubeconfig, else $KUBECONFIG, ~/.kube/config, in-cluster):
  get preemptions [--node NAME]
                        past lends to Kubernetes from the bridge's Events: when, the pod,
                        the jobs signalled and requeued, the outcome, the return to Slurm
  drain NODE --reason TEXT
                        sets the node condition DrainRequested=True (reason BridgectlDrain):
                        the bridge drains the Slurm node, running jobs finish
  undrain NODE          removes that condition (only if bridgectl set it); the bridge
                        resumes the Slurm node unless something else still drains it
Other:
  version               the bridgectl version and the Slurm release it was built for
  help                  this text

Flags:
  --socket PATH       the daemon's socket (else $SKB_BRIDGE_SOCKET, else
                      /run/slurm-k8s-bridge/bridge.sock; `scripts/testbed env` sets it)
  --kubeconfig PATH   --context NAME   Kubernetes credentials for the Kubernetes commands
  --timeout SECONDS   per call (default 10)
  -o table|wide|json  output of get/describe (default table)

Exit status: 0 done, 1 failed (daemon or apiserver unreachable, unknown node, refused),
2 bad command line.
)";

int Fail(const std::string& msg) {
  std::fprintf(stderr, "bridgectl: %s\n", msg.c_str());
  return 1;
}

int Usage(const std::string& msg) {
  std::fprintf(stderr, "bridgectl: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

struct Flags {
  std::string socket = cli::DefaultSocketPath();
  std::string output = "table";
  std::string kubeconfig;
  std::string context;
  std::string reason;
  bool reason_given = false;
  std::string node;
  bool all = false;
  int timeout_s = 10;
};

// Who asks, for the drain condition's message: "alice@login1" ("alice (sudo)@..." as root).
std::string Who() {
  std::string user;
  if (const passwd* pw = getpwuid(getuid())) user = pw->pw_name;
  if (user.empty()) user = "uid " + std::to_string(getuid());
  if (const char* sudo = std::getenv("SUDO_USER"); sudo != nullptr && *sudo != '\0') {
    user = std::string(sudo) + " (sudo)";
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') user += std::string("@") + host;
  return user;
}

skb::StatusOr<std::unique_ptr<skb::k8s::KubeClient>> OpenKube(const Flags& f) {
  auto cfg = f.kubeconfig.empty() ? skb::k8s::DefaultRestConfig(f.context)
                                  : skb::k8s::LoadKubeconfig(f.kubeconfig, f.context);
  if (!cfg.ok()) {
    return skb::FailedPreconditionError(
        std::string("no Kubernetes credentials (") + std::string(cfg.status().message()) +
        "): this command talks to Kubernetes directly; give --kubeconfig or set $KUBECONFIG");
  }
  cfg->timeout = std::chrono::seconds(f.timeout_s);
  cfg->connect_timeout = std::chrono::seconds(std::min(f.timeout_s, 10));
  cfg->user_agent = std::string("bridgectl/") + skb::bridge::kVersion;
  return skb::k8s::NewRestClient(*cfg);
}

// An apiserver error with a hint on what to check.
int KubeFail(const skb::Status& s, const std::string& what) {
  std::string msg = what + ": " + std::string(s.message());
  if (s.code() == skb::StatusCode::kUnavailable || s.code() == skb::StatusCode::kDeadlineExceeded) {
    msg += " (is the Kubernetes apiserver reachable with this kubeconfig?)";
  } else if (s.code() == skb::StatusCode::kPermissionDenied ||
             s.code() == skb::StatusCode::kUnauthenticated) {
    msg +=
        " (RBAC: drain/undrain need get+patch on nodes and nodes/status, get preemptions "
        "needs list on events)";
  }
  return Fail(msg);
}

int GetPreemptions(const Flags& f) {
  auto kube = OpenKube(f);
  if (!kube.ok()) return Fail(std::string(kube.status().message()));
  auto events = cli::ListLendEvents(**kube, f.node);
  if (!events.ok()) return KubeFail(events.status(), "listing the bridge's Events");
  auto history = cli::PreemptionsFromEvents(*events);
  if (f.output == "json") {
    std::printf("%s\n", cli::PreemptionsJson(history).dump(2).c_str());
  } else {
    std::fputs(cli::PreemptionsTable(history, f.output == "wide").c_str(), stdout);
  }
  return 0;
}

int Drain(const Flags& f, const std::string& node, bool drain) {
  auto kube = OpenKube(f);
  if (!kube.ok()) return Fail(std::string(kube.status().message()));
  const std::string cond = std::string(skb::health::kDrainRequestedCondition);
  if (drain) {
    auto changed =
        cli::RequestDrain(**kube, node, f.reason, Who(), skb::k8s::SystemClock::Get()->Now());
    if (!changed.ok()) return KubeFail(changed.status(), "drain " + node);
    std::printf(
        "%s: %s %s=True (reason %s): the bridge drains the Slurm node; running jobs "
        "finish (`bridgectl describe node %s`)\n",
        node.c_str(), *changed ? "set" : "already has", cond.c_str(),
        std::string(skb::health::kBridgectlDrainReason).c_str(), node.c_str());
    return 0;
  }
  auto cleared = cli::ClearDrain(**kube, node);
  if (!cleared.ok()) return KubeFail(cleared.status(), "undrain " + node);
  if (*cleared) {
    std::printf(
        "%s: removed %s: the bridge resumes the Slurm node unless another signal or an "
        "admin's own Slurm drain holds it\n",
        node.c_str(), cond.c_str());
  } else {
    std::printf("%s: no drain by bridgectl to clear\n", node.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // stdout is for answers (tables, JSON for scripts): the Kubernetes client's log lines go
  // to stderr, warnings and errors only.
  auto k8s_log = spdlog::stderr_logger_mt("k8s");
  k8s_log->set_level(spdlog::level::warn);
  std::vector<std::string> args;
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bridgectl: %s needs a value\n", flag.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    // "--flag=value" or "--flag value".
    auto flag = [&](const char* name, std::string* out) {
      const std::string n = name;
      if (a == n) {
        *out = value(n);
        return true;
      }
      if (a.rfind(n + "=", 0) == 0) {
        *out = a.substr(n.size() + 1);
        return true;
      }
      return false;
    };
    std::string timeout;
    if (flag("--socket", &f.socket) || flag("--output", &f.output) ||
        flag("--kubeconfig", &f.kubeconfig) || flag("--context", &f.context) ||
        flag("--node", &f.node)) {
      continue;
    }
    if (flag("--reason", &f.reason)) {
      f.reason_given = true;
    } else if (flag("--timeout", &timeout)) {
      f.timeout_s = std::atoi(timeout.c_str());
    } else if (a == "-o") {
      f.output = value(a);
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2 && a[2] != '-') {
      f.output = a.substr(2);
    } else if (a == "--all" || a == "-A") {
      f.all = true;
    } else if (a == "-h" || a == "--help" || a == "--version") {
      args.push_back(a);
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown flag '" + a + "'");
    } else {
      args.push_back(a);
    }
  }
  if (f.output != "table" && f.output != "wide" && f.output != "json") {
    return Usage("-o must be table, wide or json, not '" + f.output + "'");
  }
  if (f.timeout_s <= 0) return Usage("--timeout must be a positive number of seconds");
  if (args.empty()) return Usage("no command");
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "version" || args[0] == "--version") {
    std::printf("bridgectl %s (Slurm %s)\n", skb::bridge::kVersion, skb::bridge::kSlurmVersion);
    return 0;
  }
  std::string cmd;
  for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
  const bool is_drain = args[0] == "drain" || args[0] == "undrain";
  if (f.reason_given && args[0] != "drain") return Usage("--reason is for drain only");
  if (f.all && cmd != "get jobs" && cmd != "get job") return Usage("--all is for get jobs only");
  if (!f.node.empty() && cmd != "get preemptions" && cmd != "get preemption") {
    return Usage("--node is for get preemptions only");
  }
  if (is_drain) {
    if (args.size() != 2) return Usage(args[0] + " takes one node name");
    if (args[0] == "drain" && f.reason.empty()) {
      return Usage("drain needs --reason TEXT (shown in Kubernetes and as the Slurm drain reason)");
    }
    return Drain(f, args[1], args[0] == "drain");
  }
  if (cmd == "get preemptions" || cmd == "get preemption") return GetPreemptions(f);

  v1::Request req;
  if (args[0] == "get" && args.size() == 2 && (args[1] == "nodes" || args[1] == "node")) {
    req.mutable_list_nodes();
  } else if (args[0] == "get" && args.size() == 2 && (args[1] == "jobs" || args[1] == "job")) {
    req.mutable_list_jobs()->set_all(f.all);
  } else if (args[0] == "describe" && args.size() == 3 &&
             (args[1] == "node" || args[1] == "nodes")) {
    req.mutable_describe_node()->set_name(args[2]);
  } else if (args[0] == "get" && args.size() == 2 && (args[1] == "quotas" || args[1] == "quota")) {
    req.mutable_list_quotas();
  } else if (args[0] == "describe" && args.size() == 3 &&
             (args[1] == "tenant" || args[1] == "tenants")) {
    req.mutable_describe_tenant()->set_name(args[2]);
  } else {
    return Usage("unknown command '" + cmd + "'");
  }
  cli::DaemonConnection conn(f.socket, std::chrono::seconds(f.timeout_s));
  auto resp = conn.Call(req);
  if (!resp.ok()) return Fail(std::string(resp.status().message()));
  if (resp->has_error()) return Fail(resp->error().message());
  const bool json = f.output == "json";
  const bool wide = f.output == "wide";
  constexpr char kSkew[] = "the daemon answered something else (is it older than bridgectl?)";
  if (req.has_list_nodes()) {
    if (!resp->has_list_nodes()) return Fail(kSkew);
    if (json) {
      std::printf("%s\n", cli::NodesJson(resp->list_nodes()).dump(2).c_str());
    } else {
      std::fputs(cli::NodesTable(resp->list_nodes(), wide).c_str(), stdout);
    }
    return 0;
  }
  if (req.has_list_jobs()) {
    if (!resp->has_list_jobs()) return Fail(kSkew);
    // The daemon's Slurm view carries uids; names come from this host's user database.
    for (auto& j : *resp->mutable_list_jobs()->mutable_jobs()) {
      if (!j.user().empty()) continue;
      if (const passwd* pw = getpwuid(j.user_id())) j.set_user(pw->pw_name);
    }
    if (json) {
      std::printf("%s\n", cli::JobsJson(resp->list_jobs()).dump(2).c_str());
    } else {
      std::fputs(cli::JobsTable(resp->list_jobs(), wide).c_str(), stdout);
    }
    return 0;
  }
  if (req.has_list_quotas()) {
    if (!resp->has_list_quotas()) return Fail(kSkew);
    if (json) {
      std::printf("%s\n", cli::QuotasJson(resp->list_quotas()).dump(2).c_str());
    } else {
      std::fputs(cli::QuotasTable(resp->list_quotas(), wide).c_str(), stdout);
    }
    return 0;
  }
  if (req.has_describe_tenant()) {
    if (!resp->has_describe_tenant()) return Fail(kSkew);
    if (json) {
      std::printf("%s\n", cli::TenantJson(resp->describe_tenant()).dump(2).c_str());
    } else {
      std::fputs(cli::TenantText(resp->describe_tenant()).c_str(), stdout);
    }
    return 0;
  }
  if (!resp->has_describe_node()) return Fail(kSkew);
  if (json) {
    std::printf("%s\n", cli::DescribeJson(resp->describe_node()).dump(2).c_str());
  } else {
    std::fputs(cli::DescribeText(resp->describe_node()).c_str(), stdout);
  }
  return 0;
}
