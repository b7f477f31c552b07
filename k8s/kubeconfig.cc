// SPDX-License-Identifier: Apache-2.0
#include "k8s/kubeconfig.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "k8s/base64.h"
#include "k8s/exec_credential.h"
#include "k8s/file.h"
#include "k8s/yaml_reader.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

// Reads typed fields of one kubeconfig entry; errors name the entry ("users[admin].user").
class Entry {
 public:
  Entry(const json* obj, std::string where, const std::string* prefix)
      : obj_(obj), where_(std::move(where)), prefix_(prefix) {}

  Status Error(StatusCode code, std::string_view problem) const {
    return Status(code, StrCat(*prefix_, where_, ": ", problem));
  }

  // Absent or null -> "". Scalars only; the value is never echoed in messages.
  StatusOr<std::string> String(std::string_view key) const {
    const json* v = Find(key);
    if (v == nullptr) return std::string();
    if (!v->is_string())
      return Error(StatusCode::kInvalidArgument, StrCat("'", key, "' must be a string"));
    return v->get<std::string>();
  }

  StatusOr<bool> Bool(std::string_view key) const {
    const json* v = Find(key);
    if (v == nullptr) return false;
    if (v->is_boolean()) return v->get<bool>();
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
    }
    return Error(StatusCode::kInvalidArgument, StrCat("'", key, "' must be true or false"));
  }

  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // The raw value, or null when absent or null.
  const json* Find(std::string_view key) const {
    if (obj_ == nullptr) return nullptr;
    auto it = obj_->find(key);
    if (it == obj_->end() || it->is_null()) return nullptr;
    return &*it;
  }

 private:
  const json* obj_;
  std::string where_;
  const std::string* prefix_;
};

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file[0] == '/') return file;
  return StrCat(base_dir, "/", file);
}

// One kubeconfig file, parsed. Entries found in it resolve relative paths against `dir`
// and report errors with `prefix`.
struct KubeFile {
  std::string path;
  std::string prefix;  // "kubeconfig <path>: "
  std::string dir;
  json doc;
};

StatusOr<KubeFile> ParseFile(std::string_view text, const std::string& path) {
  KubeFile file{path, StrCat("kubeconfig ", path, ": "), DirOf(path), json()};
  auto parsed = ParseYamlDocument(text);
  if (!parsed.ok()) return InvalidArgumentError(StrCat(file.prefix, parsed.status().message()));
  file.doc = std::move(parsed).value();
  if (!file.doc.is_object()) {
    return InvalidArgumentError(StrCat(file.prefix, "not a mapping (is this a kubeconfig?)"));
  }
  return file;
}

// The `inner` object ("cluster", "context", "user") of the entry named `name` in the list
// `list_key` (clusters, contexts, users) and the file it came from: the first file that
// defines the name wins, as clientcmd merges $KUBECONFIG. `prefix` names all the files.
struct Found {
  const json* body;
  const KubeFile* file;
};
StatusOr<Found> FindNamed(const std::vector<KubeFile>& files, std::string_view list_key,
                          std::string_view inner, const std::string& name,
                          const std::string& prefix) {
  bool any_list = false;
  for (const KubeFile& file : files) {
    auto list = file.doc.find(list_key);
    if (list == file.doc.end() || list->is_null()) continue;
    if (!list->is_array()) {
      return InvalidArgumentError(StrCat(file.prefix, "'", list_key, "' must be a list"));
    }
    any_list = true;
    for (const json& item : *list) {
      if (!item.is_object()) {
        return InvalidArgumentError(
            StrCat(file.prefix, "every '", list_key, "' entry must be a mapping"));
      }
      auto n = item.find("name");
      if (n == item.end() || !n->is_string() || n->get_ref<const std::string&>() != name) continue;
      auto body = item.find(inner);
      if (body == item.end() || body->is_null()) {
        return InvalidArgumentError(
            StrCat(file.prefix, list_key, "[", name, "] has no '", inner, "'"));
      }
      if (!body->is_object()) {
        return InvalidArgumentError(
            StrCat(file.prefix, list_key, "[", name, "].", inner, " must be a mapping"));
      }
      return Found{&*body, &file};
    }
  }
  if (!any_list) {
    return FailedPreconditionError(
        StrCat(prefix, "no '", list_key, "' entries, needed for '", name, "'"));
  }
  return FailedPreconditionError(StrCat(prefix, "no ", list_key, " entry named '", name, "'"));
}

