// SPDX-License-Identifier: Apache-2.0
#include "bridge/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "src/base/strings.h"

namespace skb::bridge {

namespace {

bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// Whether `s` at `i` starts a field: a key of key characters, then '='.
bool FieldStartsAt(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && IsKeyChar(s[j])) ++j;
  return j > i && j < s.size() && s[j] == '=';
}

}  // namespace

nlohmann::json FieldsOf(std::string_view message) {
  nlohmann::json out = nlohmann::json::object();
  size_t i = 0;
  // The event: a first word of key characters, alone or followed by a field.
  size_t word = 0;
  while (word < message.size() && IsKeyChar(message[word])) ++word;
  if (word > 0 &&
      (word == message.size() || (message[word] == ' ' && FieldStartsAt(message, word + 1)))) {
    out["event"] = std::string(message.substr(0, word));
    i = word;
  }
  while (i < message.size()) {
    while (i < message.size() && message[i] == ' ') ++i;
    if (i == message.size()) break;
    if (!FieldStartsAt(message, i)) break;  // free text from here on
    size_t eq = message.find('=', i);
    std::string key(message.substr(i, eq - i));
    size_t v = eq + 1;
    std::string value;
    if (v < message.size() && message[v] == '"') {
      // A quoted value ends at the quote followed by the end or by " key=": values quote
      // what they hold verbatim (an error text may itself contain quotes).
      size_t close = v + 1;
      for (;; ++close) {
        close = message.find('"', close);
        if (close == std::string_view::npos) break;
        if (close + 1 == message.size() ||
            (message[close + 1] == ' ' && FieldStartsAt(message, close + 2))) {
          break;
        }
      }
      if (close == std::string_view::npos) break;  // unbalanced: the rest is free text
      value = std::string(message.substr(v + 1, close - v - 1));
      i = close + 1;
    } else {
      size_t end = message.find(' ', v);
      if (end == std::string_view::npos) end = message.size();
      value = std::string(message.substr(v, end - v));
      i = end;
    }
    // The line's own members keep their meaning: a field of the same name gets a prefix.
    if (key == "ts" || key == "level" || key == "logger" || key == "event" || key == "msg") {
      key = "field." + key;
    }
    out[key] = std::move(value);
  }
  while (i < message.size() && message[i] == ' ') ++i;
  if (i < message.size()) out["msg"] = std::string(message.substr(i));
  return out;
}

namespace {

// JSON lines: this custom flag (%*) writes the message's event and fields as members of
// the line's object (see FieldsOf), escaped by nlohmann-json, invalid UTF-8 replaced by
// U+FFFD (a line is always valid JSON, whatever a node name or an apiserver said).
class JsonFields final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const nlohmann::json fields =
        FieldsOf(std::string_view(msg.payload.data(), msg.payload.size()));
    const std::string text = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    // The object's members without its braces: the pattern has ts, level, logger first.
    if (text.size() > 2) {
      dest.push_back(',');
      dest.append(std::string_view(text).substr(1, text.size() - 2));
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonFields>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> MakeFormatter(bool json) {
  auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (json) {
    f->add_flag<JsonFields>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n"%*})");
  } else {
    f->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %L %n: %v");
  }
  return f;
}

namespace {

bool g_json = false;

}  // namespace

Status SetupLogging(std::string_view level, std::string_view format) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") {
    return InvalidArgumentError(StrCat("unknown log level '", level, "'"));
  }
  if (format != "text" && format != "json") {
    return InvalidArgumentError(StrCat("unknown log format '", format, "'"));
  }
  g_json = format == "json";
  // Logs go to stderr: stdout is for bridgectl's output.
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_formatter(MakeFormatter(g_json));
  auto main_logger = std::make_shared<spdlog::logger>("main", sink);
  spdlog::set_default_logger(main_logger);
  spdlog::set_level(lvl);
  spdlog::flush_on(spdlog::level::info);
  return OkStatus();
}

std::shared_ptr<spdlog::logger> Logger(const std::string& component) {
  if (auto existing = spdlog::get(component)) return existing;
  auto def = spdlog::default_logger();
  auto logger =
      std::make_shared<spdlog::logger>(component, def->sinks().begin(), def->sinks().end());
  logger->set_level(def->level());
  logger->flush_on(spdlog::level::info);
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    // Lost a race with another thread registering the same name: use theirs.
    if (auto existing = spdlog::get(component)) return existing;
  }
  return logger;
}

}  // namespace skb::bridge
