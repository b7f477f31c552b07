// SPDX-License-Identifier: Apache-2.0
#include "k8s/base64.h"

#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

TEST(Base64, RoundTripsAllLengths) {
  std::string data;
  for (int i = 0; i < 40; ++i) {
    auto decoded = Base64Decode(Base64Encode(data));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, data);
    data.push_back(static_cast<char>(i * 37));
  }
}

TEST(Base64, KnownVectorsWhitespaceAndMissingPadding) {
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(*Base64Decode("Zm9v\nYmFy\n"), "foobar");
  EXPECT_EQ(*Base64Decode("Zm8"), "fo");
}

TEST(Base64, RejectsGarbage) {
  EXPECT_FALSE(Base64Decode("Zm9v!").ok());
  EXPECT_FALSE(Base64Decode("Zm=9v").ok());  // data after padding
  EXPECT_FALSE(Base64Decode("Z").ok());      // a lone sextet is not a byte
  EXPECT_FALSE(Base64Decode("Zm8===").ok());
}

}  // namespace
}  // namespace skb::k8s
