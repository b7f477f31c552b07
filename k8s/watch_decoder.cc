// SPDX-License-Identifier: Apache-2.0
#include "k8s/watch_decoder.h"

#include "k8s/api_error.h"
#include "src/base/strings.h"

namespace skb::k8s {

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line, std::string_view what,
                                     const JsonSelection* selection) {
  // ParseSelected, also for whole events: it bounds nesting depth (a deeply nested object
  // would otherwise make later recursive copies overflow the stack) and is faster than
  // nlohmann's own parser.
  static const JsonSelection kAll;
  auto parsed = ParseSelected(line, selection != nullptr ? *selection : kAll);
  if (!parsed.ok())
    return DataLossError(StrCat(what, ": malformed event: ", parsed.status().message()));
  nlohmann::json j = std::move(parsed).value();
  // Not j.value("type", ""): it throws when "type" is present but not a string.
  auto type_field = j.is_object() ? j.find("type") : j.end();
  if (selection != nullptr && type_field != j.end() && type_field->is_string() &&
      type_field->get_ref<const std::string&>() == "ERROR") {
    // An error's Status object is not shaped like the selected type: decode it whole.
    auto whole = ParseSelected(line, kAll);
    if (whole.ok()) j = std::move(whole).value();
  }
  if (!j.is_object()) {
    return DataLossError(
        StrCat(what, ": malformed event (not a JSON object, ", line.size(), " bytes)"));
  }
  auto type = j.find("type");
  auto object = j.find("object");
  if (type == j.end() || !type->is_string())
    return DataLossError(StrCat(what, ": event without a string 'type'"));
  if (object == j.end() || !object->is_object()) {
    return DataLossError(StrCat(what, ": event without an 'object' mapping"));
  }
  const std::string& t = type->get_ref<const std::string&>();
  WatchEvent ev;
  if (t == "ADDED") {
    ev.type = WatchEvent::Type::kAdded;
  } else if (t == "MODIFIED") {
    ev.type = WatchEvent::Type::kModified;
  } else if (t == "DELETED") {
    ev.type = WatchEvent::Type::kDeleted;
  } else if (t == "BOOKMARK") {
    ev.type = WatchEvent::Type::kBookmark;
  } else if (t == "ERROR") {
    Status s = ApiErrorFromStatusObject(what, *object);
    return s;
  } else {
    return DataLossError(StrCat(what, ": unknown event type '", t.substr(0, 32), "'"));
  }
  ev.object = std::move(*object);
  return ev;
}

WatchDecoder::WatchDecoder(std::string what, size_t max_line_bytes, const JsonSelection* selection)
    : what_(std::move(what)), max_line_bytes_(max_line_bytes), selection_(selection) {}

Status WatchDecoder::Line(std::string_view line, const WatchHandler& handler) {
  line = StripWhitespace(line);
  if (line.empty()) return OkStatus();
  ASSIGN_OR_RETURN(WatchEvent ev, ParseWatchEvent(line, what_, selection_));
  ++events_;
  if (!handler(std::move(ev))) stopped_ = true;
  return OkStatus();
}

Status WatchDecoder::Feed(std::string_view chunk, const WatchHandler& handler) {
  while (!chunk.empty() && !stopped_) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      if (partial_.size() + chunk.size() > max_line_bytes_) {
        return ResourceExhaustedError(
            StrCat(what_, ": event larger than ", max_line_bytes_, " bytes"));
      }
      partial_.append(chunk);
      return OkStatus();
    }
    if (partial_.empty()) {
      // Common case: a whole line inside this chunk, parsed in place without copying.
      if (nl > max_line_bytes_) {
        return ResourceExhaustedError(
            StrCat(what_, ": event larger than ", max_line_bytes_, " bytes"));
      }
      RETURN_IF_ERROR(Line(chunk.substr(0, nl), handler));
    } else {
      if (partial_.size() + nl > max_line_bytes_) {
        return ResourceExhaustedError(
            StrCat(what_, ": event larger than ", max_line_bytes_, " bytes"));
      }
      partial_.append(chunk.substr(0, nl));
      std::string line = std::move(partial_);
      partial_.clear();
      RETURN_IF_ERROR(Line(line, handler));
    }
    chunk.remove_prefix(nl + 1);
  }
  return OkStatus();
}

Status WatchDecoder::Finish(const WatchHandler& handler) {
  if (stopped_ || StripWhitespace(partial_).empty()) return OkStatus();
  std::string line = std::move(partial_);
  partial_.clear();
  // A last event without its newline is still whole if it parses; a cut one is data loss.
  Status s = Line(line, handler);
  if (s.code() == StatusCode::kDataLoss) {
    return DataLossError(StrCat(what_, ": stream ended inside an event (", line.size(),
                                " bytes of an incomplete object)"));
  }
  return s;
}

}  // namespace skb::k8s
