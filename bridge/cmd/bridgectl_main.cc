// bridgectl: the admin CLI. Talks to the daemon over its Unix socket (protobuf) or reads
// Kubernetes directly; commands arrive with the issues that give the daemon its API.
#include <cstdio>
#include <string>
#include <vector>

#include "bridge/version.h"

namespace {

constexpr char kUsage[] = R"(usage: bridgectl COMMAND [flags]

Commands:
  version     print the bridgectl version and the Slurm release it was built for
  help        this text
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "version" || args[0] == "--version") {
    std::printf("bridgectl %s (Slurm %s)\n", skb::bridge::kVersion, skb::bridge::kSlurmVersion);
    return 0;
  }
  std::fprintf(stderr, "bridgectl: unknown command '%s'\n%s", args[0].c_str(), kUsage);
  return 2;
}
