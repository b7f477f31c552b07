// SPDX-License-Identifier: Apache-2.0
#include "bridge/api/frame.h"

#include <gtest/gtest.h>

#include <random>

#include "bridge/api/v1/bridge.pb.h"

namespace skb::api {
using v1::PROTOCOL_VERSION_1;
using v1::Request;
namespace {

std::string Frame(std::string_view payload) {
  std::string out;
  EXPECT_TRUE(EncodeFrame(payload, &out));
  return out;
}

TEST(Frame, EncodesBigEndianLengthThenPayload) {
  std::string out = Frame("abc");
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(out.substr(0, 4), std::string("\0\0\0\3", 4));
  EXPECT_EQ(out.substr(4), "abc");
}

TEST(Frame, RefusesEmptyAndOversizedPayloads) {
  std::string out;
  EXPECT_FALSE(EncodeFrame("", &out));
  EXPECT_FALSE(EncodeFrame(std::string(kMaxFrameSize + 1, 'x'), &out));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(EncodeFrame(std::string(kMaxFrameSize, 'x'), &out));
}

TEST(FrameDecoder, ReassemblesFramesSplitAtEveryByte) {
  std::string stream = Frame("first") + Frame(std::string(1000, 'b')) + Frame("x");
  FrameDecoder dec;
  std::vector<std::string> got;
  std::string f;
  for (char c : stream) {
    dec.Append(&c, 1);
    while (dec.Next(&f) == FrameDecoder::Result::kFrame) got.push_back(f);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "first");
  EXPECT_EQ(got[1], std::string(1000, 'b'));
  EXPECT_EQ(got[2], "x");
  EXPECT_EQ(dec.buffered(), 0u);
  EXPECT_FALSE(dec.failed());
}

TEST(FrameDecoder, TruncatedFrameWaitsForMore) {
  std::string stream = Frame("hello");
  FrameDecoder dec;
  dec.Append(stream.data(), stream.size() - 1);
  std::string f;
  EXPECT_EQ(dec.Next(&f), FrameDecoder::Result::kNeedMore);
  EXPECT_EQ(dec.buffered(), stream.size() - 1);
  dec.Append(stream.data() + stream.size() - 1, 1);
  EXPECT_EQ(dec.Next(&f), FrameDecoder::Result::kFrame);
  EXPECT_EQ(f, "hello");
}

TEST(FrameDecoder, HugeLengthPrefixIsAnErrorWithoutAllocating) {
  FrameDecoder dec;
  dec.Append(std::string("\xff\xff\xff\xff", 4));
  std::string f;
  EXPECT_EQ(dec.Next(&f), FrameDecoder::Result::kError);
  EXPECT_NE(dec.error().find("exceeds the limit"), std::string::npos) << dec.error();
  EXPECT_EQ(dec.buffered(), 0u);
  // Sticky: later bytes are ignored, the connection must be dropped.
  dec.Append(Frame("ok"));
  EXPECT_EQ(dec.Next(&f), FrameDecoder::Result::kError);
}

TEST(FrameDecoder, ZeroLengthIsAnError) {
  FrameDecoder dec;
  dec.Append(std::string(4, '\0'));
  std::string f;
  EXPECT_EQ(dec.Next(&f), FrameDecoder::Result::kError);
  EXPECT_NE(dec.error().find("length 0"), std::string::npos);
}

TEST(FrameDecoder, BoundsMemoryWhenThePeerNeverWaits) {
  FrameDecoder dec(/*max_frame=*/16);
  std::string chunk(8, 'x');
  std::string f;
  // A valid header announcing 16 bytes, then far more data than one frame, never drained.
  dec.Append(std::string("\0\0\0\x10", 4));
  for (int i = 0; i < 100 && !dec.failed(); ++i) dec.Append(chunk);
  EXPECT_TRUE(dec.failed());
  EXPECT_LE(dec.buffered(), 40u);
}

TEST(FrameDecoder, RandomGarbageNeverCrashes) {
  std::mt19937 rng(42);
  for (int round = 0; round < 2000; ++round) {
    FrameDecoder dec(1024);
    std::string bytes(rng() % 64, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    dec.Append(bytes);
    std::string f;
    int frames = 0;
    while (dec.Next(&f) == FrameDecoder::Result::kFrame) {
      ++frames;
      Request req;
      (void)req.ParseFromString(f);  // garbage protobuf: parse may fail, never crash
    }
    EXPECT_LE(frames, 16);
  }
}

TEST(Protocol, RequestRoundTripsThroughAFrame) {
  Request req;
  req.set_protocol_version(PROTOCOL_VERSION_1);
  req.set_request_id(7);
  auto* job = req.mutable_admit()->mutable_job();
  job->set_tres_per_node("gres:gpu:h100:2");
  job->add_required_nodes("node1");
  std::string wire;
  ASSERT_TRUE(EncodeFrame(req.SerializeAsString(), &wire));
  FrameDecoder dec;
  dec.Append(wire);
  std::string f;
  ASSERT_EQ(dec.Next(&f), FrameDecoder::Result::kFrame);
  Request back;
  ASSERT_TRUE(back.ParseFromString(f));
  EXPECT_EQ(back.request_id(), 7u);
  EXPECT_EQ(back.admit().job().tres_per_node(), "gres:gpu:h100:2");
  EXPECT_EQ(back.admit().job().required_nodes(0), "node1");
}

}  // namespace
}  // namespace skb::api
