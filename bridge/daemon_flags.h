// SPDX-License-Identifier: Apache-2.0
// Command-line flags of the slurm-k8s-bridge daemon, parsed without global state so that
// tests can feed argv directly.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"

namespace skb::bridge {

struct DaemonFlags {
  std::string config_path;    // --config FILE (JSON); empty = all defaults
  std::string log_level;      // --log-level, overrides the config file when set
  std::string log_format;     // --log-format, overrides the config file when set
  bool check_config = false;  // --check-config: validate the config, print a summary, exit
  std::string identity;       // --identity: name in the leader Lease; default $POD_NAME or host-pid
  bool leader_election = true;  // --no-leader-election: act alone (one replica, tests)
  bool version = false;         // --version
  bool help = false;            // --help

  // --print-config-schema: print the config file's JSON Schema (src/config/config.h) and exit.
  bool print_config_schema = false;

  // --decommission: take the bridge out of the cluster (bridge/decommission/) and exit, 0
  // when nothing of it is left; with --dry-run only say what it would do; --force goes on
  // although the leader Lease was renewed within its duration. Both only with
  // --decommission.
  bool decommission = false;
  bool dry_run = false;
  bool force = false;
};

// Parses argv (without argv[0]) with CLI11, as bridgectl's: `--flag value` and
// `--flag=value`. Unknown flags, missing values and a value given to a flag that takes none
// are InvalidArgument errors naming the flag.
StatusOr<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args);

// The --help text.
std::string DaemonUsage();

}  // namespace skb::bridge
