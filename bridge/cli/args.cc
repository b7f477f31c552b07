// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <regex>

#include "bridge/cli/node_drain.h"
#include "bridge/cli/node_maintenance.h"
#include "src/base/strings.h"
#include "src/config/json_reader.h"

namespace skb::bridge::cli {
namespace {

constexpr char kFooter[] =
    R"(From the daemon (its Unix socket): get nodes|jobs|quotas, describe node|tenant.
From Kubernetes (--kubeconfig, else $KUBECONFIG, ~/.kube/config, in-cluster): get
preemptions, drain, undrain, maintenance; and get nodes, describe node with --from kubernetes
or an explicit --kubeconfig (what the bridge publishes there: no shell on the slurmctld host).
Run 'bridgectl COMMAND --help' for a command's arguments and flags; `man bridgectl`.

Exit status: 0 done, 1 failed (daemon or apiserver unreachable, unknown node, refused),
2 bad command line.)";

constexpr char kGlobalFooter[] =
    "Flags of every command: --socket PATH, --kubeconfig PATH, --context NAME, --from "
    "daemon|kubernetes,\n--timeout DURATION, -o table|wide|json|yaml|name, --no-headers (see "
    "'bridgectl --help').";

// What each maintenance command's --help says beyond its line (src/health/maintenance.h).
constexpr char kMaintenanceFooter[] =
    R"txt(The cycle: an admin sets RebootRequested=True on the Kubernetes node
(maintenance reboot); the bridge drains Slurm and Kubernetes (jobs get
health.maintenance.deadline, then are requeued; GPU pods are evicted), has Slurm reboot the
node, runs the check job and gives the node back, then sets RebootRequested=False (reason
MaintenanceCompleted). Its phase is the node condition SlurmMaintenance: Draining,
Rebooting, Checking (True); DrainTimedOut, RebootTimedOut, CheckFailed (True: the node
stays out); Completed, Cancelled (False). `bridgectl describe node NODE` shows it, since
when and why.)txt";

constexpr char kRebootFooter[] =
    R"txt(Sets RebootRequested=True (or --condition TYPE, as the daemon's
health.maintenance.reboot.condition), reason BridgectlMaintenance, message "TEXT (bridgectl
maintenance by user@host)". Refused when that condition is True from someone else (left
alone), or when SlurmMaintenance says a cycle is under way (its phase) or failed (retry or
cancel it). Again with the same words: nothing changes. RBAC: get nodes, patch nodes/status.)txt";

constexpr char kRetryFooter[] =
    R"txt(Only after a failed phase (SlurmMaintenance DrainTimedOut, RebootTimedOut or
CheckFailed): sets SlurmMaintenance to Draining, since now, message "retry by user@host
after PHASE: ..."; the bridge starts the cycle again from there while the request stands.
The write tests the phase it replaces: a write of the bridge's in between is never
overwritten. Refused when no cycle failed (none, or one still running: its phase is named).)txt";

constexpr char kCancelFooter[] =
    R"txt(Sets RebootRequested (or --condition TYPE) to False, reason
BridgectlMaintenanceCancelled, only if bridgectl set it (someone else's request is left
alone). A cycle still Draining stops and the node is given back; past Draining it runs to
its end (the reboot is already asked for); after a failed phase the node is given back as
it is.)txt";

// The tree and where each parsed value lands. CLI11 writes into `cmd` and the strings
// beside it while parsing; Finish() checks what CLI11 cannot (which flag fits which verb).
struct Parser {
  Command cmd;
  std::string output_text = "table";
  std::string timeout_text = "10";
  std::string from_text;  // --from; "" when not given
  CLI::Option* socket_flag = nullptr;
  CLI::Option* kubeconfig_flag = nullptr;
  std::vector<std::string> help_path;
  bool version_flag = false;
  bool no_headers = false;
  CLI::App app{"bridgectl: the slurm-k8s-bridge admin CLI", "bridgectl"};
  std::vector<std::pair<CLI::App*, Verb>> leaves;
  CLI::App* get = nullptr;
  CLI::App* describe = nullptr;
  CLI::App* maintenance = nullptr;
  CLI::App* help = nullptr;

