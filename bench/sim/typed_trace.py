#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Makes GPU-type-constrained variants of a trace in the Alibaba GPU 2023 format.

The shared trace's gpu_spec column is empty, so no replay of it exercises GPU types. This
writes a copy in which a stated share of the GPU tasks name the GPU models they may run on,
the way the recorded cluster's own pods do ("T4", "V100M16|V100M32"):

  bench/sim/typed_trace.py --tasks openb_pod_list_default.csv \\
      --nodes openb_node_list_gpu_node.csv --share 0.33 --seed 7 \\
      [--training-share 0] [--node-fraction 0.008] --out-dir DIR

writes DIR/tasks.csv and DIR/nodes.csv, to be replayed with
`skb_trace_sim --tasks DIR/tasks.csv --nodes DIR/nodes.csv` (no --node-fraction: the sample
is made here, so that every model a task names exists among the nodes it is replayed on).

How a variant is drawn (deterministic for a seed; Python's random.Random):
  - the node sample: each node kept with probability --node-fraction (at least one node of
    every model the sample keeps is then what tasks may name); 1 keeps all;
  - which tasks: each GPU-using inference task (qos LS) is constrained with probability
    --share, each GPU-using training task (every other qos) with --training-share; tasks
    that already name models keep them;
  - which models: one model drawn in proportion to its GPUs in the node sample; when the
    sample has other models of the same family (the name without a trailing "M<memory>":
    V100M16 and V100M32 are both V100), the task names the whole family, joined with "|",
    as the recorded trace does.
Every other column and every row is copied unchanged.
"""
import argparse
import csv
import random
import re
import sys
from pathlib import Path


def family(model):
    return re.sub(r"M\d+$", "", model)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--share", type=float, required=True,
                    help="share of GPU inference tasks that name models (0-1)")
    ap.add_argument("--training-share", type=float, default=0.0,
                    help="share of GPU training tasks that name models (0-1)")
    ap.add_argument("--node-fraction", type=float, default=1.0)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args(argv)
    for name, v in (("--share", a.share), ("--training-share", a.training_share)):
        if not 0 <= v <= 1:
            ap.error(f"{name} must be between 0 and 1, not {v}")
    if not 0 < a.node_fraction <= 1:
        ap.error(f"--node-fraction must be in (0, 1], not {a.node_fraction}")
    rng = random.Random(a.seed)

    with open(a.nodes, newline="") as f:
        node_reader = csv.DictReader(f)
        node_fields = node_reader.fieldnames
        nodes = list(node_reader)
    for col in ("sn", "gpu", "model"):
        if col not in (node_fields or []):
            sys.exit(f"{a.nodes}: no column '{col}'")
    kept = [n for n in nodes if a.node_fraction >= 1 or rng.random() < a.node_fraction]
    kept = [n for n in kept if int(n["gpu"]) > 0]
    if not kept:
        sys.exit(f"{a.nodes}: no GPU node kept at --node-fraction {a.node_fraction}")
    gpus_of = {}
    for n in kept:
        gpus_of[n["model"]] = gpus_of.get(n["model"], 0) + int(n["gpu"])
    models = sorted(gpus_of)
    weights = [gpus_of[m] for m in models]
    families = {}
    for m in models:
        families.setdefault(family(m), []).append(m)

    with open(a.tasks, newline="") as f:
        task_reader = csv.DictReader(f)
        task_fields = task_reader.fieldnames
        tasks = list(task_reader)
    for col in ("num_gpu", "gpu_milli", "gpu_spec", "qos"):
        if col not in (task_fields or []):
            sys.exit(f"{a.tasks}: no column '{col}'")
    constrained = {"inference": 0, "training": 0}
    gpu_tasks = {"inference": 0, "training": 0}
    for t in tasks:
        uses_gpu = int(t["num_gpu"] or 0) > 0
        if not uses_gpu:
            continue
        kind = "inference" if t["qos"] == "LS" else "training"
        gpu_tasks[kind] += 1
        share = a.share if kind == "inference" else a.training_share
        draw = rng.random()  # drawn for every GPU task: a variant's other tasks do not move
        pick = rng.choices(models, weights)[0]
        if t["gpu_spec"]:
            constrained[kind] += 1
            continue
        if draw < share:
            t["gpu_spec"] = "|".join(families[family(pick)])
            constrained[kind] += 1

    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "tasks.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=task_fields, lineterminator="\n")
        w.writeheader()
        w.writerows(tasks)
    with open(out / "nodes.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=node_fields, lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    print(f"typed-trace: seed {a.seed}: {len(kept)} nodes ({sum(weights)} GPUs; "
          + ", ".join(f"{m} {gpus_of[m]}" for m in models) + "); "
          f"inference {constrained['inference']}/{gpu_tasks['inference']} constrained, "
          f"training {constrained['training']}/{gpu_tasks['training']}", file=sys.stderr)


if __name__ == "__main__":
    main()
