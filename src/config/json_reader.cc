// SPDX-License-Identifier: Apache-2.0
#include "src/config/json_reader.h"

#include <charconv>
#include <cmath>

#include "src/base/strings.h"

namespace skb::config {
namespace {

const nlohmann::json& EmptyObject() {
  static const nlohmann::json* const kEmpty = new nlohmann::json(nlohmann::json::object());
  return *kEmpty;
}

std::string TypeName(const nlohmann::json& j) { return j.type_name(); }

// Schema recording (JsonReader::SchemaRecorder). Every key may be null: Lookup() treats a
// null as absent, so the parser accepts it.
constexpr char kAnyForm[] = "read in more than one form: checked by the daemon";
// ParseDuration's syntax, looser on the numbers ("1..2s" passes here, not there).
constexpr char kDurationPattern[] = "^([0-9.]+(ms|s|m|h))+$";

nlohmann::json Typed(std::string_view type) {
  return {{"type", nlohmann::json::array({std::string(type), "null"})}};
}

nlohmann::json ClosedObject() {
  return {{"type", "object"},
          {"properties", nlohmann::json::object()},
          {"additionalProperties", false}};
}

}  // namespace

StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty duration");
  std::chrono::duration<double, std::milli> total{0};
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t num_end = 0;
    while (num_end < rest.size() &&
           (std::isdigit(static_cast<unsigned char>(rest[num_end])) || rest[num_end] == '.')) {
      ++num_end;
    }
    if (num_end == 0) {
      return InvalidArgumentError(
          StrCat("duration '", text, "': expected a number, e.g. 500ms, 30s, 5m, 1h"));
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + num_end, value);
    if (ec != std::errc() || ptr != rest.data() + num_end) {
      return InvalidArgumentError(StrCat("duration '", text, "': bad number"));
    }
    rest.remove_prefix(num_end);
    size_t unit_end = 0;
    while (unit_end < rest.size() && std::isalpha(static_cast<unsigned char>(rest[unit_end]))) {
      ++unit_end;
    }
    std::string_view unit = rest.substr(0, unit_end);
    rest.remove_prefix(unit_end);
    double ms_per_unit = 0;
    if (unit == "ms") {
      ms_per_unit = 1;
    } else if (unit == "s") {
      ms_per_unit = 1000;
    } else if (unit == "m") {
      ms_per_unit = 60'000;
    } else if (unit == "h") {
      ms_per_unit = 3'600'000;
    } else {
      return InvalidArgumentError(
          StrCat("duration '", text, "': unit must be one of ms, s, m, h (got '", unit, "')"));
    }
    total += std::chrono::duration<double, std::milli>(value * ms_per_unit);
  }
  if (total.count() > 1e12) {
    return InvalidArgumentError(StrCat("duration '", text, "' is too large"));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total.count())));
}

JsonReader::JsonReader(const nlohmann::json& object, std::string path)
    : object_(object.is_object() ? object : EmptyObject()), path_(std::move(path)) {
  if (!object.is_object() && !object.is_null()) {
    status_ = InvalidArgumentError(
        StrCat("config: ", path_.empty() ? "the document" : "key '" + path_ + "'",
               ": expected an object, got ", TypeName(object)));
  }
}

JsonReader JsonReader::SchemaRecorder(nlohmann::json* schema) {
  *schema = ClosedObject();
  JsonReader r(EmptyObject(), "");
  r.schema_root_ = schema;
  return r;
}

nlohmann::json* JsonReader::SchemaNode() const {
  return schema_root_ == nullptr ? nullptr : &(*schema_root_)[schema_at_];
}

void JsonReader::Record(std::string_view key, nlohmann::json schema) {
  nlohmann::json& slot = (*SchemaNode())["properties"][std::string(key)];
  if (slot.is_object() && slot.value("$comment", "") == kAnyForm) return;
  slot = std::move(schema);
}

std::string JsonReader::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : StrCat(path_, ".", key);
}

void JsonReader::Fail(std::string_view key, std::string_view problem) {
  if (!status_.ok() || recording()) return;
  status_ = InvalidArgumentError(StrCat("config: key '", PathOf(key), "': ", problem));
}

