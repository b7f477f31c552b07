// SPDX-License-Identifier: Apache-2.0
#include "k8s/json_selection.h"

#include <charconv>
#include <cstdint>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "k8s/utf8.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 256;

// Eight bytes at a time: a high bit in each byte that may stop a string scan ('"', '\\',
// a control character or a non-ASCII byte). The lowest flagged byte is always exact.
inline uint64_t StringStops(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  auto zero_bytes = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t quote = zero_bytes(w ^ (kOnes * '"'));
  const uint64_t backslash = zero_bytes(w ^ (kOnes * '\\'));
  const uint64_t control = (w - kOnes * 0x20) & ~w & kHigh;
  return quote | backslash | control | (w & kHigh);
}

inline int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A single pass over the text. Every function returns false after recording the first
// error (what and where); nothing on the hot path builds a Status or a string it does not
// keep.
class Scanner {
 public:
  explicit Scanner(std::string_view text)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  StatusOr<json> Document(const JsonSelection& sel) {
    json v;
    SkipWs();
    if (Value(sel, 0, &v)) {
      SkipWs();
      if (p_ == end_) return v;
      Fail("unexpected data after the value");
    }
    return InvalidArgumentError(StrCat("malformed JSON at byte ", error_at_, ": ", error_));
  }

 private:
  bool Fail(const char* what) {
    if (error_ == nullptr) {
      error_ = what;
      error_at_ = static_cast<size_t>(p_ - begin_);
    }
    return false;
  }

  void SkipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // Validates one UTF-8 sequence at p_ (a byte >= 0x80) and moves past it (RFC 3629: no
  // overlong forms, no surrogates, nothing above U+10FFFF).
  bool Utf8Sequence() {
    const auto b = [this](ptrdiff_t i) { return static_cast<unsigned char>(p_[i]); };
    const unsigned char c = b(0);
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return Fail("invalid UTF-8 in a string");
    }
    if (end_ - p_ <= n) return Fail("invalid UTF-8 in a string");
    if (b(1) < lo || b(1) > hi) return Fail("invalid UTF-8 in a string");
    for (int i = 2; i <= n; ++i) {
      if (b(i) < 0x80 || b(i) > 0xBF) return Fail("invalid UTF-8 in a string");
    }
    p_ += n + 1;
    return true;
  }

  // Four hex digits after "\u" at p_; moves past them.
  bool Hex4(uint32_t* cp) {
    if (end_ - p_ < 4) return Fail("bad \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      int d = HexDigit(p_[i]);
      if (d < 0) return Fail("bad \\u escape");
      v = v << 4 | static_cast<uint32_t>(d);
    }
    p_ += 4;
    *cp = v;
    return true;
  }

  // At a backslash inside a string: checks the escape, moves past it and, when `out` is
  // not null, appends what it stands for.
  bool Escape(std::string* out) {
    if (end_ - p_ < 2) return Fail("unterminated string");
    const char e = p_[1];
    p_ += 2;
    char plain;
    switch (e) {
      case '"':
        plain = '"';
        break;
      case '\\':
        plain = '\\';
        break;
      case '/':
        plain = '/';
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!Hex4(&cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("bad \\u escape (lone low surrogate)");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u')
            return Fail("bad \\u escape (lone high surrogate)");
          p_ += 2;
          if (!Hex4(&low)) return false;
          if (low < 0xDC00 || low > 0xDFFF) return Fail("bad \\u escape (lone high surrogate)");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out != nullptr) AppendUtf8(out, cp);
        return true;
      }
      default:
        p_ -= 2;
        return Fail("bad escape");
    }
    if (out != nullptr) out->push_back(plain);
    return true;
  }

  // Inside a string: moves p_ to the first byte that may end a run of plain characters
  // ('"', '\\', a control character, a non-ASCII byte), or to the last few bytes of the text.
  void SkipPlain() {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end_ - p_ >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      // Signed: bytes >= 0x80 are negative, so "less than a space" flags them too.
      const __m128i stops =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                       _mm_cmplt_epi8(v, space));
      const int mask = _mm_movemask_epi8(stops);
      if (mask != 0) {
        p_ += __builtin_ctz(static_cast<unsigned>(mask));
        return;
      }
      p_ += 16;
    }
