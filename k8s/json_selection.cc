#include "k8s/json_selection.h"

#include <cctype>
#include <charconv>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 256;

class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  StatusOr<json> Document(const JsonSelection& sel) {
    SkipWs();
    ASSIGN_OR_RETURN(json v, Value(sel, 0));
    SkipWs();
    if (pos_ != s_.size()) return Error("unexpected data after the value");
    return v;
  }

 private:
  Status Error(std::string_view what) const {
    return InvalidArgumentError(StrCat("malformed JSON at byte ", pos_, ": ", what));
  }

  void SkipWs() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }

  // Moves past a string starting at pos_ ('"'); returns its raw contents (escapes intact).
  StatusOr<std::string_view> RawString() {
    if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected a string");
    size_t start = ++pos_;
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') return s_.substr(start, pos_++ - start);
      if (c == '\\') {
        if (pos_ + 1 >= s_.size()) break;
        char e = s_[pos_ + 1];
        if (e == 'u') {
          for (int k = 2; k < 6; ++k) {
            if (pos_ + static_cast<size_t>(k) >= s_.size() ||
                !std::isxdigit(static_cast<unsigned char>(s_[pos_ + static_cast<size_t>(k)]))) {
              return Error("bad \\u escape");
            }
          }
          pos_ += 6;
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
            e != 't') {
          return Error("bad escape");
        }
        pos_ += 2;
        continue;
      }
      if (c < 0x20) return Error("control character in a string");
      ++pos_;
    }
    return Error("unterminated string");
  }

  // After an element: true when another follows (','), false at `close`.
  StatusOr<bool> MoreElements(char close) {
    SkipWs();
    if (pos_ >= s_.size()) return Error("unexpected end");
    if (s_[pos_] == ',') {
      ++pos_;
      return true;
    }
    if (s_[pos_] == close) {
      ++pos_;
      return false;
    }
    return Error(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
  }

  // Skips any value, checking its structure.
  Status Skip(int depth) {
    if (depth > kMaxDepth) return Error("nested too deeply");
    SkipWs();
    if (pos_ >= s_.size()) return Error("unexpected end");
    char c = s_[pos_];
    if (c == '"') return RawString().status();
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == close) {
        ++pos_;
        return OkStatus();
      }
      for (;;) {
        if (c == '{') {
          SkipWs();
          RETURN_IF_ERROR(RawString().status());
          SkipWs();
          if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':'");
          ++pos_;
        }
        RETURN_IF_ERROR(Skip(depth + 1));
        ASSIGN_OR_RETURN(bool more, MoreElements(close));
        if (!more) return OkStatus();
      }
    }
    return SkipScalar();
  }

  Status SkipScalar() {
    size_t start = pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' ||
          (c >= 'a' && c <= 'z')) {
        ++pos_;
      } else {
        break;
      }
    }
    std::string_view tok = s_.substr(start, pos_ - start);
    if (tok.empty()) return Error("unexpected character");
    if (tok == "true" || tok == "false" || tok == "null") return OkStatus();
    if (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) {
      for (char c : tok) {
        if (c >= 'a' && c <= 'z' && c != 'e') return Error("bad number");
      }
      return OkStatus();
    }
    return Error("bad literal");
  }

  // A number or literal, built directly (no nlohmann lexer per value).
  StatusOr<json> Scalar() {
    size_t start = pos_;
    RETURN_IF_ERROR(SkipScalar());
    std::string_view tok = s_.substr(start, pos_ - start);
    if (tok == "true") return json(true);
    if (tok == "false") return json(false);
    if (tok == "null") return json(nullptr);
    if (tok.find_first_of(".eE") == std::string_view::npos) {
      int64_t i = 0;
      auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), i);
      if (ec == std::errc() && p == tok.data() + tok.size()) return json(i);
    }
    json v = json::parse(tok.begin(), tok.end(), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) {
      pos_ = start;
      return Error("bad number");
    }
    return v;
  }

  // Parses a value under `sel`.
  StatusOr<json> Value(const JsonSelection& sel, int depth) {
    if (depth > kMaxDepth) return Error("nested too deeply");
    SkipWs();
    if (pos_ >= s_.size()) return Error("unexpected end");
    const char c = s_[pos_];
    if (c == '"') {
      ASSIGN_OR_RETURN(std::string_view raw, RawString());
      if (raw.find('\\') == std::string_view::npos) return json(std::string(raw));
      // Escapes: let nlohmann decode the (already validated) string literal.
      std::string_view lit(raw.data() - 1, raw.size() + 2);
      json v = json::parse(lit.begin(), lit.end(), nullptr, /*allow_exceptions=*/false);
      if (v.is_discarded()) return Error("invalid string");
      return v;
    }
    if (c != '{' && c != '[') return Scalar();
    if (c == '[') {
      json arr = json::array();
      ++pos_;
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return arr;
      }
      for (;;) {
        ASSIGN_OR_RETURN(json v, Value(sel, depth + 1));
        arr.push_back(std::move(v));
        ASSIGN_OR_RETURN(bool more, MoreElements(']'));
        if (!more) return arr;
      }
    }
    json obj = json::object();
    ++pos_;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return obj;
    }
    for (;;) {
      SkipWs();
      ASSIGN_OR_RETURN(std::string_view raw_key, RawString());
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      // Keys with escapes are never selected (no Kubernetes field name needs one).
      const JsonSelection* child = sel.keeps_all() ? &sel
                                   : raw_key.find('\\') == std::string_view::npos
                                       ? sel.Find(raw_key)
                                       : nullptr;
      if (child == nullptr) {
        RETURN_IF_ERROR(Skip(depth + 1));
      } else {
        ASSIGN_OR_RETURN(json v, Value(*child, depth + 1));
        if (raw_key.find('\\') == std::string_view::npos) {
          obj[std::string(raw_key)] = std::move(v);
        } else {
          std::string_view lit(raw_key.data() - 1, raw_key.size() + 2);
          json key = json::parse(lit.begin(), lit.end(), nullptr, /*allow_exceptions=*/false);
          if (!key.is_string()) return Error("invalid key");
          obj[key.get<std::string>()] = std::move(v);
        }
      }
      ASSIGN_OR_RETURN(bool more, MoreElements('}'));
      if (!more) return obj;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

JsonSelection All() { return JsonSelection(); }

JsonSelection Meta(bool owners) {
  std::map<std::string, JsonSelection, std::less<>> f = {{"name", All()},
                                                         {"namespace", All()},
                                                         {"uid", All()},
                                                         {"resourceVersion", All()},
                                                         {"creationTimestamp", All()},
                                                         {"deletionTimestamp", All()},
                                                         {"labels", All()},
                                                         {"annotations", All()},
                                                         {"finalizers", All()}};
  if (owners) f["ownerReferences"] = All();
  return JsonSelection::Fields(std::move(f));
}

JsonSelection Conditions() {
  return JsonSelection::Fields({{"type", All()},
                                {"status", All()},
                                {"reason", All()},
                                {"message", All()},
                                {"lastTransitionTime", All()}});
}

}  // namespace

