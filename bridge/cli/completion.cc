// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/completion.h"

#include <map>
#include <set>
#include <vector>

#include "bridge/cli/args.h"
#include "src/base/strings.h"

namespace skb::bridge::cli {
namespace {

// The shell logic, one copy per shell but for the loop body they share (kWalk, at @WALK@);
// @SUBS@, @FLAGS@, @ARGS@ (associative arrays keyed by the command path, "_" for bridgectl
// itself), @VALUES@ (flags taking a value) and @OUTPUTS@ are filled in from the tree. Both
// walk the words typed so far: a known command word extends the path, a flag taking a value
// skips its value (remembering --socket, --kubeconfig, --context and --from in `src`, so node
// names come from where the command will read), anything else is an argument.
constexpr char kBash[] = R"sh(# bash completion for bridgectl, made by `bridgectl completion bash`:
#   source <(bridgectl completion bash)                             # this shell
#   bridgectl completion bash > /etc/bash_completion.d/bridgectl    # every shell
_bridgectl_nodes() {
  "${COMP_WORDS[0]}" "$@" get nodes -o name --timeout 3 2>/dev/null | sed 's|^node/||'
}
_bridgectl() {
  local cur=${COMP_WORDS[COMP_CWORD]} w want= i npos=0 cmd=_ values=" @VALUES@ "
  local -a src=()
  local -A subs=(@SUBS@)
  local -A flags=(@FLAGS@)
  local -A args=(@ARGS@)
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
@WALK@
  done
  [[ $cur == = ]] && cur=
  COMPREPLY=()
  case $want in
    -o | --output) COMPREPLY=($(compgen -W "@OUTPUTS@" -- "$cur")); return ;;
    --socket | --kubeconfig) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --from) COMPREPLY=($(compgen -W "daemon kubernetes" -- "$cur")); return ;;
    --node) COMPREPLY=($(compgen -W "$(_bridgectl_nodes "${src[@]}")" -- "$cur")); return ;;
    ?*) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${flags[$cmd]}" -- "$cur"))
    return
  fi
  local cands=${subs[$cmd]}
  if ((npos == 0)); then
    case ${args[$cmd]} in
      NODE) cands+=" $(_bridgectl_nodes "${src[@]}")" ;;
      SHELL) cands+=" bash zsh" ;;
      COMMAND) cands+=" ${subs[_]}" ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$cands" -- "$cur"))
}
complete -F _bridgectl bridgectl
)sh";

constexpr char kZsh[] = R"sh(#compdef bridgectl
# zsh completion for bridgectl, made by `bridgectl completion zsh`:
#   source <(bridgectl completion zsh)                        # this shell (after compinit)
#   bridgectl completion zsh > "${fpath[1]}/_bridgectl"       # every shell
_bridgectl_nodes() {
  ${words[1]} "$@" get nodes -o name --timeout 3 2>/dev/null | sed 's|^node/||'
}
_bridgectl() {
  local cur=${words[CURRENT]} w want= i npos=0 cmd=_ values=" @VALUES@ "
  local -a src cands
  local -A subs flags args
  subs=(@SUBS@)
  flags=(@FLAGS@)
  args=(@ARGS@)
  for ((i = 2; i < CURRENT; i++)); do
    w=${words[i]}
@WALK@
  done
  case $want in
    -o | --output) compadd -- @OUTPUTS@; return ;;
    --socket | --kubeconfig) _files; return ;;
    --from) compadd -- daemon kubernetes; return ;;
    --node) compadd -- ${(f)"$(_bridgectl_nodes $src)"}; return ;;
    ?*) return ;;
  esac
  if [[ $cur == -* ]]; then
    compadd -- ${=flags[$cmd]}
    return
  fi
  cands=(${=subs[$cmd]})
  if ((npos == 0)); then
    case ${args[$cmd]} in
      NODE) cands+=(${(f)"$(_bridgectl_nodes $src)"}) ;;
      SHELL) cands+=(bash zsh) ;;
      COMMAND) cands+=(${=subs[_]}) ;;
    esac
  fi
  compadd -- $cands
}
if [[ "${funcstack[1]}" == _bridgectl ]]; then
  _bridgectl "$@"
