// SPDX-License-Identifier: Apache-2.0
#include "bridge/daemon_flags.h"

#include <CLI/CLI.hpp>

#include "src/base/strings.h"

namespace skb::bridge {

StatusOr<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args) {
  DaemonFlags f;
  bool no_leader_election = false;
  CLI::App app("slurm-k8s-bridge");
  app.set_help_flag();  // --help is a flag like the others: main prints DaemonUsage()
  app.allow_extras();   // an unknown flag is reported below, in our words
  // Flags take no "=value" (--version=1 is refused, not read as true).
  app.add_flag("-h,--help", f.help)->disable_flag_override();
  app.add_option("-c,--config", f.config_path);
  app.add_option("--log-level", f.log_level);
  app.add_option("--log-format", f.log_format);
  app.add_option("--identity", f.identity);
  app.add_flag("--check-config", f.check_config)->disable_flag_override();
  app.add_flag("--print-config-schema", f.print_config_schema)->disable_flag_override();
  app.add_flag("--no-leader-election", no_leader_election)->disable_flag_override();
  app.add_flag("--version", f.version)->disable_flag_override();
  app.add_flag("--decommission", f.decommission)->disable_flag_override();
  app.add_flag("--dry-run", f.dry_run)->disable_flag_override();
  app.add_flag("--force", f.force)->disable_flag_override();
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // CLI11 names a flag given a value without its dashes ("version was given a disallowed
    // flag override"): said the way it was typed.
    constexpr std::string_view kOverride = " was given a disallowed flag override";
    if (what.ends_with(kOverride)) {
      what = StrCat("flag --", what.substr(0, what.size() - kOverride.size()), " takes no value");
    }
    return InvalidArgumentError(StrCat(what, " (see --help)"));
  }
  if (const std::vector<std::string> extra = app.remaining(true); !extra.empty()) {
    const std::string& x = extra.front();
    return InvalidArgumentError(StrCat(
        x.starts_with('-') ? "unknown flag '" : "unexpected argument '", x, "' (see --help)"));
  }
  f.leader_election = !no_leader_election;
  if ((f.dry_run || f.force) && !f.decommission) {
    return InvalidArgumentError(
        StrCat(f.dry_run ? "--dry-run" : "--force", " is for --decommission only (see --help)"));
  }
  return f;
}

std::string DaemonUsage() {
  return R"(usage: slurm-k8s-bridge [--config FILE] [--log-level LEVEL] [--log-format text|json]
                        [--identity NAME] [--no-leader-election] [--check-config]
                        [--print-config-schema] [--version]
       slurm-k8s-bridge --config FILE --decommission [--dry-run] [--force]

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
  --decommission      take the bridge out of the cluster and exit (docs/install.md,
                      "Removing the bridge"): every node keeps the work that runs on it,
                      each scheduler is kept off GPUs the other's work uses (a cordon, a
                      Slurm drain of the site's), everything the bridge made is removed;
                      exit 0 when nothing of it is left, 1 when a step failed (run it
                      again), 2 when it could not start (a bridge still running)
  --dry-run           with --decommission: say what it would do, change nothing
  --force             with --decommission: go on although the leader Lease was renewed
                      within its duration (the bridge is known to be stopped)
)";
}

}  // namespace skb::bridge
