// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "src/base/strings.h"

namespace skb::bridge::cli {

extern const char kManPage[];  // docs/bridgectl.1, generated into the test (CMakeLists.txt)

namespace {

using ::std::chrono::milliseconds;
using ::std::chrono::seconds;
using ::testing::HasSubstr;

constexpr char kSocket[] = "/run/default.sock";

Command Parse(const std::vector<std::string>& args) {
  StatusOr<Command> c = ParseCommandLine(args, kSocket);
  EXPECT_TRUE(c.ok()) << StrJoin(args, " ") << ": " << c.status();
  return c.ok() ? *c : Command{};
}

// The usage error's message (the test fails if the line parses).
std::string Refused(const std::vector<std::string>& args) {
  StatusOr<Command> c = ParseCommandLine(args, kSocket);
  EXPECT_FALSE(c.ok()) << StrJoin(args, " ") << " parsed as verb " << static_cast<int>(c->verb);
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

std::vector<std::string> Words(const std::string& path) {
  std::vector<std::string> out;
  for (size_t at = 0; at < path.size();) {
    size_t end = path.find(' ', at);
    if (end == std::string::npos) end = path.size();
    out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

TEST(Args, TheInvocationsOfTheTestsAndTheReadmeParseAsBefore) {
  Command c = Parse({"--socket", "/tmp/b.sock", "get", "jobs", "-o", "json"});
  EXPECT_EQ(c.verb, Verb::kGetJobs);
  EXPECT_EQ(c.socket, "/tmp/b.sock");
  EXPECT_EQ(c.output, Output::kJson);
  EXPECT_FALSE(c.all);
  EXPECT_EQ(c.timeout, seconds(10));

  c = Parse({"get", "preemptions", "--node", "node3", "-o", "json"});
  EXPECT_EQ(c.verb, Verb::kGetPreemptions);
  EXPECT_EQ(c.node, "node3");
  EXPECT_EQ(c.socket, kSocket);

  c = Parse({"drain", "node3", "--reason", "e2e psu swap"});
  EXPECT_EQ(c.verb, Verb::kDrain);
  EXPECT_EQ(c.name, "node3");
  EXPECT_EQ(c.reason, "e2e psu swap");
  c = Parse({"drain", "--reason=swap PSU", "node3"});
  EXPECT_EQ(c.reason, "swap PSU");
  EXPECT_EQ(c.name, "node3");

  c = Parse({"undrain", "node3"});
  EXPECT_EQ(c.verb, Verb::kUndrain);
  EXPECT_EQ(c.name, "node3");
  EXPECT_EQ(c.gpu, "");
  c = Parse({"drain", "node3", "--gpu", "5", "--reason", "XID 79"});
  EXPECT_EQ(c.verb, Verb::kDrain);
  EXPECT_EQ(c.gpu, "5");
  EXPECT_EQ(Parse({"undrain", "node3", "--gpu=gpu-5"}).gpu, "gpu-5");
  EXPECT_THAT(Refused({"drain", "node3", "--gpu", "GPU 5", "--reason", "x"}),
              HasSubstr("--gpu 'GPU 5'"));
  EXPECT_FALSE(Refused({"undrain", "node3", "--gpu", "gpu_5"}).empty());
  c = Parse({"describe", "node", "node1"});
  EXPECT_EQ(c.verb, Verb::kDescribeNode);
  EXPECT_EQ(c.name, "node1");
  EXPECT_EQ(Parse({"describe", "nodes", "node1"}).verb, Verb::kDescribeNode);
  c = Parse({"describe", "tenant", "team-a"});
  EXPECT_EQ(c.verb, Verb::kDescribeTenant);
  EXPECT_EQ(c.name, "team-a");
  EXPECT_EQ(Parse({"get", "quotas"}).verb, Verb::kGetQuotas);
  EXPECT_EQ(Parse({"get", "quota"}).verb, Verb::kGetQuotas);
  c = Parse({"get", "nodes", "-o", "wide"});
  EXPECT_EQ(c.verb, Verb::kGetNodes);
  EXPECT_EQ(c.name, "");
  EXPECT_EQ(c.output, Output::kWide);
  c = Parse({"--kubeconfig", "/nonexistent/kubeconfig", "--context", "ctx", "get", "preemptions"});
  EXPECT_EQ(c.kubeconfig, "/nonexistent/kubeconfig");
  EXPECT_EQ(c.context, "ctx");
  EXPECT_TRUE(Parse({"get", "jobs", "--all"}).all);
  EXPECT_TRUE(Parse({"get", "job", "-A"}).all);
  EXPECT_EQ(Parse({"get", "jobs", "-ojson"}).output, Output::kJson);
  EXPECT_EQ(Parse({"--output=json", "get", "jobs"}).output, Output::kJson);
  EXPECT_EQ(Parse({"get", "nodes", "--socket=/x.sock"}).socket, "/x.sock");
  EXPECT_EQ(Parse({"version"}).verb, Verb::kVersion);
  EXPECT_EQ(Parse({"--version"}).verb, Verb::kVersion);
  c = Parse({"maintenance", "reboot", "node3", "--reason", "new BIOS"});
  EXPECT_EQ(c.verb, Verb::kMaintenanceReboot);
  EXPECT_EQ(c.name, "node3");
  EXPECT_EQ(c.reason, "new BIOS");
  EXPECT_EQ(c.condition, "RebootRequested");
  EXPECT_EQ(c.source, Source::kKubernetes);
  c = Parse({"maintenance", "reboot", "--condition=example.com/Reboot", "node3", "--reason=x"});
  EXPECT_EQ(c.condition, "example.com/Reboot");
  c = Parse({"maintenance", "retry", "node3"});
  EXPECT_EQ(c.verb, Verb::kMaintenanceRetry);
  EXPECT_EQ(c.name, "node3");
  c = Parse({"maintenance", "cancel", "node3", "--condition", "KernelReboot"});
  EXPECT_EQ(c.verb, Verb::kMaintenanceCancel);
  EXPECT_EQ(c.condition, "KernelReboot");
  EXPECT_EQ(Parse({"maintenance", "cancel", "node3"}).condition, "RebootRequested");
  // -o table|wide|json were taken (and ignored) by every command; they still are.
  EXPECT_EQ(Parse({"drain", "node3", "--reason", "x", "-o", "json"}).verb, Verb::kDrain);
}

TEST(Args, GetNodeNameIsOneNode) {
  Command c = Parse({"get", "node", "node3"});
  EXPECT_EQ(c.verb, Verb::kGetNodes);
  EXPECT_EQ(c.name, "node3");
  EXPECT_EQ(Parse({"get", "nodes", "node3", "-o", "yaml"}).output, Output::kYaml);
  EXPECT_THAT(Refused({"get", "node", "node3", "node4"}), HasSubstr("unexpected argument 'node4'"));
}

TEST(Args, EveryCommandHasItsOwnHelp) {
  const std::vector<CommandSpec> tree = CommandTree();
  ASSERT_GE(tree.size(), 12u);
  for (const CommandSpec& spec : tree) {
    for (const char* flag : {"--help", "-h"}) {
      std::vector<std::string> args = Words(spec.path);
      args.push_back(flag);
      Command c = Parse(args);
      EXPECT_EQ(c.verb, Verb::kHelp) << spec.path;
      EXPECT_THAT(c.help,
                  HasSubstr(StrCat("Usage: bridgectl", spec.path.empty() ? "" : " ", spec.path)));
      EXPECT_THAT(c.help, HasSubstr(spec.description)) << spec.path;
    }
  }
  Command top = Parse({"--help"});
  EXPECT_THAT(top.help, HasSubstr("Exit status: 0 done, 1 failed"));
  EXPECT_THAT(top.help, HasSubstr("describe"));
  EXPECT_THAT(Parse({"get", "jobs", "--help"}).help, HasSubstr("--all"));
  EXPECT_THAT(Parse({"help", "get", "preemptions"}).help,
              HasSubstr("Usage: bridgectl get preemptions"));
  EXPECT_EQ(Parse({"help"}).help, top.help);
  EXPECT_THAT(Refused({"help", "get", "pods"}), HasSubstr("unknown command 'get pods'"));
}

TEST(Args, DrainHelpDrainsNothing) {
  Command c = Parse({"drain", "--help"});
  EXPECT_EQ(c.verb, Verb::kHelp);
  EXPECT_THAT(c.help, HasSubstr("--reason"));
  EXPECT_EQ(Parse({"drain", "node3", "--reason", "x", "--help"}).verb, Verb::kHelp);
  EXPECT_EQ(Parse({"undrain", "--help"}).verb, Verb::kHelp);
  // Nothing turns "--help" into a node name.
  EXPECT_THAT(Refused({"drain", "--", "--help", "--reason", "x"}), HasSubstr("'--'"));
  EXPECT_THAT(Refused({"drain", "--reason", "x", "--", "--help"}), HasSubstr("'--'"));
  EXPECT_THAT(Refused({"undrain", "--", "--help"}), HasSubstr("'--'"));
  EXPECT_THAT(Refused({"drain", "-x", "--reason", "x"}), HasSubstr("unknown flag '-x'"));
}

TEST(Args, DrainNeedsAReasonAndAKubernetesNodeName) {
  EXPECT_THAT(Refused({"drain", "node3"}), HasSubstr("drain needs --reason TEXT"));
  EXPECT_THAT(Refused({"drain", "node3", "--reason", ""}), HasSubstr("drain needs --reason"));
  EXPECT_THAT(Refused({"drain", "--reason", "x"}), HasSubstr("NODE is required"));
  EXPECT_THAT(Refused({"drain", "Node_3", "--reason", "x"}),
              HasSubstr("'Node_3' is not a Kubernetes node name"));
  EXPECT_THAT(Refused({"undrain", "node3."}), HasSubstr("not a Kubernetes node name"));
  EXPECT_THAT(Refused({"drain", "a", "b", "--reason", "x"}), HasSubstr("unexpected argument 'b'"));
  EXPECT_EQ(Parse({"drain", "gpu-7.rack2", "--reason", "x"}).name, "gpu-7.rack2");
}

TEST(Args, MaintenanceNeedsAReasonAKubernetesNodeNameAndAConditionItMayWrite) {
  EXPECT_THAT(Refused({"maintenance"}),
              HasSubstr("maintenance needs one of: reboot, retry, cancel"));
  EXPECT_THAT(Refused({"maintenance", "restart", "node3"}),
              HasSubstr("unknown command 'restart' for 'bridgectl maintenance'"));
  EXPECT_THAT(Refused({"maintenance", "reboot", "node3"}),
              HasSubstr("maintenance reboot needs --reason TEXT"));
  EXPECT_THAT(Refused({"maintenance", "reboot", "--reason", "x"}), HasSubstr("NODE is required"));
  EXPECT_THAT(Refused({"maintenance", "retry"}), HasSubstr("NODE is required"));
  EXPECT_THAT(Refused({"maintenance", "cancel", "Node_3"}),
              HasSubstr("'Node_3' is not a Kubernetes node name"));
  EXPECT_THAT(Refused({"maintenance", "reboot", "node3", "--reason", "x", "--condition",
                       "SlurmMaintenance"}),
              HasSubstr("--condition 'SlurmMaintenance' is a condition the bridge writes itself"));
  EXPECT_THAT(Refused({"maintenance", "cancel", "node3", "--condition", "DrainRequested"}),
              HasSubstr("bridgectl drain's"));
  EXPECT_THAT(Refused({"maintenance", "cancel", "node3", "--condition", "a b"}),
              HasSubstr("is not a condition type"));
  EXPECT_THAT(Refused({"maintenance", "retry", "node3", "--condition", "X"}),
              HasSubstr("unknown flag '--condition'"));
  EXPECT_THAT(Refused({"maintenance", "retry", "node3", "--reason", "x"}),
              HasSubstr("unknown flag '--reason'"));
  EXPECT_THAT(Refused({"--from", "daemon", "maintenance", "retry", "node3"}),
              HasSubstr("reads Kubernetes only"));
  EXPECT_THAT(Refused({"maintenance", "--", "retry", "node3"}), HasSubstr("'--'"));
  // Help, and nothing else.
  Command c = Parse({"maintenance", "reboot", "node3", "--reason", "x", "--help"});
  EXPECT_EQ(c.verb, Verb::kHelp);
  EXPECT_THAT(c.help, HasSubstr("RBAC: get nodes, patch nodes/status"));
  c = Parse({"maintenance", "cancel", "--help"});
  EXPECT_THAT(c.help, HasSubstr("past Draining it runs to"));
  EXPECT_THAT(c.help, HasSubstr("after a failed phase the node is given back"));
  EXPECT_THAT(Parse({"help", "maintenance"}).help, HasSubstr("SlurmMaintenance"));
}

TEST(Args, UnknownCommandsAndFlagsAreUsageErrorsNamingTheWordAndTheHelp) {
  std::string m = Refused({"get", "jobs", "--bogus"});
  EXPECT_THAT(m, HasSubstr("unknown flag '--bogus' for 'bridgectl get jobs'"));
  EXPECT_THAT(m, HasSubstr("Run 'bridgectl get jobs --help' for usage."));
  EXPECT_THAT(Refused({"get", "nodes", "--all"}), HasSubstr("unknown flag '--all'"));
  EXPECT_THAT(Refused({"--reason", "x", "get", "nodes"}), HasSubstr("unknown flag '--reason'"));
  EXPECT_THAT(Refused({"get", "jobs", "--node", "n"}), HasSubstr("unknown flag '--node'"));
  EXPECT_THAT(Refused({"frobnicate"}), HasSubstr("unknown command 'frobnicate' for 'bridgectl'"));
  EXPECT_THAT(Refused({"get", "pods"}), HasSubstr("unknown command 'pods' for 'bridgectl get'"));
  EXPECT_THAT(Refused({"get"}), HasSubstr("get needs one of: nodes, jobs, quotas, preemptions"));
  EXPECT_THAT(Refused({"describe"}), HasSubstr("describe needs one of: node, tenant"));
  EXPECT_THAT(Refused({}), HasSubstr("no command"));
  EXPECT_THAT(Refused({"describe", "node"}), HasSubstr("NODE is required"));
  EXPECT_THAT(Refused({"get", "preemptions", "--node"}), HasSubstr("--node"));
  EXPECT_THAT(Refused({"completion", "fish"}), HasSubstr("fish"));
  EXPECT_THAT(Refused({"get", "nodes", "--version"}), HasSubstr("--version takes no command"));
}

TEST(Args, TimeoutIsAPositiveDuration) {
  EXPECT_EQ(Parse({"--timeout", "5", "get", "nodes"}).timeout, seconds(5));
  EXPECT_EQ(Parse({"get", "nodes", "--timeout=2.5"}).timeout, milliseconds(2500));
  EXPECT_EQ(Parse({"get", "nodes", "--timeout", "500ms"}).timeout, milliseconds(500));
  EXPECT_EQ(Parse({"get", "nodes", "--timeout", "2m"}).timeout, seconds(120));
  EXPECT_EQ(Parse({"get", "nodes", "--timeout", "1h"}).timeout, seconds(3600));
  std::string m = Refused({"--timeout", "5x", "get", "nodes"});
  EXPECT_THAT(m, HasSubstr("--timeout: '5x' is not a positive duration"));
  // The config file's grammar (Go's): "1." and ".5" are numbers there too.
  EXPECT_EQ(Parse({"get", "nodes", "--timeout", ".5"}).timeout, milliseconds(500));
  EXPECT_EQ(Parse({"get", "nodes", "--timeout", "1m30s"}).timeout, seconds(90));
  for (const char* bad : {"0", "0s", "-1", "", "5 s", "1e3", "s", "10sec", "0.0001", "5d"}) {
    EXPECT_FALSE(ParseTimeout(bad).ok()) << "'" << bad << "'";
    EXPECT_THAT(Refused({"get", "jobs", "--timeout", bad}), HasSubstr("--timeout")) << bad;
  }
  EXPECT_THAT(Refused({"get", "jobs", "--timeout", "25h"}), HasSubstr("over a day"));
  EXPECT_THAT(Refused({"get", "jobs", "--timeout"}), HasSubstr("--timeout"));
}

TEST(Args, OutputFormatsAndNoHeadersWhereTheyFit) {
  EXPECT_EQ(Parse({"get", "nodes", "-o", "name"}).output, Output::kName);
  EXPECT_EQ(Parse({"get", "jobs", "-o", "name"}).output, Output::kName);
  EXPECT_EQ(Parse({"get", "quotas", "-o", "name"}).output, Output::kName);
  EXPECT_EQ(Parse({"describe", "node", "n", "-o", "yaml"}).output, Output::kYaml);
  EXPECT_EQ(Parse({"get", "preemptions", "-o", "yaml"}).output, Output::kYaml);
  Command c = Parse({"get", "jobs", "--no-headers", "-o", "wide"});
  EXPECT_FALSE(c.headers);
  EXPECT_TRUE(Parse({"get", "jobs"}).headers);
  EXPECT_FALSE(Parse({"get", "preemptions", "--no-headers"}).headers);
  EXPECT_THAT(Refused({"get", "nodes", "-o", "xml"}),
              HasSubstr("-o must be table, wide, json, yaml or name, not 'xml'"));
  EXPECT_THAT(Refused({"get", "preemptions", "-o", "name"}), HasSubstr("-o name is for get"));
  EXPECT_THAT(Refused({"describe", "node", "n", "-o", "name"}), HasSubstr("-o name is for get"));
  EXPECT_THAT(Refused({"describe", "node", "n", "--no-headers"}),
              HasSubstr("--no-headers is for get"));
  EXPECT_THAT(Refused({"get", "nodes", "--no-headers", "-o", "json"}),
              HasSubstr("--no-headers is for tables"));
  EXPECT_THAT(Refused({"drain", "n", "--reason", "x", "-o", "yaml"}),
              HasSubstr("-o yaml is for get and describe"));
}

TEST(Args, FromPicksWhereNodesAreReadAndAnExplicitKubeconfigPicksKubernetes) {
  EXPECT_EQ(Parse({"get", "nodes"}).source, Source::kDaemon);
  // $KUBECONFIG is not a flag: no silent switch (ParseCommandLine reads no environment).
  Command c = Parse({"--kubeconfig", "/home/a/.kube/config", "get", "nodes"});
  EXPECT_EQ(c.source, Source::kKubernetes);
  EXPECT_EQ(c.kubeconfig, "/home/a/.kube/config");
  EXPECT_EQ(Parse({"describe", "node", "node1", "--kubeconfig", "k"}).source, Source::kKubernetes);
  EXPECT_EQ(Parse({"get", "node", "node1", "--from", "kubernetes"}).source, Source::kKubernetes);
  EXPECT_EQ(Parse({"--from", "daemon", "--kubeconfig", "k", "get", "nodes"}).source,
            Source::kDaemon);
  EXPECT_EQ(
      Parse({"--socket", "/s", "--kubeconfig", "k", "--from", "kubernetes", "get", "nodes"}).source,
      Source::kKubernetes);
  EXPECT_THAT(Refused({"--socket", "/s", "--kubeconfig", "k", "get", "nodes"}),
              HasSubstr("--from daemon or --from kubernetes"));
  EXPECT_THAT(Refused({"--from", "etcd", "get", "nodes"}),
              HasSubstr("--from must be daemon or kubernetes, not 'etcd'"));
  EXPECT_THAT(Refused({"--from", "kubernetes", "get", "jobs"}),
              HasSubstr("bridgectl get jobs is answered by the daemon only"));
  EXPECT_THAT(Refused({"--from", "kubernetes", "describe", "tenant", "t"}),
              HasSubstr("daemon only"));
  EXPECT_THAT(Refused({"--from", "daemon", "get", "preemptions"}),
              HasSubstr("reads Kubernetes only"));
  // The commands that always read one side keep doing so; a kubeconfig given to get jobs is
  // not used (as before).
  EXPECT_EQ(Parse({"get", "preemptions"}).source, Source::kKubernetes);
  EXPECT_EQ(Parse({"--kubeconfig", "k", "get", "jobs"}).source, Source::kDaemon);
}

TEST(Args, TheTreeNamesEveryCommandOnce) {
  std::set<std::string> paths;
  for (const CommandSpec& s : CommandTree()) EXPECT_TRUE(paths.insert(s.path).second) << s.path;
  for (const char* p :
       {"", "get", "get nodes", "get jobs", "get quotas", "get preemptions", "describe",
        "describe node", "describe tenant", "drain", "undrain", "maintenance", "maintenance reboot",
        "maintenance retry", "maintenance cancel", "version", "completion", "help"}) {
    EXPECT_EQ(paths.count(p), 1u) << p;
  }
}

// The man page names every command and flag, and no flag bridgectl does not take.
TEST(Args, TheManPageMatchesTheCommandLine) {
  std::string man = kManPage;
  ASSERT_THAT(man, HasSubstr(".TH BRIDGECTL 1"));
  // troff's "\-" is a dash; "\fB" and friends change fonts.
  man = std::regex_replace(man, std::regex(R"(\\-)"), "-");
  man = std::regex_replace(man, std::regex(R"(\\f[BIRP])"), "");
  std::set<std::string> flags;
  for (const CommandSpec& s : CommandTree()) {
    if (!s.path.empty()) {
      EXPECT_THAT(man, HasSubstr(s.path)) << "command " << s.path;
    }
    if (!s.positional.empty()) {
      EXPECT_THAT(man, HasSubstr(s.positional)) << s.path;
    }
    for (const std::string& f : s.flags) {
      flags.insert(f);
      EXPECT_THAT(man, HasSubstr(f)) << "flag " << f << " of '" << s.path << "'";
    }
  }
  const std::regex flag(R"((^|[\s(\[|"])(--?[a-zA-Z][-a-z]*))");
  for (auto it = std::sregex_iterator(man.begin(), man.end(), flag); it != std::sregex_iterator();
       ++it) {
    const std::string f = (*it)[2].str();
    EXPECT_EQ(flags.count(f), 1u) << "the man page names " << f
                                  << ", which bridgectl does not take";
  }
}

}  // namespace
}  // namespace skb::bridge::cli
