// SPDX-License-Identifier: Apache-2.0
#include "bridge/api/frame.h"

namespace skb::api {
namespace {

uint32_t ReadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

}  // namespace

bool EncodeFrame(std::string_view payload, std::string* out, uint32_t max_frame) {
  if (payload.empty() || payload.size() > max_frame) return false;
  const auto n = static_cast<uint32_t>(payload.size());
  const char header[kFrameHeaderSize] = {
      static_cast<char>((n >> 24) & 0xff), static_cast<char>((n >> 16) & 0xff),
      static_cast<char>((n >> 8) & 0xff), static_cast<char>(n & 0xff)};
  out->append(header, kFrameHeaderSize);
  out->append(payload);
  return true;
}

void FrameDecoder::Fail(std::string reason) {
  error_ = std::move(reason);
  buffer_.clear();
  buffer_.shrink_to_fit();
  consumed_ = 0;
}

void FrameDecoder::Append(const char* data, size_t n) {
  if (failed() || n == 0) return;
  // Compact before growing so the buffer holds at most one frame plus one read.
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  // A well-behaved peer waits for each answer, so the buffer never holds more than one
  // frame and one read; anything beyond twice a maximal frame is a misbehaving peer.
  if (buffer_.size() + n > 2 * (kFrameHeaderSize + size_t{max_frame_})) {
    Fail("peer sent more than " + std::to_string(2 * (kFrameHeaderSize + size_t{max_frame_})) +
         " bytes without waiting for answers");
    return;
  }
  buffer_.append(data, n);
}

FrameDecoder::Result FrameDecoder::Next(std::string* frame) {
  if (failed()) return Result::kError;
  const size_t avail = buffer_.size() - consumed_;
  if (avail < kFrameHeaderSize) return Result::kNeedMore;
  const uint32_t len = ReadBigEndian32(buffer_.data() + consumed_);
  if (len == 0) {
    Fail("empty frame (length 0)");
    return Result::kError;
  }
  if (len > max_frame_) {
    Fail("frame length " + std::to_string(len) + " exceeds the limit of " +
         std::to_string(max_frame_) + " bytes");
    return Result::kError;
  }
  if (avail - kFrameHeaderSize < len) return Result::kNeedMore;
  frame->assign(buffer_, consumed_ + kFrameHeaderSize, len);
  consumed_ += kFrameHeaderSize + len;
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  return Result::kFrame;
}

}  // namespace skb::api
