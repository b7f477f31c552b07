#!/usr/bin/env python3
"""Plots the worst team's p99 wait against cluster size, one line per mode.

    plot.py quota_study.csv out.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
fig, ax = plt.subplots(figsize=(7, 4.2))
for mode, style in (("static", "o-"), ("pool", "s--"), ("quotas", "^-")):
    pts = [(int(r["cluster_gpus"]), float(r["worst_p99_wait_h"]))
           for r in rows if r["mode"] == mode]
    # A team that can never run (a static pool smaller than its largest job) has no wait:
    # drawn at the top of the axis.
    top = max([w for _, w in pts if w >= 0] + [1]) * 2
    ax.plot([g for g, _ in pts], [w if w >= 0 else top for _, w in pts], style, label=mode)
for hours in (24, 4):
    ax.axhline(hours, color="grey", lw=0.8, ls=":")
    ax.text(0, hours, f" {hours} h", va="bottom", fontsize=8,
            transform=ax.get_yaxis_transform())
ax.set_yscale("log")
ax.set_xlabel("cluster size (GPUs, nodes of 8)")
ax.set_ylabel("worst team's p99 wait (hours)")
ax.set_title("Philly trace, 11 teams: static split vs one pool vs guaranteed quotas")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
