// SPDX-License-Identifier: Apache-2.0
// Error handling shared by every library of the project: Status, StatusOr<T> and the
// RETURN_IF_ERROR / ASSIGN_OR_RETURN macros.
//
// A small local equivalent of skb::Status (Debian 12's abseil has its own string_view
// type that does not mix with std::string_view, which made it more friction than help).
// Codes and their meaning follow abseil's canonical codes; the code tells the caller what
// to do:
//   Unavailable        - retry the same call later (apiserver down, slurmctld busy)
//   Aborted            - retry at a higher level (resourceVersion conflict)
//   FailedPrecondition - do not retry until state changes (bad config, unknown node)
//   InvalidArgument    - the input itself is wrong (malformed object, bad flag)
//
// A Status may carry payloads: small key/value facts for programs (e.g. the HTTP code and
// the Kubernetes reason of an API error), kept out of the human message.
//
//   skb::StatusOr<Config> LoadConfig(std::string_view path) {
//     ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     RETURN_IF_ERROR(Validate(text));
//     ...
//   }
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace skb {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "OK", "INVALID_ARGUMENT", ... as abseil and gRPC spell them.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(code == StatusCode::kOk ? std::string() : std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  void SetPayload(std::string key, std::string value) {
    if (!ok()) payloads_[std::move(key)] = std::move(value);
  }
  std::optional<std::string> GetPayload(std::string_view key) const {
    auto it = payloads_.find(key);
    if (it == payloads_.end()) return std::nullopt;
    return it->second;
  }

  // "NOT_FOUND: pod slurm/reserve-node1 not found"
  std::string ToString() const;

  // Ignores the status explicitly (documents that dropping it is intended).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::map<std::string, std::string, std::less<>> payloads_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

inline Status OkStatus() { return Status(); }
inline Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status UnknownError(std::string m) { return {StatusCode::kUnknown, std::move(m)}; }
inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status DeadlineExceededError(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status PermissionDeniedError(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status UnimplementedError(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status UnauthenticatedError(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}

// Either a value of T or a non-OK Status. Accessing the value of an error aborts the
// process: that is a programming error, not a runtime condition.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): implicit, as with skb::StatusOr.
  StatusOr(Status status) : status_(std::move(status)) {
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK status");
  }
  // NOLINTNEXTLINE(google-explicit-constructor)
  StatusOr(T value) : value_(std::move(value)) {}
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, StatusOr<T>> &&
                                                    !std::is_same_v<std::decay_t<U>, T>>>
  // NOLINTNEXTLINE(google-explicit-constructor)
  StatusOr(U&& value) : value_(T(std::forward<U>(value))) {}

  bool ok() const { return value_.has_value(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void CheckOk() const {
    if (!value_.has_value()) {
      std::fprintf(stderr, "fatal: StatusOr::value() on error: %s\n", status_.ToString().c_str());
      std::abort();
    }
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace skb

#define SKB_STATUS_CONCAT_INNER_(a, b) a##b
#define SKB_STATUS_CONCAT_(a, b) SKB_STATUS_CONCAT_INNER_(a, b)

// Returns from the current function with the status of `expr` if it is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::skb::Status skb_status_ = (expr);        \
    if (!skb_status_.ok()) return skb_status_; \
  } while (false)

// Evaluates `rexpr` (a StatusOr); on error returns its status, else moves the value into
// `lhs`, which may be a declaration (`ASSIGN_OR_RETURN(auto x, F())`).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  SKB_ASSIGN_OR_RETURN_IMPL_(SKB_STATUS_CONCAT_(skb_statusor_, __LINE__), lhs, rexpr)
#define SKB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()
