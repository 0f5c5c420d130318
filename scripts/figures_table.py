#!/usr/bin/env python3
"""Markdown tables of a figures run (scripts/gpu_figures.sh): every micro-benchmark as the mean
and min-max of its repetitions (bandwidth, x copy, x same-mix ceiling, or time for host-side
ones), and the one-rank all-gather against plain NCCL per size over the symmcomm-bench JSONs.

Usage: scripts/figures_table.py micro.json [bench_rep1.json ...]"""
import json
import sys
from collections import OrderedDict


def span(values, fmt):
    mean = sum(values) / len(values)
    if len(values) == 1:
        return fmt.format(mean)
    return (fmt + " ({}-{})").format(mean, fmt.format(min(values)), fmt.format(max(values)))


def micro(path):
    doc = json.load(open(path))
    runs = OrderedDict()
    for b in doc["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        runs.setdefault(b["run_name"], []).append(b)
    print("Copy bandwidth of the run: %.0f GB/s\n" % float(doc["context"]["copy_bandwidth_GBps"]))
    print("| benchmark | label | reps | TB/s or time | x copy | x same mix |")
    print("|---|---|---|---|---|---|")
    for name, reps in runs.items():
        label = reps[0].get("label", "")
        if "bytes_per_second" in reps[0]:
            value = span([r["bytes_per_second"] / 1e12 for r in reps], "{:.2f}") + " TB/s"
        else:
            value = span([r["real_time"] for r in reps], "{:.1f}") + " " + reps[0]["time_unit"]
        copy = span([r["vs_copy"] for r in reps], "{:.3f}") if "vs_copy" in reps[0] else ""
        mix = span([r["vs_mix"] for r in reps], "{:.3f}") if "vs_mix" in reps[0] else ""
        short = name.replace("/manual_time", "")
        print("| %s | %s | %d | %s | %s | %s |" % (short, label, len(reps), value, copy, mix))


def bench(paths):
    rows = OrderedDict()
    for p in paths:
        for r in json.load(open(p))["results"]:
            rows.setdefault(r["size"], []).append(r)
    print("\n| size (B) | path | symmcomm us | plain NCCL us | symmcomm / NCCL time | #wrong |")
    print("|---|---|---|---|---|---|")
    for size, reps in rows.items():
        print("| %d | %s | %s | %s | %s | %s |" % (
            size, reps[0]["path"], span([r["time_us"] for r in reps], "{:.2f}"),
            span([r["baseline_time_us"] for r in reps], "{:.2f}"),
            span([r["ratio_to_baseline"] for r in reps], "{:.3f}"),
            "/".join(str(r["wrong"]) for r in reps)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    micro(sys.argv[1])
    if len(sys.argv) > 2:
        bench(sys.argv[2:])
