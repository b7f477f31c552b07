#include "bridge/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>

#include "src/base/strings.h"

namespace skb::bridge {
namespace {

// spdlog has no JSON escaping of its own: this custom flag (%*) writes the message payload
// as the contents of a JSON string.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      switch (c) {
        case '"':
          dest.append(std::string_view("\\\""));
          break;
        case '\\':
          dest.append(std::string_view("\\\\"));
          break;
        case '\n':
          dest.append(std::string_view("\\n"));
          break;
        case '\r':
          dest.append(std::string_view("\\r"));
          break;
        case '\t':
          dest.append(std::string_view("\\t"));
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            dest.append(std::string_view(buf));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

std::unique_ptr<spdlog::formatter> MakeFormatter(bool json) {
  auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (json) {
    f->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":"%*"})");
  } else {
    f->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %L %n: %v");
  }
  return f;
}

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