// Inline base64 data wins over a file, as in client-go.
StatusOr<std::string> DataOrFile(const Entry& e, std::string_view data_key,
                                 std::string_view file_key, const std::string& base_dir) {
  ASSIGN_OR_RETURN(std::string data, e.String(data_key));
  if (!data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded.ok()) {
      return e.Error(StatusCode::kInvalidArgument,
                     StrCat("'", data_key, "': ", decoded.status().message()));
    }
    return std::move(decoded).value();
  }
  ASSIGN_OR_RETURN(std::string file, e.String(file_key));
  if (file.empty()) return std::string();
  auto contents = ReadSmallFile(Resolve(base_dir, file), StrCat("'", file_key, "'"));
  if (!contents.ok()) {
    return e.Error(StatusCode::kFailedPrecondition, contents.status().message());
  }
  return std::move(contents).value();
}

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// A list of strings (exec args); values are never echoed.
StatusOr<std::vector<std::string>> StringList(const Entry& e, std::string_view key) {
  std::vector<std::string> out;
  const json* v = e.Find(key);
  if (v == nullptr) return out;
  if (!v->is_array())
    return e.Error(StatusCode::kInvalidArgument, StrCat("'", key, "' must be a list of strings"));
  for (const json& item : *v) {
    if (!item.is_string()) {
      return e.Error(StatusCode::kInvalidArgument, StrCat("'", key, "' must be a list of strings"));
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

constexpr char kExecV1[] = "client.authentication.k8s.io/v1";
constexpr char kExecV1Beta1[] = "client.authentication.k8s.io/v1beta1";

// users[...].user.exec, with the command resolved against the directory of `file` when it is
// a relative path, and the cluster's details for provideClusterInfo.
StatusOr<ExecConfig> ParseExec(const json& obj, const std::string& where, const KubeFile& file,
                               const RestConfig& cfg, const json& cluster_obj) {
  if (!obj.is_object()) {
    return InvalidArgumentError(StrCat(file.prefix, where, " must be a mapping"));
  }
  Entry e(&obj, where, &file.prefix);
  ExecConfig exec;
  exec.origin = StrCat("kubeconfig ", file.path, " ", where);
  ASSIGN_OR_RETURN(exec.api_version, e.String("apiVersion"));
  if (exec.api_version.empty()) {
    return e.Error(StatusCode::kFailedPrecondition,
                   StrCat("no 'apiVersion' (", kExecV1, " or ", kExecV1Beta1, ")"));
  }
  if (exec.api_version != kExecV1 && exec.api_version != kExecV1Beta1) {
    return e.Error(StatusCode::kUnimplemented,
                   StrCat("'apiVersion' ", exec.api_version, " is not supported: use ", kExecV1,
                          " or ", kExecV1Beta1));
  }
  ASSIGN_OR_RETURN(exec.command, e.String("command"));
  if (exec.command.empty()) return e.Error(StatusCode::kFailedPrecondition, "no 'command'");
  // As clientcmd: a command with a slash is a path, relative to the kubeconfig; a bare name
  // is looked up in $PATH when the plugin runs.
  if (exec.command.find('/') != std::string::npos) exec.command = Resolve(file.dir, exec.command);
  ASSIGN_OR_RETURN(exec.args, StringList(e, "args"));
  if (const json* env = e.Find("env"); env != nullptr) {
    if (!env->is_array()) {
      return e.Error(StatusCode::kInvalidArgument, "'env' must be a list of {name, value}");
    }
    for (size_t i = 0; i < env->size(); ++i) {
      const std::string item_where = StrCat(where, ".env[", i, "]");
      if (!(*env)[i].is_object()) {
        return InvalidArgumentError(StrCat(file.prefix, item_where, " must be a mapping"));
      }
      Entry var(&(*env)[i], item_where, &file.prefix);
      ASSIGN_OR_RETURN(std::string name, var.String("name"));
      ASSIGN_OR_RETURN(std::string value, var.String("value"));
      if (name.empty() || name.find('=') != std::string::npos) {
        return var.Error(StatusCode::kInvalidArgument, "needs a 'name' without '='");
      }
      exec.env.emplace_back(std::move(name), std::move(value));
    }
  }
  ASSIGN_OR_RETURN(exec.install_hint, e.String("installHint"));
  ASSIGN_OR_RETURN(exec.provide_cluster_info, e.Bool("provideClusterInfo"));
  ASSIGN_OR_RETURN(exec.interactive_mode, e.String("interactiveMode"));
  if (exec.interactive_mode.empty()) {
    if (exec.api_version == kExecV1) {
      // client-go requires it from v1 on (v1beta1 defaulted it to IfAvailable).
      return e.Error(StatusCode::kFailedPrecondition,
                     StrCat("'interactiveMode' is required with ", kExecV1,
                            " (Never or IfAvailable: the plugin runs without a terminal)"));
    }
    exec.interactive_mode = "IfAvailable";
  }
  if (exec.interactive_mode == "Always") {
    return e.Error(StatusCode::kUnimplemented,
                   "'interactiveMode' Always needs a terminal, and the bridge runs credential "
                   "plugins without one: use Never or IfAvailable");
  }
  if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable") {
    return e.Error(StatusCode::kInvalidArgument,
                   "'interactiveMode' must be Never, IfAvailable or Always");
  }
  if (exec.provide_cluster_info) {
    exec.cluster_server = cfg.server;
    exec.cluster_ca_pem = cfg.ca_pem;
    exec.cluster_tls_server_name = cfg.tls_server_name;
    exec.cluster_insecure_skip_tls_verify = cfg.insecure_skip_tls_verify;
    // The cluster's extension for exec plugins becomes spec.cluster.config, as in client-go.
    auto extensions = cluster_obj.find("extensions");
    if (extensions != cluster_obj.end() && extensions->is_array()) {
      for (const json& ext : *extensions) {
        if (ext.is_object() && ext.value("name", json()) == "client.authentication.k8s.io/exec" &&
            ext.contains("extension")) {
          exec.cluster_config_json = ext["extension"].dump();
        }
      }
    }
  }
  return exec;
}

std::string JoinPaths(const std::vector<KubeFile>& files) {
  std::vector<std::string> paths;
  for (const KubeFile& f : files) paths.push_back(f.path);
  return StrJoin(paths, ":");
}

// The RestConfig of `context` (else the current-context of the first file that sets one)
// from `files`, merged as clientcmd merges $KUBECONFIG: for each cluster, context and user
// name the first file that defines it wins, and each entry's relative paths resolve against
// its own file's directory.
StatusOr<RestConfig> BuildConfig(const std::vector<KubeFile>& files, const std::string& context) {
  const std::string prefix = StrCat("kubeconfig ", JoinPaths(files), ": ");
  std::string context_name = context;
  for (const KubeFile& file : files) {
    if (!context_name.empty()) break;
    Entry root(&file.doc, "", &file.prefix);
    ASSIGN_OR_RETURN(context_name, root.String("current-context"));
  }
  if (context_name.empty()) {
    return FailedPreconditionError(StrCat(prefix, "no current-context set and no context given"));
  }
  ASSIGN_OR_RETURN(Found ctx_found, FindNamed(files, "contexts", "context", context_name, prefix));
  Entry ctx(ctx_found.body, StrCat("contexts[", context_name, "].context"),
            &ctx_found.file->prefix);
  ASSIGN_OR_RETURN(std::string cluster_name, ctx.String("cluster"));
  ASSIGN_OR_RETURN(std::string user_name, ctx.String("user"));
  if (cluster_name.empty()) return ctx.Error(StatusCode::kFailedPrecondition, "names no cluster");

  RestConfig cfg;
  cfg.source = StrCat("kubeconfig ", JoinPaths(files), " context ", context_name);
  ASSIGN_OR_RETURN(cfg.default_namespace, ctx.String("namespace"));

  ASSIGN_OR_RETURN(Found cluster_found,
                   FindNamed(files, "clusters", "cluster", cluster_name, prefix));
  const KubeFile& cluster_file = *cluster_found.file;
  Entry cluster(cluster_found.body, StrCat("clusters[", cluster_name, "].cluster"),
                &cluster_file.prefix);
  ASSIGN_OR_RETURN(cfg.server, cluster.String("server"));
  if (cfg.server.empty()) return cluster.Error(StatusCode::kFailedPrecondition, "no 'server'");
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return cluster.Error(StatusCode::kInvalidArgument,
                         "'server' must start with https:// or http://");
  }
  while (cfg.server.size() > 8 && cfg.server.back() == '/') cfg.server.pop_back();
  ASSIGN_OR_RETURN(cfg.insecure_skip_tls_verify, cluster.Bool("insecure-skip-tls-verify"));
  ASSIGN_OR_RETURN(cfg.tls_server_name, cluster.String("tls-server-name"));
  ASSIGN_OR_RETURN(cfg.ca_pem, DataOrFile(cluster, "certificate-authority-data",
                                          "certificate-authority", cluster_file.dir));
  if (cfg.insecure_skip_tls_verify && !cfg.ca_pem.empty()) {
    // client-go refuses this too: the CA would silently be ignored.
    return cluster.Error(
        StatusCode::kFailedPrecondition,
        "specifying a certificate authority together with insecure-skip-tls-verify is not allowed");
  }
  if (cluster.Has("proxy-url")) {
    return cluster.Error(StatusCode::kUnimplemented, "'proxy-url' is not supported");
  }

  if (!user_name.empty()) {
    ASSIGN_OR_RETURN(Found user_found, FindNamed(files, "users", "user", user_name, prefix));
    const KubeFile& user_file = *user_found.file;
    const std::string where = StrCat("users[", user_name, "].user");
    Entry user(user_found.body, where, &user_file.prefix);
    for (std::string_view unsupported : {"auth-provider", "username", "password", "as"}) {
      if (user.Has(unsupported)) {
        return user.Error(StatusCode::kUnimplemented,
                          StrCat("'", unsupported, "' is not supported"));
      }
    }
    ASSIGN_OR_RETURN(cfg.client_cert_pem, DataOrFile(user, "client-certificate-data",
                                                     "client-certificate", user_file.dir));
    ASSIGN_OR_RETURN(cfg.client_key_pem,
                     DataOrFile(user, "client-key-data", "client-key", user_file.dir));
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty()) {
      return user.Error(StatusCode::kFailedPrecondition,
                        "client certificate and client key must be given together");
    }
    ASSIGN_OR_RETURN(cfg.bearer_token, user.String("token"));
    ASSIGN_OR_RETURN(std::string token_file, user.String("tokenFile"));
    if (const json* exec = user.Find("exec"); exec != nullptr) {
      if (!cfg.bearer_token.empty() || !token_file.empty()) {
        // client-go would quietly prefer the static token; one source of tokens is clearer.
        return user.Error(StatusCode::kFailedPrecondition,
                          "'exec' together with 'token' or 'tokenFile': give only one");
      }
      ASSIGN_OR_RETURN(
          cfg.exec, ParseExec(*exec, StrCat(where, ".exec"), user_file, cfg, *cluster_found.body));
    }
    if (cfg.bearer_token.empty() && !token_file.empty()) {
      // As clientcmd: a token wins over tokenFile; a tokenFile must be readable now and is
      // re-read by the transport when it changes.
      cfg.bearer_token_file = Resolve(user_file.dir, token_file);
      auto token = ReadSmallFile(cfg.bearer_token_file, "'tokenFile'");
      if (!token.ok()) return user.Error(StatusCode::kFailedPrecondition, token.status().message());
    }
    // A bearer token over plain HTTP is readable by anyone on the path (kubectl sends it;
    // the bridge does not).
    if (cfg.server.rfind("http://", 0) == 0 &&
        (!cfg.bearer_token.empty() || !cfg.bearer_token_file.empty() || cfg.exec)) {
      return cluster.Error(StatusCode::kFailedPrecondition,
                           "'server' is http:// and the user has a token, which would be sent "
                           "in clear: use https://");
    }
  }
  return cfg;
}

}  // namespace

