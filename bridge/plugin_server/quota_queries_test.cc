// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/quota_queries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/observability/bridge_metrics.h"
#include "bridge/observability/metrics.h"
#include "bridge/plugin_server/admission_service.h"
#include "bridge/quota/quota_ledger.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/time_codec.h"

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;
using ::testing::HasSubstr;

// Lending on: floors are enforced (with it off they are only reported).
config::Config Config() {
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]}, "lending": {"enabled": true},
    "quotas": {"tenants": [
      {"name": "team-a", "slurm_accounts": ["team-a"], "guaranteed": 8},
      {"name": "team-b", "slurm_accounts": ["team-b"], "kubernetes_namespaces": ["serving"],
       "guaranteed": 8}]}})");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  return *cfg;
}

slurm::JobView Job(uint32_t id, std::string account, std::vector<std::string> nodes, int gpus) {
  slurm::JobView j;
  j.job_id = id;
  j.account = std::move(account);
  j.partition = "gpu";
  j.state = slurm::JobState::kRunning;
  j.nodes = std::move(nodes);
  j.gpus_per_node = gpus;
  j.start_time = 1000 + id;
  j.priority = 1;
  j.requeue = true;
  return j;
}

inventory::GpuPod Pod(std::string name, std::string node, int gpus) {
  inventory::GpuPod p;
  p.namespace_name = "serving";
  p.name = std::move(name);
  p.node_name = std::move(node);
  p.gpus = gpus;
  p.phase = "Running";
  p.priority = 200000;
  return p;
}

