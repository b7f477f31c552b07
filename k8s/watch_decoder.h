// SPDX-License-Identifier: Apache-2.0
// Incremental decoding of a Kubernetes watch stream: newline-delimited JSON objects
// {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR", "object": {...}}.
//
// Bytes arrive in arbitrary chunks; only the current incomplete line is buffered, never the
// stream. Each complete line is parsed and handed on immediately.
//
//   WatchDecoder decoder;
//   RETURN_IF_ERROR(decoder.Feed(chunk, handler));   // per chunk
//   RETURN_IF_ERROR(decoder.Finish(handler));        // when the stream ends
#pragma once

#include <string>
#include <string_view>

#include "k8s/json_selection.h"
#include "k8s/kube_client.h"
#include "src/base/status.h"

namespace skb::k8s {

// Parses one event line. An ERROR event becomes its error Status (api_error.h: e.g.
// OutOfRange for "too old resource version"); a line that is not JSON, lacks type/object,
// has an unknown type or a non-object `object` is DataLoss. `what` prefixes messages.
// With a `selection` (json_selection.h) only the selected parts of the event are decoded;
// ERROR events are always decoded whole.
StatusOr<WatchEvent> ParseWatchEvent(std::string_view line, std::string_view what = "watch",
                                     const JsonSelection* selection = nullptr);

// Not thread-safe: one decoder per stream.
class WatchDecoder {
 public:
  // Lines longer than max_line_bytes (an oversized object) are an error, not an unbounded
  // buffer. The apiserver's own limit on an object is ~1.5 MB (etcd), so 16 MiB is generous.
  // `selection`, when not null, must outlive the decoder.
  explicit WatchDecoder(std::string what = "watch", size_t max_line_bytes = 16u << 20,
                        const JsonSelection* selection = nullptr);

  // Decodes every complete line in buffer+chunk and calls `handler` for each event.
  // Returns the first error (DataLoss, ResourceExhausted for an oversized line, or the
  // ERROR event's status); Cancelled-free: when the handler returns false, Feed returns OK
  // and stopped() becomes true. After an error or a stop the decoder must not be fed again.
  Status Feed(std::string_view chunk, const WatchHandler& handler);

  // At the end of the stream: delivers a last event that lacked its newline, or returns
  // DataLoss when the stream ended inside an event (cut mid-object).
  Status Finish(const WatchHandler& handler);

  bool stopped() const { return stopped_; }
  uint64_t events() const { return events_; }

 private:
  Status Line(std::string_view line, const WatchHandler& handler);

  const std::string what_;
  const size_t max_line_bytes_;
  const JsonSelection* const selection_;
  std::string partial_;
  bool stopped_ = false;
  uint64_t events_ = 0;
};

}  // namespace skb::k8s
