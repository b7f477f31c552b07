// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the daemon's end of the protocol: arbitrary bytes from a peer go
// through the frame decoder and every frame through AdmissionService::HandleFrame, as the
// socket server does. Must never crash, hang or grow memory without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bridge/api/frame.h"
#include "bridge/plugin_server/admission_service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static skb::bridge::AdmissionService* service = [] {
    auto* s = new skb::bridge::AdmissionService(
        skb::admission::Policy{.preemptible_partitions = {"gpu"}});
    skb::admission::Inventory inv;
    inv.known = true;
    inv.default_partition = "gpu";
    inv.nodes.push_back({"node1",
                         {{"h100", 8}},
                         {"h100"},
                         {"gpu"},
                         skb::admission::NodeFacts::Availability::kAvailable,
                         ""});
    inv.nodes.push_back({"node2",
                         {{"a100", 4}},
                         {"a100", "ib"},
                         {"gpu", "urgent"},
                         skb::admission::NodeFacts::Availability::kLent,
                         "lent"});
    s->Publish(std::move(inv));
    return s;
  }();
  skb::api::FrameDecoder decoder;
  // Feed in two pieces to exercise reassembly.
  const size_t half = size / 2;
  decoder.Append(reinterpret_cast<const char*>(data), half);
  std::string frame;
  for (int pass = 0; pass < 2; ++pass) {
    while (decoder.Next(&frame) == skb::api::FrameDecoder::Result::kFrame) {
      (void)service->HandleFrame(frame);
    }
    if (pass == 0) decoder.Append(reinterpret_cast<const char*>(data) + half, size - half);
  }
  // The whole input as one unframed request, too.
  (void)service->HandleFrame(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
