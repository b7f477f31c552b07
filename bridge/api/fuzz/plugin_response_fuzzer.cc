// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the plugin's end of the protocol: arbitrary bytes from the daemon
// go through the frame decoder and every frame through InterpretAdmitResponse, as
// BridgeConnection::Admit does inside slurmctld.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bridge/api/frame.h"
#include "slurm-plugin/plugin_core.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  skb::api::FrameDecoder decoder;
  decoder.Append(reinterpret_cast<const char*>(data), size);
  std::string frame, why;
  skb::api::v1::AdmitResponse out;
  while (decoder.Next(&frame) == skb::api::FrameDecoder::Result::kFrame) {
    (void)skb::plugin::InterpretAdmitResponse(frame, 1, &out, &why);
  }
  (void)skb::plugin::InterpretAdmitResponse(
      std::string_view(reinterpret_cast<const char*>(data), size), 1, &out, &why);
  return 0;
}
