// SPDX-License-Identifier: Apache-2.0
// Length-prefixed frames on a byte stream: the wire format of bridge/api/v1/bridge.proto.
//
//   frame := length (uint32, big-endian) payload (length bytes, one serialized message)
//
// A frame is at most kMaxFrameSize bytes of payload; a length of 0 or above the limit is a
// protocol error, after which the connection must be dropped (the stream can no longer be
// trusted to be aligned). This file has no dependencies beyond the standard library: it is
// compiled into the job_submit plugin as well as the daemon.
//
//   FrameDecoder dec;
//   dec.Append(buf, n);                       // whatever read() returned
//   std::string frame;
//   while (dec.Next(&frame) == FrameDecoder::Result::kFrame) Handle(frame);
//   if (dec.failed()) Drop(dec.error());
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace skb::api {

inline constexpr size_t kFrameHeaderSize = 4;
// Hard limit on one message; an admission request is a few hundred bytes.
inline constexpr uint32_t kMaxFrameSize = 64 * 1024;
// Limit on the daemon's answers to bridgectl's queries (the whole inventory: ~200 bytes a
// node). The plugin keeps decoding with kMaxFrameSize: its answers are small.
inline constexpr uint32_t kMaxQueryResponseSize = 16 * 1024 * 1024;

// Appends the frame for `payload` to `out`. Returns false (and appends nothing) when the
// payload is empty or larger than `max_frame`.
bool EncodeFrame(std::string_view payload, std::string* out, uint32_t max_frame = kMaxFrameSize);

// Splits a byte stream into frames. Memory is bounded: it never holds more than one
// maximal frame plus the bytes of one Append beyond it. Not thread-safe.
class FrameDecoder {
 public:
  enum class Result { kFrame, kNeedMore, kError };

  explicit FrameDecoder(uint32_t max_frame = kMaxFrameSize) : max_frame_(max_frame) {}

  // Adds bytes received from the peer. After an error further bytes are ignored.
  void Append(const char* data, size_t n);
  void Append(std::string_view data) { Append(data.data(), data.size()); }

  // Extracts the next complete frame's payload into *frame. kNeedMore: not enough bytes
  // yet. kError: the stream is corrupt (see error()); it stays in that state.
  Result Next(std::string* frame);

  bool failed() const { return !error_.empty(); }
  // Why the stream was rejected, for the log ("frame length 4294967295 exceeds ...").
  const std::string& error() const { return error_; }
  // Bytes received but not yet returned as frames.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  void Fail(std::string reason);

  const uint32_t max_frame_;
  std::string buffer_;
  size_t consumed_ = 0;
  std::string error_;
};

}  // namespace skb::api
