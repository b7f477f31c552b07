// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/preemption_history.h"

#include <algorithm>
#include <map>

#include "bridge/cli/format.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Obj(const json& obj, const char* key) {
  static const json kEmpty = json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

// Where each reason sits in the lend flow: orders Events of the same second (Kubernetes
// timestamps have seconds only). -1: not part of a lend.
int Rank(const std::string& reason) {
  static const std::map<std::string, int, std::less<>> kRanks = {
      {"LendingToKubernetes", 0},    {"ReservationMissing", 0},
      {"SlurmNodeLent", 1},          {"LendBlockedByProtectedJobs", 2},
      {"SlurmWorkRemains", 2},       {"SlurmJobsSignalled", 3},
      {"CheckpointGraceStarted", 4}, {"SlurmJobsPreempted", 5},
      {"ReservationReleased", 6},    {"LendCompleted", 7},
      {"SlurmWorkGone", 7},          {"LentNodeInUse", 8},
      {"LentNodeIdle", 8},           {"ReturnAbandoned", 8},
      {"ReturningToSlurm", 9},       {"SlurmNodeReturned", 10},
      {"ReturnedToSlurm", 11}};
  auto it = kRanks.find(reason);
  return it == kRanks.end() ? -1 : it->second;
}

struct Occurrence {
  Clock::TimePoint at;
  int rank;
  std::string reason, message, type;
};

// "... Kubernetes (ns/pod)..." -> "ns/pod".
std::string Preemptor(const std::string& message) {
  const std::string key = "Kubernetes (";
  size_t at = message.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  size_t end = message.find(')', at);
  return end == std::string::npos ? "" : message.substr(at, end - at);
}

// "... job(s) 12,13 on node ..." / "... job(s) 12 may not ..." -> {"12", "13"}.
std::vector<std::string> JobIds(const std::string& message) {
  std::vector<std::string> ids;
  const std::string key = "job(s) ";
  size_t at = message.find(key);
  if (at == std::string::npos) return ids;
  at += key.size();
  size_t end = message.find(' ', at);
  std::string list = message.substr(at, end == std::string::npos ? std::string::npos : end - at);
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string id =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!id.empty()) ids.push_back(id);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

void AddAll(std::vector<std::string>* to, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (std::find(to->begin(), to->end(), id) == to->end()) to->push_back(id);
  }
}

std::optional<Clock::TimePoint> Time(const json& event, const char* key) {
  std::string s = Str(event, key);
  if (s.empty()) return std::nullopt;
  auto t = k8s::ParseTime(s);
  if (!t.ok()) return std::nullopt;
  return *t;
}

std::string When(const std::optional<Clock::TimePoint>& t) { return t ? k8s::FormatTime(*t) : "-"; }

}  // namespace

StatusOr<std::vector<json>> ListLendEvents(k8s::KubeClient& kube, const std::string& node) {
  k8s::ListOptions options;
  options.field_selector = "involvedObject.kind=Node";
  if (!node.empty()) options.field_selector += ",involvedObject.name=" + node;
  options.limit = 500;
  ASSIGN_OR_RETURN(k8s::ListResult r, k8s::ListAll(kube, k8s::Resource::Events(), "", options));
  return std::move(r.items);
}

