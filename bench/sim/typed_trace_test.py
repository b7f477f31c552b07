#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of bench/sim/typed_trace.py on a small trace, and that the trace simulator replays
what it writes (in GPU mode, with no device violation).

  typed_trace_test.py SOURCE_DIR SKB_TRACE_SIM
"""
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

src, sim = Path(sys.argv[1]), sys.argv[2]
gen = src / "bench/sim/typed_trace.py"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run_gen(d, out, share, seed, *extra):
    return subprocess.run([sys.executable, str(gen), "--tasks", str(d / "tasks.csv"),
                           "--nodes", str(d / "nodes.csv"), "--share", str(share),
                           "--seed", str(seed), "--out-dir", str(out), *extra],
                          capture_output=True, text=True)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


with tempfile.TemporaryDirectory() as tmp:
    d = Path(tmp)
    # 8 nodes: 2 T4 (2 GPUs), 4 V100M16/V100M32 (8 GPUs), 2 G2 (8 GPUs).
    with open(d / "nodes.csv", "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for i, (gpus, model) in enumerate([(2, "T4"), (2, "T4"), (8, "V100M16"), (8, "V100M16"),
                                           (8, "V100M32"), (8, "V100M32"), (8, "G2"),
                                           (8, "G2")]):
            f.write(f"node-{i},64000,262144,{gpus},{model}\n")
    # 400 tasks: inference (LS) and training (BE), 1-2 GPUs, one CPU-only, one that names
    # a model already; short, spread over 4000 s.
    with open(d / "tasks.csv", "w") as f:
        f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                "creation_time,deletion_time,scheduled_time\n")
        for i in range(400):
            qos = "LS" if i % 2 == 0 else "BE"
            gpus = 1 + (i % 3 == 0)
            spec = "G2" if i == 4 else ""
            num = 0 if i == 6 else gpus
            f.write(f"task-{i},1000,1024,{num},1000,{spec},{qos},Succeeded,"
                    f"{i * 10},{i * 10 + 300},{i * 10}\n")

    r = run_gen(d, d / "a", 0.5, 7)
    check(r.returncode == 0, f"generator ran: {r.stderr}")
    r2 = run_gen(d, d / "b", 0.5, 7)
    check((d / "a/tasks.csv").read_bytes() == (d / "b/tasks.csv").read_bytes(),
          "the same seed writes the same tasks")
    run_gen(d, d / "c", 0.5, 8)
    check((d / "a/tasks.csv").read_bytes() != (d / "c/tasks.csv").read_bytes(),
          "another seed writes other tasks")

    orig = rows(d / "tasks.csv")
    typed = rows(d / "a/tasks.csv")
    models = {n["model"] for n in rows(d / "a/nodes.csv")}
    check(len(typed) == len(orig), "every row is kept")
    changed = [t for t, o in zip(typed, orig) if t != o]
    check(all({k: v for k, v in t.items() if k != "gpu_spec"} ==
              {k: v for k, v in o.items() if k != "gpu_spec"} for t, o in zip(typed, orig)),
          "only gpu_spec changes")
    check(all(t["qos"] == "LS" for t in changed), "--training-share 0: no training task named")
    check(typed[6]["gpu_spec"] == "", "a task without GPUs is never named")
    check(typed[4]["gpu_spec"] == "G2", "a task naming a model keeps it")
    inference = [t for t in typed if t["qos"] == "LS" and t["num_gpu"] != "0"]
    named = [t for t in inference if t["gpu_spec"]]
    check(70 <= len(named) <= 130, f"about half of 199 inference tasks named: {len(named)}")
    specs = {t["gpu_spec"] for t in named}
    check(all(set(s.split("|")) <= models for s in specs), f"named models exist: {specs}")
    check("V100M16|V100M32" in specs, f"a V100 task names the family: {specs}")
    check("V100M16" not in specs and "V100M32" not in specs, "never half a family")

    # Variants of one seed are nested: a task named at 0.2 is named alike at 0.5.
    run_gen(d, d / "small", 0.2, 7)
    small = rows(d / "small/tasks.csv")
    check(all(not s["gpu_spec"] or s["gpu_spec"] == t["gpu_spec"]
              for s, t in zip(small, typed)), "share 0.2 is a subset of share 0.5")
    check(sum(1 for s in small if s["gpu_spec"]) < len(named) + 1, "fewer named at 0.2")

    # A node sample: what the tasks name exists in it.
    r = run_gen(d, d / "s", 1.0, 3, "--node-fraction", "0.5")
    check(r.returncode == 0, f"sampled: {r.stderr}")
    sampled = {n["model"] for n in rows(d / "s/nodes.csv")}
    check(0 < len(rows(d / "s/nodes.csv")) < 8, "a sample, not every node")
    check(all(set(t["gpu_spec"].split("|")) <= sampled
              for t in rows(d / "s/tasks.csv") if t["gpu_spec"] and t["name"] != "task-4"),
          "named models are the sample's")

    for bad in (["--share", "1.5"], ["--node-fraction", "0"]):
        r = subprocess.run([sys.executable, str(gen), "--tasks", str(d / "tasks.csv"),
                            "--nodes", str(d / "nodes.csv"), "--seed", "1", "--out-dir",
                            str(d / "x"), "--share", "0.5", *bad], capture_output=True, text=True)
        check(r.returncode != 0 and "must be" in r.stderr, f"{bad} refused: {r.stderr}")

    # The simulator replays the variant by GPU type, with no device violation.
    out = d / "sim.json"
    r = subprocess.run([sim, "--tasks", str(d / "a/tasks.csv"), "--nodes", str(d / "a/nodes.csv"),
                        "--seed", "1", "--mode", "bridge-gpu", "--out", str(out)],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"skb_trace_sim replays the variant: {r.stderr[-500:]}")
    if r.returncode == 0:
        res = json.loads(out.read_text())
        text = json.dumps(res)
        check('"device_violations": 0' in text, "no device violation")
        check('"inference_never_started": 0' in text, "every inference pod started")

print(f"typed_trace_test: {len(failures)} failed")
sys.exit(1 if failures else 0)