#endif
    while (end_ - p_ >= 8) {
      uint64_t w;
      std::memcpy(&w, p_, 8);
      const uint64_t stops = StringStops(w);
      if (stops != 0) {
        p_ += __builtin_ctzll(stops) / 8;
        return;
      }
      p_ += 8;
    }
  }

  // Moves past the string starting at p_ ('"'). Its raw contents go to `raw`; when `decoded`
  // is not null and the string has escapes, their decoded form goes there. *has_escapes
  // tells which.
  bool String(std::string_view* raw, std::string* decoded, bool* has_escapes) {
    if (p_ >= end_ || *p_ != '"') return Fail("expected a string");
    const char* const start = ++p_;
    const char* run = start;  // plain bytes not yet copied to *decoded (after an escape)
    bool escaped = false;
    for (;;) {
      SkipPlain();
      if (p_ >= end_) return Fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        if (decoded != nullptr && escaped) decoded->append(run, p_);
        if (raw != nullptr) *raw = std::string_view(start, static_cast<size_t>(p_ - start));
        if (has_escapes != nullptr) *has_escapes = escaped;
        ++p_;
        return true;
      }
      if (c == '\\') {
        if (decoded != nullptr) {
          if (escaped) {
            decoded->append(run, p_);
          } else {
            decoded->assign(start, p_);
          }
        }
        escaped = true;
        if (!Escape(decoded)) return false;
        run = p_;
        continue;
      }
      if (c < 0x20) return Fail("control character in a string");
      if (c >= 0x80) {
        if (!Utf8Sequence()) return false;
      } else {
        ++p_;
      }
    }
  }

  // Moves past a number, checking RFC 8259's grammar; *integral: no fraction or exponent.
  bool Number(bool* integral) {
    const char* q = p_;
    if (q < end_ && *q == '-') ++q;
    if (q >= end_ || *q < '0' || *q > '9') return Fail("bad number");
    if (*q == '0') {
      ++q;
    } else {
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    *integral = true;
    if (q < end_ && *q == '.') {
      *integral = false;
      ++q;
      if (q >= end_ || *q < '0' || *q > '9') return Fail("bad number");
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      *integral = false;
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q >= end_ || *q < '0' || *q > '9') return Fail("bad number");
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    p_ = q;
    return true;
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() ||
        std::memcmp(p_, word.data(), word.size()) != 0) {
      return Fail("bad literal");
    }
    p_ += word.size();
    return true;
  }

  // After an element: *more when another follows (','), false at `close`.
  bool MoreElements(char close, bool* more) {
    SkipWs();
    if (p_ >= end_) return Fail("unexpected end");
    if (*p_ == ',') {
      ++p_;
      *more = true;
      return true;
    }
    if (*p_ == close) {
      ++p_;
      *more = false;
      return true;
    }
    return Fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
  }

  // `{` or `[` at p_: moves past it; *empty when the container closes at once.
  bool Open(char close, bool* empty) {
    ++p_;
    SkipWs();
    *empty = p_ < end_ && *p_ == close;
    if (*empty) ++p_;
    return true;
  }

  // A key and its ':' (whitespace around both skipped).
  bool Key(std::string_view* raw, bool* has_escapes) {
    SkipWs();
    if (!String(raw, nullptr, has_escapes)) return false;
    SkipWs();
    if (p_ >= end_ || *p_ != ':') return Fail("expected ':'");
    ++p_;
    return true;
  }

  // Skips any value, checking its structure.
  bool Skip(int depth) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    SkipWs();
    if (p_ >= end_) return Fail("unexpected end");
    switch (*p_) {
      case '"':
        return String(nullptr, nullptr, nullptr);
      case '{':
      case '[': {
        const bool object = *p_ == '{';
        const char close = object ? '}' : ']';
        bool empty;
        Open(close, &empty);
        for (bool more = !empty; more;) {
          if (object && !Key(nullptr, nullptr)) return false;
          if (!Skip(depth + 1) || !MoreElements(close, &more)) return false;
        }
        return true;
      }
      default:
        return Scalar(nullptr);
    }
  }

  // A literal or a number at p_; decoded into *out unless `out` is null (skipping).
  bool Scalar(json* out) {
    switch (*p_) {
      case 't':
        if (out != nullptr) *out = true;
        return Literal("true");
      case 'f':
        if (out != nullptr) *out = false;
        return Literal("false");
      case 'n':
        if (out != nullptr) *out = nullptr;
        return Literal("null");
      default:
        break;
    }
    const char* start = p_;
    bool integral;
    if (!Number(&integral)) return false;
    if (out == nullptr) return true;
    if (integral) {
      int64_t i;
      auto r = std::from_chars(start, p_, i);
      if (r.ec == std::errc() && r.ptr == p_) {
        *out = i;
        return true;
      }
      uint64_t u;
      r = std::from_chars(start, p_, u);
      if (r.ec == std::errc() && r.ptr == p_) {
        *out = u;
        return true;
      }
    }
    double d;
    auto r = std::from_chars(start, p_, d);
    if (r.ec != std::errc() || r.ptr != p_) {
      p_ = start;
      return Fail("number out of range");
    }
    *out = d;
    return true;
  }

  // Parses a value under `sel` into *out.
  bool Value(const JsonSelection& sel, int depth, json* out) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    SkipWs();
    if (p_ >= end_) return Fail("unexpected end");
    switch (*p_) {
      case '"': {
        std::string_view raw;
        std::string decoded;
        bool escaped;
        if (!String(&raw, &decoded, &escaped)) return false;
        *out = escaped ? std::move(decoded) : std::string(raw);
        return true;
      }
      case '[': {
        *out = json::array();
        auto& arr = out->get_ref<json::array_t&>();
        bool empty;
        Open(']', &empty);
        for (bool more = !empty; more;) {
          if (!Value(sel, depth + 1, &arr.emplace_back()) || !MoreElements(']', &more))
            return false;
        }
        return true;
      }
      case '{': {
        *out = json::object();
        auto& obj = out->get_ref<json::object_t&>();
        bool empty;
        Open('}', &empty);
        for (bool more = !empty; more;) {
          std::string_view raw_key;
          bool escaped;
          if (!Key(&raw_key, &escaped)) return false;
          // Keys with escapes are never selected (no Kubernetes field name needs one).
          const JsonSelection* child = sel.keeps_all() ? &sel
                                       : escaped       ? nullptr
                                                       : sel.Find(raw_key);
          if (child == nullptr) {
            if (!Skip(depth + 1)) return false;
          } else {
            json v;
            if (!Value(*child, depth + 1, &v)) return false;
            std::string key;
            if (escaped) {
              // Decode the (already validated) key again, this time keeping its value.
              const char* after = p_;
              p_ = raw_key.data() - 1;
              bool again;
              String(nullptr, &key, &again);
              p_ = after;
            } else {
              key.assign(raw_key);
            }
            obj.insert_or_assign(std::move(key), std::move(v));
          }
          if (!MoreElements('}', &more)) return false;
        }
        return true;
      }
      default:
        return Scalar(out);
    }
  }

  const char* const begin_;
  const char* p_;
  const char* const end_;
  const char* error_ = nullptr;
  size_t error_at_ = 0;
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
  s.fields_.reserve(fields.size());
  for (auto& [key, sel] : fields) s.fields_.emplace_back(key, std::move(sel));
  return s;
}