// team-a runs 3 nodes' worth (4 GPUs each: 4 borrowed), team-b one pod.
struct Fixture {
  config::Config cfg = Config();
  SimulatedClock clock{ownership::FromUnix(1'700'000'000)};
  QuotaLedger ledger{&cfg, &clock};
  Fixture() {
    for (const char* n : {"node1", "node2", "node3", "node4"}) ledger.SetManagedNode(n, true);
    ledger.SetSlurmJobs({Job(1, "team-a", {"node1"}, 4), Job(2, "team-a", {"node2"}, 4),
                         Job(3, "team-a", {"node3"}, 4)});
    ledger.UpdatePod(Pod("llm-0", "node4", 4));
  }
  QuotaQueries Queries() {
    return QuotaQueries({.observation = [this] { return ledger.Current(); },
                         .leader = [] { return std::string("replica-0"); },
                         .ready = [](std::string*) { return true; }},
                        &cfg);
  }
};

TEST(QuotaQueries, ListsEachTenantsSplit) {
  Fixture f;
  v1::Request req;
  req.mutable_list_quotas();
  v1::Response resp;
  ASSERT_TRUE(f.Queries().Handle(req, &resp));
  const auto& list = resp.list_quotas();
  EXPECT_TRUE(list.enabled());
  EXPECT_EQ(list.leader(), "replica-0");
  ASSERT_EQ(list.tenants_size(), 2);
  EXPECT_EQ(list.tenants(0).name(), "team-a");
  EXPECT_EQ(list.tenants(0).in_use_slurm(), 12);
  EXPECT_EQ(list.tenants(0).borrowed(), 4);
  EXPECT_EQ(list.tenants(0).limit(), -1);
  EXPECT_EQ(list.tenants(1).in_use_kubernetes(), 4);
  EXPECT_EQ(list.tenants(1).borrowed(), 0);
  EXPECT_EQ(list.tenants(1).kubernetes_namespaces(0), "serving");

  // A pod's status update that changes nothing quotas read does not reclassify.
  const uint64_t before = f.ledger.computations();
  inventory::GpuPod same = Pod("llm-0", "node4", 4);
  same.annotations["x"] = "y";
  f.ledger.UpdatePod(same);
  EXPECT_EQ(f.ledger.computations(), before);
  f.ledger.RemovePod("serving", "llm-0");
  EXPECT_EQ(f.ledger.computations(), before + 1);
  EXPECT_EQ(f.ledger.Current()->classification.usage.at("team-b").in_use_kubernetes, 0);
}

TEST(QuotaQueries, DescribesATenantsWorkAndRefusesAnUnknownOne) {
  Fixture f;
  v1::Request req;
  req.mutable_describe_tenant()->set_name("team-a");
  v1::Response resp;
  ASSERT_TRUE(f.Queries().Handle(req, &resp));
  const auto& d = resp.describe_tenant();
  ASSERT_EQ(d.work_size(), 3);
  EXPECT_EQ(d.work(0).id(), "slurm/1");
  EXPECT_EQ(d.work(0).standing(), "guaranteed");
  EXPECT_EQ(d.work(2).standing(), "borrowed");
  EXPECT_THAT(d.work(2).why(), HasSubstr("beyond the 8 GPUs guaranteed: 8 GPUs of tenant team-a"));
  EXPECT_TRUE(d.work(2).preemptible());
  EXPECT_THAT(d.work(2).preemptible_why(), HasSubstr("partition gpu is preemptible"));

  req.mutable_describe_tenant()->set_name("team-z");
  v1::Response missing;
  ASSERT_TRUE(f.Queries().Handle(req, &missing));
  EXPECT_EQ(missing.error().code(), v1::Error::NOT_FOUND);
  EXPECT_THAT(missing.error().message(), HasSubstr("tenants: team-a, team-b"));
}

TEST(QuotaLedger, ExportsTheTenantGauges) {
  Fixture f;
  observability::Registry registry;
  observability::BridgeMetrics m(&registry, "test", "22.05");
  ExportQuotaMetrics(f.cfg.quotas, *f.ledger.Current(), &m);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("skb_tenant_gpus{state=\"guaranteed\",tenant=\"team-a\"} 8"));
  EXPECT_THAT(text, HasSubstr("skb_tenant_gpus{state=\"borrowed\",tenant=\"team-a\"} 4"));
  EXPECT_THAT(text, HasSubstr("skb_tenant_guarantee_gpus{tenant=\"team-b\"} 8"));
  EXPECT_THAT(text, HasSubstr("skb_tenant_gpus{state=\"borrowed\",tenant=\"(none)\"} 0"));
}

// The planners hear what quotas decide (the jobs within their tenant's guarantee, the
// pending pods that would borrow) when, and only when, it changes: the first
// classification, a job that starts or ends and moves the split, a pod that would borrow;
// not a pod that changes nothing of it or a jobs poll that changes nothing.
TEST(QuotaLedger, TellsThePlannersWhenTheGuaranteedJobsChange) {
  config::Config cfg = Config();
  SimulatedClock clock{ownership::FromUnix(1'700'000'000)};
  QuotaLedger ledger{&cfg, &clock};
  std::vector<ownership::QuotaFacts> told;
  ledger.SetOnQuotaFacts([&](const ownership::QuotaFacts& f) { told.push_back(f); });
  ledger.SetManagedNode("node1", true);  // the first classification: nothing running
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told.back(), ownership::QuotaFacts{});

  // team-a (8 guaranteed) runs two 4-GPU jobs, then a third: it borrows.
  ledger.SetSlurmJobs({Job(1, "team-a", {"node1"}, 4), Job(2, "team-a", {"node2"}, 4)});
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told.back().guaranteed_jobs, (ownership::GuaranteedJobs{{1, "team-a"}, {2, "team-a"}}));
  ledger.SetSlurmJobs({Job(1, "team-a", {"node1"}, 4), Job(2, "team-a", {"node2"}, 4),
                       Job(3, "team-a", {"node3"}, 4)});
  EXPECT_EQ(told.size(), 2u) << "job 3 borrows: the guaranteed set is the same";
  ledger.UpdatePod(Pod("serve-0", "node1", 2));
  EXPECT_EQ(told.size(), 2u) << "team-b's pod changes nothing of team-a's";

  // Job 1 ends: job 3 enters the floor.
  ledger.SetSlurmJobs({Job(2, "team-a", {"node2"}, 4), Job(3, "team-a", {"node3"}, 4)});
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told.back().guaranteed_jobs, (ownership::GuaranteedJobs{{2, "team-a"}, {3, "team-a"}}));