  explicit Parser(const std::string& default_socket) {
    cmd.socket = default_socket;
    cmd.condition = std::string(kDefaultRebootCondition);
    app.footer(kFooter);
    app.fallthrough();  // flags of bridgectl itself are taken after any command word
    app.require_subcommand(0, 1);
    app.allow_extras();  // reported by Finish(), with the command they came to
    socket_flag = app.add_option("--socket", cmd.socket,
                                 "the daemon's socket (else $SKB_BRIDGE_SOCKET, else "
                                 "/run/slurm-k8s-bridge/bridge.sock)")
                      ->type_name("PATH");
    kubeconfig_flag =
        app.add_option("--kubeconfig", cmd.kubeconfig,
                       "Kubernetes credentials for get preemptions, drain, undrain, "
                       "maintenance and --from kubernetes (else $KUBECONFIG, ~/.kube/config, "
                       "in-cluster); given, get nodes and describe node read "
                       "Kubernetes")
            ->type_name("PATH");
    app.add_option("--context", cmd.context, "the kubeconfig context to use")->type_name("NAME");
    app.add_option("--from", from_text,
                   "get nodes, describe node: daemon (its socket; the default) or kubernetes "
                   "(what the bridge publishes there, with the kubeconfig)")
        ->type_name("SOURCE");
    app.add_option("--timeout", timeout_text,
                   "per call: seconds (10, 2.5) or a duration (500ms, 10s, 2m); default 10")
        ->type_name("DURATION");
    app.add_option("-o,--output", output_text,
                   "table (default), wide (more columns), json, yaml, or name (kind/NAME per "
                   "line: get nodes|jobs|quotas)")
        ->type_name("FORMAT");
    app.add_flag("--no-headers", no_headers, "get: print the table's rows without the header");
    app.add_flag("--version", version_flag, "print the version and exit");

    get = Sub(&app, "get", "list nodes, jobs, quotas or preemptions");
    get->require_subcommand(0, 1);
    CLI::App* nodes =
        Leaf(get, "nodes", "node", Verb::kGetNodes,
             "the inventory: GPUs, owner, health, Slurm state, jobs and pods of each node");
    nodes->add_option("NODE", cmd.name, "only this node (its Slurm or Kubernetes name)")
        ->type_name("");
    CLI::App* jobs = Leaf(get, "jobs", "job", Verb::kGetJobs,
                          "Slurm jobs: owner of their nodes, preemptible or not and why, how "
                          "often preempted");
    jobs->add_flag("-A,--all", cmd.all, "finished jobs too");
    Leaf(get, "quotas", "quota", Verb::kGetQuotas,
         "guaranteed GPU quotas per tenant: floor, limit, in use, borrowed, pending");
    CLI::App* preemptions =
        Leaf(get, "preemptions", "preemption", Verb::kGetPreemptions,
             "past lends to Kubernetes (from the bridge's Events in Kubernetes)");
    preemptions->add_option("--node", cmd.node, "only this node's lends")->type_name("NODE");

    describe = Sub(&app, "describe", "explain a node or a tenant");
    describe->require_subcommand(0, 1);
    CLI::App* node = Leaf(describe, "node", "nodes", Verb::kDescribeNode,
                          "why the node is in its state and what the bridge would do now");
    node->add_option("NODE", cmd.name, "the node (its Slurm or Kubernetes name)")
        ->type_name("")
        ->required();
    CLI::App* tenant = Leaf(describe, "tenant", "tenants", Verb::kDescribeTenant,
                            "each job and pod of a tenant: guaranteed or borrowed, and why");
    tenant->add_option("TENANT", cmd.name, "the tenant (quotas.tenants)")
        ->type_name("")
        ->required();

    CLI::App* drain =
        Leaf(&app, "drain", "", Verb::kDrain,
             "ask the bridge to drain the Slurm node (DrainRequested=True in Kubernetes)");
    drain->add_option("NODE", cmd.name, "the Kubernetes node")->type_name("")->required();
    drain
        ->add_option("--reason", cmd.reason,
                     "required: why (shown in Kubernetes and as the Slurm drain reason)")
        ->type_name("TEXT");
    drain
        ->add_option("--gpu", cmd.gpu,
                     "only this GPU (a DRA node: gpu-5, or 5), out of Slurm and Kubernetes "
                     "alike; the node's other GPUs keep serving both")
        ->type_name("GPU");
    CLI::App* undrain = Leaf(&app, "undrain", "", Verb::kUndrain,
                             "take back a drain bridgectl asked for (the bridge resumes the node)");
    undrain->add_option("NODE", cmd.name, "the Kubernetes node")->type_name("")->required();
    undrain->add_option("--gpu", cmd.gpu, "the GPU drained alone (drain --gpu)")->type_name("GPU");

    maintenance = Sub(&app, "maintenance",
                      "reboot a node through both schedulers: drained, rebooted, checked, given "
                      "back");
    maintenance->require_subcommand(0, 1);
    maintenance->footer(StrCat(kMaintenanceFooter, "\n\n", kGlobalFooter));
    const std::string condition_help = StrCat(
        "the request's condition type, as the daemon's health.maintenance.reboot.condition "
        "(default ",
        kDefaultRebootCondition, ")");
    CLI::App* reboot =
        Leaf(maintenance, "reboot", "", Verb::kMaintenanceReboot,
             "ask the bridge for a maintenance cycle (RebootRequested=True in Kubernetes)");
    reboot->footer(StrCat(kRebootFooter, "\n\n", kGlobalFooter));
    reboot->add_option("NODE", cmd.name, "the Kubernetes node")->type_name("")->required();
    reboot
        ->add_option("--reason", cmd.reason,
                     "required: why (shown in Kubernetes and in the Slurm drain reason)")
        ->type_name("TEXT");
    reboot->add_option("--condition", cmd.condition, condition_help)->type_name("TYPE");
    CLI::App* retry = Leaf(maintenance, "retry", "", Verb::kMaintenanceRetry,
                           "start a failed cycle again from Draining");
    retry->footer(StrCat(kRetryFooter, "\n\n", kGlobalFooter));
    retry->add_option("NODE", cmd.name, "the Kubernetes node")->type_name("")->required();
    CLI::App* cancel = Leaf(maintenance, "cancel", "", Verb::kMaintenanceCancel,
                            "withdraw a cycle bridgectl asked for (RebootRequested=False)");
    cancel->footer(StrCat(kCancelFooter, "\n\n", kGlobalFooter));
    cancel->add_option("NODE", cmd.name, "the Kubernetes node")->type_name("")->required();
    cancel->add_option("--condition", cmd.condition, condition_help)->type_name("TYPE");

    Leaf(&app, "version", "", Verb::kVersion,
         "bridgectl's version and the Slurm release it was built for");
    CLI::App* completion = Leaf(&app, "completion", "", Verb::kCompletion,
                                "print a completion script: source <(bridgectl completion bash)");
    completion->add_option("SHELL", cmd.shell, "bash or zsh")
        ->type_name("")
        ->check(CLI::IsMember({"bash", "zsh"}))
        ->required();
    help = Leaf(&app, "help", "", Verb::kHelp, "this text, or a command's: help get nodes");
    help->add_option("COMMAND", help_path, "a command")->type_name("");
  }

