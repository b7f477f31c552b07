#include "k8s/kubeconfig.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "k8s/base64.h"
#include "k8s/file.h"
#include "k8s/yaml_lite.h"
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

 private:
  const json* Find(std::string_view key) const {
    if (obj_ == nullptr) return nullptr;
    auto it = obj_->find(key);
    if (it == obj_->end() || it->is_null()) return nullptr;
    return &*it;
  }

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

// Finds `name` in the list `list_key` (clusters, contexts, users) and returns its `inner`
// object ("cluster", "context", "user").
StatusOr<const json*> FindNamed(const json& doc, std::string_view list_key, std::string_view inner,
                                const std::string& name, const std::string& prefix) {
  auto list = doc.find(list_key);
  if (list == doc.end() || list->is_null()) {
    return FailedPreconditionError(
        StrCat(prefix, "no '", list_key, "' entries, needed for '", name, "'"));
  }
  if (!list->is_array())
    return InvalidArgumentError(StrCat(prefix, "'", list_key, "' must be a list"));
  for (const json& item : *list) {
    if (!item.is_object()) {
      return InvalidArgumentError(StrCat(prefix, "every '", list_key, "' entry must be a mapping"));
    }
    auto n = item.find("name");
    if (n == item.end() || !n->is_string() || n->get_ref<const std::string&>() != name) continue;
    auto body = item.find(inner);
    if (body == item.end() || body->is_null()) {
      return InvalidArgumentError(StrCat(prefix, list_key, "[", name, "] has no '", inner, "'"));
    }
    if (!body->is_object()) {
      return InvalidArgumentError(
          StrCat(prefix, list_key, "[", name, "].", inner, " must be a mapping"));
    }
    return &*body;
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

}  // namespace

std::string RestConfig::Describe() const {
  std::string auth = "anonymous";
  if (!client_cert_pem.empty()) auth = "client-certificate";
  if (!bearer_token_file.empty()) {
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
  const std::string prefix = StrCat("kubeconfig ", path, ": ");
  auto parsed = ParseYamlSubset(text);
  if (!parsed.ok()) return InvalidArgumentError(StrCat(prefix, parsed.status().message()));
  const json& doc = *parsed;
  if (!doc.is_object())
    return InvalidArgumentError(StrCat(prefix, "not a mapping (is this a kubeconfig?)"));

  Entry root(&doc, "", &prefix);
  std::string context_name = context;
  if (context_name.empty()) {
    ASSIGN_OR_RETURN(context_name, root.String("current-context"));
  }
  if (context_name.empty()) {
    return FailedPreconditionError(StrCat(prefix, "no current-context set and no context given"));
  }
  ASSIGN_OR_RETURN(const json* ctx_obj,
                   FindNamed(doc, "contexts", "context", context_name, prefix));
  Entry ctx(ctx_obj, StrCat("contexts[", context_name, "].context"), &prefix);
  ASSIGN_OR_RETURN(std::string cluster_name, ctx.String("cluster"));
  ASSIGN_OR_RETURN(std::string user_name, ctx.String("user"));
  if (cluster_name.empty()) return ctx.Error(StatusCode::kFailedPrecondition, "names no cluster");

  RestConfig cfg;
  cfg.source = StrCat("kubeconfig ", path, " context ", context_name);
  ASSIGN_OR_RETURN(cfg.default_namespace, ctx.String("namespace"));
  const std::string base_dir = DirOf(path);

  ASSIGN_OR_RETURN(const json* cluster_obj,
                   FindNamed(doc, "clusters", "cluster", cluster_name, prefix));
  Entry cluster(cluster_obj, StrCat("clusters[", cluster_name, "].cluster"), &prefix);
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
                                          "certificate-authority", base_dir));
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
    ASSIGN_OR_RETURN(const json* user_obj, FindNamed(doc, "users", "user", user_name, prefix));
    Entry user(user_obj, StrCat("users[", user_name, "].user"), &prefix);
    for (std::string_view unsupported : {"exec", "auth-provider", "username", "password", "as"}) {
      if (user.Has(unsupported)) {
        return user.Error(StatusCode::kUnimplemented,
                          StrCat("'", unsupported, "' is not supported"));
      }
    }
    ASSIGN_OR_RETURN(cfg.client_cert_pem,
                     DataOrFile(user, "client-certificate-data", "client-certificate", base_dir));
    ASSIGN_OR_RETURN(cfg.client_key_pem,
                     DataOrFile(user, "client-key-data", "client-key", base_dir));
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty()) {
      return user.Error(StatusCode::kFailedPrecondition,
                        "client certificate and client key must be given together");
    }
    ASSIGN_OR_RETURN(cfg.bearer_token, user.String("token"));
    ASSIGN_OR_RETURN(std::string token_file, user.String("tokenFile"));
    if (cfg.bearer_token.empty() && !token_file.empty()) {
      // As clientcmd: a token wins over tokenFile; a tokenFile must be readable now and is
      // re-read by the transport when it changes.
      cfg.bearer_token_file = Resolve(base_dir, token_file);
      auto token = ReadSmallFile(cfg.bearer_token_file, "'tokenFile'");
      if (!token.ok()) return user.Error(StatusCode::kFailedPrecondition, token.status().message());
    }
    // A bearer token over plain HTTP is readable by anyone on the path (kubectl sends it;
    // the bridge does not).
    if (cfg.server.rfind("http://", 0) == 0 &&
        (!cfg.bearer_token.empty() || !cfg.bearer_token_file.empty())) {
      return cluster.Error(StatusCode::kFailedPrecondition,
                           "'server' is http:// and the user has a token, which would be sent "
                           "in clear: use https://");
    }
  }
  return cfg;
}

StatusOr<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadSmallFile(path, "kubeconfig");
  if (!text.ok()) return text.status();
  return ParseKubeconfig(*text, path, context);
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
  if (!kubeconfig.empty()) {
    // Merging several files is not supported: the first entry is used.
    std::string first(StrSplit(kubeconfig, ':', /*skip_empty=*/true).empty()
                          ? std::string_view()
                          : StrSplit(kubeconfig, ':', true).front());
    return LoadKubeconfig(first, context);
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
