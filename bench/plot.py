#!/usr/bin/python3
"""Turns symmcomm-bench JSON files into PNG plots: bus bandwidth and latency vs size, one line
per (op, dtype, path), with the plain-NCCL baseline measured in the same run dashed.

Usage: bench/plot.py OUT_PREFIX FILE.json [FILE.json ...]
Writes OUT_PREFIX_busbw.png and OUT_PREFIX_latency.png (matplotlib, Debian: python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    series, meta = {}, None
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        meta = meta or doc["meta"]
        for r in doc["results"]:
            key = f'{r["op"]} {r["dtype"]} {r["path"]}'
            series.setdefault(key, []).append(r)
    return series, meta


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    prefix, files = sys.argv[1], sys.argv[2:]
    series, meta = load(files)
    title = f'{meta["gpu_count"]} x {meta["gpu"]}, NCCL {meta["nccl"]}, {meta["date"]}'
    # One rank has no bus traffic (busbw = algbw * 0): plot the algorithm bandwidth instead.
    bandwidth = ("busbw_GBps", "bus bandwidth (GB/s)") if meta["gpu_count"] > 1 else \
        ("algbw_GBps", "algorithm bandwidth (GB/s), one rank")
    for metric, ylabel, name in ((bandwidth[0], bandwidth[1], "bandwidth"),
                                 ("time_us", "time (us)", "latency")):
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for key, rows in sorted(series.items()):
            rows = sorted(rows, key=lambda r: r["size"])
            sizes = [r["size"] for r in rows]
            line, = ax.plot(sizes, [r[metric] for r in rows], marker="o", ms=3, label=key)
            if metric == "time_us" and rows[0]["baseline_time_us"] > 0 and not key.endswith(" nccl"):
                ax.plot(sizes, [r["baseline_time_us"] for r in rows], ls="--", color=line.get_color(),
                        alpha=0.6, label=f"{key}: plain NCCL baseline")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(f"{prefix}_{name}.png", dpi=110)
        print(f"wrote {prefix}_{name}.png")


if __name__ == "__main__":
    main()