  CLI::App* Sub(CLI::App* parent, const std::string& name, const std::string& description) {
    CLI::App* sub = parent->add_subcommand(name, description);
    sub->footer(kGlobalFooter);
    return sub;
  }

  CLI::App* Leaf(CLI::App* parent, const std::string& name, const std::string& alias, Verb verb,
                 const std::string& description) {
    CLI::App* sub = Sub(parent, name, description);
    if (!alias.empty()) sub->alias(alias);
    leaves.emplace_back(sub, verb);
    return sub;
  }

  // The parsed chain of commands: {app, get, nodes}.
  std::vector<CLI::App*> Chain() {
    std::vector<CLI::App*> chain = {&app};
    while (!chain.back()->get_subcommands().empty()) {
      chain.push_back(chain.back()->get_subcommands().front());
    }
    return chain;
  }

  static std::string PathOf(const std::vector<CLI::App*>& chain) {
    std::string path = "bridgectl";
    for (size_t i = 1; i < chain.size(); ++i) StrAppend(&path, " ", chain[i]->get_name());
    return path;
  }

  // The help of the command at the end of `chain`, its usage line naming the whole path.
  // (App::help() would show the help of the subcommand parsed last instead.)
  static std::string HelpOf(const std::vector<CLI::App*>& chain) {
    return chain.back()->get_formatter()->make_help(chain.back(), PathOf(chain),
                                                    CLI::AppFormatMode::Normal);
  }

