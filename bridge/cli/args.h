// SPDX-License-Identifier: Apache-2.0
// bridgectl's command line (CLI11): parsed into one typed Command before anything is
// contacted, so a bad line fails with a clear message and exit status 2 and changes nothing;
// each command has its own --help. The same command tree (CommandTree) gives the shell
// completion scripts (completion.h) and the list the man page (docs/bridgectl.1) is checked
// against.
//
//   StatusOr<Command> cmd = ParseCommandLine({"get", "nodes", "-o", "yaml"}, "/run/x.sock");
//   if (!cmd.ok()) return Usage(cmd.status().message());   // exit status 2
//   if (cmd->verb == Verb::kGetNodes) ...
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace skb::bridge::cli {

enum class Verb {
  kHelp,  // print Command::help to stdout, exit 0 (--help of any command, `help [COMMAND]`)
  kVersion,
  kCompletion,
  kGetNodes,  // every node, or the one named (`get node NAME`)
  kGetJobs,
  kGetQuotas,
  kGetPreemptions,
  kDescribeNode,
  kDescribeTenant,
  kDrain,
  kUndrain,
  kMaintenanceReboot,  // maintenance reboot|retry|cancel NODE (node_maintenance.h)
  kMaintenanceRetry,
  kMaintenanceCancel,
};

// -o: tables (wide: more columns), the daemon's answer as JSON or YAML, or kind/name per line.
enum class Output { kTable, kWide, kJson, kYaml, kName };

// Where get nodes / get node / describe node read (--from): the daemon over its socket, or
// what the bridge publishes in Kubernetes, read with the admin's kubeconfig
// (kube_inventory.h). An explicit --kubeconfig picks kubernetes for these commands; $KUBECONFIG
// alone does not (it is set for kubectl on many hosts, and a silent switch would change what
// the columns mean). get jobs|quotas and describe tenant are the daemon's only; get
// preemptions, drain, undrain and maintenance are Kubernetes' only.
enum class Source { kDaemon, kKubernetes };

struct Command {
  Verb verb = Verb::kHelp;
  std::string help;    // kHelp: the text to print
  std::string name;    // the NODE or TENANT named; kGetNodes: empty for every node
  std::string shell;   // kCompletion: "bash" or "zsh"
  std::string reason;  // kDrain, kMaintenanceReboot: --reason
  std::string gpu;     // kDrain, kUndrain: --gpu, one GPU of the node ("" = the whole node)
  std::string node;    // kGetPreemptions: --node, only that node's lends
  // kMaintenanceReboot, kMaintenanceCancel: --condition, the request's condition type (the
  // daemon's health.maintenance.reboot.condition); ParseCommandLine fills in its default,
  // RebootRequested.
  std::string condition;
  bool all = false;  // kGetJobs: --all, finished jobs too
  // Flags of every command.
  std::string socket;      // --socket, else the default given to ParseCommandLine
  std::string kubeconfig;  // --kubeconfig, else $KUBECONFIG, ~/.kube/config, in-cluster
  std::string context;     // --context
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // --timeout, per call
  Source source = Source::kDaemon;                              // --from
  Output output = Output::kTable;                               // -o
  bool headers = true;                                          // false: --no-headers
};

// Parses argv[1..] (without the program name). InvalidArgument, with a message naming the
// bad word and the command's --help, for an unknown command, flag or value, a missing
// argument, or a flag the command does not take (-o name on describe, --all on get nodes).
// A node given to drain/undrain/maintenance must be a Kubernetes node name (a DNS-1123
// subdomain), so `drain -- --help` is refused too.
StatusOr<Command> ParseCommandLine(const std::vector<std::string>& args,
                                   const std::string& default_socket);

// --timeout's value: a duration in the config file's grammar (config::ParseDuration:
// "500ms", "10s", "2m", "1h", "1m30s") or a bare number of seconds ("10", "2.5"), positive
// and at most a day. InvalidArgument otherwise ("5x", "0", "-1").
StatusOr<std::chrono::milliseconds> ParseTimeout(std::string_view text);

// One command of the tree, for completion scripts and the man page's check.
struct CommandSpec {
  std::string path;                      // "" (bridgectl itself), "get", "get nodes", ...
  std::vector<std::string> aliases;      // other names of the last word ("node" for nodes)
  std::string description;               // one line
  std::vector<std::string> subcommands;  // names of the next word, aliases included
  std::vector<std::string> flags;        // "-A", "--all", ... and bridgectl's own (--socket ...)
  std::vector<std::string> value_flags;  // those of `flags` that take a value
  std::string positional;                // "NODE", "TENANT", "SHELL", "COMMAND" or ""
};
std::vector<CommandSpec> CommandTree();

}  // namespace skb::bridge::cli
