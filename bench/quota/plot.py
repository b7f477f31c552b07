#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots the worst team's p99 wait against cluster size, one line per mode; for the mixed
case (a column inference_p99_wait_h) also the inference tenant's own p99 wait, dotted.

    plot.py quota_study.csv out.png [TITLE]
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
title = (sys.argv[3] if len(sys.argv) > 3 else
         "Philly trace, 11 teams: static split vs one pool vs guaranteed quotas")
mixed = bool(rows) and "inference_p99_wait_h" in rows[0]
fig, ax = plt.subplots(figsize=(7, 4.2))
# A team that can never run (a static pool smaller than its largest job) has no finite
# wait: drawn as an open marker above every finite one. Waits of 0 are drawn at 0.01 h.
finite = [float(r["worst_p99_wait_h"]) for r in rows if float(r["worst_p99_wait_h"]) >= 0]
top = max(finite + [1]) * 3
for mode, style in (("static", "o-"), ("pool", "s--"), ("quotas", "^-")):
    pts = [(int(r["cluster_gpus"]), float(r["worst_p99_wait_h"]))
           for r in rows if r["mode"] == mode]
    line, = ax.plot([g for g, w in pts if w >= 0], [max(w, 0.01) for _, w in pts if w >= 0],
                    style, label=mode)
    never = [g for g, w in pts if w < 0]
    if never:
        ax.plot(never, [top] * len(never), style[0], mfc="none", color=line.get_color(),
                label=f"{mode}: a team never runs")
    if mixed:
        pods = [(int(r["cluster_gpus"]), float(r["inference_p99_wait_h"]))
                for r in rows if r["mode"] == mode and float(r["inference_p99_wait_h"]) >= 0]
        ax.plot([g for g, _ in pods], [max(w, 0.01) for _, w in pods], ":",
                color=line.get_color(), lw=1.2, label=f"{mode}: inference p99")
for hours in (24, 4):
    ax.axhline(hours, color="grey", lw=0.8, ls=":")
    ax.text(0, hours, f" {hours} h", va="bottom", fontsize=8,
            transform=ax.get_yaxis_transform())
ax.set_yscale("log")
ax.set_xlabel("cluster size (GPUs, nodes of 8)")
ax.set_ylabel("worst team's p99 wait (hours)")
ax.set_title(title, fontsize=10 if mixed else None)
ax.legend(fontsize=8 if mixed else None)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
