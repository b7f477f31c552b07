#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes bench/RESULTS.md from bench/results/*.json.

Two kinds of result files are understood:
  * Google Benchmark JSON (has "benchmarks" and "context"), one table row per benchmark;
  * end-to-end results written by bench/e2e/*.sh: {"name", "description", "unit",
    "figures": {"p50": .., "p99": .., ...}, "target": "...", "notes": "..."}, optionally
    "figure_targets": {figure: target} shown beside those figures.

With matplotlib (Debian: python3-matplotlib) it also draws PNGs into plots/ next to the
results directory (bench/plots/ for bench/results) and links them from the markdown;
without it the markdown is written all the same and a note says why there are no plots.
"""
import csv
import datetime
import glob
import json
import os
import platform
import re
import subprocess
import sys

try:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
except ImportError:
    plt = None


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def to_ns(value, unit):
    return value * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}.get(unit, 1)


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def save(fig, plots_dir, name):
    """Writes one PNG without the matplotlib version in its metadata, so regenerating the
    same results leaves the file unchanged."""
    fig.tight_layout()
    fig.savefig(os.path.join(plots_dir, name), dpi=110, metadata={"Software": None})
    plt.close(fig)
    return name


def plot_latencies(e2e, plots_dir):
    """Percentiles of every latency benchmark (results in ms with p50/p90/p99/max)."""
    rows = [r for r in e2e if r.get("unit", "").strip() == "ms" and "p50" in r["figures"]]
    if not rows:
        return None
    # "... (4 nodes ...)" before "... (10 nodes ...)".
    rows.sort(key=lambda r: [int(t) if t.isdigit() else t
                             for t in re.split(r"(\d+)", r.get("name", ""))])
    stats = [("p50", "#4c72b0"), ("p90", "#55a868"), ("p99", "#c44e52"), ("max", "#8c8c8c")]
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) * len(stats) / 2 + 1.2))
    height = 0.8 / len(stats)
    for i, (stat, color) in enumerate(stats):
        ys = [j + (i - (len(stats) - 1) / 2) * height for j in range(len(rows))]
        ax.barh(ys, [r["figures"].get(stat, 0) for r in rows], height, label=stat, color=color)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.get("name", "?") for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_title("End-to-end latencies on the testbed")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=len(stats), fontsize=8)
    return save(fig, plots_dir, "latency_percentiles.png")


def plot_drain_by_nodes(e2e, plots_dir):
    """Health drain latency against the number of nodes flipped at once."""
    points = []
    for r in e2e:
        m = re.match(r"k8s condition -> Slurm drain \((\d+) node", r.get("name", ""))
        if m:
            points.append((int(m.group(1)), r))
    if len(points) < 2:
        return None
    points.sort(key=lambda p: p[0])
    nodes = [n for n, _ in points]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for stat, style in (("p50", "o-"), ("p90", "s-"), ("p99", "^-"), ("max", "x:")):
        ax.plot(nodes, [r["figures"].get(stat) for _, r in points], style, label=stat)
    target = re.search(r"p99 < (\d+) ms", points[0][1].get("target", ""))
    if target:
        ax.axhline(float(target.group(1)), color="#c44e52", linestyle="--", linewidth=1,
                   label=f"target p99 < {target.group(1)} ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(nodes)
    ax.set_xticklabels([str(n) for n in nodes])
    ax.set_xlabel("nodes whose condition flips at once")
    ax.set_ylabel("condition -> Slurm drain (ms, log scale)")
    ax.set_title("Health drain latency by node count")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, plots_dir, "health_drain_by_nodes.png")


def plot_write_rate(e2e, plots_dir):
    """Kubernetes writes the bridge causes, against the job start rate and the target."""
    r = next((r for r in e2e if r.get("name") == "k8s_write_rate"), None)
    if r is None:
        return None
    figs = r["figures"]
    by_kind = r.get("details", {}).get("by_kind", {})
    labels = [f"{k}" for k in sorted(by_kind)] + ["all object writes", "Event writes"]
    values = [by_kind[k] for k in sorted(by_kind)] + [figs.get("object_writes", 0),
                                                      figs.get("event_writes", 0)]
    colors = ["#4c72b0"] * len(by_kind) + ["#55a868", "#8c8c8c"]
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(labels) + 1.6))
    bars = ax.barh(labels, values, color=colors)
    ax.bar_label(bars, labels=[f"{v:.1f}/s" for v in values], fontsize=8, padding=3)
    target = re.search(r"<= ([\d.]+) object writes/s", r.get("target", ""))
    limit = max(values + [1])
    if target:
        limit = max(limit, float(target.group(1)))
        ax.axvline(float(target.group(1)), color="#c44e52", linestyle="--", linewidth=1,
                   label=f"target: <= {target.group(1)} object writes/s")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(0, limit * 1.25)
    ax.invert_yaxis()
    ax.set_xlabel("Kubernetes API writes per second")
    nodes = r.get("details", {}).get("nodes")
    ax.set_title(f"Writes caused at {figs.get('job_starts', 0):.0f} Slurm job starts/s"
                 + (f" on {nodes:,} kwok nodes" if nodes else ""))
    ax.grid(axis="x", alpha=0.3)
    return save(fig, plots_dir, "k8s_write_rate.png")


def plot_trace(results_dir, plots_dir, stem, title):
    """GPUs in use over time per split mode, from a trace replay's CSV."""
    path = os.path.join(results_dir, stem + ".csv")
    if not os.path.exists(path):
        return None
    series = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            s = series.setdefault(row["mode"], ([], []))
            s[0].append(float(row["hours"]))
            s[1].append(float(row["total_gpus"]))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for mode, (hours, gpus) in series.items():
        ax.step([h / 24 for h in hours], gpus, where="post", label=mode, linewidth=1)
    ax.set_xlabel("trace time (days)")
    ax.set_ylabel("GPUs allocated")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, plots_dir, stem + ".png")


def plots(results_dir, e2e):
    """Draws every plot the results allow; returns markdown lines linking them."""
    if plt is None:
        print("report.py: matplotlib is not installed (apt-get install python3-matplotlib); "
              "writing RESULTS.md without plots", file=sys.stderr)
        return ["_No plots: matplotlib was not installed when this file was generated._", ""]
    plots_dir = os.path.join(os.path.dirname(os.path.abspath(results_dir)), "plots")
    os.makedirs(plots_dir, exist_ok=True)
    drawn = [
        ("Latency percentiles per end-to-end benchmark", plot_latencies(e2e, plots_dir)),
        ("Health drain latency by node count", plot_drain_by_nodes(e2e, plots_dir)),
        ("Kubernetes write rate", plot_write_rate(e2e, plots_dir)),
        ("Trace replay, as recorded: GPUs allocated",
         plot_trace(results_dir, plots_dir, "trace_sim", "Trace replay (as recorded): GPUs allocated")),
        ("Trace replay, contended: GPUs allocated",
         plot_trace(results_dir, plots_dir, "trace_sim_contended",
                    "Trace replay (contended): GPUs allocated")),
    ]
    out = []
    for title, name in drawn:
        if name:
            out += [f"![{title}](plots/{name})", ""]
    return (["## Plots", ""] + out) if out else []


def quota_study(results_dir):
    """The guaranteed-quota study's printed reports (bench/quota/study.sh), as they ran: the
    Philly teams alone, then the mixed case (with the Alibaba inference pods) when it ran."""
    out = []
    for name, title in (("quota_study", "the Philly study"),
                        ("quota_study_mixed",
                         "the mixed case, Philly teams + Alibaba inference pods")):
        path = os.path.join(results_dir, f"{name}.txt")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read().rstrip()
        out += [f"## Guaranteed quotas: {title} (bench/quota)", "",
                "Models and the trace: bench/quota/README.md.", "", "```", text, "```", ""]
        if os.path.exists(os.path.join(results_dir, f"{name}.png")):
            out += [f"![Worst team's p99 wait against cluster size](results/{name}.png)", ""]
    return out


def main(results_dir):
    micro, e2e = [], []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print(f"<!-- skipped {os.path.basename(path)}: {e} -->")
            continue
        if "benchmarks" in data:
            micro.append((os.path.basename(path)[:-5], data))
        elif "figures" in data:
            e2e.append(data)

    out = ["# Benchmark results", ""]
    out.append("Generated by `bench/run` — do not edit by hand.")
    out.append("")
    ctx = micro[0][1].get("context", {}) if micro else {}
    out.append(f"- date: {datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')}")
    out.append(f"- commit: {commit()}")
    out.append(f"- machine: {platform.node()} ({platform.machine()}, "
               f"{ctx.get('num_cpus', os.cpu_count())} CPUs"
               f"{', %s MHz' % ctx['mhz_per_cpu'] if 'mhz_per_cpu' in ctx else ''})")
    out.append("")

    if e2e:
        out += ["## End-to-end (testbed)", "", "| benchmark | figures | target | notes |",
                "|---|---|---|---|"]
        for r in e2e:
            unit = r.get("unit", "")
            targets = r.get("figure_targets", {})
            figs = ", ".join(
                (f"{k} {v:g}{unit}" if isinstance(v, (int, float)) else f"{k} {v}") +
                (f" (target {targets[k]})" if k in targets else "")
                for k, v in r["figures"].items())
            out.append(f"| {r.get('name', '?')} | {figs} | {r.get('target', '')} | "
                       f"{r.get('notes', '')} |")
        out.append("")

    out += plots(results_dir, e2e)

    for name, data in micro:
        out += [f"## {name}", "", "| benchmark | time | CPU | iterations | counters |",
                "|---|---|---|---|---|"]
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "mean":
                continue
            unit = b.get("time_unit", "ns")
            skip = {"name", "run_name", "run_type", "repetitions", "repetition_index",
                    "threads", "iterations", "real_time", "cpu_time", "time_unit",
                    "family_index", "per_family_instance_index", "aggregate_name",
                    "aggregate_unit", "label", "error_occurred", "error_message"}
            counters = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in b.items() if k not in skip)
            out.append(f"| {b['name']} | {fmt_time(to_ns(b['real_time'], unit))} | "
                       f"{fmt_time(to_ns(b['cpu_time'], unit))} | {b.get('iterations', '')} | "
                       f"{counters} |")
        out.append("")
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "design_figures.md")
    if os.path.exists(notes):
        with open(notes) as f:
            out += [f.read().rstrip(), ""]
    out += quota_study(results_dir)
    typed = os.path.join(results_dir, "typed_study.txt")
    if os.path.exists(typed):
        with open(typed) as f:
            out += ["## Trace replay on GPU-type-constrained variants (bench/sim/typed_study.sh)",
                    "", "Generator, seeds and how to read a row: bench/sim/README.md "
                    "(\"Traces it was not tuned on\").", "", f.read().rstrip(), ""]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