JsonSelection JsonSelection::Fields(std::map<std::string, JsonSelection, std::less<>> fields) {
  JsonSelection s;
  s.fields_ = std::move(fields);
  return s;
}

const JsonSelection* JsonSelection::Find(std::string_view key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : &it->second;
}

const JsonSelection& JsonSelection::PodWatchEvent() {
  static const JsonSelection sel = [] {
    JsonSelection container = Fields({{"name", All()}, {"resources", All()}});
    JsonSelection pod =
        Fields({{"metadata", Meta(true)},
                {"spec", Fields({{"nodeName", All()},
                                 {"schedulerName", All()},
                                 {"priority", All()},
                                 {"priorityClassName", All()},
                                 {"terminationGracePeriodSeconds", All()},
                                 {"containers", container},
                                 {"initContainers", container}})},
                {"status", Fields({{"phase", All()},
                                   {"nominatedNodeName", All()},
                                   {"conditions", Conditions()}})}});
    return Fields({{"type", All()}, {"object", pod}});
  }();
  return sel;
}

const JsonSelection& JsonSelection::NodeWatchEvent() {
  static const JsonSelection sel = [] {
    JsonSelection node = Fields(
        {{"metadata", Meta(false)},
         {"spec", Fields({{"unschedulable", All()}, {"taints", All()}})},
         {"status",
          Fields({{"capacity", All()}, {"allocatable", All()}, {"conditions", Conditions()}})}});
    return Fields({{"type", All()}, {"object", node}});
  }();
  return sel;
}

StatusOr<json> ParseSelected(std::string_view text, const JsonSelection& selection) {
  return Scanner(text).Document(selection);
}

}  // namespace skb::k8s
