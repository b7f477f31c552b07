// SPDX-License-Identifier: Apache-2.0
#include "bridge/daemon_flags.h"

#include "src/base/strings.h"

namespace skb::bridge {

StatusOr<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args) {
  DaemonFlags f;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool has_inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline_value = true;
    }
    auto take_value = [&](std::string* out) -> Status {
      if (has_inline_value) {
        *out = value;
        return OkStatus();
      }
      if (i + 1 >= args.size()) {
        return InvalidArgumentError(StrCat("flag ", arg, " needs a value"));
      }
      *out = args[++i];
      return OkStatus();
    };
    auto no_value = [&]() -> Status {
      if (has_inline_value) {
        return InvalidArgumentError(StrCat("flag ", arg, " takes no value"));
      }
      return OkStatus();
    };
    if (arg == "--config" || arg == "-c") {
      RETURN_IF_ERROR(take_value(&f.config_path));
    } else if (arg == "--log-level") {
      RETURN_IF_ERROR(take_value(&f.log_level));
    } else if (arg == "--log-format") {
      RETURN_IF_ERROR(take_value(&f.log_format));
    } else if (arg == "--check-config") {
      RETURN_IF_ERROR(no_value());
      f.check_config = true;
    } else if (arg == "--print-config-schema") {
      RETURN_IF_ERROR(no_value());
      f.print_config_schema = true;
    } else if (arg == "--identity") {
      RETURN_IF_ERROR(take_value(&f.identity));
    } else if (arg == "--no-leader-election") {
      RETURN_IF_ERROR(no_value());
      f.leader_election = false;
    } else if (arg == "--version") {
      RETURN_IF_ERROR(no_value());
      f.version = true;
    } else if (arg == "--help" || arg == "-h") {
      f.help = true;
    } else {
      return InvalidArgumentError(StrCat("unknown flag '", arg, "' (see --help)"));
    }
  }
  return f;
}

std::string DaemonUsage() {
  return R"(usage: slurm-k8s-bridge [--config FILE] [--log-level LEVEL] [--log-format text|json]
                        [--identity NAME] [--no-leader-election] [--check-config]
                        [--print-config-schema] [--version]

Runs the bridge between Slurm and Kubernetes on one pool of GPU nodes.

  --config FILE       JSON configuration (see README.md, Configuration); default: built-in defaults
  --log-level LEVEL   trace, debug, info, warn or error (overrides logging.level)
  --log-format FMT    text or json (overrides logging.format)
  --identity NAME     this replica's name in the leader Lease (default: $POD_NAME, else
                      hostname-pid)
  --no-leader-election
                      act without electing a leader: only for a single replica
  --check-config      validate the configuration, print a summary (namespace, node
                      selector, Slurm poll interval, socket, HTTP address, quota tenants)
                      and exit
  --print-config-schema
                      print the JSON Schema of the configuration file (every key, its
                      type and range, read from the parser itself) and exit
  --version           print the version and exit
)";
}

}  // namespace skb::bridge
