#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus for the protocol fuzzers (run from this directory; needs protoc).

corpus/request:  frames a plugin or a hostile peer might send the daemon
corpus/response: frames a daemon or a hostile peer might send the plugin
"""
import os, struct, subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))

def encode(message, text):
    return subprocess.run(["protoc", f"--proto_path={ROOT}", f"--encode=skb.api.v1.{message}",
                           "bridge/api/v1/bridge.proto"], input=text.encode(), cwd=ROOT,
                          capture_output=True, check=True).stdout

def frame(payload):
    return struct.pack(">I", len(payload)) + payload

def write(kind, name, data):
    with open(os.path.join(os.path.dirname(__file__), "corpus", kind, name), "wb") as f:
        f.write(data)

admit = encode("Request", 'protocol_version: 1 request_id: 1 admit { job { tres_per_node: "gres:gpu:h100:2" partition: "gpu" } }')
write("request", "admit_valid", frame(admit))
write("request", "admit_impossible", frame(encode("Request", 'protocol_version: 1 request_id: 2 admit { job { tres_per_node: "gres:gpu:a100:99" features: "h100&(ib|nvlink)*2" required_nodes: "node2" admin_comment: "x k8s-bridge:preemptible=true" warn_signal: 10 warn_time: 60 warn_flags: 1 } counters { fail_open: 3 } }')))
write("request", "ping", frame(encode("Request", 'protocol_version: 1 request_id: 3 ping {}')))
write("request", "two_frames", frame(admit) + frame(admit))
write("request", "truncated", frame(admit)[:-3])
write("request", "huge_length", b"\xff\xff\xff\xff" + admit)
write("request", "zero_length", b"\x00\x00\x00\x00")
write("request", "garbage", frame(b"\x0a\xff\xff\xff\xff\x0f\x12"))
write("request", "no_version", frame(encode("Request", 'request_id: 4 admit {}')))

resp = encode("Response", 'protocol_version: 1 request_id: 1 admit { decision: REJECT user_message: "k8s-bridge: no node has gpu type a100" }')
write("response", "reject", frame(resp))
write("response", "accept", frame(encode("Response", 'protocol_version: 1 request_id: 1 admit { decision: ACCEPT set_admin_comment: true admin_comment: "k8s-bridge:preemptible=false" }')))
write("response", "error", frame(encode("Response", 'protocol_version: 1 request_id: 1 error { code: BAD_REQUEST message: "no body" }')))
write("response", "wrong_id", frame(encode("Response", 'protocol_version: 1 request_id: 7 ping { nodes: 4 }')))
write("response", "truncated", frame(resp)[:5])
write("response", "huge_length", b"\x7f\xff\xff\xff")
write("response", "garbage", frame(b"\xff" * 16))
