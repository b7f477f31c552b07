#include "k8s/kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "k8s/base64.h"

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

TEST_F(KubeconfigTest, BrokenFilesGiveClearErrors) {
  const std::string secret = "SECRET-TOKEN-VALUE";
  const BrokenCase cases[] = {
      {"not yaml", "clusters: [oops\n", StatusCode::kInvalidArgument, "kubeconfig k: line 1"},
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
      {"exec plugin", Config("", "    exec:\n      command: aws\n    token: " + secret + "\n"),
       StatusCode::kUnimplemented, "'exec' is not supported"},
      {"token wrong type", Config("", "    token: [\"" + secret + "\"]\n"),
       StatusCode::kInvalidArgument, "users[u1].user: 'token' must be a string"},
      {"token file missing", Config("", "    tokenFile: /no/such/token\n"),
       StatusCode::kFailedPrecondition, "/no/such/token"},
      {"cluster entry wrong type",
       "current-context: m\ncontexts:\n- name: m\n  context:\n    cluster: c\n"
       "clusters:\n- name: c\n  cluster: oops\n",
       StatusCode::kInvalidArgument, "must be a mapping"},
  };
  for (const BrokenCase& c : cases) {
    auto cfg = ParseKubeconfig(c.text, "k", "");
    ASSERT_FALSE(cfg.ok()) << c.name;
    EXPECT_EQ(cfg.status().code(), c.code) << c.name << ": " << cfg.status();
    EXPECT_THAT(cfg.status().message(), HasSubstr(c.error)) << c.name;
    EXPECT_THAT(cfg.status().message(), HasSubstr("kubeconfig k: ")) << c.name;
    EXPECT_THAT(cfg.status().message(), Not(HasSubstr(secret))) << c.name;
  }
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

}  // namespace
}  // namespace skb::k8s