  static Status UsageError(const std::vector<CLI::App*>& chain, const std::string& msg) {
    return InvalidArgumentError(StrCat(msg, "\nRun '", PathOf(chain), " --help' for usage."));
  }

  StatusOr<Command> Parse(const std::vector<std::string>& args) {
    // CLI11 does not end a subcommand's flags at "--"; nothing needs it either: no node or
    // tenant name starts with '-'. `drain --help` is help, and no drain.
    if (std::find(args.begin(), args.end(), "--") != args.end()) {
      return UsageError({&app}, "'--' is not taken: no node or tenant name starts with '-'");
    }
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      cmd.verb = Verb::kHelp;
      cmd.help = HelpOf(Chain());
      return cmd;
    } catch (const CLI::ParseError& e) {
      // An unknown word first: it may be why something required is missing.
      if (Status s = Extras(Chain()); !s.ok()) return s;
      // "NODE is required" and the like are CLI11's words; keep them, with the command
      // they belong to.
      return UsageError(Chain(), e.what());
    }
    return Finish();
  }

  // What CLI11 left over (allow_extras), as an unknown flag or command.
  Status Extras(const std::vector<CLI::App*>& chain) {
    const std::vector<std::string> extra = app.remaining(true);
    if (!extra.empty()) {
      const std::string& x = extra.front();
      if (x.size() > 1 && x[0] == '-') {
        return UsageError(chain, StrCat("unknown flag '", x, "' for '", PathOf(chain), "'"));
      }
      if (chain.back() == &app || chain.back() == get || chain.back() == describe ||
          chain.back() == maintenance) {
        return UsageError(chain, StrCat("unknown command '", x, "' for '", PathOf(chain),
                                        "' (one of: ", Choices(chain.back()), ")"));
      }
      return UsageError(chain, StrCat("unexpected argument '", x, "' for '", PathOf(chain), "'"));
    }
    return OkStatus();
  }

  StatusOr<Command> Finish() {
    const std::vector<CLI::App*> chain = Chain();
    if (Status s = Extras(chain); !s.ok()) return s;
    if (version_flag) {
      if (chain.size() > 1) return UsageError(chain, "--version takes no command");
      cmd.verb = Verb::kVersion;
      return cmd;
    }
    if (chain.size() == 1) return UsageError(chain, "no command");
    if (chain.back() == get || chain.back() == describe || chain.back() == maintenance) {
      return UsageError(chain,
                        StrCat(chain.back()->get_name(), " needs one of: ", Choices(chain.back())));
    }
    for (const auto& [sub, verb] : leaves) {
      if (sub == chain.back()) cmd.verb = verb;
    }
    if (cmd.verb == Verb::kHelp) return HelpFor();
    auto timeout = ParseTimeout(timeout_text);
    if (!timeout.ok()) return UsageError(chain, std::string(timeout.status().message()));
    cmd.timeout = *timeout;
    static const std::map<std::string, Output> kByName = {{"table", Output::kTable},
                                                          {"wide", Output::kWide},
                                                          {"json", Output::kJson},
                                                          {"yaml", Output::kYaml},
                                                          {"name", Output::kName}};
    auto o = kByName.find(output_text);
    if (o == kByName.end()) {
      return UsageError(
          chain, StrCat("-o must be table, wide, json, yaml or name, not '", output_text, "'"));
    }
    cmd.output = o->second;
    cmd.headers = !no_headers;
    if (Status s = PickSource(chain); !s.ok()) return s;
    return Fits(chain);
  }

  // --from, else an explicit --kubeconfig for the commands both can answer.
  Status PickSource(const std::vector<CLI::App*>& chain) {
    const Verb v = cmd.verb;
    const bool both = v == Verb::kGetNodes || v == Verb::kDescribeNode;
    const bool kube_only =
        v == Verb::kGetPreemptions || v == Verb::kDrain || v == Verb::kUndrain || IsMaintenance(v);
    const bool daemon_only =
        v == Verb::kGetJobs || v == Verb::kGetQuotas || v == Verb::kDescribeTenant;
    if (from_text.empty()) {
      if (both && kubeconfig_flag->count() > 0) {
        if (socket_flag->count() > 0) {
          return UsageError(chain,
                            "--socket and --kubeconfig both given: say which to read with "
                            "--from daemon or --from kubernetes");
        }
        cmd.source = Source::kKubernetes;
      }
      if (kube_only) cmd.source = Source::kKubernetes;
      return OkStatus();
    }
    if (from_text != "daemon" && from_text != "kubernetes") {
      return UsageError(chain,
                        StrCat("--from must be daemon or kubernetes, not '", from_text, "'"));
    }
    cmd.source = from_text == "kubernetes" ? Source::kKubernetes : Source::kDaemon;
    if (cmd.source == Source::kKubernetes && daemon_only) {
      return UsageError(chain, StrCat(PathOf(chain),
                                      " is answered by the daemon only (Kubernetes does not hold "
                                      "it): --from kubernetes is for get nodes and describe node"));
    }
    if (cmd.source == Source::kDaemon && kube_only) {
      return UsageError(chain, StrCat(PathOf(chain),
                                      " reads Kubernetes only: --from daemon is for get nodes and "
                                      "describe node"));
    }
    return OkStatus();
  }

  // Which flag fits which verb, checked here so the message says what fits instead.
  StatusOr<Command> Fits(const std::vector<CLI::App*>& chain) {
    const Verb v = cmd.verb;
    const bool get_verb = v == Verb::kGetNodes || v == Verb::kGetJobs || v == Verb::kGetQuotas ||
                          v == Verb::kGetPreemptions;
    const bool describe_verb = v == Verb::kDescribeNode || v == Verb::kDescribeTenant;
    if (!cmd.headers && !get_verb) {
      return UsageError(chain, "--no-headers is for get (its tables)");
    }
    if (!cmd.headers && (cmd.output != Output::kTable && cmd.output != Output::kWide)) {
      return UsageError(chain, "--no-headers is for tables (-o table or wide)");
    }
    if (cmd.output == Output::kYaml && !get_verb && !describe_verb) {
      return UsageError(chain, "-o yaml is for get and describe");
    }
    if (cmd.output == Output::kName && (!get_verb || v == Verb::kGetPreemptions)) {
      return UsageError(chain, "-o name is for get nodes, get jobs and get quotas");
    }
    if (v == Verb::kDrain && cmd.reason.empty()) {
      return UsageError(chain,
                        "drain needs --reason TEXT (shown in Kubernetes and as the Slurm "
                        "drain reason)");
    }
    if ((v == Verb::kDrain || v == Verb::kUndrain) && !cmd.gpu.empty() &&
        GpuDeviceName(cmd.gpu).empty()) {
      return UsageError(
          chain, StrCat("--gpu '", cmd.gpu, "': give the device's name (gpu-5) or its number (5)"));
    }
    if (v == Verb::kMaintenanceReboot && cmd.reason.empty()) {
      return UsageError(chain,
                        "maintenance reboot needs --reason TEXT (shown in Kubernetes and in the "
                        "Slurm drain reason)");
    }
    if (v == Verb::kMaintenanceReboot || v == Verb::kMaintenanceCancel) {
      if (const std::string problem = RequestConditionProblem(cmd.condition); !problem.empty()) {
        return UsageError(chain, StrCat("--condition '", cmd.condition, "' ", problem));
      }
    }
    if ((v == Verb::kDrain || v == Verb::kUndrain || IsMaintenance(v)) &&
        !IsKubernetesNodeName(cmd.name)) {
      return UsageError(chain, StrCat("'", cmd.name,
                                      "' is not a Kubernetes node name (lower-case letters, "
                                      "digits, '-' and '.', starting and ending with a letter "
                                      "or digit)"));
    }
    return cmd;
  }

  // `help [COMMAND...]`: the help of that command.
  StatusOr<Command> HelpFor() {
    std::vector<CLI::App*> target = {&app};
    for (const std::string& word : help_path) {
      CLI::App* next = nullptr;
      for (CLI::App* sub : target.back()->get_subcommands({})) {
        if (sub->check_name(word)) next = sub;
      }
      if (next == nullptr) {
        return UsageError(target, StrCat("unknown command '", StrJoin(help_path, " "),
                                         "' (one of: ", Choices(target.back()), ")"));
      }
      target.push_back(next);
    }
    cmd.help = HelpOf(target);
    return cmd;
  }

  static bool IsMaintenance(Verb v) {
    return v == Verb::kMaintenanceReboot || v == Verb::kMaintenanceRetry ||
           v == Verb::kMaintenanceCancel;
  }

  static std::string Choices(const CLI::App* parent) {
    std::vector<std::string> names;
    for (const CLI::App* sub : parent->get_subcommands({})) names.push_back(sub->get_name());
    return StrJoin(names, ", ");
  }

  static bool IsKubernetesNodeName(const std::string& name) {
    static const std::regex kSubdomain(
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    return name.size() <= 253 && std::regex_match(name, kSubdomain);
  }
};