std::vector<Preemption> PreemptionsFromEvents(const std::vector<json>& events) {
  std::map<std::string, std::vector<Occurrence>> by_node;
  for (const json& e : events) {
    if (!e.is_object()) continue;
    const json& obj = Obj(e, "involvedObject");
    if (Str(obj, "kind") != "Node" || Str(obj, "name").empty()) continue;
    const std::string reason = Str(e, "reason");
    const int rank = Rank(reason);
    if (rank < 0) continue;
    const std::string message = Str(e, "message");
    if (reason == "ReservationMissing" && message.find("lent to Kubernetes") == std::string::npos) {
      continue;  // a reservation recreated for Slurm: no lend
    }
    auto first = Time(e, "firstTimestamp");
    if (!first) first = Time(e, "eventTime");
    if (!first) first = Time(Obj(e, "metadata"), "creationTimestamp");
    if (!first) continue;
    auto& occ = by_node[Str(obj, "name")];
    occ.push_back({*first, rank, reason, message, Str(e, "type")});
    auto last = Time(e, "lastTimestamp");
    auto count = e.find("count");
    if (last && *last > *first && count != e.end() && count->is_number_integer() &&
        count->get<int64_t>() > 1) {
      occ.push_back({*last, rank, reason, message, Str(e, "type")});
    }
  }
  std::vector<Preemption> out;
  for (auto& [node, occ] : by_node) {
    std::stable_sort(occ.begin(), occ.end(), [](const Occurrence& a, const Occurrence& b) {
      return a.at != b.at ? a.at < b.at : a.rank < b.rank;
    });
    std::optional<Preemption> cur;
    auto finish = [&] {
      if (cur) out.push_back(std::move(*cur));
      cur.reset();
    };
    for (const Occurrence& o : occ) {
      const bool ends = o.reason == "SlurmNodeReturned" || o.reason == "ReturnedToSlurm";
      if (ends) {
        if (cur && !cur->returned) cur->returned = o.at;
        continue;
      }
      if (o.rank >= 8) continue;  // life of a lent node, not a new lend
      if (cur && cur->returned) finish();
      // A lend starts with the lent-at record (LendingToKubernetes, or ReservationMissing
      // for a node Kubernetes took without one) or drains for another preemptor: an open
      // lend before it never had its return recorded.
      const bool starts =
          o.rank == 0 || (o.reason == "SlurmNodeLent" && cur && !cur->lent_to.empty() &&
                          Preemptor(o.message) != cur->lent_to);
      if (cur && starts) {
        cur->superseded = true;
        finish();
      }
      if (!cur) {
        cur = Preemption{.node = node, .started = o.at};
      }
      if (cur->lent_to.empty()) cur->lent_to = Preemptor(o.message);
      if (o.type == "Warning" && o.reason != "LendBlockedByProtectedJobs") {
        cur->warnings.push_back(StrCat(o.reason, ": ", o.message));
      }
      if (o.reason == "SlurmJobsSignalled") AddAll(&cur->signalled, JobIds(o.message));
      if (o.reason == "LendBlockedByProtectedJobs") AddAll(&cur->blocked, JobIds(o.message));
      if (o.reason == "SlurmJobsPreempted") {
        AddAll(&cur->preempted, JobIds(o.message));
        size_t end = o.message.find(" Slurm job(s)");
        if (end != std::string::npos) cur->preempt_mode = o.message.substr(0, end);
      }
      if (o.reason == "ReservationReleased" && !cur->released) cur->released = o.at;
    }
    finish();
  }
  std::stable_sort(out.begin(), out.end(), [](const Preemption& a, const Preemption& b) {
    return a.started != b.started ? a.started < b.started : a.node < b.node;
  });
  return out;
}

std::string Outcome(const Preemption& p) {
  if (p.returned) return "returned to Slurm";
  if (p.superseded) return "no return recorded";
  if (p.released) return "lent to Kubernetes";
  if (!p.blocked.empty()) return StrCat("waiting for protected job(s) ", StrJoin(p.blocked, ","));
  return "lending";
}

Listing PreemptionsListing(const std::vector<Preemption>& history, bool wide) {
  Listing out;
  if (history.empty()) {
    out.notes = "No preemptions in the Events the apiserver keeps.\n";
    return out;
  }
  std::vector<std::vector<std::string>>& rows = out.rows;
  std::vector<std::string> head = {"LENT-AT",   "NODE",     "LENT-TO", "SIGNALLED",
                                   "PREEMPTED", "RELEASED", "OUTCOME", "RETURNED"};
  if (wide) head.push_back("WARNINGS");
  rows.push_back(head);
  for (const Preemption& p : history) {
    std::string preempted = "-";
    if (!p.preempted.empty()) {
      std::string mode = p.preempt_mode.empty() ? "preempted" : p.preempt_mode;
      std::transform(mode.begin(), mode.end(), mode.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      preempted = StrCat(mode, " ", StrJoin(p.preempted, ","));
    }
    std::vector<std::string> row = {k8s::FormatTime(p.started),
                                    p.node,
                                    p.lent_to.empty() ? "-" : p.lent_to,
                                    p.signalled.empty() ? "-" : StrJoin(p.signalled, ","),
                                    preempted,
                                    When(p.released),
                                    Outcome(p),
                                    When(p.returned)};
    if (wide) row.push_back(p.warnings.empty() ? "-" : StrJoin(p.warnings, "; "));
    rows.push_back(std::move(row));
  }
  return out;
}

json PreemptionsJson(const std::vector<Preemption>& history) {
  json items = json::array();
  auto opt = [](const std::optional<Clock::TimePoint>& t) -> json {
    return t ? json(k8s::FormatTime(*t)) : json(nullptr);
  };
  for (const Preemption& p : history) {
    items.push_back({{"node", p.node},
                     {"lentAt", k8s::FormatTime(p.started)},
                     {"lentTo", p.lent_to},
                     {"signalled", p.signalled},
                     {"preempted", p.preempted},
                     {"preemptMode", p.preempt_mode},
                     {"blocked", p.blocked},
                     {"releasedAt", opt(p.released)},
                     {"returnedAt", opt(p.returned)},
                     {"outcome", Outcome(p)},
                     {"warnings", p.warnings}});
  }
  return {{"preemptions", std::move(items)}};
}

}  // namespace skb::bridge::cli