std::string RestConfig::Describe() const {
  std::string auth = "anonymous";
  if (!client_cert_pem.empty()) auth = "client-certificate";
  if (exec) {
    // Only the command's base name: args and env may hold secrets.
    auth = StrCat("exec (", ExecCommandName(*exec), ")");
  } else if (!bearer_token_file.empty()) {
    auth = "token-file";
  } else if (!bearer_token.empty()) {
    auth = "token";
  }
  return StrCat("server=", server, " source=\"", source, "\" auth=", auth, " tls=",
                insecure_skip_tls_verify ? "insecure-skip-verify"
                                         : (ca_pem.empty() ? "system-ca" : "custom-ca"),
                " qps=", qps, " burst=", burst);
}

StatusOr<RestConfig> ParseKubeconfig(std::string_view text, const std::string& path,
                                     const std::string& context) {
  std::vector<KubeFile> files;
  ASSIGN_OR_RETURN(KubeFile file, ParseFile(text, path));
  files.push_back(std::move(file));
  return BuildConfig(files, context);
}

StatusOr<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadSmallFile(path, "kubeconfig");
  if (!text.ok()) return text.status();
  return ParseKubeconfig(*text, path, context);
}

StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                         const std::string& context) {
  std::vector<KubeFile> files;
  std::vector<std::string> seen;
  for (const std::string& path : paths) {
    if (path.empty() || std::find(seen.begin(), seen.end(), path) != seen.end()) continue;
    seen.push_back(path);
    auto text = ReadSmallFile(path, "kubeconfig");
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) continue;  // as kubectl
    if (!text.ok()) return text.status();
    ASSIGN_OR_RETURN(KubeFile file, ParseFile(*text, path));
    files.push_back(std::move(file));
  }
  if (files.empty()) {
    return NotFoundError(StrCat("kubeconfig: none of ", StrJoin(seen, ":"), " exists"));
  }
  return BuildConfig(files, context);
}

