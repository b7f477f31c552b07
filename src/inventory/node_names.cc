// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/node_names.h"

#include "src/base/strings.h"
#include "src/config/json_reader.h"

namespace skb::inventory {
namespace {

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

}  // namespace

std::string NodeNameMap::SlurmName(std::string_view k8s_name) const {
  if (auto it = explicit_names.find(k8s_name); it != explicit_names.end()) return it->second;
  switch (mode) {
    case Mode::kIdentity:
    case Mode::kLabel:
      return std::string(k8s_name);
    case Mode::kStripDomain:
      if (strip_suffix.empty()) {
        size_t dot = k8s_name.find('.');
        return std::string(dot == 0 || dot == std::string_view::npos ? k8s_name
                                                                     : k8s_name.substr(0, dot));
      }
      // Never an empty name: ".example.org" stays as it is.
      if (k8s_name.size() > strip_suffix.size() && k8s_name.ends_with(strip_suffix)) {
        return std::string(k8s_name.substr(0, k8s_name.size() - strip_suffix.size()));
      }
      return std::string(k8s_name);
    case Mode::kTemplate: {
      std::string_view short_name = k8s_name.substr(0, k8s_name.find('.'));
      return ReplaceAll(ReplaceAll(name_template, "{name}", k8s_name), "{short}", short_name);
    }
  }
  return std::string(k8s_name);
}

std::optional<std::string> NodeNameMap::SlurmName(const K8sNode& node) const {
  if (auto it = explicit_names.find(node.name); it != explicit_names.end()) return it->second;
  if (mode != Mode::kLabel) return SlurmName(node.name);
  std::optional<std::string> v = node.Label(label);
  if (!v || v->empty()) return std::nullopt;
  return v;
}

std::string NodeNameMap::Describe() const {
  std::string d;
  switch (mode) {
    case Mode::kIdentity:
      d = "identity";
      break;
    case Mode::kStripDomain:
      d = strip_suffix.empty() ? "strip_domain (up to the first dot)"
                               : StrCat("strip_domain ", strip_suffix);
      break;
    case Mode::kTemplate:
      d = StrCat("template ", name_template);
      break;
    case Mode::kLabel:
      d = StrCat("label ", label);
      break;
  }
  if (!explicit_names.empty()) StrAppend(&d, " (+", explicit_names.size(), " explicit)");
  return d;
}

Status ReadNodeNames(config::JsonReader r, NodeNameMap* out) {
  std::string mode = "identity";
  r.Enum("mode", &mode, {"identity", "strip_domain", "template", "label"});
  std::string domain;
  r.String("domain", &domain);
  r.String("template", &out->name_template);
  r.String("label", &out->label);
  std::map<std::string, std::string> explicit_names;
  r.Merge(r.Object("map").StringMap(&explicit_names));
  out->explicit_names.insert(explicit_names.begin(), explicit_names.end());
  for (const auto& [k, v] : explicit_names) {
    if (v.empty()) r.Fail("map", StrCat("node '", k, "' maps to an empty name"));
  }
  if (mode == "identity") {
    out->mode = NodeNameMap::Mode::kIdentity;
  } else if (mode == "strip_domain") {
    out->mode = NodeNameMap::Mode::kStripDomain;
    if (!domain.empty() && domain.front() != '.') domain.insert(0, ".");
    if (domain == ".") r.Fail("domain", "must name a domain, e.g. \"example.org\"");
    out->strip_suffix = domain;
  } else if (mode == "template") {
    out->mode = NodeNameMap::Mode::kTemplate;
    if (out->name_template.find("{name}") == std::string::npos &&
        out->name_template.find("{short}") == std::string::npos) {
      r.Fail("template", "must contain {name} or {short} (every node would get one name)");
    }
    for (size_t open = out->name_template.find('{'); open != std::string::npos;
         open = out->name_template.find('{', open + 1)) {
      size_t close = out->name_template.find('}', open);
      std::string_view field =
          std::string_view(out->name_template)
              .substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
      if (field != "{name}" && field != "{short}") {
        r.Fail("template", StrCat("has '", field, "': the placeholders are {name} and {short}"));
        break;
      }
    }
  } else if (mode == "label") {
    out->mode = NodeNameMap::Mode::kLabel;
    if (out->label.empty()) r.Fail("label", "must name the node label holding the Slurm name");
  }
  if (!domain.empty() && out->mode != NodeNameMap::Mode::kStripDomain) {
    r.Fail("domain", "is only used with mode strip_domain");
  }
  if (!out->name_template.empty() && out->mode != NodeNameMap::Mode::kTemplate) {
    r.Fail("template", "is only used with mode template");
  }
  if (!out->label.empty() && out->mode != NodeNameMap::Mode::kLabel) {
    r.Fail("label", "is only used with mode label");
  }
  return r.Finish();
}

}  // namespace skb::inventory
