// SPDX-License-Identifier: Apache-2.0
#include "src/slurm/syntax.h"

#include <algorithm>
#include <charconv>

#include "src/base/strings.h"

namespace skb::slurm {
namespace {

constexpr std::string_view kAnnotationPrefix = "k8s-bridge:";
// No real request names anywhere near this many GPUs; bigger numbers are garbage.
constexpr int64_t kMaxCount = int64_t{1} << 40;

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "8", "2K", "1M": Slurm's count syntax. nullopt when not a count.
std::optional<int64_t> ParseCount(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t mult = 1;
  switch (s.back()) {
    case 'k':
    case 'K':
      mult = 1024;
      s.remove_suffix(1);
      break;
    case 'm':
    case 'M':
      mult = 1024 * 1024;
      s.remove_suffix(1);
      break;
    case 'g':
    case 'G':
      mult = int64_t{1024} * 1024 * 1024;
      s.remove_suffix(1);
      break;
    default:
      break;
  }
  if (!IsDigits(s) || s.size() > 15) return std::nullopt;
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  if (v > kMaxCount / mult) return std::nullopt;
  return v * mult;
}

void AddGpus(std::vector<GpuCount>* out, std::string type, int64_t count) {
  for (auto& g : *out) {
    if (g.type == type) {
      g.count += count;
      return;
    }
  }
  out->push_back({std::move(type), count});
}

}  // namespace

std::vector<GpuCount> ParseNodeGpus(std::string_view gres) {
  std::vector<GpuCount> out;
  // Entries are comma-separated, but a "(S:0-1)" or "(IDX:0,2)" suffix may itself contain
  // commas: split only at top-level commas.
  size_t depth = 0, start = 0;
  std::vector<std::string_view> entries;
  for (size_t i = 0; i <= gres.size(); ++i) {
    if (i == gres.size() || (gres[i] == ',' && depth == 0)) {
      entries.push_back(gres.substr(start, i - start));
      start = i + 1;
    } else if (gres[i] == '(') {
      ++depth;
    } else if (gres[i] == ')' && depth > 0) {
      --depth;
    }
  }
  for (std::string_view e : entries) {
    e = StripWhitespace(e);
    if (auto paren = e.find('('); paren != std::string_view::npos) e = e.substr(0, paren);
    std::vector<std::string_view> f = StrSplit(e, ':');
    if (f.empty() || f[0] != "gpu") continue;
    std::string type;
    int64_t count = 1;
    if (f.size() == 2) {
      if (auto c = ParseCount(f[1]))
        count = *c;
      else
        type = std::string(f[1]);
    } else if (f.size() >= 3) {
      type = std::string(f[1]);
      count = ParseCount(f[2]).value_or(0);
    }
    AddGpus(&out, std::move(type), count);
  }
  return out;
}

StatusOr<std::vector<GresRequest>> ParseTresRequest(std::string_view tres) {
  std::vector<GresRequest> out;
  std::string normalized(tres);
  std::replace(normalized.begin(), normalized.end(), ';', ',');
  for (std::string_view entry : StrSplit(normalized, ',', /*skip_empty=*/true)) {
    entry = StripWhitespace(entry);
    if (entry.empty()) continue;
    if (out.size() >= 64) return InvalidArgumentError("more than 64 TRES entries");
    std::string_view rest;
    if (entry.rfind("gres:", 0) == 0 || entry.rfind("gres/", 0) == 0) {
      rest = entry.substr(5);
    } else if (entry.find('=') != std::string_view::npos ||
               entry.find('/') != std::string_view::npos) {
      continue;  // cpu=2, mem=1G, license/x=1: not generic resources
    } else {
      rest = entry;
    }
    // "gpu:h100=2" (TRES form) -> "gpu:h100:2".
    std::string r(rest);
    std::replace(r.begin(), r.end(), '=', ':');
    std::vector<std::string_view> f = StrSplit(r, ':');
    GresRequest req;
    if (f.empty() || f[0].empty()) {
      return InvalidArgumentError(StrCat("malformed gres request '", entry, "'"));
    }
    req.name = std::string(f[0]);
    if (f.size() == 2) {
      if (auto c = ParseCount(f[1]))
        req.count = *c;
      else
        req.type = std::string(f[1]);
    } else if (f.size() == 3) {
      req.type = std::string(f[1]);
      auto c = ParseCount(f[2]);
      if (!c) {
        return InvalidArgumentError(
            StrCat("gres request '", entry, "': count '", f[2], "' is not a number"));
      }
      req.count = *c;
    } else if (f.size() > 3) {
      return InvalidArgumentError(StrCat("malformed gres request '", entry, "'"));
    }
    if (req.type.size() > 64 || req.name.size() > 64) {
      return InvalidArgumentError(
          StrCat("gres name or type too long in '", entry.substr(0, 80), "'"));
    }
    out.push_back(std::move(req));
  }
  return out;
}

int64_t GpusInTres(std::string_view tres) {
  auto requests = ParseTresRequest(tres);
  if (!requests.ok()) return 0;
  int64_t n = 0;
  for (const GresRequest& r : *requests) {
    if (r.name == "gpu" && r.count > 0) n += r.count;
  }
  return n;
}

std::string RequestedGpuType(std::string_view tres) {
  auto requests = ParseTresRequest(tres);
  if (!requests.ok()) return "";
  for (const GresRequest& r : *requests) {
    if (r.name == "gpu" && !r.type.empty()) return r.type;
  }
  return "";
}

StatusOr<std::vector<std::string>> ParseConstraintFeatures(std::string_view constraint) {
  std::vector<std::string> out;
  std::string current;
  bool after_star = false;
  auto flush = [&]() {
    if (!current.empty() && !(after_star && IsDigits(current)) &&
        std::find(out.begin(), out.end(), current) == out.end()) {
      out.push_back(current);
    }
    current.clear();
  };
  for (char c : constraint) {
    const bool name_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == '=' ||
                           c == ':' || c == '+' || c == '/';
    if (name_char) {
      current.push_back(c);
      continue;
    }
    if (c == '&' || c == '|' || c == ',' || c == '(' || c == ')' || c == '[' || c == ']' ||
        c == '*' || c == ' ' || c == '!') {
      flush();
      after_star = c == '*';
      if (out.size() > 256) return InvalidArgumentError("constraint names more than 256 features");
      continue;
    }
    return InvalidArgumentError(
        StrCat("character '", std::string(1, c), "' is not allowed in a --constraint expression"));
  }
  flush();
  return out;
}

std::string FormatAnnotation(const Annotation& a) {
  std::string out = StrCat(kAnnotationPrefix, "preemptible=", a.preemptible ? "true" : "false");
  if (a.signal) {
    StrAppend(&out, ",signal=", a.signal->signal, "@", a.signal->seconds,
              a.signal->batch_only ? ":B" : "");
  }
  if (a.partitions) StrAppend(&out, ",partitions=", StrJoin(*a.partitions, "+"));
  if (a.qos) StrAppend(&out, ",qos=", *a.qos);
  return out;
}

std::optional<Annotation> ParseAnnotation(std::string_view admin_comment) {
  for (std::string_view tok : StrSplit(admin_comment, ' ', /*skip_empty=*/true)) {
    if (tok.rfind(kAnnotationPrefix, 0) != 0) continue;
    Annotation a;
    bool ok = false;
    for (std::string_view kv : StrSplit(tok.substr(kAnnotationPrefix.size()), ',', true)) {
      auto eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "preemptible") {
        a.preemptible = v == "true";
        ok = true;
      } else if (k == "signal") {
        SignalSpec s;
        if (v.size() > 2 && v.substr(v.size() - 2) == ":B") {
          s.batch_only = true;
          v.remove_suffix(2);
        }
        auto at = v.find('@');
        if (at == std::string_view::npos) continue;
        auto sig = ParseCount(v.substr(0, at)), secs = ParseCount(v.substr(at + 1));
        if (!sig || !secs || *sig > 64 || *secs > 65535) continue;
        s.signal = static_cast<int>(*sig);
        s.seconds = static_cast<int>(*secs);
        a.signal = s;
      } else if (k == "partitions") {
        std::vector<std::string> parts;
        for (std::string_view p : StrSplit(v, '+', /*skip_empty=*/true)) parts.emplace_back(p);
        a.partitions = std::move(parts);
      } else if (k == "qos") {
        a.qos = std::string(v);
      }
    }
    if (ok) return a;
  }
  return std::nullopt;
}

std::string MergeAnnotation(std::string_view admin_comment, const Annotation& a) {
  // Remove earlier bridge tokens (and the one space before each), keep everything else
  // byte for byte.
  std::string out(admin_comment);
  size_t pos = 0;
  while ((pos = out.find(kAnnotationPrefix, pos)) != std::string::npos) {
    if (pos > 0 && out[pos - 1] != ' ' && out[pos - 1] != '\n' && out[pos - 1] != '\t') {
      pos += kAnnotationPrefix.size();
      continue;
    }
    size_t end = out.find_first_of(" \t\n", pos);
    if (end == std::string::npos) end = out.size();
    size_t begin = pos;
    if (pos > 0 && out[pos - 1] == ' ') {
      --begin;
    } else if (end < out.size() && out[end] == ' ') {
      ++end;  // a token at the start: drop the space after it instead
    }
    out.erase(begin, end - begin);
    pos = begin;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\t')) {
    out.pop_back();
  }
  if (!out.empty()) out += ' ';
  out += FormatAnnotation(a);
  return out;
}

}  // namespace skb::slurm
