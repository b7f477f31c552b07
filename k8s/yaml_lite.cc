#include "k8s/yaml_lite.h"

#include <cstdint>
#include <string>
#include <vector>

#include "k8s/utf8.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

struct Line {
  int number = 0;  // 1-based, for messages
  int indent = 0;
  std::string text;  // without indentation, trailing blanks or comment
};

Status LineError(int number, std::string_view problem) {
  return InvalidArgumentError(StrCat("line ", number, ": ", problem));
}

// Returns the index just past the quoted scalar starting at text[start], or npos when it is
// not terminated on this line.
size_t SkipQuoted(std::string_view text, size_t start) {
  char q = text[start];
  for (size_t i = start + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;
      continue;
    }
    if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is an escaped quote inside single quotes
        continue;
      }
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Drops a comment (`#` at the start or after a blank, outside quotes) and trailing blanks.
std::string_view StripComment(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if ((c == '"' || c == '\'') &&
        (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == ':' ||
         text[i - 1] == '-' || text[i - 1] == '[' || text[i - 1] == '{' || text[i - 1] == ',')) {
      size_t end = SkipQuoted(text, i);
      if (end == std::string_view::npos) break;  // reported later as unterminated
      i = end - 1;
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      text = text.substr(0, i);
      break;
    }
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool IsSeqItem(std::string_view text) {
  return text == "-" || (text.size() >= 2 && text[0] == '-' && (text[1] == ' ' || text[1] == '\t'));
}

// Position of the ':' that ends a mapping key, or npos when the line is not `key: ...`.
size_t FindKeyColon(std::string_view text) {
  if (text.empty() || text[0] == '[' || text[0] == '{') return std::string_view::npos;
  size_t i = 0;
  if (text[0] == '"' || text[0] == '\'') {
    i = SkipQuoted(text, 0);
    if (i == std::string_view::npos) return std::string_view::npos;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i < text.size() && text[i] == ':' && (i + 1 == text.size() || text[i + 1] == ' ')) {
      return i;
    }
    return std::string_view::npos;
  }
  for (; i < text.size(); ++i) {
    if (text[i] == ':' && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\t')) {
      return i;
    }
  }
  return std::string_view::npos;
}

class Parser {
 public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  StatusOr<json> ParseDocument() {
    if (lines_.empty()) return json(nullptr);
    if (lines_[0].indent != 0)
      return LineError(lines_[0].number, "document must start at column 1");
    ASSIGN_OR_RETURN(json doc, ParseBlock(0));
    if (pos_ < lines_.size()) {
      return LineError(lines_[pos_].number, "unexpected indentation or content after the document");
    }
    return doc;
  }

 private:
  StatusOr<json> ParseBlock(int indent) {
    if (++depth_ > kMaxDepth) return LineError(lines_[pos_].number, "nesting too deep");
    StatusOr<json> result = json();
    const Line& line = lines_[pos_];
    if (IsSeqItem(line.text)) {
      result = ParseSeq(indent);
    } else if (FindKeyColon(line.text) != std::string_view::npos) {
      result = ParseMap(indent);
    } else {
      ++pos_;
      result = ParseInlineValue(line.text, line.number);
      if (result.ok() && pos_ < lines_.size() && lines_[pos_].indent > indent) {
        result = LineError(lines_[pos_].number, "multi-line plain scalars are not supported");
      }
    }
    --depth_;
    return result;
  }