void JsonReader::Merge(const Status& status) {
  if (recording()) return;
  if (status_.ok() && !status.ok()) status_ = status;
}

const nlohmann::json* JsonReader::Lookup(std::string_view key) {
  known_.emplace(key);
  if (!status_.ok()) return nullptr;
  auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonReader::String(std::string_view key, std::string* out) {
  if (recording()) Record(key, Typed("string"));
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return;
  if (!v->is_string()) return Fail(key, StrCat("expected a string, got ", TypeName(*v)));
  *out = v->get<std::string>();
}

void JsonReader::Bool(std::string_view key, bool* out) {
  if (recording()) Record(key, Typed("boolean"));
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return;
  if (!v->is_boolean()) return Fail(key, StrCat("expected true or false, got ", TypeName(*v)));
  *out = v->get<bool>();
}

void JsonReader::Int(std::string_view key, int64_t* out, int64_t min, int64_t max) {
  if (recording()) {
    nlohmann::json schema = Typed("integer");
    schema["minimum"] = min;
    schema["maximum"] = max;
    Record(key, std::move(schema));
  }
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return;
  if (!v->is_number_integer()) {
    return Fail(key, StrCat("expected an integer, got ", TypeName(*v)));
  }
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      return Fail(key, StrCat("must be between ", min, " and ", max, ", got ", u));
    }
    value = static_cast<int64_t>(u);
  } else {
    value = v->get<int64_t>();
  }
  if (value < min || value > max) {
    return Fail(key, StrCat("must be between ", min, " and ", max, ", got ", value));
  }
  *out = value;
}

void JsonReader::Double(std::string_view key, double* out, double min, double max) {
  if (recording()) {
    nlohmann::json schema = Typed("number");
    schema["minimum"] = min;
    schema["maximum"] = max;
    Record(key, std::move(schema));
  }
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return;
  if (!v->is_number()) return Fail(key, StrCat("expected a number, got ", TypeName(*v)));
  double value = v->get<double>();
  if (!(value >= min && value <= max)) {
    return Fail(key, StrCat("must be between ", min, " and ", max, ", got ", value));
  }
  *out = value;
}

void JsonReader::Duration(std::string_view key, std::chrono::milliseconds* out) {
  if (recording()) {
    nlohmann::json schema = Typed("string");
    schema["pattern"] = kDurationPattern;
    Record(key, std::move(schema));
  }
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return;
  if (!v->is_string()) {
    return Fail(key, StrCat("expected a duration string such as \"30s\", got ", TypeName(*v)));
  }
  auto d = ParseDuration(v->get<std::string>());
  if (!d.ok()) return Fail(key, d.status().message());
  *out = *d;
}

void JsonReader::StringList(std::string_view key, std::vector<std::string>* out) {
  if (recording()) {
    nlohmann::json schema = Typed("array");
    schema["items"] = {{"type", "string"}};
    Record(key, std::move(schema));
  }
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return;
  if (!v->is_array()) return Fail(key, StrCat("expected a list, got ", TypeName(*v)));
  std::vector<std::string> result;
  for (const auto& item : *v) {
    if (!item.is_string()) {
      return Fail(key, StrCat("expected a list of strings, found ", TypeName(item)));
    }
    result.push_back(item.get<std::string>());
  }
  *out = std::move(result);
}

void JsonReader::Enum(std::string_view key, std::string* out,
                      const std::vector<std::string>& allowed) {
  std::string value = *out;
  String(key, &value);
  if (recording()) {
    nlohmann::json values(allowed);
    values.push_back(nullptr);
    nlohmann::json schema = Typed("string");
    schema["enum"] = std::move(values);
    Record(key, std::move(schema));
  }
  if (!status_.ok()) return;
  for (const auto& a : allowed) {
    if (a == value) {
      *out = value;
      return;
    }
  }
  std::string list;
  for (const auto& a : allowed) StrAppend(&list, list.empty() ? "" : ", ", a);
  Fail(key, StrCat("must be one of ", list, ", got '", value, "'"));
}