  // team-b's pending pod fits its floor (2 running + 4 <= 8); a second one asking 4 more
  // does not, judged alone against the running work; the first one's start changes both.
  inventory::GpuPod pending = Pod("serve-1", "", 4);
  pending.phase = "Pending";
  ledger.UpdatePod(pending);
  EXPECT_EQ(told.size(), 3u) << "within the floor: no borrowing pod, nothing new to tell";
  inventory::GpuPod big = Pod("serve-2", "", 7);
  big.phase = "Pending";
  ledger.UpdatePod(big);
  ASSERT_EQ(told.size(), 4u);
  EXPECT_EQ(told.back().borrowing_pods,
            (std::map<std::string, std::string>{
                {"serving/serve-2",
                 "tenant team-b uses 2 of its 8 GPUs guaranteed: this pod's 7 GPUs would be "
                 "borrowed"}}));
}

v1::AdmitResponse Admit(AdmissionService& svc, const std::string& account, int gpus,
                        v1::JobDescription::Requeue requeue, bool interactive = false,
                        const std::string& default_account = "") {
  v1::Request req;
  req.set_protocol_version(1);
  auto* job = req.mutable_admit()->mutable_job();
  job->set_account(account);
  job->set_default_account(default_account);
  job->set_partition("gpu");
  job->set_tres_per_node("gres/gpu:" + std::to_string(gpus));
  job->set_requeue(requeue);
  job->set_interactive(interactive);
  v1::Response resp;
  EXPECT_TRUE(resp.ParseFromString(svc.HandleFrame(req.SerializeAsString()).response));
  return resp.admit();
}

TEST(AdmissionService, TellsTheQuotaStandingAndRefusesANoRequeueJobBeyondTheFloor) {
  Fixture f;
  AdmissionService svc(admission::Policy{.preemptible_partitions = {"gpu"}});
  svc.SetConfig(&f.cfg, [&f] { return f.ledger.Current(); });

  // team-b uses 4 of 8: a 4-GPU job stays within; team-a is beyond its floor already.
  v1::AdmitResponse within = Admit(svc, "team-b", 4, v1::JobDescription::REQUEUE_NO);
  EXPECT_EQ(within.decision(), v1::AdmitResponse::ACCEPT);
  EXPECT_THAT(within.user_message(), HasSubstr("within the guarantee"));

  v1::AdmitResponse borrowed = Admit(svc, "team-a", 2, v1::JobDescription::REQUEUE_UNSPECIFIED);
  EXPECT_EQ(borrowed.decision(), v1::AdmitResponse::ACCEPT);
  EXPECT_THAT(borrowed.user_message(), HasSubstr("would be borrowed"));
  EXPECT_TRUE(borrowed.set_admin_comment());

  v1::AdmitResponse refused = Admit(svc, "team-a", 2, v1::JobDescription::REQUEUE_NO);
  EXPECT_EQ(refused.decision(), v1::AdmitResponse::REJECT);
  EXPECT_THAT(refused.user_message(),
              HasSubstr("refused: tenant team-a uses 12 of its 8 GPUs guaranteed"));
  EXPECT_THAT(refused.user_message(), HasSubstr("--no-requeue"));
  EXPECT_FALSE(refused.set_admin_comment());
  EXPECT_EQ(refused.refusal(), v1::AdmitResponse::ACCOUNTING_POLICY);
  EXPECT_EQ(within.refusal(), v1::AdmitResponse::REFUSAL_UNSPECIFIED) << "accepted: no refusal";

  v1::AdmitResponse srun = Admit(svc, "team-a", 1, v1::JobDescription::REQUEUE_UNSPECIFIED,
                                 /*interactive=*/true);
  EXPECT_EQ(srun.decision(), v1::AdmitResponse::REJECT);
  EXPECT_THAT(srun.user_message(), HasSubstr("interactive job"));
  EXPECT_EQ(svc.counters().rejected, 2u);

  // No account named: the plugin sends the user's default account, judged the same way.
  v1::AdmitResponse defaulted =
      Admit(svc, "", 2, v1::JobDescription::REQUEUE_NO, false, /*default_account=*/"team-a");
  EXPECT_EQ(defaulted.decision(), v1::AdmitResponse::REJECT);
  EXPECT_THAT(defaulted.user_message(),
              HasSubstr("refused: tenant team-a (no --account given: your default account "
                        "team-a) uses 12 of its 8 GPUs guaranteed"));
  v1::AdmitResponse named = Admit(svc, "team-b", 4, v1::JobDescription::REQUEUE_NO, false,
                                  /*default_account=*/"team-a");
  EXPECT_EQ(named.decision(), v1::AdmitResponse::ACCEPT) << "a named account wins";
  EXPECT_EQ(svc.counters().rejected, 3u);

  // Lending off: nothing is taken back from Slurm, so nothing is refused for the floor.
  f.cfg.lending.enabled = false;
  v1::AdmitResponse unenforced = Admit(svc, "team-a", 2, v1::JobDescription::REQUEUE_NO);
  EXPECT_EQ(unenforced.decision(), v1::AdmitResponse::ACCEPT);
  EXPECT_THAT(unenforced.user_message(), HasSubstr("lending is off"));
}

