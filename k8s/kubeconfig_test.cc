// SPDX-License-Identifier: Apache-2.0
#include "k8s/kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "k8s/base64.h"
#include "k8s/exec_credential.h"
#include "k8s/time_format.h"

namespace skb::k8s {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr char kCert[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
constexpr char kKey[] = "-----BEGIN EC PRIVATE KEY-----\nKEY\n-----END EC PRIVATE KEY-----\n";

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skb-kubeconfig-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

std::string Config(const std::string& cluster_extra, const std::string& user_body) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\nclusters:\n- name: c1\n  cluster:\n"
         "    server: https://127.0.0.1:6443/\n" +
         cluster_extra +
         "contexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n    namespace: "
         "slurm\n"
         "- name: other\n  context:\n    cluster: c1\n    user: missing\n"
         "users:\n- name: u1\n  user:\n" +
         user_body;
}

TEST_F(KubeconfigTest, InlineDataAndToken) {
  std::string text =
      Config("    certificate-authority-data: " + Base64Encode(kCa) + "\n",
             "    client-certificate-data: " + Base64Encode(kCert) +
                 "\n    client-key-data: " + Base64Encode(kKey) + "\n    token: abc.def\n");
  auto cfg = LoadKubeconfig(Write("config", text), "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->client_cert_pem, kCert);
  EXPECT_EQ(cfg->client_key_pem, kKey);
  EXPECT_EQ(cfg->bearer_token, "abc.def");
  EXPECT_EQ(cfg->default_namespace, "slurm");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  EXPECT_THAT(cfg->Describe(), Not(HasSubstr("abc.def")));
  EXPECT_THAT(cfg->Describe(), HasSubstr("custom-ca"));
}

TEST_F(KubeconfigTest, FilesResolveRelativeToTheKubeconfig) {
  Write("ca.crt", kCa);
  Write("client.crt", kCert);
  Write("client.key", kKey);
  Write("token", "file-token\n");
  std::string text = Config("    certificate-authority: ca.crt\n",
                            "    client-certificate: client.crt\n    client-key: " + dir_ +
                                "/client.key\n    tokenFile: token\n");
  auto cfg = LoadKubeconfig(Write("config", text), "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->client_cert_pem, kCert);
  EXPECT_EQ(cfg->client_key_pem, kKey);
  EXPECT_EQ(cfg->bearer_token, "");
  EXPECT_EQ(cfg->bearer_token_file, dir_ + "/token");
}

TEST_F(KubeconfigTest, PlainHttpIsRefusedWhenATokenWouldBeSent) {
  auto plain = [](std::string t) { return t.replace(t.find("https://"), 8, "http://"); };
  auto token = LoadKubeconfig(Write("token", plain(Config("", "    token: abc.def\n"))), "");
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(token.status().message(), HasSubstr("in clear"));
  EXPECT_THAT(token.status().message(), Not(HasSubstr("abc.def")));
  Write("tok", "from-file\n");
  auto file = LoadKubeconfig(Write("file", plain(Config("", "    tokenFile: tok\n"))), "");
  EXPECT_EQ(file.status().code(), StatusCode::kFailedPrecondition);
  // Without a token (an authenticating proxy on loopback, say) plain HTTP stays allowed.
  auto anonymous = LoadKubeconfig(
      Write("anon", plain(Config("", "    client-certificate-data: " + Base64Encode(kCert) +
                                         "\n    client-key-data: " + Base64Encode(kKey) + "\n"))),
      "");
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  EXPECT_EQ(anonymous->server, "http://127.0.0.1:6443");
}

TEST_F(KubeconfigTest, TokenWinsOverTokenFile) {
  auto cfg =
      ParseKubeconfig(Config("", "    token: t\n    tokenFile: /nonexistent\n"), "/x/config", "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->bearer_token, "t");
  EXPECT_EQ(cfg->bearer_token_file, "");
}

TEST_F(KubeconfigTest, InsecureSkipVerifyAndJsonForm) {
  auto cfg =
      ParseKubeconfig(Config("    insecure-skip-tls-verify: true\n", "    token: t\n"), "k", "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
  auto json_cfg = ParseKubeconfig(
      R"({"current-context":"c","contexts":[{"name":"c","context":{"cluster":"k"}}],
          "clusters":[{"name":"k","cluster":{"server":"https://h:1","insecure-skip-tls-verify":true}}]})",
      "k.json", "");
  ASSERT_TRUE(json_cfg.ok()) << json_cfg.status();
  EXPECT_EQ(json_cfg->server, "https://h:1");
  EXPECT_TRUE(json_cfg->insecure_skip_tls_verify);
  EXPECT_THAT(json_cfg->Describe(), HasSubstr("auth=anonymous"));
}

// YAML that kubectl reads and hand-written kubeconfigs use: flow mappings, block scalars,
// anchors.
TEST_F(KubeconfigTest, FlowMappingsBlockScalarsAndAnchors) {
  auto cfg = ParseKubeconfig(
      "current-context: c\n"
      "contexts:\n- {name: c, context: {cluster: k, user: u}}\n"
      "clusters:\n- name: k\n  cluster: &k\n    server: https://h:1\n"
      "    certificate-authority-data: >-\n      " +
          Base64Encode(kCa) +
          "\n- name: copy\n  cluster: *k\n"
          "users:\n- name: u\n  user: {token: abc.def}\n",
      "k", "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://h:1");
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->bearer_token, "abc.def");
}

TEST_F(KubeconfigTest, ExplicitContextOverridesCurrent) {
  auto cfg = ParseKubeconfig(Config("", "    token: t\n"), "k", "other");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(cfg.status().message(), HasSubstr("no users entry named 'missing'"));
}

struct BrokenCase {
  std::string name;
  std::string text;
  StatusCode code;
  std::string error;
};

// Each case, parsed as file "k", fails as it says, names the file and hides `secret`.
template <size_t N>
void ExpectBroken(const BrokenCase (&cases)[N], const std::string& secret) {
  for (const BrokenCase& c : cases) {
    auto cfg = ParseKubeconfig(c.text, "k", "");
    ASSERT_FALSE(cfg.ok()) << c.name;
    EXPECT_EQ(cfg.status().code(), c.code) << c.name << ": " << cfg.status();
    EXPECT_THAT(cfg.status().message(), HasSubstr(c.error)) << c.name;
    EXPECT_THAT(cfg.status().message(), HasSubstr("kubeconfig k: ")) << c.name;
    EXPECT_THAT(cfg.status().message(), Not(HasSubstr(secret))) << c.name;
  }
}

TEST_F(KubeconfigTest, BrokenFilesGiveClearErrors) {
  const std::string secret = "SECRET-TOKEN-VALUE";
  const BrokenCase cases[] = {
      // The line where the parser found the flow list unclosed: the end of the input.
      {"not yaml", "clusters: [oops\n", StatusCode::kInvalidArgument, "kubeconfig k: line 2"},
      {"scalar", "hello\n", StatusCode::kInvalidArgument, "not a mapping"},
      {"no context", "kind: Config\n", StatusCode::kFailedPrecondition, "no current-context"},
      {"unknown context", "current-context: x\ncontexts: []\n", StatusCode::kFailedPrecondition,
       "no contexts entry named 'x'"},
      {"contexts not a list", "current-context: x\ncontexts: {}\n", StatusCode::kInvalidArgument,
       "'contexts' must be a list"},
      {"no server",
       "current-context: m\ncontexts:\n- name: m\n  context:\n    cluster: c\n"
       "clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: true\n",
       StatusCode::kFailedPrecondition, "clusters[c].cluster: no 'server'"},
      {"bad scheme", Config("", "").replace(Config("", "").find("https"), 5, "ftp"),
       StatusCode::kInvalidArgument, "must start with https://"},
      {"bad base64", Config("    certificate-authority-data: '%%%'\n", ""),
       StatusCode::kInvalidArgument, "'certificate-authority-data': invalid base64"},
      {"missing ca file", Config("    certificate-authority: /no/such/ca.crt\n", ""),
       StatusCode::kFailedPrecondition, "/no/such/ca.crt"},
      {"ca and insecure",
       Config("    insecure-skip-tls-verify: true\n    certificate-authority-data: QUJD\n", ""),
       StatusCode::kFailedPrecondition, "insecure-skip-tls-verify"},
      {"bad bool", Config("    insecure-skip-tls-verify: maybe\n", ""),
       StatusCode::kInvalidArgument, "'insecure-skip-tls-verify' must be true or false"},
      {"cert without key",
       Config("", "    client-certificate-data: QUJD\n    token: " + secret + "\n"),
       StatusCode::kFailedPrecondition, "must be given together"},
      {"exec and token", Config("", "    exec:\n      command: aws\n    token: " + secret + "\n"),
       StatusCode::kFailedPrecondition, "'exec' together with 'token' or 'tokenFile'"},
      {"auth provider", Config("", "    auth-provider:\n      name: oidc\n"),
       StatusCode::kUnimplemented, "'auth-provider' is not supported"},
      {"token wrong type", Config("", "    token: [\"" + secret + "\"]\n"),
       StatusCode::kInvalidArgument, "users[u1].user: 'token' must be a string"},
      {"token file missing", Config("", "    tokenFile: /no/such/token\n"),
       StatusCode::kFailedPrecondition, "/no/such/token"},
      {"cluster entry wrong type",
       "current-context: m\ncontexts:\n- name: m\n  context:\n    cluster: c\n"
       "clusters:\n- name: c\n  cluster: oops\n",
       StatusCode::kInvalidArgument, "must be a mapping"},
  };
  ExpectBroken(cases, secret);
}

TEST_F(KubeconfigTest, MissingAndUnreadableFiles) {
  auto missing = LoadKubeconfig(dir_ + "/nope", "");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir_ + "/nope"));
  auto directory = LoadKubeconfig(dir_, "");
  EXPECT_EQ(directory.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(directory.status().message(), HasSubstr("is a directory"));
}

TEST_F(KubeconfigTest, InClusterConfig) {
  Write("token", "sa-token\n");
  Write("ca.crt", kCa);
  Write("namespace", "slurm-bridge\n");
  InClusterEnvironment env{"10.96.0.1", "443", dir_};
  auto cfg = InClusterConfig(env);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->ca_pem, kCa);
  EXPECT_EQ(cfg->bearer_token_file, dir_ + "/token");
  EXPECT_EQ(cfg->default_namespace, "slurm-bridge");