  StatusOr<json> ParseMap(int indent) {
    json obj = json::object();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent) {
      const Line line = lines_[pos_];
      if (IsSeqItem(line.text))
        return LineError(line.number, "sequence item where a key was expected");
      size_t colon = FindKeyColon(line.text);
      if (colon == std::string_view::npos) return LineError(line.number, "expected 'key: value'");
      std::string_view raw_key = StripWhitespace(std::string_view(line.text).substr(0, colon));
      ASSIGN_OR_RETURN(json key, ParseInlineValue(raw_key, line.number));
      if (!key.is_string()) return LineError(line.number, "mapping keys must be strings");
      const std::string key_str = key.get<std::string>();
      if (obj.contains(key_str))
        return LineError(line.number, StrCat("duplicate key '", key_str, "'"));
      std::string_view rest = StripWhitespace(std::string_view(line.text).substr(colon + 1));
      ++pos_;
      json value;
      if (rest.empty()) {
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          ASSIGN_OR_RETURN(value, ParseBlock(lines_[pos_].indent));
        } else if (pos_ < lines_.size() && lines_[pos_].indent == indent &&
                   IsSeqItem(lines_[pos_].text)) {
          // kubectl writes `clusters:` followed by `- ...` at the key's own indentation.
          ASSIGN_OR_RETURN(value, ParseSeq(indent));
        }
      } else {
        ASSIGN_OR_RETURN(value, ParseInlineValue(rest, line.number));
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          return LineError(lines_[pos_].number, "unexpected indentation");
        }
      }
      obj[key_str] = std::move(value);
    }
    if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
      return LineError(lines_[pos_].number, "unexpected indentation");
    }
    return obj;
  }

  StatusOr<json> ParseSeq(int indent) {
    json arr = json::array();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && IsSeqItem(lines_[pos_].text)) {
      Line& line = lines_[pos_];
      size_t skip = 1;
      while (skip < line.text.size() && (line.text[skip] == ' ' || line.text[skip] == '\t')) ++skip;
      std::string rest = line.text.substr(skip);
      if (rest.empty()) {
        ++pos_;
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          ASSIGN_OR_RETURN(json value, ParseBlock(lines_[pos_].indent));
          arr.push_back(std::move(value));
        } else {
          arr.push_back(nullptr);
        }
      } else if (IsSeqItem(rest) || FindKeyColon(rest) != std::string_view::npos) {
        // `- key: v` opens a mapping whose column is that of `key`: reuse this line as its
        // first line, re-indented, so the following keys line up with it.
        line.indent = indent + static_cast<int>(skip);
        line.text = std::move(rest);
        ASSIGN_OR_RETURN(json value, ParseBlock(line.indent));
        arr.push_back(std::move(value));
      } else {
        const int number = line.number;
        ++pos_;
        ASSIGN_OR_RETURN(json value, ParseInlineValue(rest, number));
        arr.push_back(std::move(value));
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          return LineError(lines_[pos_].number, "unexpected indentation");
        }
      }
    }
    return arr;
  }

  static StatusOr<json> ParseInlineValue(std::string_view text, int number) {
    if (text.empty()) return json(nullptr);
    switch (text[0]) {
      case '&':
      case '*':
        return LineError(number, "anchors and aliases are not supported");
      case '!':
        return LineError(number, "tags are not supported");
      case '|':
      case '>':
        return LineError(number, "block scalars ('|', '>') are not supported");
      case '"':
        return ParseDoubleQuoted(text, number);
      case '\'':
        return ParseSingleQuoted(text, number);
      case '[':
      case '{': {
        json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) {
          return LineError(number,
                           "only JSON-compatible flow collections ({}, [], [\"a\"]) are supported");
        }
        return j;
      }
      default:
        break;
    }
    if (text == "null" || text == "~" || text == "Null" || text == "NULL") return json(nullptr);
    return json(std::string(text));
  }

  static StatusOr<json> ParseSingleQuoted(std::string_view text, int number) {
    size_t end = SkipQuoted(text, 0);
    if (end == std::string_view::npos)
      return LineError(number, "unterminated single-quoted string");
    if (end != text.size()) return LineError(number, "unexpected text after a quoted string");
    std::string out;
    for (size_t i = 1; i + 1 < end; ++i) {
      out.push_back(text[i]);
      if (text[i] == '\'') ++i;
    }
    return json(std::move(out));
  }

  static StatusOr<json> ParseDoubleQuoted(std::string_view text, int number) {
    size_t end = SkipQuoted(text, 0);
    if (end == std::string_view::npos)
      return LineError(number, "unterminated double-quoted string");
    if (end != text.size()) return LineError(number, "unexpected text after a quoted string");
    std::string out;
    for (size_t i = 1; i + 1 < end; ++i) {
      char c = text[i];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      char e = text[++i];
      switch (e) {
        case '\\':
          out.push_back('\\');
          break;
        case '"':
          out.push_back('"');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case '0':
          out.push_back('\0');
          break;
        case ' ':
          out.push_back(' ');
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + digits >= end) return LineError(number, "truncated escape in a quoted string");
          uint32_t cp = 0;
          for (size_t k = 1; k <= digits; ++k) {
            char h = text[i + k];
            int v = (h >= '0' && h <= '9')   ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
            if (v < 0) return LineError(number, "bad hex digit in an escape");
            cp = cp * 16 + static_cast<uint32_t>(v);
          }
          if (cp > 0x10FFFF) return LineError(number, "escape outside Unicode");
          AppendUtf8(&out, cp);
          i += digits;
          break;
        }
        default:
          return LineError(number, StrCat("unknown escape '\\", std::string(1, e), "'"));
      }
    }
    return json(std::move(out));
  }

  static constexpr int kMaxDepth = 64;
  std::vector<Line> lines_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

StatusOr<json> ParseYamlSubset(std::string_view text) {
  std::string_view trimmed = StripWhitespace(text);
  if (!trimmed.empty() && trimmed[0] == '{') {
    json j = json::parse(trimmed.begin(), trimmed.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return InvalidArgumentError("document starts with '{' but is not valid JSON");
    return j;
  }
  std::vector<Line> lines;
  int number = 0;
  bool seen_content = false;
  for (std::string_view raw : StrSplit(text, '\n')) {
    ++number;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    size_t indent = 0;
    while (indent < raw.size() && raw[indent] == ' ') ++indent;
    std::string_view body = StripComment(raw.substr(indent));
    if (body.empty()) continue;
    if (body[0] == '\t') return LineError(number, "tabs are not allowed in indentation");
    if (indent == 0 && (body == "---" || body.substr(0, 4) == "--- ")) {
      if (seen_content) return LineError(number, "multiple YAML documents are not supported");
      if (body.size() > 3) return LineError(number, "content after '---' is not supported");
      continue;
    }
    if (indent == 0 && body == "...") break;
    if (indent == 0 && body[0] == '%')
      return LineError(number, "YAML directives are not supported");
    seen_content = true;
    lines.push_back(Line{number, static_cast<int>(indent), std::string(body)});
  }
  return Parser(std::move(lines)).ParseDocument();
}

}  // namespace skb::k8s
