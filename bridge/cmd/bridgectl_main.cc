// SPDX-License-Identifier: Apache-2.0
// bridgectl: the admin CLI. Asks the daemon over its Unix socket (protobuf) for what lives
// in its caches (nodes, jobs) and talks to Kubernetes directly, with the admin's own
// kubeconfig, where Kubernetes is the source (the Events of past preemptions, the drain
// and maintenance conditions) and, with --from kubernetes, for the nodes as the bridge
// publishes them there (from a workstation, no daemon asked). Thin: the command line
// (args.h), the connection, the formatting and the Kubernetes helpers live in bridge/cli/;
// this file dispatches.
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

#include "bridge/cli/args.h"
#include "bridge/cli/completion.h"
#include "bridge/cli/daemon_connection.h"
#include "bridge/cli/format.h"
#include "bridge/cli/kube_inventory.h"
#include "bridge/cli/node_drain.h"
#include "bridge/cli/node_maintenance.h"
#include "bridge/cli/preemption_history.h"
#include "bridge/cli/quota_format.h"
#include "bridge/cli/yaml.h"
#include "bridge/version.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/devices/k8s_devices.h"
#include "src/health/health_config.h"

namespace {

namespace v1 = ::skb::api::v1;
namespace cli = ::skb::bridge::cli;

int Fail(const std::string& msg) {
  std::fprintf(stderr, "bridgectl: %s\n", msg.c_str());
  return 1;
}

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

skb::StatusOr<std::unique_ptr<skb::k8s::KubeClient>> OpenKube(const cli::Command& f) {
  auto cfg = f.kubeconfig.empty() ? skb::k8s::DefaultRestConfig(f.context)
                                  : skb::k8s::LoadKubeconfig(f.kubeconfig, f.context);
  if (!cfg.ok()) {
    return skb::FailedPreconditionError(
        std::string("no Kubernetes credentials (") + std::string(cfg.status().message()) +
        "): this command talks to Kubernetes directly; give --kubeconfig or set $KUBECONFIG");
  }
  cfg->timeout = f.timeout;
  cfg->connect_timeout = std::min<std::chrono::milliseconds>(f.timeout, std::chrono::seconds(10));
  cfg->user_agent = std::string("bridgectl/") + skb::bridge::kVersion;
  return skb::k8s::NewRestClient(*cfg);
}

// An apiserver error with a hint on what to check.
int KubeFail(const skb::Status& s, const std::string& what) {
  std::string msg = what + ": " + std::string(s.message());
  if (s.code() == skb::StatusCode::kUnavailable || s.code() == skb::StatusCode::kDeadlineExceeded) {
    msg += " (is the Kubernetes apiserver reachable with this kubeconfig?)";
  } else if (s.code() == skb::StatusCode::kPermissionDenied) {
    msg +=
        " (RBAC: drain/undrain/maintenance need get+patch on nodes and nodes/status, get "
        "preemptions needs list on events, --from kubernetes needs list on nodes, pods and events, "
        "get on "
        "leases; "
        "docs/bridgectl.md)";
  } else if (s.code() == skb::StatusCode::kUnauthenticated) {
    // Not an RBAC matter: the credentials themselves (an expired token, a failed exec
    // plugin, whose own words are in the message).
    msg += " (the kubeconfig's credentials were not accepted)";
  }
  return Fail(msg);
}

// A `get` answer in the form -o asks for (-o name only reaches here for answers with names).
int PrintGet(const cli::Command& c, const cli::Listing& listing, const nlohmann::json& json) {
  switch (c.output) {
    case cli::Output::kJson:
      std::printf("%s\n", json.dump(2).c_str());
      return 0;
    case cli::Output::kYaml:
      std::fputs(cli::ToYaml(json).c_str(), stdout);
      return 0;
    case cli::Output::kName:
      std::fputs(cli::Names(listing).c_str(), stdout);
      return 0;
    case cli::Output::kTable:
    case cli::Output::kWide:
      break;
  }
  std::fputs(cli::Render(listing, c.headers).c_str(), stdout);
  if (!c.headers && !listing.notes.empty()) {
    std::string notes = listing.notes;
    notes.erase(0, notes.find_first_not_of('\n'));
    std::fprintf(stderr, "%s", notes.c_str());
  }
  return 0;
}

// describe: text, or the answer as JSON or YAML.
int PrintDescribe(const cli::Command& c, const std::string& text, const nlohmann::json& json) {
  if (c.output == cli::Output::kJson) {
    std::printf("%s\n", json.dump(2).c_str());
  } else if (c.output == cli::Output::kYaml) {
    std::fputs(cli::ToYaml(json).c_str(), stdout);
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return 0;
}

int GetPreemptions(const cli::Command& c) {
  auto kube = OpenKube(c);
  if (!kube.ok()) return Fail(std::string(kube.status().message()));
  auto events = cli::ListLendEvents(**kube, c.node);
  if (!events.ok()) return KubeFail(events.status(), "listing the bridge's Events");
  auto history = cli::PreemptionsFromEvents(*events);
  return PrintGet(c, cli::PreemptionsListing(history, c.output == cli::Output::kWide),
                  cli::PreemptionsJson(history));
}

int Drain(const cli::Command& f, bool drain) {
  const std::string& node = f.name;
  auto kube = OpenKube(f);
  if (!kube.ok()) return Fail(std::string(kube.status().message()));
  const std::string cond = std::string(skb::health::kDrainRequestedCondition);
  if (!f.gpu.empty()) {
    const std::string gpu = cli::GpuDeviceName(f.gpu);
    const std::string rule = skb::devices::DrainRuleName(node, gpu);
    if (drain) {
      auto changed = cli::RequestGpuDrain(**kube, node, f.gpu, f.reason, Who());
      if (!changed.ok()) return KubeFail(changed.status(), "drain " + node + " --gpu " + f.gpu);
      std::printf(
          "%s: %s %s (DeviceTaintRule %s): Kubernetes gives it to no new pod, and the bridge "
          "holds it from Slurm once the job on it ends; the node's other GPUs keep serving "
          "both (`bridgectl describe node %s`)\n",
          node.c_str(), *changed ? "drained" : "already drained", gpu.c_str(), rule.c_str(),
          node.c_str());
      return 0;
    }
    auto cleared = cli::ClearGpuDrain(**kube, node, f.gpu);
    if (!cleared.ok()) return KubeFail(cleared.status(), "undrain " + node + " --gpu " + f.gpu);
    if (*cleared) {
      std::printf("%s: %s undrained (DeviceTaintRule %s deleted): back to both schedulers\n",
                  node.c_str(), gpu.c_str(), rule.c_str());
    } else {
      std::printf("%s: no drain of %s by bridgectl to clear\n", node.c_str(), gpu.c_str());
    }
    return 0;
  }
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

// maintenance reboot|retry|cancel NODE: the request condition, or the cycle's record.
int Maintenance(const cli::Command& c) {
  auto kube = OpenKube(c);
  if (!kube.ok()) return Fail(std::string(kube.status().message()));
  auto r = cli::RunMaintenance(**kube, c, Who(), skb::k8s::SystemClock::Get()->Now());
  if (!r.ok()) return KubeFail(r.status(), cli::MaintenanceCommandLine(c));
  std::fputs(cli::MaintenanceOutcome(c, *r).c_str(), stdout);
  return 0;
}

// get nodes / get node NAME / describe node NAME from what the bridge publishes in
// Kubernetes (kube_inventory.h), printed by the same code as the daemon's answers.
int FromKubernetes(const cli::Command& c) {
  auto kube = OpenKube(c);
  if (!kube.ok()) return Fail(std::string(kube.status().message()));
  const bool describe = c.verb == cli::Verb::kDescribeNode;
  const skb::Clock::TimePoint now = skb::k8s::SystemClock::Get()->Now();
  auto view = cli::ReadKubeView(**kube, now, describe ? c.name : "");
  if (!view.ok()) return KubeFail(view.status(), "reading what the bridge publishes");
  if (describe) {
    auto d = cli::DescribeFromKubernetes(*view, c.name);
    if (!d.ok()) return Fail(std::string(d.status().message()));
    if (d->node().k8s_name() != c.name) {
      // Named by its Slurm name: the Events are on the Kubernetes node.
      auto again = cli::ReadKubeView(**kube, now, d->node().k8s_name());
      if (!again.ok()) return KubeFail(again.status(), "reading what the bridge publishes");
      d = cli::DescribeFromKubernetes(*again, c.name);
      if (!d.ok()) return Fail(std::string(d.status().message()));
    }
    return PrintDescribe(c, cli::DescribeText(*d), cli::DescribeJson(*d));
  }
  v1::ListNodesResponse nodes = cli::NodesFromKubernetes(*view);
  if (!c.name.empty() && !cli::KeepOnlyNode(&nodes, c.name)) {
    return Fail("no node '" + c.name +
                "' the bridge published anything on in Kubernetes (`bridgectl --from kubernetes "
                "get nodes` lists them)");
  }
  return PrintGet(c, cli::NodesListing(nodes, c.output == cli::Output::kWide),
                  cli::NodesJson(nodes));
}

// Asks the daemon and prints its answer.
int FromDaemon(const cli::Command& c) {
  v1::Request req;
  switch (c.verb) {
    case cli::Verb::kGetNodes:
      req.mutable_list_nodes();
      break;
    case cli::Verb::kGetJobs:
      req.mutable_list_jobs()->set_all(c.all);
      break;
    case cli::Verb::kGetQuotas:
      req.mutable_list_quotas();
      break;
    case cli::Verb::kDescribeNode:
      req.mutable_describe_node()->set_name(c.name);
      break;
    case cli::Verb::kDescribeTenant:
      req.mutable_describe_tenant()->set_name(c.name);
      break;
    default:
      std::abort();  // not a daemon command: main dispatched it here by mistake
  }
  cli::DaemonConnection conn(c.socket, c.timeout);
  auto resp = conn.Call(req);
  if (!resp.ok()) return Fail(std::string(resp.status().message()));
  if (resp->has_error()) return Fail(resp->error().message());
  const bool wide = c.output == cli::Output::kWide;
  constexpr char kSkew[] = "the daemon answered something else (is it older than bridgectl?)";
  if (req.has_list_nodes()) {
    if (!resp->has_list_nodes()) return Fail(kSkew);
    v1::ListNodesResponse* nodes = resp->mutable_list_nodes();
    if (!c.name.empty() && !cli::KeepOnlyNode(nodes, c.name)) {
      return Fail("no node '" + c.name + "' (`bridgectl get nodes` lists them)");
    }
    return PrintGet(c, cli::NodesListing(*nodes, wide), cli::NodesJson(*nodes));
  }
  if (req.has_list_jobs()) {
    if (!resp->has_list_jobs()) return Fail(kSkew);
    // The daemon's Slurm view carries uids; names come from this host's user database.
    for (auto& j : *resp->mutable_list_jobs()->mutable_jobs()) {
      if (!j.user().empty()) continue;
      if (const passwd* pw = getpwuid(j.user_id())) j.set_user(pw->pw_name);
    }
    return PrintGet(c, cli::JobsListing(resp->list_jobs(), wide), cli::JobsJson(resp->list_jobs()));
  }
  if (req.has_list_quotas()) {
    if (!resp->has_list_quotas()) return Fail(kSkew);
    return PrintGet(c, cli::QuotasListing(resp->list_quotas(), wide),
                    cli::QuotasJson(resp->list_quotas()));
  }
  if (req.has_describe_tenant()) {
    if (!resp->has_describe_tenant()) return Fail(kSkew);
    return PrintDescribe(c, cli::TenantText(resp->describe_tenant()),
                         cli::TenantJson(resp->describe_tenant()));
  }
  if (!resp->has_describe_node()) return Fail(kSkew);
  return PrintDescribe(c, cli::DescribeText(resp->describe_node()),
                       cli::DescribeJson(resp->describe_node()));
}

}  // namespace

int main(int argc, char** argv) {
  // stdout is for answers (tables, JSON for scripts): the Kubernetes client's log lines go
  // to stderr, warnings and errors only.
  auto k8s_log = spdlog::stderr_logger_mt("k8s");
  k8s_log->set_level(spdlog::level::warn);
  auto parsed = cli::ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc),
                                      cli::DefaultSocketPath());
  if (!parsed.ok()) {
    std::fprintf(stderr, "bridgectl: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  const cli::Command& c = *parsed;
  switch (c.verb) {
    case cli::Verb::kHelp:
      std::fputs(c.help.c_str(), stdout);
      return 0;
    case cli::Verb::kVersion:
      std::printf("bridgectl %s (Slurm %s)\n", skb::bridge::kVersion, skb::bridge::kSlurmVersion);
      return 0;
    case cli::Verb::kCompletion:
      std::fputs(cli::CompletionScript(c.shell).c_str(), stdout);
      return 0;
    case cli::Verb::kGetPreemptions:
      return GetPreemptions(c);
    case cli::Verb::kDrain:
    case cli::Verb::kUndrain:
      return Drain(c, c.verb == cli::Verb::kDrain);
    case cli::Verb::kMaintenanceReboot:
    case cli::Verb::kMaintenanceRetry:
    case cli::Verb::kMaintenanceCancel:
      return Maintenance(c);
    case cli::Verb::kGetNodes:
    case cli::Verb::kDescribeNode:
      return c.source == cli::Source::kKubernetes ? FromKubernetes(c) : FromDaemon(c);
    default:
      return FromDaemon(c);
  }
}
