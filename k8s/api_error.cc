// SPDX-License-Identifier: Apache-2.0
#include "k8s/api_error.h"

#include <charconv>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

StatusCode CodeFor(long http, std::string_view reason) {
  if (reason == "Expired" || reason == "Gone") return StatusCode::kOutOfRange;
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Conflict") return StatusCode::kAborted;
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "Timeout") return StatusCode::kDeadlineExceeded;
  switch (http) {
    case 400:
    case 413:
    case 415:
    case 422:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 405:
      return StatusCode::kUnimplemented;
    case 406:
      return StatusCode::kInvalidArgument;
    case 409:
      return StatusCode::kAborted;
    case 410:
      return StatusCode::kOutOfRange;
    case 429:
      return StatusCode::kUnavailable;
    case 504:
      return StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (http >= 500) return StatusCode::kUnavailable;
  return StatusCode::kUnknown;
}

// The reason client-go would infer from the code alone (metav1.StatusReason).
std::string_view ReasonForCode(long http) {
  switch (http) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

std::string Truncate(std::string_view s, size_t max) {
  s = StripWhitespace(s);
  if (s.size() <= max) return std::string(s);
  return StrCat(s.substr(0, max), "...");
}

Status Build(std::string_view what, long http, std::string reason, std::string_view message,
             std::string_view retry_after) {
  if (reason.empty()) reason = std::string(ReasonForCode(http));
  std::string msg =
      StrCat(what, ": ", reason.empty() ? std::string("HTTP") : reason, " (", http, ")");
  if (!message.empty()) StrAppend(&msg, ": ", message);
  Status s(CodeFor(http, reason), std::move(msg));
  s.SetPayload(std::string(kHttpCodePayload), StrCat(http));
  if (!reason.empty()) s.SetPayload(std::string(kReasonPayload), reason);
  retry_after = StripWhitespace(retry_after);
  int seconds = 0;
  auto [ptr, ec] =
      std::from_chars(retry_after.data(), retry_after.data() + retry_after.size(), seconds);
  if (!retry_after.empty() && ec == std::errc() && ptr == retry_after.data() + retry_after.size() &&
      seconds >= 0) {
    s.SetPayload(std::string(kRetryAfterPayload), StrCat(seconds));
  }
  return s;
}

struct StatusFields {
  long code = 0;
  std::string reason;
  std::string message;
  std::string retry_after;
};

StatusFields Extract(const nlohmann::json& obj) {
  StatusFields f;
  if (!obj.is_object()) return f;
  if (auto it = obj.find("code"); it != obj.end() && it->is_number_integer())
    f.code = it->get<long>();
  if (auto it = obj.find("reason"); it != obj.end() && it->is_string())
    f.reason = it->get<std::string>();
  if (auto it = obj.find("message"); it != obj.end() && it->is_string())
    f.message = Truncate(it->get<std::string>(), 1024);
  auto details = obj.find("details");
  if (details != obj.end() && details->is_object()) {
    auto ras = details->find("retryAfterSeconds");
    if (ras != details->end() && ras->is_number_integer()) f.retry_after = StrCat(ras->get<long>());
  }
  return f;
}

}  // namespace

Status ApiErrorFromStatusObject(std::string_view what, const nlohmann::json& status_object) {
  StatusFields f = Extract(status_object);
  return Build(what, f.code, std::move(f.reason), f.message, f.retry_after);
}

Status ApiError(std::string_view what, long http_code, std::string_view body,
                std::string_view retry_after) {
  nlohmann::json obj = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  // Any JSON may arrive here (a proxy's error page, a fuzzer): "kind" need not be a string,
  // and nlohmann's value("kind", "") throws when it is not.
  auto kind = obj.is_object() ? obj.find("kind") : obj.end();
  if (!obj.is_discarded() && obj.is_object() && kind != obj.end() && kind->is_string() &&
      kind->get_ref<const std::string&>() == "Status") {
    // The HTTP code is authoritative; the header wins over details.retryAfterSeconds.
    StatusFields f = Extract(obj);
    return Build(what, http_code, std::move(f.reason), f.message,
                 retry_after.empty() ? std::string_view(f.retry_after) : retry_after);
  }
  return Build(what, http_code, "", Truncate(body, 256), retry_after);
}

std::optional<int> HttpCodeOf(const Status& s) {
  auto v = s.GetPayload(kHttpCodePayload);
  if (!v) return std::nullopt;
  int code = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), code);
  if (ec != std::errc()) return std::nullopt;
  return code;
}

std::string ReasonOf(const Status& s) { return s.GetPayload(kReasonPayload).value_or(""); }

std::optional<std::chrono::seconds> RetryAfterOf(const Status& s) {
  auto v = s.GetPayload(kRetryAfterPayload);
  if (!v) return std::nullopt;
  int n = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc()) return std::nullopt;
  return std::chrono::seconds(n);
}

bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
bool IsConflict(const Status& s) {
  return s.code() == StatusCode::kAborted && HttpCodeOf(s) == 409;
}
bool IsResourceExpired(const Status& s) {
  std::string r = ReasonOf(s);
  return HttpCodeOf(s) == 410 || r == "Expired" || r == "Gone";
}
bool IsTooManyRequests(const Status& s) {
  return HttpCodeOf(s) == 429 || ReasonOf(s) == "TooManyRequests";
}
bool IsForbidden(const Status& s) { return s.code() == StatusCode::kPermissionDenied; }

}  // namespace skb::k8s
