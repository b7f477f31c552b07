#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots allocated GPUs over time per mode from skb_trace_sim --series output.

    plot.py series.csv out.png [title]

Needs matplotlib (python3-matplotlib); bench/sim/study.sh skips the PNG without it.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst, title):
    modes = {}
    with open(src) as f:
        for row in csv.DictReader(f):
            m = modes.setdefault(row["mode"], ([], [], []))
            m[0].append(float(row["hours"]) / 24)
            m[1].append(float(row["total_gpus"]))
            m[2].append(float(row["inference_gpus"]))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for mode, (days, total, inference) in modes.items():
        ax.step(days, total, where="post", label=f"{mode}: allocated", linewidth=1)
    if "bridge" in modes:
        days, _, inference = modes["bridge"]
        ax.step(days, inference, where="post", label="inference (bridge)", linestyle=":",
                linewidth=1)
    ax.set_xlabel("days from the trace's start")
    ax.set_ylabel("GPUs allocated (bucket mean)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
