// SPDX-License-Identifier: Apache-2.0
// Turning an apiserver response (or a transport failure) into a typed skb::Status.
//
// The code tells the caller what to do (src/base/status.h); the payloads keep the facts programs
// need, the message keeps the apiserver's own words:
//
//   HTTP / Status.reason                  code                 what the caller does
//   404 NotFound                          NotFound
//   409 AlreadyExists                     AlreadyExists
//   409 Conflict                          Aborted              re-read, re-plan, retry
//   410 Gone / Expired (watch/list RV)    OutOfRange           relist (the RV left the window)
//   429 TooManyRequests (+Retry-After)    Unavailable          retry after kRetryAfterPayload
//   401 Unauthorized                      Unauthenticated
//   403 Forbidden                         PermissionDenied
//   400 BadRequest, 422 Invalid, 415      InvalidArgument
//   413 RequestEntityTooLarge             InvalidArgument
//   405 MethodNotAllowed                  Unimplemented
//   5xx, connection errors                Unavailable          retry with back-off
//   504 / client timeout                  DeadlineExceeded
//   2xx with a body that is not JSON      DataLoss
//
//   if (IsConflict(s)) ...;  std::optional<int> code = HttpCodeOf(s);
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::k8s {

inline constexpr std::string_view kHttpCodePayload = "k8s.http_code";      // "404"
inline constexpr std::string_view kReasonPayload = "k8s.reason";           // "NotFound"
inline constexpr std::string_view kRetryAfterPayload = "k8s.retry_after";  // seconds, "3"

// Builds the Status for a non-2xx response. `what` names the request ("GET
// /api/v1/nodes/node1") and starts the message; `body` may be a Status object, other text
// or empty. `retry_after` is the Retry-After header value, if any.
Status ApiError(std::string_view what, long http_code, std::string_view body,
                std::string_view retry_after);

// Builds the Status for a watch ERROR event whose object is a metav1.Status.
Status ApiErrorFromStatusObject(std::string_view what, const nlohmann::json& status_object);

std::optional<int> HttpCodeOf(const Status& s);
std::string ReasonOf(const Status& s);  // "" when none
// Retry-After as a duration, when the server sent one.
std::optional<std::chrono::seconds> RetryAfterOf(const Status& s);

bool IsNotFound(const Status& s);
bool IsAlreadyExists(const Status& s);
bool IsConflict(const Status& s);
// 410 Gone, or a watch/list whose resourceVersion is too old (reason Expired/Gone).
bool IsResourceExpired(const Status& s);
bool IsTooManyRequests(const Status& s);
bool IsForbidden(const Status& s);

}  // namespace skb::k8s
