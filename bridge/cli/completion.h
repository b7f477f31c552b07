// SPDX-License-Identifier: Apache-2.0
// `bridgectl completion bash|zsh`: a static completion script made from the command tree
// (args.h CommandTree), so it knows every command, alias and flag the parser knows. It
// completes commands, flags, -o's formats, file names for --socket/--kubeconfig and node
// names, asked of the daemon when needed (`bridgectl [--socket S] get nodes -o name`).
//
//   source <(bridgectl completion bash)
//   bridgectl completion zsh > "${fpath[1]}/_bridgectl"
#pragma once

#include <string>
#include <string_view>

namespace skb::bridge::cli {

// The script for "bash" or "zsh"; empty for any other shell.
std::string CompletionScript(std::string_view shell);

}  // namespace skb::bridge::cli
