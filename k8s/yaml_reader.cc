// SPDX-License-Identifier: Apache-2.0
#include "k8s/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

constexpr size_t kMaxDepth = 64;
// Values that aliases may add beyond the input's own (a document of aliases of aliases
// grows exponentially: "billion laughs").
constexpr size_t kAliasAllowance = 100'000;

// Thrown by the builder, caught in ParseYamlDocument: the parse stops at once.
struct ReadError {
  int line;  // 1-based; 0 when unknown
  std::string problem;
};

int LineOf(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

[[noreturn]] void Fail(int line, std::string problem) { throw ReadError{line, std::move(problem)}; }

// Builds the json from yaml-cpp's parse events (no YAML::Node tree in between), keeping a
// line for every error.
class JsonBuilder : public YAML::EventHandler {
 public:
  explicit JsonBuilder(size_t max_values) : max_values_(max_values) {}

  json TakeRoot() { return std::move(root_); }

  // Input offset (after a byte-order mark) of the document's last scalar when it was
  // quoted or a block scalar, else npos.
  size_t last_scalar_not_plain() const { return last_scalar_not_plain_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      Fail(LineOf(mark),
           "a second YAML document: a kubeconfig is one document (kubectl would silently read "
           "only the first)");
    }
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    last_scalar_not_plain_ = std::string::npos;
    Complete(LineOf(mark), json(nullptr), 1, anchor, /*plain=*/true);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    CheckTag(mark, tag);
    last_scalar_not_plain_ =
        tag == "!" && mark.pos >= 0 ? static_cast<size_t>(mark.pos) : std::string::npos;
    Complete(LineOf(mark), json(value), 1, anchor, /*plain=*/tag == "?");
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    last_scalar_not_plain_ = std::string::npos;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) Fail(LineOf(mark), "alias to a node that contains it");
    Complete(LineOf(mark), it->second.first, it->second.second, 0, /*plain=*/false);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    Open(mark, tag, anchor, json::array());
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    Open(mark, tag, anchor, json::object());
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    json value;
    YAML::anchor_t anchor;
    int line;
    size_t size = 1;  // json values in `value`, itself included
    bool has_key = false;
    std::string key;
    int key_line = 0;
  };

  static void CheckTag(const YAML::Mark& mark, const std::string& tag) {
    // "?": no tag (plain scalar, collection); "!": quoted or block scalar, or a bare `!`.
    if (tag != "?" && tag != "!")
      Fail(LineOf(mark), "explicit tags (!!str, !name) are not supported");
  }

  void Count(int line, size_t n) {
    values_ += n;
    if (values_ > max_values_) Fail(line, "too many values (aliases expanding without bound?)");
  }

  void Open(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, json value) {
    CheckTag(mark, tag);
    last_scalar_not_plain_ = std::string::npos;
    if (stack_.size() >= kMaxDepth) Fail(LineOf(mark), "nesting too deep");
    Count(LineOf(mark), 1);
    stack_.push_back(Frame{std::move(value), anchor, LineOf(mark)});
  }

  void Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (frame.has_key) Fail(frame.key_line, "mapping key without a value");  // not from yaml-cpp
    Place(frame.line, std::move(frame.value), frame.size, frame.anchor, /*plain=*/false);
  }

  // A finished scalar, null or alias.
  void Complete(int line, json value, size_t size, YAML::anchor_t anchor, bool plain) {
    Count(line, size);
    Place(line, std::move(value), size, anchor, plain);
  }

  // Puts a finished node into the collection being built (as its next item, key or value)
  // or makes it the document.
  void Place(int line, json value, size_t size, YAML::anchor_t anchor, bool plain) {
    if (anchor != 0) anchors_[anchor] = {value, size};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& parent = stack_.back();
    parent.size += size;
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
      return;
    }
    if (!parent.has_key) {
      if (value.is_null()) Fail(line, "null mapping key");
      if (!value.is_string()) Fail(line, "mapping keys must be scalars");
      std::string key = value.get<std::string>();
      if (plain && key == "<<") Fail(line, "merge keys ('<<') are not supported");
      if (parent.value.contains(key)) Fail(line, StrCat("duplicate key '", key, "'"));
      parent.key = std::move(key);
      parent.key_line = line;
      parent.has_key = true;
      return;
    }
    parent.value[parent.key] = std::move(value);
    parent.has_key = false;
  }

  const size_t max_values_;
  size_t values_ = 0;
  int documents_ = 0;
  size_t last_scalar_not_plain_ = std::string::npos;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, std::pair<json, size_t>> anchors_;
  json root_;
};

// Whether the quoted scalar starting at text[start] has its closing quote.
bool QuoteClosed(std::string_view text, size_t start) {
  const char q = text[start];
  for (size_t i = start + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;
    } else if (text[i] == q) {
      if (q == '"' || i + 1 == text.size() || text[i + 1] != '\'') return true;
      ++i;  // '' is a quote inside single quotes
    }
  }
  return false;
}

// yaml-cpp's messages end some problems with the offending text ("unknown escape
// character: q", "invalid unicode: 1f60"): keep only the part before it.
std::string WithoutText(const std::string& msg) { return msg.substr(0, msg.find(':')); }

Status LineError(int line, std::string_view problem) {
  if (line <= 0) return InvalidArgumentError(std::string(problem));
  return InvalidArgumentError(StrCat("line ", line, ": ", problem));
}

}  // namespace

StatusOr<json> ParseYamlDocument(std::string_view text) {
  std::istringstream in{std::string(text)};
  JsonBuilder builder(text.size() + kAliasAllowance);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const ReadError& e) {
    return LineError(e.line, e.problem);
  } catch (const YAML::Exception& e) {
    return LineError(LineOf(e.mark), WithoutText(e.msg));
  }
  // yaml-cpp 0.7 takes a quoted scalar that the end of the input cuts off (a truncated file)
  // as complete when a line break precedes the end. Only the last scalar can be cut off.
  if (size_t pos = builder.last_scalar_not_plain(); pos != std::string::npos) {
    if (text.starts_with("\xef\xbb\xbf")) pos += 3;  // yaml-cpp does not count the BOM
    if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'') && !QuoteClosed(text, pos)) {
      const auto line = std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(pos), '\n');
      return LineError(static_cast<int>(line) + 1, "quoted string not closed before the end");
    }
  }
  return builder.TakeRoot();
}

}  // namespace skb::k8s