template <typename T>
std::vector<T> Concat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A command's flags are its own and those of bridgectl itself (but --version), which CLI11
// passes up from any command (fallthrough).
void Collect(const CLI::App* app, const std::string& path,
             const std::vector<std::pair<std::string, bool>>& inherited,
             std::vector<CommandSpec>* out) {
  CommandSpec spec;
  spec.path = path;
  spec.aliases = app->get_aliases();
  spec.description = app->get_description();
  std::vector<std::pair<std::string, bool>> flags;  // name, takes a value
  for (const CLI::Option* opt : app->get_options({})) {
    if (opt->get_positional()) {
      spec.positional = opt->get_name();
      continue;
    }
    for (const std::string& n : opt->get_snames())
      flags.emplace_back("-" + n, opt->get_expected_max() > 0);
    for (const std::string& n : opt->get_lnames())
      flags.emplace_back("--" + n, opt->get_expected_max() > 0);
  }
  std::vector<std::pair<std::string, bool>> passed_down = inherited;
  if (path.empty()) {
    for (const auto& f : flags) {
      if (f.first != "--version" && f.first != "-h" && f.first != "--help")
        passed_down.push_back(f);
    }
  }
  for (const auto& [name, value] : path.empty() ? flags : Concat(flags, inherited)) {
    spec.flags.push_back(name);
    if (value) spec.value_flags.push_back(name);
  }
  for (const CLI::App* sub : app->get_subcommands({})) {
    spec.subcommands.push_back(sub->get_name());
    for (const std::string& a : sub->get_aliases()) spec.subcommands.push_back(a);
  }
  out->push_back(spec);
  for (const CLI::App* sub : app->get_subcommands({})) {
    Collect(sub, path.empty() ? sub->get_name() : StrCat(path, " ", sub->get_name()), passed_down,
            out);
  }
}

}  // namespace