// With lending on, a job the bridge may preempt is told so at submit, why, and what a lend
// does to it: its own --signal lead time, else the configured signal and grace; a job the
// bridge never preempts is told nothing of it; with lending off nobody is.
TEST(AdmissionService, TellsAPreemptibleJobTheSignalAndGraceItWillGet) {
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]},
    "lending": {"enabled": true, "checkpoint_signal": "USR2", "default_grace": "90s",
                "max_grace": "10m"}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  AdmissionService svc(admission::Policy{.preemptible_partitions = {"gpu"}});
  svc.SetConfig(&*cfg, nullptr);

  v1::AdmitResponse plain = Admit(svc, "team-a", 2, v1::JobDescription::REQUEUE_UNSPECIFIED);
  EXPECT_EQ(plain.decision(), v1::AdmitResponse::ACCEPT);
  EXPECT_THAT(plain.user_message(),
              HasSubstr("k8s-bridge: this job may be preempted for Kubernetes (admitted as "
                        "preemptible in partition gpu)"));
  EXPECT_THAT(plain.user_message(),
              HasSubstr("if its node is lent, it gets SIGUSR2 90s before it is requeued (it runs "
                        "again later); checkpoint on that signal"));

  v1::Request req;
  req.set_protocol_version(1);
  auto* job = req.mutable_admit()->mutable_job();
  job->set_account("team-a");
  job->set_partition("gpu");
  job->set_tres_per_node("gres/gpu:1");
  job->set_warn_signal(10);  // --signal=B:USR1@300
  job->set_warn_time(300);
  job->set_warn_flags(1);
  v1::Response resp;
  ASSERT_TRUE(resp.ParseFromString(svc.HandleFrame(req.SerializeAsString()).response));
  EXPECT_THAT(resp.admit().user_message(),
              HasSubstr("it gets SIGUSR1 (its batch shell only) 300s before it is requeued"));

  v1::AdmitResponse kept = Admit(svc, "team-a", 2, v1::JobDescription::REQUEUE_NO);
  EXPECT_EQ(kept.decision(), v1::AdmitResponse::ACCEPT);
  EXPECT_THAT(kept.user_message(), ::testing::Not(HasSubstr("may be preempted"))) << "--no-requeue";

  config::Config off = *cfg;
  off.lending.enabled = false;
  AdmissionService quiet(admission::Policy{.preemptible_partitions = {"gpu"}});
  quiet.SetConfig(&off, nullptr);
  EXPECT_EQ(Admit(quiet, "team-a", 2, v1::JobDescription::REQUEUE_UNSPECIFIED).user_message(), "");
}

