// SPDX-License-Identifier: Apache-2.0
// Strict reading of a JSON object into typed fields, with errors that name the key.
//
// Every key the reader is asked for is marked as known; Finish() reports any key that
// was never asked for, so a misspelt option is an error at startup rather than a silent
// default. Errors carry the full dotted path of the offending key.
//
//   JsonReader r(json, "slurm");
//   r.Duration("poll_interval", &cfg.poll_interval);   // "500ms", "2s", "1m"
//   r.String("conf", &cfg.conf);
//   RETURN_IF_ERROR(r.Finish());
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace skb::config {

// Parses a duration such as "250ms", "30s", "5m", "1h", "1m30s" (Go's syntax, no sign).
StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);

class JsonReader {
 public:
  // `object` must outlive the reader. `path` is the dotted prefix used in messages ("" for
  // the root).
  JsonReader(const nlohmann::json& object, std::string path);

  // A reader that reads nothing (every key is absent, so every field keeps its default) and
  // records, in *schema, a JSON Schema (draft-07) of each key it is asked for: its type,
  // range or allowed values, nested objects and lists of objects, every object closed
  // (additionalProperties false) as Finish() closes it. Running the same Read* functions
  // on it gives the schema of exactly the keys they read (ConfigSchema() in config.h).
  // What the schema cannot say, cross-field checks and Fail()s, stays the parser's: a
  // document the schema accepts may still be refused, never the other way round. Keys
  // read in more than one form (TypeOf) and maps whose keys are data (Keys) accept any
  // value there. `*schema` must outlive the reader and its copies.
  static JsonReader SchemaRecorder(nlohmann::json* schema);

  // Each reads an optional key: absent leaves *out unchanged (the default); present with
  // the wrong type records an error. The first error wins; later calls are no-ops.
  void String(std::string_view key, std::string* out);
  void Bool(std::string_view key, bool* out);
  void Int(std::string_view key, int64_t* out, int64_t min, int64_t max);
  void Double(std::string_view key, double* out, double min, double max);
  void Duration(std::string_view key, std::chrono::milliseconds* out);
  void StringList(std::string_view key, std::vector<std::string>* out);
  // A string that must be one of `allowed`.
  void Enum(std::string_view key, std::string* out, const std::vector<std::string>& allowed);
  // Returns a reader for a nested object (an empty object when absent).
  JsonReader Object(std::string_view key);
  // Reads a list of objects: calls `read_one` with a reader for each element (path
  // "key[i]") and records the first error, including an element's unknown keys. Returns
  // whether the key was present (absent: `read_one` is never called).
  bool ObjectList(std::string_view key, const std::function<void(JsonReader&)>& read_one);
  // Reads a list whose elements take more than one form: calls `read_one` with each element
  // and its path ("key[i]"), and records the first error it returns. Returns whether the key
  // was present.
  bool List(
      std::string_view key,
      const std::function<Status(const nlohmann::json& item, const std::string& path)>& read_one);
  // Reads this whole object as a free-form map of strings (every key is accepted) and
  // returns Finish(). For maps whose keys are data, not option names.
  Status StringMap(std::map<std::string, std::string>* out);
  // The keys of this object, for maps whose keys are data (read each with the typed
  // readers above, which marks it known).
  std::vector<std::string> Keys() const;
  // The JSON type of `key` ("number", "object", "string"...; "" when absent or null), for
  // keys that take more than one form. Does not mark the key known: read it afterwards.
  std::string TypeOf(std::string_view key) const;
  // Records an error from a nested reader or a cross-field check.
  void Merge(const Status& status);
  void Fail(std::string_view key, std::string_view problem);

  // OK, or the first error: a wrong type, an out-of-range value or an unknown key.
  Status Finish();

  std::string PathOf(std::string_view key) const;

 private:
  const nlohmann::json* Lookup(std::string_view key);
  // Schema recording (SchemaRecorder): whether this reader records; the schema of `key` in
  // this object (kept when the key was recorded as taking any form); this object's schema
  // (nullptr when not recording).
  bool recording() const { return schema_root_ != nullptr; }
  void Record(std::string_view key, nlohmann::json schema);
  nlohmann::json* SchemaNode() const;

  const nlohmann::json& object_;
  std::string path_;
  // Recording a schema: the root document and where this object's schema sits in it.
  nlohmann::json* schema_root_ = nullptr;
  nlohmann::json::json_pointer schema_at_;
  std::set<std::string, std::less<>> known_;
  Status status_;
};

}  // namespace skb::config
