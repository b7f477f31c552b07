// SPDX-License-Identifier: Apache-2.0
// Cold-start list and cache of a large cluster by the bridge's informers (issues 3 and 8:
// list and cache 5,000 GPU nodes and 50,000 pods; <= 2 KB per cached Node, <= 1 KB per
// cached Pod), against the testbed's real kube-apiserver.
//
// Real: the apiserver (with etcd), the objects (realistic GPU Nodes and Pods, from
// k8s/testdata), the bridge's informers exactly as bridge/controller.cc configures them
// (NodeInformerOptions, PodInformerOptions: field selection, decode selection, page size,
// the live-pods field selector) on one RestClient with the bridge's default rate limit
// (20 qps, burst 40), and handlers that parse each object as the Controller's do. One
// change: the node informer selects the bench's label instead of
// slurm-k8s-bridge.io/managed=true, so that no bridge on the shared testbed (its own, a
// test's) takes the 5,000 bench nodes for GPU nodes to manage. Each measurement is a fresh
// process (this program, re-executed with --measure), so RSS is that of a cold start.
//
//   eval "$(scripts/testbed env)"
//   flock -o /tmp/skb-testbed.lock build/bench/k8s_list_cache_e2e [--nodes 5000]
//       [--pods 50000] [--runs 3] [--writers 32] [--steady-seconds 30] [--out bench/results]
//       [--keep] [--reuse] [--cleanup]
//   (or SKB_LIST_CACHE_NODES / SKB_LIST_CACHE_PODS; a quick run: --nodes 1000 --pods 10000)
//
// Creates, with --writers concurrent requests on the testbed's admin client (not rate
// limited), nodes lc-node-NNNNN and, in namespace skb-bench-list, pods lc-pod-NNNNNN bound
// to them (spec.nodeName: kube-scheduler leaves bound pods alone) plus one ConfigMap per 100
// pods as their owner; deletes all of it at the end: the pods with gracePeriodSeconds=0
// (there is no kubelet to confirm a graceful delete), then the namespace, then the nodes
// (--keep: leave them; --reuse: use the ones there; --cleanup: only delete them).
//
// The nodes are not kwok's (no kwok.x-k8s.io/node annotation, which is what the testbed's
// kwok selects on), so kwok neither heart-beats them nor runs their pods: 5,000 nodes of
// heartbeats would put a steady write load on the shared testbed. They are created in the
// state kube-controller-manager gives a node whose kubelet stopped reporting (kubelet
// conditions Unknown, the unreachable NoSchedule taint), so its node lifecycle controller
// has nothing to write: with every node of their zone unreachable the zone is in full
// disruption, where it takes NoExecute taints off rather than evicting (created with one,
// the nodes had it removed one by one, ~7 writes/s for minutes). The pods tolerate
// unreachable nodes and are not Ready, so it has nothing to write for them either. Steady
// state is then zero churn.
//
// Prints per-run figures and p50/max, writes bench/results/k8s_list_cache.json.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e_results.h"
#include "bench/kube_workers.h"
#include "bridge/controller.h"
#include "k8s/api_error.h"
#include "k8s/informer.h"
#include "k8s/kubeconfig.h"
#include "k8s/node_info.h"
#include "k8s/observed_kube_client.h"
#include "k8s/pod_info.h"
#include "k8s/rest_client.h"
#include "k8s/testdata.h"
#include "src/base/strings.h"
#include "src/config/config.h"
#include "tests/testbed/testbed_support.h"

namespace {

using nlohmann::json;
using skb::StrCat;
using Steady = std::chrono::steady_clock;
namespace k8s = skb::k8s;

constexpr char kNamespace[] = "skb-bench-list";
constexpr char kLabel[] = "skb-bench";
constexpr char kLabelValue[] = "list-cache";
constexpr int kPodsPerOwner = 100;

double Since(Steady::time_point t0) {
  return std::chrono::duration<double>(Steady::now() - t0).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "k8s_list_cache_e2e: %s\n", what.c_str());
  return 1;
}

std::string NodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "lc-node-%05d", i);
  return buf;
}
std::string PodName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "lc-pod-%06d", i);
  return buf;
}
std::string OwnerName(int i) { return StrCat("lc-owner-", i); }
std::string Ip(int base, int i) {
  return StrCat("10.", base + i / 65536, ".", (i / 256) % 256, ".", i % 256);
}
// A deterministic hex string, for uid-like fields that differ per object.
std::string Hex(uint64_t seed, size_t n) {
  std::string s;
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  while (s.size() < n) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 29;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
    s += buf;
  }
  s.resize(n);
  return s;
}

