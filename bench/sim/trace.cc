// SPDX-License-Identifier: Apache-2.0
#include "bench/sim/trace.h"

#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "src/base/strings.h"

namespace skb::sim {
namespace {

// One CSV file read row by row: columns by header name, errors with the line number.
// Fields are plain (the trace never quotes); a quote is refused rather than misread.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  Status ReadHeader(const std::vector<std::string_view>& required) {
    if (!NextLine()) return Error("empty file (no header line)");
    for (size_t i = 0; i < fields_.size(); ++i) columns_[std::string(fields_[i])] = i;
    for (std::string_view c : required) {
      if (!columns_.contains(std::string(c))) {
        return Error(StrCat("missing column '", c, "' in the header"));
      }
    }
    return OkStatus();
  }

  // Advances to the next non-blank line; false at the end.
  bool NextLine() {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (StripWhitespace(line).empty()) continue;
      fields_ = StrSplit(line, ',');
      return true;
    }
    return false;
  }

  Status CheckRow() const {
    if (fields_.size() != columns_.size()) {
      return Error(StrCat(fields_.size(), " fields, the header has ", columns_.size()));
    }
    for (std::string_view f : fields_) {
      if (f.find('"') != std::string_view::npos) return Error("quoted fields are not supported");
    }
    return OkStatus();
  }

  std::string_view Field(std::string_view column) const {
    return StripWhitespace(fields_[columns_.find(std::string(column))->second]);
  }

  // An integer in [min, max]; nullopt for an empty field when `optional`.
  StatusOr<std::optional<int64_t>> Int(std::string_view column, int64_t min, int64_t max,
                                       bool optional = false) const {
    std::string_view f = Field(column);
    if (f.empty()) {
      if (optional) return std::optional<int64_t>();
      return Error(StrCat("column '", column, "' is empty"));
    }
    int64_t v = 0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size()) {
      return Error(StrCat("column '", column, "': '", f, "' is not an integer"));
    }
    if (v < min || v > max) {
      return Error(StrCat("column '", column, "': ", v, " is outside ", min, "-", max));
    }
    return std::optional<int64_t>(v);
  }

  Status Error(std::string_view what) const {
    return InvalidArgumentError(StrCat(file_, ":", line_, ": ", what));
  }
  int line() const { return line_; }

 private:
  std::string_view text_;
  std::string_view file_;
  size_t pos_ = 0;
  int line_ = 0;
  std::vector<std::string_view> fields_;
  std::map<std::string, size_t, std::less<>> columns_;
};

constexpr int64_t kMaxTime = int64_t{1} << 40;  // seconds: far beyond any trace

}  // namespace

StatusOr<std::vector<Task>> ParseTasks(std::string_view text, std::string_view file) {
  CsvReader csv(text, file);
  RETURN_IF_ERROR(csv.ReadHeader({"name", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                                  "creation_time", "deletion_time", "scheduled_time"}));
  std::vector<Task> tasks;
  while (csv.NextLine()) {
    RETURN_IF_ERROR(csv.CheckRow());
    Task t;
    t.line = csv.line();
    t.name = std::string(csv.Field("name"));
    if (t.name.empty()) return csv.Error("column 'name' is empty");
    ASSIGN_OR_RETURN(std::optional<int64_t> num_gpu, csv.Int("num_gpu", 0, 1024));
    ASSIGN_OR_RETURN(std::optional<int64_t> milli, csv.Int("gpu_milli", 0, 1000));
    ASSIGN_OR_RETURN(std::optional<int64_t> created, csv.Int("creation_time", 0, kMaxTime));
    ASSIGN_OR_RETURN(t.deletion, csv.Int("deletion_time", 0, kMaxTime, /*optional=*/true));
    ASSIGN_OR_RETURN(t.scheduled, csv.Int("scheduled_time", 0, kMaxTime, /*optional=*/true));
    t.num_gpu = *num_gpu;
    t.gpu_milli = *milli;
    t.creation = *created;
    for (std::string_view s : StrSplit(csv.Field("gpu_spec"), '|', /*skip_empty=*/true)) {
      t.gpu_spec.emplace_back(s);
    }
    t.qos = std::string(csv.Field("qos"));
    if (t.qos.empty()) return csv.Error("column 'qos' is empty");
    if (t.scheduled && *t.scheduled < t.creation) {
      return csv.Error(
          StrCat("scheduled_time ", *t.scheduled, " is before creation_time ", t.creation));
    }
    if (t.deletion && t.scheduled && *t.deletion < *t.scheduled) {
      return csv.Error(
          StrCat("deletion_time ", *t.deletion, " is before scheduled_time ", *t.scheduled));
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

StatusOr<std::vector<GpuNode>> ParseNodes(std::string_view text, std::string_view file) {
  CsvReader csv(text, file);
  RETURN_IF_ERROR(csv.ReadHeader({"sn", "gpu", "model"}));
  std::vector<GpuNode> nodes;
  std::set<std::string, std::less<>> names;
  while (csv.NextLine()) {
    RETURN_IF_ERROR(csv.CheckRow());
    GpuNode n;
    n.line = csv.line();
    n.name = std::string(csv.Field("sn"));
    if (n.name.empty()) return csv.Error("column 'sn' is empty");
    if (!names.insert(n.name).second) return csv.Error(StrCat("node ", n.name, " listed twice"));
    ASSIGN_OR_RETURN(std::optional<int64_t> gpus, csv.Int("gpu", 1, 64));
    n.gpus = *gpus;
    n.model = std::string(csv.Field("model"));
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) return InvalidArgumentError(StrCat(file, ": no nodes"));
  return nodes;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(StrCat("cannot read ", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace skb::sim