else
  compdef _bridgectl bridgectl
fi
)sh";

// The loop body both scripts share (the same in bash and zsh): one typed word `w`.
constexpr char kWalk[] = R"sh(    [[ $w == = ]] && continue
    if [[ -n $want ]]; then
      case $want in --socket | --kubeconfig | --context | --from) src+=("$want" "$w") ;; esac
      want=
      continue
    fi
    case $w in
      --socket=* | --kubeconfig=* | --context=* | --from=*) src+=("$w") ;;
      -*=* | -o?*) ;;
      -*) [[ $values == *" $w "* ]] && want=$w ;;
      *)
        if [[ " ${subs[$cmd]} " == *" $w "* ]]; then
          [[ $cmd == _ ]] && cmd=$w || cmd="$cmd $w"
        else
          ((npos++))
        fi
        ;;
    esac
)sh";

std::string Replace(std::string text, std::string_view key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), value);
    at += value.size();
  }
  return text;
}

// Every way to type each command: "get nodes", "get node", ... (aliases included), with the
// canonical path they stand for.
std::map<std::string, std::string> Spellings(const std::vector<CommandSpec>& tree) {
  std::map<std::string, std::string> by_spelling = {{"", ""}};
  for (const CommandSpec& c : tree) {  // parents come before their children
    if (c.path.empty()) continue;
    const size_t space = c.path.rfind(' ');
    const std::string parent = space == std::string::npos ? "" : c.path.substr(0, space);
    const std::string last = space == std::string::npos ? c.path : c.path.substr(space + 1);
    std::vector<std::string> names = {last};
    names.insert(names.end(), c.aliases.begin(), c.aliases.end());
    for (const auto& [spelling, path] : std::map(by_spelling)) {
      if (path != parent) continue;
      for (const std::string& n : names) {
        by_spelling[spelling.empty() ? n : StrCat(spelling, " ", n)] = c.path;
      }
    }
  }
  return by_spelling;
}

}  // namespace

std::string CompletionScript(std::string_view shell) {
  std::string script;
  if (shell == "bash") {
    script = kBash;
  } else if (shell == "zsh") {
    script = kZsh;
  } else {
    return "";
  }
  const std::vector<CommandSpec> tree = CommandTree();
  std::map<std::string, const CommandSpec*> by_path;
  for (const CommandSpec& c : tree) by_path[c.path] = &c;
  std::set<std::string> values;
  for (const CommandSpec& c : tree) values.insert(c.value_flags.begin(), c.value_flags.end());

  // bash: ["get nodes"]="..." ; zsh: 'get nodes' '...'. Words and names never hold quotes.
  const auto pair = [&](const std::string& key, const std::string& value) {
    const std::string k = key.empty() ? "_" : key;
    return shell == "bash" ? StrCat("[\"", k, "\"]=\"", value, "\"")
                           : StrCat("'", k, "' '", value, "'");
  };
  std::vector<std::string> subs, flags, args;
  for (const auto& [spelling, path] : Spellings(tree)) {
    const CommandSpec& c = *by_path.at(path);
    if (!c.subcommands.empty()) subs.push_back(pair(spelling, StrJoin(c.subcommands, " ")));
    flags.push_back(pair(spelling, StrJoin(c.flags, " ")));
    if (!c.positional.empty()) args.push_back(pair(spelling, c.positional));
  }
  script = Replace(script, "@WALK@\n", kWalk);
  const std::string sep = "\n    ";
  script = Replace(script, "@SUBS@", sep + StrJoin(subs, sep));
  script = Replace(script, "@FLAGS@", sep + StrJoin(flags, sep));
  script = Replace(script, "@ARGS@", sep + StrJoin(args, sep));
  script = Replace(script, "@VALUES@",
                   StrJoin(std::vector<std::string>(values.begin(), values.end()), " "));
  script = Replace(script, "@OUTPUTS@", "table wide json yaml name");
  return script;
}

}  // namespace skb::bridge::cli