// ---- process memory ----------------------------------------------------------------------

struct Memory {
  int64_t rss_kb = 0;  // VmRSS
  int64_t hwm_kb = 0;  // VmHWM: peak RSS so far
  int64_t heap = 0;    // malloc'd bytes in use (arenas + mmapped chunks)
};

Memory ReadMemory() {
  Memory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss_kb = std::atoll(line.c_str() + 6);
    if (line.rfind("VmHWM:", 0) == 0) m.hwm_kb = std::atoll(line.c_str() + 6);
  }
  struct mallinfo2 mi = mallinfo2();
  m.heap = static_cast<int64_t>(mi.uordblks + mi.hblkhd);
  return m;
}

// ---- the objects -------------------------------------------------------------------------

// A GPU node as a kubelet registers it (k8s/testdata/node.json), in the state
// kube-controller-manager leaves a node whose kubelet stopped posting status.
json MakeNode(int i) {
  json n = k8s::testdata::RealisticNode();
  const std::string name = NodeName(i);
  json& md = n["metadata"];
  for (const char* f : {"uid", "resourceVersion", "creationTimestamp", "managedFields"})
    md.erase(f);
  md["name"] = name;
  md["labels"]["kubernetes.io/hostname"] = name;
  md["labels"]["topology.kubernetes.io/zone"] = "lc-zone";
  // The bench's label instead of the bridge's (see the top of the file).
  md["labels"].erase("slurm-k8s-bridge.io/managed");
  md["labels"][kLabel] = kLabelValue;
  const std::string cidr = StrCat("10.", 128 + i / 256, ".", i % 256, ".0/24");
  n["spec"]["podCIDR"] = cidr;
  n["spec"]["podCIDRs"] = json::array({cidr});
  const std::string now = "2026-11-22T08:00:00Z";
  n["spec"]["taints"].push_back(
      {{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoSchedule"}, {"timeAdded", now}});
  for (json& c : n["status"]["conditions"]) {
    if (c["type"] == "GpuHealthy") continue;  // not the kubelet's: stays as its agent set it
    c["status"] = "Unknown";
    c["reason"] = "NodeStatusUnknown";
    c["message"] = "Kubelet stopped posting node status.";
    c["lastTransitionTime"] = now;
  }
  n["status"]["addresses"] = json::array({{{"type", "InternalIP"}, {"address", Ip(20, i)}},
                                          {{"type", "Hostname"}, {"address", name}}});
  n["status"]["nodeInfo"]["machineID"] = Hex(i, 32);
  n["status"]["nodeInfo"]["systemUUID"] = Hex(i + 7, 32);
  n["status"]["nodeInfo"]["bootID"] = Hex(i + 13, 32);
  return n;
}

// A pod of a ReplicaSet-like owner (k8s/testdata/pod.json) bound to node `i % nodes`; 8 in
// 10 ask for a GPU. Its status is set afterwards (the apiserver resets it on create).
json MakePod(int i, int nodes, const std::vector<std::string>& owner_uids) {
  json p = k8s::testdata::RealisticPod();
  json& md = p["metadata"];
  for (const char* f :
       {"uid", "resourceVersion", "creationTimestamp", "managedFields", "generateName"}) {
    md.erase(f);
  }
  const int owner = i / kPodsPerOwner;
  md["name"] = PodName(i);
  md["namespace"] = kNamespace;
  md["labels"]["pod-template-hash"] = Hex(owner, 10);
  md["labels"][kLabel] = kLabelValue;
  // ConfigMaps stand in for ReplicaSets: the garbage collector deletes pods whose owner does
  // not exist, and a real ReplicaSet's controller would manage (create, delete) the pods.
  md["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                        {"kind", "ConfigMap"},
                                        {"name", OwnerName(owner)},
                                        {"uid", owner_uids[owner]},
                                        {"controller", true},
                                        {"blockOwnerDeletion", true}}});
  json& spec = p["spec"];
  spec.erase("priority");  // the Priority admission plugin sets these from the class
  spec.erase("preemptionPolicy");
  // A node-local model cache rather than a claim that does not exist: the attach-detach
  // controller would retry every pod's missing claim.
  for (json& v : spec["volumes"]) {
    if (v.contains("persistentVolumeClaim")) {
      v.erase("persistentVolumeClaim");
      v["emptyDir"] = {{"sizeLimit", "500Gi"}};
    }
  }
  spec["nodeName"] = NodeName(i % nodes);
  // The nodes are unreachable (see the top of the file): tolerate it for good, as
  // DaemonSet pods do, so no taint eviction deletes the pods.
  for (json& t : spec["tolerations"]) t.erase("tolerationSeconds");
  json& res = spec["containers"][0]["resources"];
  if ((i / nodes) % 10 < 8) {
    res["limits"]["nvidia.com/gpu"] = "1";
    res["requests"]["nvidia.com/gpu"] = "1";
  } else {
    res["limits"].erase("nvidia.com/gpu");
    res["requests"].erase("nvidia.com/gpu");
  }
  return p;
}

// Running but not Ready: kube-controller-manager marks pods on a not-Ready node not Ready
// (one write per pod), so they start that way.
json PodStatus(int i, int nodes) {
  json st = k8s::testdata::RealisticPod()["status"];
  for (json& c : st["conditions"]) {
    if (c["type"] == "Ready" || c["type"] == "ContainersReady") {
      c["status"] = "False";
      c["reason"] = "ContainersNotReady";
      c["message"] = "containers with unready status: [server]";
    }
  }
  st["hostIP"] = Ip(20, i % nodes);
  st["hostIPs"] = json::array({{{"ip", Ip(20, i % nodes)}}});
  st["podIP"] = Ip(64, i);
  st["podIPs"] = json::array({{{"ip", Ip(64, i)}}});
  for (json& cs : st["containerStatuses"]) {
    cs["ready"] = false;
    cs["containerID"] = StrCat("containerd://", Hex(i, 64));
  }
  return {{"status", st}};
}

using Workers = skb::bench::KubeWorkers;

skb::Status Ignore(skb::Status s, skb::StatusCode harmless) {
  return s.code() == harmless ? skb::OkStatus() : s;
}

struct CreateRates {
  double node_s = 0, pod_s = 0;  // wall time
  double nodes_per_s = 0, pods_per_s = 0, requests_per_s = 0;
  int64_t failures = 0;
};

skb::StatusOr<CreateRates> CreateObjects(k8s::KubeClient& admin, Workers& workers, int nodes,
                                         int pods) {
  CreateRates r;
  auto ns =
      admin.Create(k8s::Resource::Namespaces(), "",
                   {{"apiVersion", "v1"},
                    {"kind", "Namespace"},
                    {"metadata", {{"name", kNamespace}, {"labels", {{kLabel, kLabelValue}}}}}});
  if (!ns.ok() && ns.status().code() != skb::StatusCode::kAlreadyExists) return ns.status();

  auto t0 = Steady::now();
  r.failures += workers.Run(nodes, [&](k8s::KubeClient& kube, int i) {
    return Ignore(kube.Create(k8s::Resource::Nodes(), "", MakeNode(i)).status(),
                  skb::StatusCode::kAlreadyExists);
  });
  r.node_s = Since(t0);
  r.nodes_per_s = nodes / r.node_s;
  std::printf("  %d nodes in %.1f s: %.0f nodes/s\n", nodes, r.node_s, r.nodes_per_s);

  // Owners, then pods (create, then status): the namespace's default ServiceAccount, which
  // pod admission looks up, is created by kube-controller-manager shortly after the namespace.
  const int owners = (pods + kPodsPerOwner - 1) / kPodsPerOwner;
  std::vector<std::string> owner_uids(owners);
  const int64_t owner_failures = workers.Run(owners, [&](k8s::KubeClient& kube, int k) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", OwnerName(k)}, {"labels", {{kLabel, kLabelValue}}}}}};
    auto c = kube.Create(k8s::Resource::ConfigMaps(), kNamespace, cm);
    if (!c.ok() && c.status().code() == skb::StatusCode::kAlreadyExists)
      c = kube.Get(k8s::Resource::ConfigMaps(), kNamespace, OwnerName(k));
    if (!c.ok()) return c.status();
    owner_uids[k] = (*c)["metadata"].value("uid", "");
    return skb::OkStatus();
  });
  if (owner_failures > 0) return skb::UnavailableError("creating the pods' owners failed");
  for (int tries = 0; !admin.Get(k8s::Resource::ServiceAccounts(), kNamespace, "default").ok();
       ++tries) {
    if (tries > 300) return skb::UnavailableError("no default ServiceAccount in the namespace");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  t0 = Steady::now();
  r.failures += workers.Run(pods, [&](k8s::KubeClient& kube, int i) {
    RETURN_IF_ERROR(Ignore(
        kube.Create(k8s::Resource::Pods(), kNamespace, MakePod(i, nodes, owner_uids)).status(),
        skb::StatusCode::kAlreadyExists));
    return kube
        .Patch(k8s::Resource::Pods(), kNamespace, PodName(i), k8s::PatchType::kJsonMerge,
               PodStatus(i, nodes), {}, "status")
        .status();
  });
  r.pod_s = Since(t0);
  r.pods_per_s = pods / r.pod_s;
  r.requests_per_s = 2.0 * pods / r.pod_s;
  std::printf("  %d pods in %.1f s: %.0f pods/s (%.0f requests/s: create + status)\n", pods,
              r.pod_s, r.pods_per_s, r.requests_per_s);
  return r;
}

// Names of the bench's objects of resource `r` (its label; all of namespace `ns`), listed in
// pages of names only. An error when the list fails.
skb::StatusOr<std::vector<std::string>> BenchObjects(k8s::KubeClient& admin, const k8s::Resource& r,
                                                     const std::string& ns) {
  k8s::ListOptions o;
  if (ns.empty()) o.label_selector = StrCat(kLabel, "=", kLabelValue);
  o.limit = 500;
  static const k8s::JsonSelection kNameOnly =
      k8s::JsonSelection::Fields({{"metadata", k8s::JsonSelection::Fields({{"name", {}}})}});
  o.item_selection = &kNameOnly;
  std::vector<std::string> names;
  auto rv = k8s::ForEachListPage(admin, r, ns, o, [&](k8s::ListResult&& page) {
    for (const json& item : page.items) names.push_back(item["metadata"].value("name", ""));
    return skb::OkStatus();
  });
  if (!rv.ok()) return rv.status();
  return names;
}

// Deletes whatever the bench created (found by name, whatever the sizes were): the pods
// with gracePeriodSeconds=0 (bound pods on a node without a kubelet would stay Terminating
// on a graceful delete), then the namespace (the owners), then the nodes. Returns whether
// all of it is gone.
bool DeleteObjects(k8s::KubeClient& admin, Workers& workers) {
  const auto t0 = Steady::now();
  k8s::DeleteOptions now;
  now.grace_period_seconds = 0;
  int64_t failed = 0;
  auto pods = BenchObjects(admin, k8s::Resource::Pods(), kNamespace);
  if (pods.ok()) {
    failed += workers.Run(static_cast<int>(pods->size()), [&](k8s::KubeClient& kube, int i) {
      return Ignore(kube.Delete(k8s::Resource::Pods(), kNamespace, (*pods)[i], now).status(),
                    skb::StatusCode::kNotFound);
    });
  } else if (pods.status().code() != skb::StatusCode::kNotFound) {
    ++failed;
  }
  (void)admin.Delete(k8s::Resource::Namespaces(), "", kNamespace);
  bool ns_gone = false;
  for (int i = 0; i < 1200 && !ns_gone; ++i) {
    auto got = admin.Get(k8s::Resource::Namespaces(), "", kNamespace);
    ns_gone = !got.ok() && got.status().code() == skb::StatusCode::kNotFound;
    if (!ns_gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto nodes = BenchObjects(admin, k8s::Resource::Nodes(), "");
  if (nodes.ok()) {
    failed += workers.Run(static_cast<int>(nodes->size()), [&](k8s::KubeClient& kube, int i) {
      return Ignore(kube.Delete(k8s::Resource::Nodes(), "", (*nodes)[i]).status(),
                    skb::StatusCode::kNotFound);
    });
  } else {
    ++failed;
  }
  auto left = BenchObjects(admin, k8s::Resource::Nodes(), "");
  const bool clean = failed == 0 && ns_gone && left.ok() && left->empty();
  std::printf(
      "cleanup: deleted %zu pods, namespace %s (%s) and %zu nodes in %.0f s, %lld "
      "failures: %s\n",
      pods.ok() ? pods->size() : 0, kNamespace, ns_gone ? "gone" : "STILL THERE",
      nodes.ok() ? nodes->size() : 0, Since(t0), static_cast<long long>(failed),
      clean ? "clean" : "NOT CLEAN, run again with --cleanup");
  return clean;
}

// ---- one measurement (a fresh process) ---------------------------------------------------

// Counts requests by verb ("list" is one page).
class RequestCounter {
 public:
  k8s::ObservedKubeClient::Observer Observer() {
    return [this](const k8s::RequestInfo& r, const skb::Status&) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counts_[std::string(r.verb)];
    };
  }
  std::map<std::string, int64_t> Counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, int64_t> counts_;
};

// `what`: nodes, pods or both (as the bridge: both informers on one client at once).
int Measure(const std::string& what, int steady_seconds) {
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig == nullptr) return Fail("KUBECONFIG is not set");
  auto kcfg = k8s::LoadKubeconfig(kubeconfig, "");
  if (!kcfg.ok()) return Fail(kcfg.status().ToString());
  skb::config::Config cfg;  // the daemon's defaults, but for the node selector (see the top)
  cfg.kubernetes.node_selector = StrCat(kLabel, "=", kLabelValue);
  kcfg->qps = cfg.kubernetes.qps;
  kcfg->burst = static_cast<int>(cfg.kubernetes.burst);
  auto rest = k8s::NewRestClient(*kcfg);
  if (!rest.ok()) return Fail(rest.status().ToString());
  RequestCounter requests;
  k8s::ObservedKubeClient kube(rest->get(), requests.Observer());

  struct Run {
    std::string name;
    std::unique_ptr<k8s::Informer> informer;
    std::atomic<int64_t> delivered{0};
    std::atomic<int64_t> unparsed{0};
    double sync_s = 0, delivered_s = 0;
  };
  std::vector<std::unique_ptr<Run>> runs;
  auto add = [&](const std::string& name, k8s::InformerOptions o, bool pods) {
    auto r = std::make_unique<Run>();
    r->name = name;
    r->informer = std::make_unique<k8s::Informer>(&kube, std::move(o));
    Run* self = r.get();
    // As the Controller's handlers: parse, hand on (here: count).
    auto on_obj = [self, pods](const k8s::ObjectPtr& obj) {
      if (!(pods ? k8s::ParsePod(*obj).ok() : k8s::ParseNode(*obj).ok())) ++self->unparsed;
      ++self->delivered;
    };
    r->informer->AddHandlers(
        {.on_add = on_obj,
         .on_update = [on_obj](const k8s::ObjectPtr&, const k8s::ObjectPtr& n) { on_obj(n); },
         .on_delete = [](const k8s::ObjectPtr&, bool) {},
         .wants_old_object = false});
    runs.push_back(std::move(r));
  };
  if (what == "nodes" || what == "both") add("nodes", skb::bridge::NodeInformerOptions(cfg), false);
  if (what == "pods" || what == "both") add("pods", skb::bridge::PodInformerOptions(), true);
  if (runs.empty()) return Fail("--measure nodes|pods|both");

  malloc_trim(0);
  const Memory before = ReadMemory();
  const auto t0 = Steady::now();
  for (auto& r : runs) r->informer->Start();
  for (size_t done = 0; done < runs.size();) {
    if (Since(t0) > 1800) return Fail("the informers did not sync within 30 minutes");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    done = 0;
    for (auto& r : runs) {
      if (r->sync_s == 0 && r->informer->HasSynced()) r->sync_s = Since(t0);
      if (r->sync_s > 0 && r->delivered_s == 0 &&
          r->delivered.load() >= static_cast<int64_t>(r->informer->Size())) {
        r->delivered_s = Since(t0);
      }
      done += r->delivered_s > 0;
    }
  }
  const Memory synced = ReadMemory();
  malloc_trim(0);
  const Memory trimmed = ReadMemory();

  json out = {{"what", what},
              {"rss_before_kb", before.rss_kb},
              {"rss_synced_kb", synced.rss_kb},
              {"rss_trimmed_kb", trimmed.rss_kb},
              {"hwm_kb", synced.hwm_kb},
              {"heap_before", before.heap},
              {"heap_synced", trimmed.heap}};
  int64_t objects = 0;
  for (auto& r : runs) {
    const auto size = static_cast<int64_t>(r->informer->Size());
    objects += size;
    out[r->name] = {{"objects", size},
                    {"sync_s", r->sync_s},
                    {"delivered_s", r->delivered_s},
                    {"delivered", r->delivered.load()},
                    {"unparsed", r->unparsed.load()}};
  }
  if (objects > 0) {
    out["heap_bytes_per_object"] =
        static_cast<double>(trimmed.heap - before.heap) / static_cast<double>(objects);
  }
  out["list_pages"] = requests.Counts()["list"];

  if (steady_seconds > 0) {
    // Zero churn: what the informers cost the apiserver when nothing changes.
    auto stats = [&] {
      std::map<std::string, int64_t> s = requests.Counts();
      for (auto& r : runs) {
        const k8s::InformerStats st = r->informer->Stats();
        s["watch_started"] += static_cast<int64_t>(st.watches);
        s["events"] += static_cast<int64_t>(st.events);
        s["relists"] += static_cast<int64_t>(st.lists);
      }
      return s;
    };
    auto a = stats();
    const auto s0 = Steady::now();
    std::this_thread::sleep_for(std::chrono::seconds(steady_seconds));
    auto b = stats();
    const double took = Since(s0);
    const double reqs = static_cast<double>((b["list"] - a["list"]) + (b["get"] - a["get"]) +
                                            (b["watch_started"] - a["watch_started"]));
    out["steady"] = {{"seconds", took},
                     {"requests_per_s", reqs / took},
                     {"list_pages", b["list"] - a["list"]},
                     {"watches_started", b["watch_started"] - a["watch_started"]},
                     {"watch_events_per_s", static_cast<double>(b["events"] - a["events"]) / took},
                     {"relists", b["relists"] - a["relists"]}};
  }
  for (auto& r : runs) r->informer->Stop();
  std::printf("RESULT %s\n", out.dump().c_str());
  return 0;
}

// Runs this program with --measure in a fresh process; its RESULT line.
skb::StatusOr<json> MeasureInChild(const std::string& what, int steady_seconds) {
  const std::string cmd =
      StrCat("/proc/", getpid(), "/exe --measure ", what, " --steady-seconds ", steady_seconds);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return skb::InternalError("popen failed");
  std::string line, result;
  char buf[8192];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    line = buf;
    if (line.rfind("RESULT ", 0) == 0) result = line.substr(7);
  }
  const int rc = pclose(p);
  if (rc != 0 || result.empty()) return skb::InternalError(StrCat(cmd, " failed (", rc, ")"));
  return json::parse(result);
}

