// SPDX-License-Identifier: Apache-2.0
#include "src/base/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/status.h"

namespace skb {
namespace {

using ::testing::ElementsAre;

TEST(StrCat, MixesStringsAndNumbers) {
  std::string name = "node1";
  EXPECT_EQ(StrCat(name, " has ", 8, " GPUs, ", 1.5, " free, ", true, ' ', std::string_view("x")),
            "node1 has 8 GPUs, 1.5 free, true x");
  std::string s = "a";
  StrAppend(&s, "b", 3);
  EXPECT_EQ(s, "ab3");
}

TEST(StrSplit, KeepsOrSkipsEmpties) {
  EXPECT_THAT(StrSplit("a,,b", ','), ElementsAre("a", "", "b"));
  EXPECT_THAT(StrSplit("a,,b,", ',', true), ElementsAre("a", "b"));
  EXPECT_THAT(StrSplit("", ','), ElementsAre(""));
  EXPECT_TRUE(StrSplit("", ',', true).empty());
}

TEST(StrJoin, PutsTheSeparatorBetween) {
  EXPECT_EQ(StrJoin({}, "+"), "");
  EXPECT_EQ(StrJoin({"gpu"}, "+"), "gpu");
  EXPECT_EQ(StrJoin({"gpu", "", "urgent"}, ", "), "gpu, , urgent");
}

TEST(StripWhitespace, BothEnds) {
  EXPECT_EQ(StripWhitespace("  x y\n"), "x y");
  EXPECT_EQ(StripWhitespace(" \t "), "");
}

TEST(Status, CodesMessagesAndPayloads) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  Status s = NotFoundError("pod x not found");
  s.SetPayload("k8s.reason", "NotFound");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: pod x not found");
  EXPECT_EQ(s.GetPayload("k8s.reason"), "NotFound");
  EXPECT_EQ(s.GetPayload("other"), std::nullopt);
  Status ok_with_message(StatusCode::kOk, "ignored");
  EXPECT_EQ(ok_with_message.message(), "");
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError(StrCat(x, " is odd"));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return OkStatus();
}

TEST(StatusOr, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "3 is odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
  StatusOr<std::string> from_literal("abc");
  EXPECT_EQ(*from_literal, "abc");
  StatusOr<int> from_ok_status{OkStatus()};
  EXPECT_EQ(from_ok_status.status().code(), StatusCode::kInternal);
  EXPECT_EQ(from_ok_status.value_or(7), 7);
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> e = UnavailableError("down");
  EXPECT_DEATH((void)e.value(), "UNAVAILABLE: down");
}

}  // namespace
}  // namespace skb