InClusterEnvironment InClusterEnvironment::FromProcess() {
  InClusterEnvironment env;
  env.service_host = GetEnv("KUBERNETES_SERVICE_HOST");
  env.service_port = GetEnv("KUBERNETES_SERVICE_PORT");
  return env;
}

StatusOr<RestConfig> InClusterConfig(const InClusterEnvironment& env) {
  if (env.service_host.empty() || env.service_port.empty()) {
    return FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
        "(not running in a pod?)");
  }
  RestConfig cfg;
  const bool ipv6 = env.service_host.find(':') != std::string::npos;
  cfg.server = ipv6 ? StrCat("https://[", env.service_host, "]:", env.service_port)
                    : StrCat("https://", env.service_host, ":", env.service_port);
  cfg.source = StrCat("in-cluster ", env.service_account_dir);
  const std::string& dir = env.service_account_dir;
  cfg.bearer_token_file = StrCat(dir, "/token");
  auto token = ReadSmallFile(cfg.bearer_token_file, "in-cluster config: service-account token");
  if (!token.ok()) return token.status();
  if (StripWhitespace(*token).empty()) {
    return FailedPreconditionError(
        StrCat("in-cluster config: service-account token ", cfg.bearer_token_file, " is empty"));
  }
  auto ca = ReadSmallFile(StrCat(dir, "/ca.crt"), "in-cluster config: CA bundle");
  if (!ca.ok()) return ca.status();
  cfg.ca_pem = std::move(ca).value();
  auto ns = ReadSmallFile(StrCat(dir, "/namespace"), "in-cluster config: namespace");
  if (ns.ok()) cfg.default_namespace = std::string(StripWhitespace(*ns));
  return cfg;
}