StatusOr<std::chrono::milliseconds> ParseTimeout(std::string_view text) {
  const auto bad = [&] {
    return InvalidArgumentError(
        StrCat("--timeout: '", text,
               "' is not a positive duration (seconds, as 10 or 2.5, or with a unit: 500ms, "
               "10s, 2m, 1h)"));
  };
  // The config file's grammar (config::ParseDuration), and a bare number is seconds.
  const bool bare = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.';
  });
  StatusOr<std::chrono::milliseconds> d =
      config::ParseDuration(bare ? StrCat(text, "s") : std::string(text));
  if (!d.ok() || d->count() < 1) return bad();
  if (*d > std::chrono::hours(24)) {
    return InvalidArgumentError(StrCat("--timeout: '", text, "' is over a day"));
  }
  return *d;
}

StatusOr<Command> ParseCommandLine(const std::vector<std::string>& args,
                                   const std::string& default_socket) {
  // CLI11's App holds pointers into the Parser: one per call, never copied.
  auto parser = std::make_unique<Parser>(default_socket);
  return parser->Parse(args);
}

std::vector<CommandSpec> CommandTree() {
  Parser parser("");
  std::vector<CommandSpec> out;
  Collect(&parser.app, "", {}, &out);
  return out;
}

}  // namespace skb::bridge::cli
