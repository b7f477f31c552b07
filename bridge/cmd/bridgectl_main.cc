// bridgectl: the admin CLI. Asks the daemon over its Unix socket (protobuf) and prints
// tables or JSON. Thin: the connection and the formatting live in bridge/cli/.
#include <cstdio>
#include <string>
#include <vector>

#include "bridge/cli/daemon_connection.h"
#include "bridge/cli/format.h"
#include "bridge/version.h"

namespace {

namespace v1 = ::skb::api::v1;

constexpr char kUsage[] = R"(usage: bridgectl [--socket PATH] [--timeout SECONDS] COMMAND [-o table|wide|json]

Commands:
  get nodes           the merged inventory: GPUs, owner, Kubernetes health, Slurm state,
                      jobs and GPU pods of every managed node
  describe node NAME  why the node is in its state: conditions, taints, the rules that
                      fired, and what the bridge would do now
  version             print the bridgectl version and the Slurm release it was built for
  help                this text

The daemon's socket: --socket, else $SKB_BRIDGE_SOCKET, else
/run/slurm-k8s-bridge/bridge.sock (see `scripts/testbed env` on the testbed).
)";

int Fail(const std::string& msg) {
  std::fprintf(stderr, "bridgectl: %s\n", msg.c_str());
  return 1;
}

int Usage(const std::string& msg) {
  std::fprintf(stderr, "bridgectl: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  std::string socket = skb::bridge::cli::DefaultSocketPath();
  std::string output = "table";
  int timeout_s = 10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bridgectl: %s needs a value\n", flag.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--socket") {
      socket = value(a);
    } else if (a.rfind("--socket=", 0) == 0) {
      socket = a.substr(9);
    } else if (a == "-o" || a == "--output") {
      output = value(a);
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2) {
      output = a.substr(2);
    } else if (a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (a == "--timeout") {
      timeout_s = std::atoi(value(a).c_str());
    } else {
      args.push_back(a);
    }
  }
  if (output != "table" && output != "wide" && output != "json") {
    return Usage("-o must be table, wide or json, not '" + output + "'");
  }
  if (timeout_s <= 0) return Usage("--timeout must be a positive number of seconds");
  if (args.empty()) return Usage("no command");
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "version" || args[0] == "--version") {
    std::printf("bridgectl %s (Slurm %s)\n", skb::bridge::kVersion, skb::bridge::kSlurmVersion);
    return 0;
  }

  v1::Request req;
  if (args[0] == "get" && args.size() == 2 && (args[1] == "nodes" || args[1] == "node")) {
    req.mutable_list_nodes();
  } else if (args[0] == "describe" && args.size() == 3 &&
             (args[1] == "node" || args[1] == "nodes")) {
    req.mutable_describe_node()->set_name(args[2]);
  } else {
    std::string cmd;
    for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    return Usage("unknown command '" + cmd + "'");
  }
  skb::bridge::cli::DaemonConnection conn(socket, std::chrono::seconds(timeout_s));
  auto resp = conn.Call(req);
  if (!resp.ok()) return Fail(std::string(resp.status().message()));
  if (resp->has_error()) return Fail(resp->error().message());
  if (req.has_list_nodes()) {
    if (!resp->has_list_nodes()) return Fail("the daemon answered something else (version skew?)");
    if (output == "json") {
      std::printf("%s\n", skb::bridge::cli::NodesJson(resp->list_nodes()).dump(2).c_str());
    } else {
      std::fputs(skb::bridge::cli::NodesTable(resp->list_nodes(), output == "wide").c_str(),
                 stdout);
    }
    return 0;
  }
  if (!resp->has_describe_node()) return Fail("the daemon answered something else (version skew?)");
  if (output == "json") {
    std::printf("%s\n", skb::bridge::cli::DescribeJson(resp->describe_node()).dump(2).c_str());
  } else {
    std::fputs(skb::bridge::cli::DescribeText(resp->describe_node()).c_str(), stdout);
  }
  return 0;
}
