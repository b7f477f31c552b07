// SPDX-License-Identifier: Apache-2.0
#include "k8s/field_reader.h"

#include "src/base/strings.h"

namespace skb::k8s {

std::string_view JsonTypeName(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "list";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number";
    default:
      return "other";
  }
}

namespace {
const nlohmann::json& EmptyObject() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}

std::string_view WantName(nlohmann::json::value_t t) {
  switch (t) {
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "a list";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    default:
      return "an integer";
  }
}
}  // namespace

FieldReader::FieldReader(const nlohmann::json& obj, std::string path,
                         std::vector<FieldIssue>* issues)
    : obj_(obj.is_object() ? &obj : &EmptyObject()), path_(std::move(path)), issues_(issues) {}

std::string FieldReader::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : StrCat(path_, ".", key);
}

std::string StringAt(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string MetadataString(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return "";
  auto meta = obj.find("metadata");
  return meta != obj.end() ? StringAt(*meta, key) : "";
}

std::string JsonPointerSegment(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

void FieldReader::AddIssue(std::string field, std::string problem) const {
  if (issues_ != nullptr) issues_->push_back({std::move(field), std::move(problem)});
}

const nlohmann::json* FieldReader::Find(std::string_view key, nlohmann::json::value_t want) const {
  auto it = obj_->find(key);
  if (it == obj_->end() || it->is_null()) return nullptr;
  bool ok = it->type() == want ||
            (want == nlohmann::json::value_t::number_integer && it->is_number_integer());
  if (!ok) {
    AddIssue(PathOf(key), StrCat("expected ", WantName(want), ", got ", JsonTypeName(*it)));
    return nullptr;
  }
  return &*it;
}

std::string FieldReader::String(std::string_view key) const {
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::string);
  return v ? v->get<std::string>() : std::string();
}

bool FieldReader::Bool(std::string_view key) const {
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::boolean);
  return v ? v->get<bool>() : false;
}

std::optional<int64_t> FieldReader::Int(std::string_view key) const {
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::number_integer);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    AddIssue(PathOf(key), "integer out of range");
    return std::nullopt;
  }
  return v->get<int64_t>();
}

std::map<std::string, std::string> FieldReader::StringMap(std::string_view key) const {
  std::map<std::string, std::string> out;
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::object);
  if (v == nullptr) return out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (it->is_string()) {
      out.emplace(it.key(), it->get<std::string>());
    } else {
      AddIssue(StrCat(PathOf(key), "[", it.key(), "]"),
               StrCat("expected a string, got ", JsonTypeName(*it)));
    }
  }
  return out;
}

std::vector<std::string> FieldReader::StringList(std::string_view key) const {
  std::vector<std::string> out;
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::array);
  if (v == nullptr) return out;
  for (size_t i = 0; i < v->size(); ++i) {
    const nlohmann::json& e = (*v)[i];
    if (e.is_string()) {
      out.push_back(e.get<std::string>());
    } else {
      AddIssue(StrCat(PathOf(key), "[", i, "]"),
               StrCat("expected a string, got ", JsonTypeName(e)));
    }
  }
  return out;
}

std::map<std::string, Quantity> FieldReader::QuantityMap(std::string_view key) const {
  std::map<std::string, Quantity> out;
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::object);
  if (v == nullptr) return out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string field = StrCat(PathOf(key), "[", it.key(), "]");
    if (!it->is_string()) {
      // The apiserver always serialises quantities as strings; a number is a foreign writer.
      AddIssue(field, StrCat("expected a quantity string, got ", JsonTypeName(*it)));
      continue;
    }
    auto q = Quantity::Parse(it->get_ref<const std::string&>());
    if (!q.ok()) {
      AddIssue(field, q.status().message());
      continue;
    }
    out.emplace(it.key(), *q);
  }
  return out;
}

FieldReader FieldReader::Sub(std::string_view key) const {
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::object);
  return FieldReader(v ? *v : EmptyObject(), PathOf(key), issues_);
}

std::vector<FieldReader> FieldReader::ObjectList(std::string_view key) const {
  std::vector<FieldReader> out;
  const nlohmann::json* v = Find(key, nlohmann::json::value_t::array);
  if (v == nullptr) return out;
  for (size_t i = 0; i < v->size(); ++i) {
    const nlohmann::json& e = (*v)[i];
    std::string path = StrCat(PathOf(key), "[", i, "]");
    if (e.is_object()) {
      out.emplace_back(e, std::move(path), issues_);
    } else {
      AddIssue(std::move(path), StrCat("expected an object, got ", JsonTypeName(e)));
    }
  }
  return out;
}

}  // namespace skb::k8s