StatusOr<RestConfig> InClusterConfig() {
  return InClusterConfig(InClusterEnvironment::FromProcess());
}

StatusOr<RestConfig> DefaultRestConfig(const std::string& context) {
  std::string kubeconfig = GetEnv("KUBECONFIG");
  std::vector<std::string> paths;
  for (std::string_view p : StrSplit(kubeconfig, ':', /*skip_empty=*/true)) paths.emplace_back(p);
  if (!paths.empty()) {
    auto cfg = LoadKubeconfigFiles(paths, context);
    if (cfg.ok() || cfg.status().code() != StatusCode::kNotFound) return cfg;
    // As kubectl: $KUBECONFIG replaces ~/.kube/config, and when none of its files exists
    // only in-cluster config is left.
    auto in_cluster = InClusterConfig();
    if (in_cluster.ok()) return in_cluster;
    return FailedPreconditionError(
        StrCat("$KUBECONFIG: ", cfg.status().message(), "; ", in_cluster.status().message()));
  }
  std::string home = GetEnv("HOME");
  if (!home.empty()) {
    std::string path = StrCat(home, "/.kube/config");
    auto cfg = LoadKubeconfig(path, context);
    if (cfg.ok() || cfg.status().code() != StatusCode::kNotFound) return cfg;
  }
  return InClusterConfig();
}

}  // namespace skb::k8s