const JsonSelection* JsonSelection::Find(std::string_view key) const {
  for (const auto& [k, sel] : fields_) {
    if (k.size() == key.size() && std::memcmp(k.data(), key.data(), key.size()) == 0) return &sel;
  }
  return nullptr;
}

const JsonSelection& JsonSelection::PodWatchEvent() {
  static const JsonSelection sel = [] {
    JsonSelection container =
        Fields({{"name", All()}, {"resources", All()}, {"restartPolicy", All()}});
    JsonSelection pod = Fields(
        {{"metadata", Meta(true)},
         {"spec",
          Fields(
              {{"nodeName", All()},
               {"schedulerName", All()},
               {"priority", All()},
               {"priorityClassName", All()},
               {"terminationGracePeriodSeconds", All()},
               {"nodeSelector", All()},
               {"affinity", Fields({{"nodeAffinity", All()}})},
               {"tolerations",
                Fields({{"key", All()}, {"operator", All()}, {"value", All()}, {"effect", All()}})},
               {"containers", container},
               {"initContainers", container},
               {"resourceClaims", Fields({{"name", All()},
                                          {"resourceClaimName", All()},
                                          {"resourceClaimTemplateName", All()}})}})},
         {"status", Fields({{"phase", All()},
                            {"nominatedNodeName", All()},
                            {"conditions", Conditions()},
                            {"startTime", All()},
                            {"resourceClaimStatuses",
                             Fields({{"name", All()}, {"resourceClaimName", All()}})}})}});
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