  env.service_host = "fd00::1";
  EXPECT_EQ(InClusterConfig(env)->server, "https://[fd00::1]:443");
}

TEST_F(KubeconfigTest, InClusterErrors) {
  InClusterEnvironment env{"", "", dir_};
  auto no_env = InClusterConfig(env);
  EXPECT_EQ(no_env.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_env.status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));

  env = {"10.0.0.1", "443", dir_};
  auto no_token = InClusterConfig(env);
  EXPECT_EQ(no_token.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(no_token.status().message(), HasSubstr("service-account token"));

  Write("token", "  \n");
  auto empty_token = InClusterConfig(env);
  EXPECT_THAT(empty_token.status().message(), HasSubstr("is empty"));

  Write("token", "t");
  auto no_ca = InClusterConfig(env);
  EXPECT_EQ(no_ca.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(no_ca.status().message(), HasSubstr("ca.crt"));
}

std::string ExecUser(const std::string& exec_body) { return "    exec:\n" + exec_body; }

constexpr char kExecV1[] = "      apiVersion: client.authentication.k8s.io/v1\n";

TEST_F(KubeconfigTest, ExecPluginEntry) {
  std::string text =
      Config("    certificate-authority-data: " + Base64Encode(kCa) +
                 "\n    tls-server-name: kubernetes\n    extensions:\n"
                 "    - name: client.authentication.k8s.io/exec\n      extension:\n"
                 "        audience: bridge\n",
             ExecUser(std::string(kExecV1) +
                      "      command: bin/get-token\n      args:\n      - --cluster\n"
                      "      - SECRET-ARG\n      env:\n      - name: AWS_PROFILE\n"
                      "        value: SECRET-ENV\n      - name: EMPTY\n"
                      "      installHint: brew install get-token\n"
                      "      provideClusterInfo: true\n      interactiveMode: Never\n"));
  auto cfg = LoadKubeconfig(Write("config", text), "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ASSERT_TRUE(cfg->exec.has_value());
  const ExecConfig& e = *cfg->exec;
  EXPECT_EQ(e.api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(e.command, dir_ + "/bin/get-token");  // relative to the kubeconfig
  EXPECT_EQ(e.args, (std::vector<std::string>{"--cluster", "SECRET-ARG"}));
  ASSERT_EQ(e.env.size(), 2u);
  EXPECT_EQ(e.env[0], std::make_pair(std::string("AWS_PROFILE"), std::string("SECRET-ENV")));
  EXPECT_EQ(e.env[1], std::make_pair(std::string("EMPTY"), std::string()));
  EXPECT_EQ(e.install_hint, "brew install get-token");
  EXPECT_EQ(e.interactive_mode, "Never");
  EXPECT_TRUE(e.provide_cluster_info);
  EXPECT_EQ(e.cluster_server, "https://127.0.0.1:6443");
  EXPECT_EQ(e.cluster_ca_pem, kCa);
  EXPECT_EQ(e.cluster_tls_server_name, "kubernetes");
  EXPECT_EQ(e.cluster_config_json, R"({"audience":"bridge"})");
  EXPECT_THAT(e.origin, HasSubstr(dir_ + "/config users[u1].user.exec"));
  EXPECT_TRUE(cfg->bearer_token.empty());
  const std::string d = cfg->Describe();
  EXPECT_THAT(d, HasSubstr("auth=exec (get-token)"));
  EXPECT_THAT(d, Not(HasSubstr("SECRET")));
  EXPECT_THAT(d, Not(HasSubstr("bin/get-token")));

  // A bare name stays a name ($PATH at run time); v1beta1 defaults interactiveMode.
  auto beta =
      ParseKubeconfig(Config("", ExecUser("      apiVersion: client.authentication.k8s.io/v1beta1\n"
                                          "      command: gke-gcloud-auth-plugin\n")),
                      "/etc/k/config", "");
  ASSERT_TRUE(beta.ok()) << beta.status();
  EXPECT_EQ(beta->exec->command, "gke-gcloud-auth-plugin");
  EXPECT_EQ(beta->exec->interactive_mode, "IfAvailable");
  EXPECT_FALSE(beta->exec->provide_cluster_info);
  EXPECT_EQ(beta->exec->cluster_server, "");
}

TEST_F(KubeconfigTest, ExecCommandRelativeToTheKubeconfigRuns) {
  std::filesystem::create_directories(dir_ + "/bin");
  std::string plugin = Write("bin/plugin",
                             "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/"
                             "v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-%s\"}}'"
                             " \"$1\"\n");
  std::filesystem::permissions(plugin, std::filesystem::perms::owner_all);
  auto cfg = LoadKubeconfig(
      Write("config", Config("", ExecUser(std::string(kExecV1) +
                                          "      command: ./bin/plugin\n      args: [\"arg\"]\n"
                                          "      interactiveMode: IfAvailable\n"))),
      "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ExecCredentialSource source(*cfg->exec, SystemClock::Get());
  auto token = source.Token();
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "from-arg");
}

TEST_F(KubeconfigTest, BrokenExecEntries) {
  const BrokenCase cases[] = {
      {"v1 without interactiveMode",
       Config("", ExecUser(std::string(kExecV1) + "      command: x\n")),
       StatusCode::kFailedPrecondition, "'interactiveMode' is required"},
      {"Always",
       Config("",
              ExecUser(std::string(kExecV1) + "      command: x\n      interactiveMode: Always\n")),
       StatusCode::kUnimplemented, "Always needs a terminal"},
      {"unknown mode",
       Config("", ExecUser(std::string(kExecV1) +
                           "      command: x\n      interactiveMode: Sometimes\n")),
       StatusCode::kInvalidArgument, "must be Never, IfAvailable or Always"},
      {"v1alpha1",
       Config("", ExecUser("      apiVersion: client.authentication.k8s.io/v1alpha1\n"
                           "      command: x\n")),
       StatusCode::kUnimplemented,
       "users[u1].user.exec: 'apiVersion' client.authentication.k8s.io/v1alpha1 is not supported"},
      {"no apiVersion", Config("", ExecUser("      command: x\n")), StatusCode::kFailedPrecondition,
       "no 'apiVersion'"},
      {"no command", Config("", ExecUser(std::string(kExecV1) + "      interactiveMode: Never\n")),
       StatusCode::kFailedPrecondition, "users[u1].user.exec: no 'command'"},
      {"args not strings",
       Config("", ExecUser(std::string(kExecV1) +
                           "      command: x\n      interactiveMode: Never\n      args:\n"
                           "      - a: SECRET-TOKEN-VALUE\n")),
       StatusCode::kInvalidArgument, "'args' must be a list of strings"},
      {"env without name",
       Config("", ExecUser(std::string(kExecV1) +
                           "      command: x\n      interactiveMode: Never\n      env:\n"
                           "      - value: SECRET-TOKEN-VALUE\n")),
       StatusCode::kInvalidArgument, "users[u1].user.exec.env[0]: needs a 'name'"},
      {"exec not a mapping", Config("", "    exec: aws\n"), StatusCode::kInvalidArgument,
       "users[u1].user.exec must be a mapping"},
      {"plain http",
       [] {
         std::string t = Config("", ExecUser(std::string(kExecV1) +
                                             "      command: x\n      interactiveMode: Never\n"));
         return t.replace(t.find("https://"), 8, "http://");
       }(),
       StatusCode::kFailedPrecondition, "would be sent in clear"},
  };
  ExpectBroken(cases, "SECRET-TOKEN-VALUE");
}

// Two files as $KUBECONFIG would list them: `a` (first) and `b`.
class MergeTest : public KubeconfigTest {
 protected:
  void SetUp() override {
    KubeconfigTest::SetUp();
    std::filesystem::create_directories(dir_ + "/a");
    std::filesystem::create_directories(dir_ + "/b");
    Write("a/ca.crt", "CA-A");
    Write("b/ca.crt", "CA-B");
    Write("b/token", "token-b\n");
    // a: no current-context; cluster shared (wins), user shared (wins), context ctx-a.
    a_ = Write("a/config",
               "clusters:\n- name: shared\n  cluster:\n    server: https://a:6443\n"
               "    certificate-authority: ca.crt\n"
               "users:\n- name: shared\n  user:\n    token: token-a\n"
               "contexts:\n- name: ctx-a\n  context:\n    cluster: shared\n    user: shared\n");
    // b: current-context ctx-b on its own cluster and user; duplicates of a's names lose.
    b_ = Write("b/config",
               "current-context: ctx-b\n"
               "clusters:\n- name: shared\n  cluster:\n    server: https://b-shared:6443\n"
               "- name: only-b\n  cluster:\n    server: https://b:6443\n"
               "    certificate-authority: ca.crt\n"
               "users:\n- name: shared\n  user:\n    token: token-b-shared\n"
               "- name: only-b\n  user:\n    tokenFile: token\n"
               "contexts:\n- name: ctx-b\n  context:\n    cluster: only-b\n    user: only-b\n"
               "- name: mixed\n  context:\n    cluster: shared\n    user: only-b\n"
               "- name: ctx-a\n  context:\n    cluster: only-b\n    user: only-b\n");
  }
  std::string a_, b_;
};

TEST_F(MergeTest, CurrentContextFromTheFirstFileThatSetsIt) {
  auto cfg = LoadKubeconfigFiles({a_, b_}, "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://b:6443");
  EXPECT_EQ(cfg->ca_pem, "CA-B");                        // relative to b/
  EXPECT_EQ(cfg->bearer_token_file, dir_ + "/b/token");  // relative to b/
  EXPECT_EQ(cfg->source, "kubeconfig " + a_ + ":" + b_ + " context ctx-b");
}

TEST_F(MergeTest, TheFirstFileDefiningANameWins) {
  auto ctx_a = LoadKubeconfigFiles({a_, b_}, "ctx-a");  // b's ctx-a loses
  ASSERT_TRUE(ctx_a.ok()) << ctx_a.status();
  EXPECT_EQ(ctx_a->server, "https://a:6443");
  EXPECT_EQ(ctx_a->ca_pem, "CA-A");  // relative to a/
  EXPECT_EQ(ctx_a->bearer_token, "token-a");

  // A context of b naming a cluster both define gets a's; its user comes from b.
  auto mixed = LoadKubeconfigFiles({a_, b_}, "mixed");
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_EQ(mixed->server, "https://a:6443");
  EXPECT_EQ(mixed->bearer_token_file, dir_ + "/b/token");

  // The other order: b wins everything it defines.
  auto reversed = LoadKubeconfigFiles({b_, a_}, "ctx-a");
  ASSERT_TRUE(reversed.ok()) << reversed.status();
  EXPECT_EQ(reversed->server, "https://b:6443");
}

TEST_F(MergeTest, MissingFilesAreSkipped) {
  auto cfg = LoadKubeconfigFiles({dir_ + "/none", a_, dir_ + "/gone", b_}, "");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://b:6443");
  auto none = LoadKubeconfigFiles({dir_ + "/none", dir_ + "/gone"}, "");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr(dir_ + "/none:" + dir_ + "/gone"));
}

TEST_F(MergeTest, ErrorsNameTheFileTheEntryCameFrom) {
  std::filesystem::create_directories(dir_ + "/c");
  std::string c = Write("c/config",
                        "current-context: broken\ncontexts:\n- name: broken\n  context:\n"
                        "    cluster: only-b\n    user: bad\n"
                        "users:\n- name: bad\n  user:\n    tokenFile: missing-token\n");
  auto cfg = LoadKubeconfigFiles({c, b_}, "");
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(
      cfg.status().message(),
      HasSubstr("kubeconfig " + c + ": users[bad].user: 'tokenFile' " + dir_ + "/c/missing-token"));
  auto unknown = LoadKubeconfigFiles({a_, b_}, "nowhere");
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("kubeconfig " + a_ + ":" + b_ + ": no contexts entry named 'nowhere'"));
  std::string bad = Write("bad", "clusters: [oops\n");
  auto parse = LoadKubeconfigFiles({a_, bad}, "");
  EXPECT_EQ(parse.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(parse.status().message(), HasSubstr("kubeconfig " + bad + ": line 2"));
}

TEST_F(MergeTest, DefaultRestConfigMergesKubeconfigEntries) {
  const char* old = std::getenv("KUBECONFIG");
  const std::string saved = old == nullptr ? "" : old;
  ::setenv("KUBECONFIG", (":" + dir_ + "/none:" + a_ + "::" + b_).c_str(), 1);
  auto cfg = DefaultRestConfig("ctx-a");
  // None of them exists: no ~/.kube/config (kubectl does not read it then), only in-cluster.
  ::setenv("KUBECONFIG", (dir_ + "/none").c_str(), 1);
  auto none = DefaultRestConfig("");
  if (old == nullptr) {
    ::unsetenv("KUBECONFIG");
  } else {
    ::setenv("KUBECONFIG", saved.c_str(), 1);
  }
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://a:6443");
  if (std::getenv("KUBERNETES_SERVICE_HOST") == nullptr) {
    EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(none.status().message(), HasSubstr("$KUBECONFIG: kubeconfig: none of " + dir_));
    EXPECT_THAT(none.status().message(), HasSubstr("in-cluster config"));
  }
}

}  // namespace
}  // namespace skb::k8s
