// SPDX-License-Identifier: Apache-2.0
#include "k8s/api_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

using ::testing::HasSubstr;

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json({{"kind", "Status"},
                         {"apiVersion", "v1"},
                         {"status", "Failure"},
                         {"code", code},
                         {"reason", reason},
                         {"message", message}})
      .dump();
}

TEST(ApiError, MapsReasonsToCodesAndKeepsTheMessage) {
  struct Case {
    int http;
    const char* reason;
    StatusCode code;
  };
  const Case cases[] = {
      {404, "NotFound", StatusCode::kNotFound},
      {409, "AlreadyExists", StatusCode::kAlreadyExists},
      {409, "Conflict", StatusCode::kAborted},
      {410, "Expired", StatusCode::kOutOfRange},
      {410, "Gone", StatusCode::kOutOfRange},
      {429, "TooManyRequests", StatusCode::kUnavailable},
      {401, "Unauthorized", StatusCode::kUnauthenticated},
      {403, "Forbidden", StatusCode::kPermissionDenied},
      {422, "Invalid", StatusCode::kInvalidArgument},
      {400, "BadRequest", StatusCode::kInvalidArgument},
      {415, "UnsupportedMediaType", StatusCode::kInvalidArgument},
      {405, "MethodNotAllowed", StatusCode::kUnimplemented},
      {500, "InternalError", StatusCode::kUnavailable},
      {503, "ServiceUnavailable", StatusCode::kUnavailable},
      {504, "Timeout", StatusCode::kDeadlineExceeded},
  };
  for (const Case& c : cases) {
    Status s =
        ApiError("GET /api/v1/nodes/n1", c.http, StatusBody(c.http, c.reason, "the words"), "");
    EXPECT_EQ(s.code(), c.code) << c.reason;
    EXPECT_EQ(HttpCodeOf(s), c.http);
    EXPECT_EQ(ReasonOf(s), c.reason);
    EXPECT_THAT(s.message(), HasSubstr("GET /api/v1/nodes/n1"));
    EXPECT_THAT(s.message(), HasSubstr("the words"));
  }
}

TEST(ApiError, Predicates) {
  EXPECT_TRUE(IsConflict(ApiError("PUT x", 409, StatusBody(409, "Conflict", "rv"), "")));
  EXPECT_FALSE(IsConflict(ApiError("POST x", 409, StatusBody(409, "AlreadyExists", "dup"), "")));
  EXPECT_TRUE(
      IsAlreadyExists(ApiError("POST x", 409, StatusBody(409, "AlreadyExists", "dup"), "")));
  EXPECT_TRUE(IsResourceExpired(ApiError("GET x", 410, "", "")));
  EXPECT_TRUE(IsNotFound(ApiError("GET x", 404, "", "")));
  EXPECT_TRUE(IsForbidden(ApiError("PATCH x", 403, StatusBody(403, "Forbidden", "no"), "")));
}

TEST(ApiError, RetryAfterFromHeaderOrDetails) {
  Status h = ApiError("POST eviction", 429, StatusBody(429, "TooManyRequests", "pdb"), "7");
  EXPECT_TRUE(IsTooManyRequests(h));
  EXPECT_EQ(RetryAfterOf(h), std::chrono::seconds(7));
  nlohmann::json body = nlohmann::json::parse(StatusBody(429, "TooManyRequests", "slow down"));
  body["details"]["retryAfterSeconds"] = 2;
  Status d = ApiError("GET x", 429, body.dump(), "");
  EXPECT_EQ(RetryAfterOf(d), std::chrono::seconds(2));
  EXPECT_FALSE(
      RetryAfterOf(ApiError("GET x", 429, "", "Wed, 21 Oct 2015 07:28:00 GMT")).has_value());
}

TEST(ApiError, NonStatusBodiesAndUnknownCodes) {
  Status s = ApiError("GET /healthz", 502, "<html>bad gateway</html>", "");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("bad gateway"));
  Status teapot = ApiError("GET x", 418, "", "");
  EXPECT_EQ(teapot.code(), StatusCode::kUnknown);
  std::string huge(10000, 'x');
  EXPECT_LT(ApiError("GET x", 500, huge, "").message().size(), 400u);
}

// Found by k8s_watch_fuzzer (k8s/fuzz/corpus/status_kind_not_a_string): a JSON body whose
// "kind" is not a string threw nlohmann::type_error out of ApiError.
TEST(ApiError, BodyWithANonStringKindIsNotAStatus) {
  Status s = ApiError("GET x", 429, R"({"kind":429,"details":{"retryAfterSeconds":3}})", "");
  EXPECT_TRUE(IsTooManyRequests(s));
  EXPECT_THAT(s.message(), HasSubstr("429"));
  EXPECT_FALSE(ApiError("GET x", 500, R"({"kind":["Status"]})", "").ok());
}

TEST(ApiError, FromWatchErrorObject) {
  auto obj = nlohmann::json::parse(StatusBody(410, "Expired", "too old resource version: 1 (42)"));
  Status s = ApiErrorFromStatusObject("WATCH /api/v1/pods", obj);
  EXPECT_TRUE(IsResourceExpired(s));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("too old resource version"));
  // Garbage in an ERROR event is still an error, not OK.
  EXPECT_FALSE(ApiErrorFromStatusObject("WATCH x", nlohmann::json(42)).ok());
}

}  // namespace
}  // namespace skb::k8s