JsonReader JsonReader::Object(std::string_view key) {
  if (recording()) {
    nlohmann::json schema = ClosedObject();
    schema["type"] = nlohmann::json::array({"object", "null"});
    if (!(*SchemaNode())["properties"].contains(std::string(key))) Record(key, std::move(schema));
    known_.emplace(key);
    JsonReader sub(EmptyObject(), PathOf(key));
    sub.schema_root_ = schema_root_;
    sub.schema_at_ = schema_at_ / "properties" / std::string(key);
    return sub;
  }
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return JsonReader(EmptyObject(), PathOf(key));
  return JsonReader(*v, PathOf(key));
}

bool JsonReader::ObjectList(std::string_view key,
                            const std::function<void(JsonReader&)>& read_one) {
  if (recording()) {
    // The elements' keys: read_one once, on a recorder for the schema of every element.
    nlohmann::json schema = Typed("array");
    schema["items"] = ClosedObject();
    Record(key, std::move(schema));
    known_.emplace(key);
    JsonReader sub(EmptyObject(), StrCat(PathOf(key), "[]"));
    sub.schema_root_ = schema_root_;
    sub.schema_at_ = schema_at_ / "properties" / std::string(key) / "items";
    read_one(sub);
    return false;
  }
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return false;
  if (!v->is_array()) {
    Fail(key, StrCat("expected a list of objects, got ", TypeName(*v)));
    return true;
  }
  for (size_t i = 0; i < v->size() && status_.ok(); ++i) {
    const nlohmann::json& item = (*v)[i];
    std::string path = StrCat(PathOf(key), "[", i, "]");
    if (!item.is_object()) {
      status_ = InvalidArgumentError(
          StrCat("config: key '", path, "': expected an object, got ", TypeName(item)));
      break;
    }
    JsonReader sub(item, path);
    read_one(sub);
    Merge(sub.Finish());
  }
  return true;
}

bool JsonReader::List(
    std::string_view key,
    const std::function<Status(const nlohmann::json& item, const std::string& path)>& read_one) {
  // Elements of more than one form: the schema says only "a list".
  if (recording()) Record(key, Typed("array"));
  const nlohmann::json* v = Lookup(key);
  if (v == nullptr) return false;
  if (!v->is_array()) {
    Fail(key, StrCat("expected a list, got ", TypeName(*v)));
    return true;
  }
  for (size_t i = 0; i < v->size() && status_.ok(); ++i) {
    Merge(read_one((*v)[i], StrCat(PathOf(key), "[", i, "]")));
  }
  return true;
}

Status JsonReader::StringMap(std::map<std::string, std::string>* out) {
  if (nlohmann::json* node = SchemaNode(); node != nullptr) {
    (*node)["additionalProperties"] = {{"type", "string"}};
  }
  std::map<std::string, std::string> result;
  for (const auto& [k, v] : object_.items()) {
    known_.insert(k);
    if (!v.is_string()) {
      Fail(k, StrCat("expected a string, got ", TypeName(v)));
      break;
    }
    result.emplace(k, v.get<std::string>());
  }
  if (status_.ok()) *out = std::move(result);
  return Finish();
}

std::vector<std::string> JsonReader::Keys() const {
  // Keys that are data: the schema accepts any key here, with any value.
  if (nlohmann::json* node = SchemaNode(); node != nullptr) (*node)["additionalProperties"] = true;
  std::vector<std::string> out;
  if (object_.is_object()) {
    for (const auto& [k, unused] : object_.items()) out.push_back(k);
  }
  return out;
}

std::string JsonReader::TypeOf(std::string_view key) const {
  if (nlohmann::json* node = SchemaNode(); node != nullptr) {
    (*node)["properties"][std::string(key)] = {{"$comment", kAnyForm}};
    return "";
  }
  if (!object_.is_object()) return "";
  auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) return "";
  return TypeName(*it);
}

Status JsonReader::Finish() {
  if (recording()) return OkStatus();
  // An unknown key is reported first: a misspelt key is usually why a required value is
  // missing, so it is the more useful message.
  for (const auto& [k, unused] : object_.items()) {
    if (known_.find(k) == known_.end()) {
      return InvalidArgumentError(
          StrCat("config: unknown key '", PathOf(k), "' (misspelt or not supported)"));
    }
  }
  return status_;
}

}  // namespace skb::config
