// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/completion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "bridge/cli/args.h"

namespace skb::bridge::cli {
namespace {

using ::testing::HasSubstr;

TEST(Completion, BothScriptsNameEveryCommandAliasAndFlag) {
  const std::vector<CommandSpec> tree = CommandTree();
  for (const char* shell : {"bash", "zsh"}) {
    const std::string script = CompletionScript(shell);
    ASSERT_FALSE(script.empty()) << shell;
    for (const CommandSpec& c : tree) {
      if (!c.path.empty()) {
        EXPECT_THAT(script, HasSubstr(c.path)) << shell;
      }
      for (const std::string& s : c.subcommands) {
        EXPECT_THAT(script, HasSubstr(" " + s)) << shell << ": " << c.path << " " << s;
      }
      for (const std::string& f : c.flags) EXPECT_THAT(script, HasSubstr(f)) << shell;
    }
    EXPECT_THAT(script, HasSubstr("table wide json yaml name"));
    EXPECT_THAT(script, HasSubstr("get nodes -o name"));
  }
  EXPECT_THAT(CompletionScript("bash"), HasSubstr("complete -F _bridgectl bridgectl"));
  EXPECT_THAT(CompletionScript("zsh"), HasSubstr("#compdef bridgectl"));
  EXPECT_EQ(CompletionScript("fish"), "");
}

// What bash offers after the words typed: the script sourced into a real bash, bridgectl
// replaced by a function that answers `get nodes -o name` and logs how it was called.
std::string BashOffers(const std::string& words, std::string* calls = nullptr) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/bridgectl.bash") << CompletionScript("bash");
  std::ofstream(dir + "/driver.bash")
      << "source " << dir << "/bridgectl.bash\n"
      << "bridgectl() { echo \"$*\" >>" << dir << "/calls; printf 'node/node1\\nnode/node2\\n'; }\n"
      << "COMP_WORDS=(" << words << ")\n"
      << "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
      << "_bridgectl\n"
      << "echo \"${COMPREPLY[*]}\"\n";
  std::remove((dir + "/calls").c_str());
  FILE* p = popen(("bash " + dir + "/driver.bash").c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  EXPECT_EQ(pclose(p), 0) << words;
  if (calls != nullptr) {
    std::ifstream in(dir + "/calls");
    calls->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

TEST(Completion, BashCompletesCommandsFlagsFormatsAndNodeNames) {
  EXPECT_EQ(BashOffers("bridgectl ''"),
            "get describe drain undrain maintenance version completion help\n");
  EXPECT_EQ(BashOffers("bridgectl get no"), "nodes node\n");
  EXPECT_EQ(BashOffers("bridgectl get nodes -o ''"), "table wide json yaml name\n");
  EXPECT_EQ(BashOffers("bridgectl get jobs --a"), "--all\n");
  EXPECT_EQ(BashOffers("bridgectl completion ''"), "bash zsh\n");
  std::string calls;
  EXPECT_EQ(BashOffers("bridgectl --socket /s.sock drain ''", &calls), "node1 node2\n");
  EXPECT_EQ(calls, "--socket /s.sock get nodes -o name --timeout 3\n");
  EXPECT_EQ(BashOffers("bridgectl drain node1 ''", &calls), "\n") << "one node only";
  // Node names from where the command reads: the same kubeconfig and source.
  EXPECT_EQ(BashOffers("bridgectl --kubeconfig /k.yaml --context=prod describe node ''", &calls),
            "node1 node2\n");
  EXPECT_EQ(calls, "--kubeconfig /k.yaml --context=prod get nodes -o name --timeout 3\n");
  EXPECT_EQ(BashOffers("bridgectl --from ''"), "daemon kubernetes\n");
  EXPECT_EQ(BashOffers("bridgectl get preemptions --node n", &calls), "node1 node2\n");
  EXPECT_EQ(BashOffers("bridgectl describe node node1 --re"), "\n") << "--reason is drain's";
  EXPECT_EQ(BashOffers("bridgectl maintenance ''"), "reboot retry cancel\n");
  EXPECT_EQ(BashOffers("bridgectl --kubeconfig /k.yaml maintenance reboot ''", &calls),
            "node1 node2\n");
  EXPECT_EQ(calls, "--kubeconfig /k.yaml get nodes -o name --timeout 3\n");
  EXPECT_EQ(BashOffers("bridgectl maintenance reboot node1 --c"), "--condition --context\n");
  EXPECT_EQ(BashOffers("bridgectl maintenance retry node1 --c"), "--context\n")
      << "retry takes no --condition";
  EXPECT_EQ(BashOffers("bridgectl maintenance cancel --condition ''"), "\n")
      << "a condition type is typed, not completed";
}

}  // namespace
}  // namespace skb::bridge::cli