// Per-type floors through the daemon's view: node types from Slurm's GRES (node1, node2:
// a100) or, where Slurm names none, from the Kubernetes label (k8s-3, paired with node3:
// h100); team-a is guaranteed 4 of each.
TEST(QuotaLedger, LearnsNodeTypesAndSplitsEachTypeAtItsFloor) {
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]}, "lending": {"enabled": true},
    "quotas": {"tenants": [
      {"name": "team-a", "slurm_accounts": ["team-a"], "guaranteed": {"a100": 4, "h100": 4},
       "limit": {"h100": 6}},
      {"name": "team-b", "kubernetes_namespaces": ["serving"], "guaranteed": 4}]}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  SimulatedClock clock{ownership::FromUnix(1'700'000'000)};
  QuotaLedger ledger{&*cfg, &clock};
  ledger.SetManagedNode("node1", true);
  ledger.SetManagedNode("node2", true);
  ledger.SetManagedNode("k8s-3", true, std::nullopt, "node3", "h100");
  slurm::NodeView n1, n2, n3;
  n1.name = "node1";
  n1.gpus = {{"a100", 4}};
  n2.name = "node2";
  n2.gpus = {{"", 1}, {"a100", 4}};
  n3.name = "node3";
  n3.gpus = {{"", 4}};  // untyped GRES: the label decides
  ledger.SetSlurmNodes({n1, n2, n3});
  const uint64_t before = ledger.computations();
  ledger.SetSlurmNodes({n1, n2, n3});
  EXPECT_EQ(ledger.computations(), before) << "the same types: no reclassification";
  ledger.SetSlurmJobs({Job(1, "team-a", {"node1"}, 4), Job(2, "team-a", {"node2"}, 4),
                       Job(3, "team-a", {"node3"}, 2)});
  inventory::GpuPod pod = Pod("llm-0", "k8s-3", 2);
  ledger.UpdatePod(pod);
  pod.gpu_model = "h100";
  ledger.UpdatePod(pod);
  EXPECT_EQ(ledger.computations(), before + 3) << "a pod's model is read: a change counts";

  auto o = ledger.Current();
  EXPECT_EQ(o->classification.standing.at("slurm/1"), quota::Standing::kGuaranteed);
  EXPECT_EQ(o->classification.standing.at("slurm/2"), quota::Standing::kBorrowed);
  EXPECT_EQ(o->classification.standing.at("slurm/3"), quota::Standing::kGuaranteed);

  QuotaQueries q({.observation = [&] { return ledger.Current(); }}, &*cfg);
  v1::Request req;
  req.mutable_list_quotas();
  v1::Response resp;
  ASSERT_TRUE(q.Handle(req, &resp));
  const v1::TenantQuota& a = resp.list_quotas().tenants(0);
  EXPECT_TRUE(a.per_type());
  EXPECT_EQ(a.guaranteed(), 8);
  ASSERT_EQ(a.types_size(), 2);
  EXPECT_EQ(a.types(0).type(), "a100");
  EXPECT_EQ(a.types(0).in_use(), 8);
  EXPECT_EQ(a.types(0).borrowed(), 4);
  EXPECT_EQ(a.types(0).limit(), -1);
  EXPECT_EQ(a.types(1).type(), "h100");
  EXPECT_EQ(a.types(1).limit(), 6);
  EXPECT_FALSE(resp.list_quotas().tenants(1).per_type());

  req.mutable_describe_tenant()->set_name("team-b");
  v1::Response described;
  ASSERT_TRUE(q.Handle(req, &described));
  ASSERT_EQ(described.describe_tenant().work_size(), 1);
  EXPECT_EQ(described.describe_tenant().work(0).gpu_type(), "h100");

  observability::Registry registry;
  observability::BridgeMetrics m(&registry, "test", "22.05");
  ExportQuotaMetrics(cfg->quotas, *o, &m);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("skb_tenant_gpus{state=\"borrowed\",tenant=\"team-a\"} 4"));
  EXPECT_THAT(
      text,
      HasSubstr("skb_tenant_type_gpus{state=\"borrowed\",tenant=\"team-a\",type=\"a100\"} 4"));
  EXPECT_THAT(
      text, HasSubstr("skb_tenant_type_gpus{state=\"guaranteed\",tenant=\"team-a\",type=\"h100\"} "
                      "2"));
  EXPECT_THAT(text, HasSubstr("skb_tenant_type_gpus{state=\"borrowed\",tenant=\"team-a\",type=\"("
                              "other)\"} 0"));
  EXPECT_THAT(text, HasSubstr("skb_tenant_type_guarantee_gpus{tenant=\"team-a\",type=\"h100\"} 4"));
  EXPECT_THAT(text,
              ::testing::Not(HasSubstr("tenant_type_gpus{state=\"guaranteed\",tenant=\"team-b\"")))
      << "a floor of any type has no per-type series";

  // At submit: the type a job asks for is the floor it is judged on.
  AdmissionService svc(admission::Policy{.preemptible_partitions = {"gpu"}});
  svc.SetConfig(&*cfg, [&] { return ledger.Current(); });
  auto admit = [&](const std::string& tres) {
    v1::Request r;
    r.set_protocol_version(1);
    auto* job = r.mutable_admit()->mutable_job();
    job->set_account("team-a");
    job->set_partition("gpu");
    job->set_tres_per_node(tres);
    job->set_requeue(v1::JobDescription::REQUEUE_NO);
    v1::Response out;
    EXPECT_TRUE(out.ParseFromString(svc.HandleFrame(r.SerializeAsString()).response));
    return out.admit();
  };
  v1::AdmitResponse h100 = admit("gres/gpu:h100:2");
  EXPECT_EQ(h100.decision(), v1::AdmitResponse::ACCEPT) << h100.user_message();
  EXPECT_THAT(h100.user_message(), HasSubstr("tenant team-a uses 2 of its 4 h100 GPUs guaranteed"));
  v1::AdmitResponse a100 = admit("gres/gpu:a100:1");
  EXPECT_EQ(a100.decision(), v1::AdmitResponse::REJECT);
  EXPECT_THAT(a100.user_message(),
              HasSubstr("refused: tenant team-a uses 8 of its 4 a100 GPUs guaranteed"));
}