double Mb(int64_t kb) { return static_cast<double>(kb) / 1024.0; }

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto env_int = [](const char* name, int dflt) {
    const char* v = std::getenv(name);
    return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : dflt;
  };
  int nodes = env_int("SKB_LIST_CACHE_NODES", 5000);
  int pods = env_int("SKB_LIST_CACHE_PODS", 50000);
  int runs = 3, writers = 32, steady_seconds = 30;
  bool keep = false, reuse = false, cleanup = false;
  std::string out_dir = "bench/results", measure;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--keep")
      keep = true;
    else if (a == "--reuse")
      reuse = true;
    else if (a == "--cleanup")
      cleanup = true;
    else if (!has_value)
      return Fail("unknown or incomplete argument " + a);
    else if (a == "--nodes")
      nodes = std::atoi(argv[++i]);
    else if (a == "--pods")
      pods = std::atoi(argv[++i]);
    else if (a == "--runs")
      runs = std::atoi(argv[++i]);
    else if (a == "--writers")
      writers = std::atoi(argv[++i]);
    else if (a == "--steady-seconds")
      steady_seconds = std::atoi(argv[++i]);
    else if (a == "--out")
      out_dir = argv[++i];
    else if (a == "--measure")
      measure = argv[++i];
    else
      return Fail("unknown argument " + a);
  }
  if (!measure.empty()) return Measure(measure, steady_seconds);
  if (nodes <= 0 || pods < 0 || runs <= 0 || writers <= 0 || steady_seconds < 0)
    return Fail(
        "--nodes, --runs and --writers must be positive, --pods and --steady-seconds not negative");

  auto admin = skb::testbed::AdminKubeClient();  // not rate limited: the harness's writes
  if (!admin.ok()) return Fail(admin.status().ToString());
  auto workers =
      skb::bench::KubeWorkers::Make(writers, [] { return skb::testbed::AdminKubeClient(); });
  if (!workers.ok()) return Fail(workers.status().ToString());
  if (cleanup) return DeleteObjects(**admin, *workers) ? 0 : 1;

  CreateRates created;
  if (reuse) {
    std::printf("reusing the objects there\n");
  } else {
    std::printf("creating %d nodes and %d pods with %d workers...\n", nodes, pods, writers);
    auto c = CreateObjects(**admin, *workers, nodes, pods);
    if (!c.ok()) {
      if (!keep) DeleteObjects(**admin, *workers);
      return Fail(c.status().ToString());
    }
    created = *c;
  }
  auto count = [&](const k8s::Resource& r, const std::string& ns) -> int64_t {
    auto names = BenchObjects(**admin, r, ns);
    return names.ok() ? static_cast<int64_t>(names->size()) : -1;
  };
  const int64_t have_nodes = count(k8s::Resource::Nodes(), "");
  const int64_t have_pods = count(k8s::Resource::Pods(), kNamespace);
  std::printf("on the apiserver: %lld bench nodes, %lld bench pods (%lld create failures)\n",
              static_cast<long long>(have_nodes), static_cast<long long>(have_pods),
              static_cast<long long>(created.failures));

  // Fresh process per measurement; the last one, both informers as the daemon runs them,
  // also watches the steady state.
  std::map<std::string, std::vector<double>> f;  // figure -> samples
  json samples = json::array();
  bool ok = true;
  for (int r = 0; r < runs && ok; ++r) {
    for (const std::string what : {"nodes", "pods", "both"}) {
      const int steady = (what == "both" && r + 1 == runs) ? steady_seconds : 0;
      auto m = MeasureInChild(what, steady);
      if (!m.ok()) {
        std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
        ok = false;
        break;
      }
      samples.push_back(*m);
      const json& j = *m;
      std::printf("  run %d %-5s:", r + 1, what.c_str());
      for (const char* res : {"nodes", "pods"}) {
        if (!j.contains(res)) continue;
        std::printf(" %s %lld synced %.2f s (delivered %.2f s);", res,
                    static_cast<long long>(j[res]["objects"].get<int64_t>()),
                    j[res]["sync_s"].get<double>(), j[res]["delivered_s"].get<double>());
        const double sync_s = j[res]["sync_s"].get<double>();
        f[StrCat(what, "_", res, "_sync_s")].push_back(sync_s);
        if (sync_s > 0) {
          f[StrCat(what, "_", res, "_per_s")].push_back(
              static_cast<double>(j[res]["objects"].get<int64_t>()) / sync_s);
        }
      }
      const double peak = Mb(j["hwm_kb"].get<int64_t>());
      const double steady_rss = Mb(j["rss_synced_kb"].get<int64_t>());
      std::printf(" RSS %.0f -> %.0f MB (trimmed %.0f), peak %.0f MB, %.0f B/object, %lld pages\n",
                  Mb(j["rss_before_kb"].get<int64_t>()), steady_rss,
                  Mb(j["rss_trimmed_kb"].get<int64_t>()), peak,
                  j.value("heap_bytes_per_object", 0.0),
                  static_cast<long long>(j["list_pages"].get<int64_t>()));
      f[what + "_peak_rss_mb"].push_back(peak);
      f[what + "_synced_rss_mb"].push_back(steady_rss);
      f[what + "_rss_growth_mb"].push_back(steady_rss - Mb(j["rss_before_kb"].get<int64_t>()));
      f[what + "_list_pages"].push_back(static_cast<double>(j["list_pages"].get<int64_t>()));
      if (what != "both")
        f[what + "_bytes_per_object"].push_back(j.value("heap_bytes_per_object", 0.0));
      if (j.contains("steady")) {
        const json& s = j["steady"];
        std::printf(
            "  steady state over %.0f s: %.3f requests/s (%lld list pages, %lld watches "
            "started), %.3f watch events/s, %lld relists\n",
            s["seconds"].get<double>(), s["requests_per_s"].get<double>(),
            static_cast<long long>(s["list_pages"].get<int64_t>()),
            static_cast<long long>(s["watches_started"].get<int64_t>()),
            s["watch_events_per_s"].get<double>(),
            static_cast<long long>(s["relists"].get<int64_t>()));
        f["steady_requests_per_s"].push_back(s["requests_per_s"].get<double>());
        f["steady_watch_events_per_s"].push_back(s["watch_events_per_s"].get<double>());
      }
    }
  }
  if (!ok) {
    if (!keep) DeleteObjects(**admin, *workers);
    return Fail("a measurement failed");
  }

  // Figures: p50 and max over the runs.
  json figures = json::object(), details = json::object();
  std::printf("\n%lld nodes, %lld pods; p50 / max over %d runs\n",
              static_cast<long long>(have_nodes), static_cast<long long>(have_pods), runs);
  for (auto& [name, v] : f) {
    json p = skb::bench::Percentiles(v);
    details[name] = p;
    std::printf("  %-28s %10.3f / %10.3f\n", name.c_str(), p["p50"].get<double>(),
                p["max"].get<double>());
  }
  auto p50 = [&](const std::string& k) { return f.count(k) ? details[k]["p50"] : json(nullptr); };
  auto max = [&](const std::string& k) { return f.count(k) ? details[k]["max"] : json(nullptr); };
  figures["nodes_sync_s"] = p50("nodes_nodes_sync_s");
  figures["pods_sync_s"] = p50("pods_pods_sync_s");
  figures["both_pods_sync_s"] = p50("both_pods_sync_s");
  figures["nodes_per_s"] = p50("nodes_nodes_per_s");
  figures["pods_per_s"] = p50("pods_pods_per_s");
  figures["nodes_pages"] = p50("nodes_list_pages");
  figures["pods_pages"] = p50("pods_list_pages");
  figures["nodes_rss_growth_mb"] = p50("nodes_rss_growth_mb");
  figures["pods_rss_growth_mb"] = p50("pods_rss_growth_mb");
  figures["nodes_peak_rss_mb"] = max("nodes_peak_rss_mb");
  figures["pods_peak_rss_mb"] = max("pods_peak_rss_mb");
  figures["both_peak_rss_mb"] = max("both_peak_rss_mb");
  figures["both_synced_rss_mb"] = p50("both_synced_rss_mb");
  figures["bytes_per_node"] = p50("nodes_bytes_per_object");
  figures["bytes_per_pod"] = p50("pods_bytes_per_object");
  figures["steady_requests_per_s"] = p50("steady_requests_per_s");
  if (!reuse) {
    figures["create_pods_per_s"] = created.pods_per_s;
    figures["create_nodes_per_s"] = created.nodes_per_s;
  }
  for (auto it = figures.begin(); it != figures.end();) {
    it = it->is_null() ? figures.erase(it) : std::next(it);
  }
  // One file per size, like health_latency_drain_N.json.
  const std::string stem = StrCat("k8s_list_cache_", have_nodes, "_", have_pods);
  skb::bench::WriteResult(
      out_dir, stem,
      {{"name", stem},
       {"description", "cold-start list+cache of nodes and pods by the bridge's informers"},
       {"unit", ""},
       {"figures", figures},
       {"figure_targets",
        {{"nodes_sync_s", "reported (5,000 nodes)"},
         {"pods_sync_s", "reported (50,000 pods)"},
         {"bytes_per_node", "<= 2048"},
         {"bytes_per_pod", "<= 1024"}}},
       {"details",
        {{"nodes", have_nodes},
         {"pods", have_pods},
         {"runs", runs},
         {"writers", writers},
         {"create",
          {{"nodes_s", created.node_s},
           {"pods_s", created.pod_s},
           {"requests_per_s", created.requests_per_s}}},
         {"figures", details},
         {"samples", samples}}},
       {"target",
        "list and cache 5,000 nodes and 50,000 pods; <= 2 KB per cached Node, <= 1 KB per "
        "cached Pod"},
       {"notes",
        StrCat(have_nodes, " nodes / ", have_pods, " pods on the testbed apiserver, created by ",
               writers,
               " concurrent writers; the informers as the daemon configures them (20 qps, "
               "burst 40, pages of 500, its field selection; nodes by the bench's label); "
               "*_sync_s p50 from start to HasSynced, peak RSS max of the fresh process "
               "(VmHWM), bytes per object = malloc'd bytes in use after sync / objects")}});
  // Written before the cleanup, which takes minutes at full size: an interrupted cleanup
  // (--cleanup finishes it) loses no figures.
  return keep || DeleteObjects(**admin, *workers) ? 0 : 1;
}