// A pod asking GPUs through ResourceClaims alone: its tenant's usage counts what the claims
// hold once allocated, its demand what they ask before; a pod whose claims are not all
// counted (not seen yet, not generated yet, a demand that cannot be sized) borrows.
TEST(QuotaLedger, CountsTheGpusOfAPodsResourceClaims) {
  config::Config cfg = Config();
  SimulatedClock clock{ownership::FromUnix(1'700'000'000)};
  QuotaLedger ledger{&cfg, &clock};
  std::vector<ownership::QuotaFacts> told;
  ledger.SetOnQuotaFacts([&](const ownership::QuotaFacts& f) { told.push_back(f); });
  ledger.SetManagedNode("node1", true);
  auto usage = [&] { return ledger.Current()->classification.usage.at("team-b").in_use(); };

  // Running, through a claim of 6 allocated GPUs (and no extended resource).
  inventory::GpuPod running = Pod("llm-0", "node1", 0);
  running.claims = {"serving/llm-0-gpus-x7k"};
  ledger.UpdatePod(running);
  EXPECT_EQ(usage(), 0) << "the claim is not seen yet";
  ledger.SetClaim("serving/llm-0-gpus-x7k", devices::ClaimDemand{.gpus = 6, .allocated = true});
  EXPECT_EQ(usage(), 6);

  // Pending: its template's claim is not generated yet, then asks 4 GPUs (6 + 4 > 8:
  // borrowed), then 2 (within).
  inventory::GpuPod pending = Pod("llm-1", "", 0);
  pending.phase = "Pending";
  pending.unresolved_claims = 1;
  ledger.UpdatePod(pending);
  EXPECT_THAT(told.back().borrowing_pods.at("serving/llm-1"),
              HasSubstr("1 claim of its templates not generated yet"));
  pending.unresolved_claims = 0;
  pending.claims = {"serving/llm-1-gpus-b2c"};
  ledger.UpdatePod(pending);
  EXPECT_THAT(told.back().borrowing_pods.at("serving/llm-1"),
              HasSubstr("ResourceClaim serving/llm-1-gpus-b2c not seen yet"));
  ledger.SetClaim("serving/llm-1-gpus-b2c", devices::ClaimDemand{.gpus = 4});
  EXPECT_EQ(told.back().borrowing_pods.at("serving/llm-1"),
            "tenant team-b uses 6 of its 8 GPUs guaranteed: this pod's 4 GPUs would be borrowed");
  ledger.SetClaim("serving/llm-0-gpus-x7k", devices::ClaimDemand{.gpus = 4, .allocated = true});
  EXPECT_TRUE(told.back().borrowing_pods.empty()) << "4 + 4 fit the floor of 8";
  EXPECT_EQ(ledger.Current()->pending_gpus.at("team-b"), 4);

  ledger.SetClaim("serving/llm-1-gpus-b2c",
                  devices::ClaimDemand{.unknown = "request gpus asks for every device of its "
                                                  "class on a node (allocationMode All)"});
  EXPECT_THAT(told.back().borrowing_pods.at("serving/llm-1"), HasSubstr("allocationMode All"));
  ledger.SetClaim("serving/llm-0-gpus-x7k", std::nullopt);
  EXPECT_EQ(usage(), 0) << "the claim is gone";
}

// A reclaim's minimum run time counts from the pod's start: a borrowed pod that has run
// longer than it is a victim, one that has not is not.
TEST(QuotaLedger, KeepsAPodsStartTimeForTheReclaimsMinimumRunTime) {
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]}, "lending": {"enabled": true},
    "quotas": {"reclaim_min_run_time": "10m", "tenants": [
      {"name": "team-a", "slurm_accounts": ["team-a"], "guaranteed": 4},
      {"name": "team-b", "kubernetes_namespaces": ["serving"], "guaranteed": 0}]}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  SimulatedClock clock{ownership::FromUnix(1'700'000'000)};
  QuotaLedger ledger{&*cfg, &clock};
  ledger.SetManagedNode("node1", true, quota::LentNode{.gpus = 4});
  inventory::GpuPod pod = Pod("llm-0", "node1", 4);
  pod.priority = 100;  // below the protected class: preemptible
  pod.started = clock.Now() - std::chrono::minutes(5);
  ledger.UpdatePod(pod);
  slurm::JobView waiting = Job(7, "team-a", {}, 4);
  waiting.state = slurm::JobState::kPending;
  waiting.state_reason = "Resources";
  ledger.SetSlurmJobs({waiting});
  EXPECT_TRUE(ledger.Current()->reclaims.empty()) << "it has run 5 of the 10 minutes";
  pod.started = clock.Now() - std::chrono::minutes(11);
  ledger.UpdatePod(pod);
  ASSERT_EQ(ledger.Current()->reclaims.size(), 1u);
  EXPECT_EQ(ledger.Current()->reclaims[0].victims, std::vector<std::string>{"serving/llm-0"});
}

}  // namespace
}  // namespace skb::bridge
