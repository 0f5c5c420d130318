#!/ usr / bin / python3
"""Turns symmcomm-bench JSON files into PNG plots: bus bandwidth and latency vs size, one line
per (op, dtype, path), with the plain-NCCL baseline measured in the same run dashed.

Usage: bench/plot.py OUT_PREFIX FILE.json [FILE.json ...]
Writes OUT_PREFIX_busbw.png and OUT_PREFIX_latency.png (matplotlib, Debian: python3-matplotlib).

       bench/plot.py --latency OUT_PREFIX MICRO.json
Reads the BM_Latency* results of symmcomm_micro_bench (Google Benchmark JSON, with
--benchmark_repetitions) and writes OUT_PREFIX_decode_latency.png (time per call vs bytes per
rank, a panel per op and rank count, eager solid, CUDA graph dashed) and
OUT_PREFIX_decode_latency.md (per size: each variant's median time and ours / NCCL symmetric and
ours / the better of NCCL's two calls, median and min-max over the repetitions; with variant 3 runs, the lsa-kernel launched with
programmatic dependent launch, a column and a ratio of its own; with variant 4 runs (the
all-gather's barrier kernel, its small-message kernel off), a column, its ratio to NCCL
symmetric and ours / barrier kernel (after / before, same run); with BM_LatencyLsaBarriers
runs, a second table splitting the smallest all-gather's time into the LSA kernels' two barriers
and the rest, beside NCCL's symmetric call of the same bytes).

       bench/plot.py --device-counts OUT_PREFIX MICRO.json
Reads BM_DeviceCountsGather / BM_DeviceCountsCombine results (with --benchmark_repetitions) and writes
OUT_PREFIX_device_counts.md: per case each variant's median time, and the device-count calls (one
launch; counts in the lines) against the better of the two padded calls (Auto; NCCL's call),
paired repetition by repetition: median (min-max).
"""
import json
import re
import statistics
import sys

VARIANTS = {0: "symmcomm lsa-kernel", 1: "NCCL symmetric", 2: "plain NCCL",
            3: "symmcomm lsa-kernel + PDL", 4: "symmcomm barrier kernel",
            5: "symmcomm push bf16", 6: "symmcomm lsa-kernel, in-order receive",
            7: "symmcomm push bf16, spread receive"}
PDL = 3
BARRIER_KERNEL = 4  # the all-gather with its small-message kernel off: the "before"
PUSH = 5  # the reduce-scatter's push-model BF16 kernel, beside NCCL's BF16 reduce-scatters
IN_ORDER = 6  # variant 0 with the push kernel's receive filling CTAs in order
PUSH_SPREAD = 7  # variant 5 with its receive dealt to CTAs in turn
_NAME = re.compile(r"BM_Latency(\w+)/ranks:(\d+)/bytes:(\d+)/variant:(\d)/graph:(\d)")


_BARRIERS = re.compile(r"BM_LatencyLsaBarriers/ranks:(\d+)/graph:(\d)")


def _time_us(b):
    return b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "us")]


def barrier_runs(doc):
    """{(ranks, graph): [real_time per repetition, us]} of BM_LatencyLsaBarriers (the LSA
    kernels' opening and closing barrier alone), aggregates and skipped runs left out."""
    runs = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        m = _BARRIERS.match(b["name"])
        if m:
            runs.setdefault((int(m.group(1)), int(m.group(2))), []).append(_time_us(b))
    return runs


def barrier_markdown(barriers, runs):
    """Per rank count and launch: the barriers' median time, the smallest all-gather's (the kernel
    with barriers - variant 4 where it ran, since variant 0 then has none - and NCCL symmetric)
    and the barriers' share of it; "" without barrier runs."""
    if not barriers:
        return ""
    with_barriers = BARRIER_KERNEL if any(BARRIER_KERNEL in v for v in runs.values()) else 0
    out = ["", "## The fixed cost: the LSA kernels' two barriers alone vs the smallest all-gather",
           "", f"| ranks | launch | LSA barriers only | bytes/rank | {VARIANTS[with_barriers]} | "
           "NCCL symmetric | barriers / ours | barriers / NCCL symmetric |", "|" + "---|" * 8]
    for (ranks, graph), times in sorted(barriers.items()):
        sizes = sorted(size for (op, n, size, g) in runs if op == "AllGather" and n == ranks
                       and g == graph)
        bar = sum(times) / len(times)
        cells = [f"{bar:.2f} us", "-", "-", "-", "-", "-"]
        if sizes:
            by_variant = runs[("AllGather", ranks, sizes[0], graph)]
            mean = {v: statistics.median(t) for v, t in by_variant.items()}
            cells[1] = str(sizes[0])
            if with_barriers in mean:
                ours = mean[with_barriers]
                cells[2], cells[4] = f"{ours:.2f} us", f"{bar / ours:.2f}"
            if 1 in mean:
                cells[3], cells[5] = f"{mean[1]:.2f} us", f"{bar / mean[1]:.2f}"
        out.append(f"| {ranks} | {'graph' if graph else 'eager'} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def latency_runs(doc):
    """{(op, ranks, bytes, graph): {variant: [real_time per repetition, us]}} from a Google
    Benchmark JSON document (aggregate rows and skipped runs are left out)."""
    runs = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        m = _NAME.match(b["name"])
        if not m:
            continue
        op, ranks, size, variant, graph = m.group(1), *map(int, m.groups()[1:])
        key = (op, ranks, size, graph)
        runs.setdefault(key, {}).setdefault(variant, []).append(_time_us(b))
    return runs


def _ratio(by_variant, ours, reference):
    """(median, min, max) of ours / reference paired repetition by repetition; None where either
    is missing."""
    if ours not in by_variant or reference not in by_variant:
        return None
    pairs = [a / b for a, b in zip(by_variant[ours], by_variant[reference])]
    return (statistics.median(pairs), min(pairs), max(pairs))


def _ratio_best_of(by_variant, ours, references):
    """(median, min, max) of ours / the better of the `references` variants present, the better
    taken repetition by repetition; None where ours or every reference is missing."""
    refs = [by_variant[v] for v in references if v in by_variant]
    if ours not in by_variant or not refs:
        return None
    better = [min(times) for times in zip(*refs)]
    pairs = [a / b for a, b in zip(by_variant[ours], better)]
    return (statistics.median(pairs), min(pairs), max(pairs))


def _ratio_better(by_variant, ours):
    """ours / the better of NCCL's symmetric and plain calls (_ratio_best_of)."""
    return _ratio_best_of(by_variant, ours, (1, 2))


def _fmt_ratio(r):
    """A (median, min, max) ratio as "median (min-max)", "-" for none."""
    return f"{r[0]:.2f} ({r[1]:.2f}-{r[2]:.2f})" if r else "-"


def _load_micro(path):
    """A Google Benchmark JSON document and its context line (GPU, NCCL, date)."""
    with open(path) as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    return doc, f'{ctx.get("gpu", "?")}, NCCL {ctx.get("nccl", "?")}, {ctx.get("date", "")[:10]}'


def latency_table(runs):
    """Rows (op, ranks, bytes, graph, {variant: median us}, ratio, pdl ratio, before ratio,
    after / before, push ratio, ours / better NCCL, push / better NCCL, ours / in-order receive,
    push spread / push) where ratio is ours / NCCL symmetric, pdl ratio ours with PDL / NCCL
    symmetric, before ratio the barrier kernel / NCCL symmetric, after / before ours / the
    barrier kernel, push ratio the push BF16 kernel / NCCL symmetric, the next two against the
    better of NCCL's symmetric and plain calls, and the last two each push kernel's receive
    mappings against each other, each (median, min, max) paired repetition by repetition, None
    where a side is missing."""
    rows = []
    for (op, ranks, size, graph), by_variant in sorted(runs.items()):
        means = {v: statistics.median(t) for v, t in by_variant.items()}
        rows.append((op, ranks, size, graph, means, _ratio(by_variant, 0, 1),
                     _ratio(by_variant, PDL, 1), _ratio(by_variant, BARRIER_KERNEL, 1),
                     _ratio(by_variant, 0, BARRIER_KERNEL), _ratio(by_variant, PUSH, 1),
                     _ratio_better(by_variant, 0), _ratio_better(by_variant, PUSH),
                     _ratio(by_variant, 0, IN_ORDER), _ratio(by_variant, PUSH_SPREAD, PUSH)))
    return rows


def latency_markdown(rows, context):
    pdl = any(PDL in r[4] for r in rows)
    before = any(BARRIER_KERNEL in r[4] for r in rows)
    push = any(PUSH in r[4] for r in rows)
    mappings = any(IN_ORDER in r[4] or PUSH_SPREAD in r[4] for r in rows)
    variants = [v for v in VARIANTS
                if (v != PDL or pdl) and (v != BARRIER_KERNEL or before) and (v != PUSH or push)
                and (v not in (IN_ORDER, PUSH_SPREAD) or mappings)]
    ratios = ["ours / NCCL symmetric (min-max)", "ours / better NCCL (min-max)"]
    ratios += ["ours + PDL / NCCL symmetric"] if pdl else []
    ratios += ["barrier kernel / NCCL symmetric", "ours / barrier kernel"] if before else []
    ratios += ["push bf16 / NCCL symmetric", "push bf16 / better NCCL"] if push else []
    ratios += ["ours / in-order receive", "push bf16 spread / in order"] if mappings else []
    header = ["op", "ranks", "bytes/rank", "launch"] + [VARIANTS[v] for v in variants] + ratios
    out = [f"# Decode-size latency: {context}", "", "| " + " | ".join(header) + " |",
           "|" + "---|" * len(header)]
    for (op, ranks, size, graph, means, ratio, pdl_ratio, before_ratio, after_before, push_ratio,
         better, push_better, spread_ratio, push_spread) in rows:
        cells = [f"{means[v]:.2f} us" if v in means else "-" for v in variants]
        cells += [_fmt_ratio(ratio), _fmt_ratio(better)]
        cells += [_fmt_ratio(pdl_ratio)] if pdl else []
        cells += [_fmt_ratio(before_ratio), _fmt_ratio(after_before)] if before else []
        cells += [_fmt_ratio(push_ratio), _fmt_ratio(push_better)] if push else []
        cells += [_fmt_ratio(spread_ratio), _fmt_ratio(push_spread)] if mappings else []
        out.append(f"| {op} | {ranks} | {size} | {'graph' if graph else 'eager'} | " +
                   " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot_latency(prefix, path):
    doc, context = _load_micro(path)
    runs = latency_runs(doc)
    rows = latency_table(runs)
    with open(f"{prefix}_decode_latency.md", "w") as f:
        f.write(latency_markdown(rows, context) + barrier_markdown(barrier_runs(doc), runs))
    print(f"wrote {prefix}_decode_latency.md")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ops = sorted({r[0] for r in rows})
    rank_counts = sorted({r[1] for r in rows})
    fig, axes = plt.subplots(len(ops), len(rank_counts), figsize=(5 * len(rank_counts), 4 * len(ops)),
                             squeeze=False)
    for i, op in enumerate(ops):
        for j, n in enumerate(rank_counts):
            ax = axes[i][j]
            for v, name in VARIANTS.items():
                for graph, style in ((0, "-"), (1, "--")):
                    pts = sorted((r[2], r[4][v]) for r in rows
                                 if r[0] == op and r[1] == n and r[3] == graph and v in r[4])
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=style, marker="o",
                                ms=3, color=f"C{v}",
                                label=f"{name}{', graph' if graph else ''}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{op}, {n} ranks")
            ax.set_xlabel("bytes per rank")
            ax.set_ylabel("time per call (us)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=6)
    fig.suptitle(context)
    fig.tight_layout()
    fig.savefig(f"{prefix}_decode_latency.png", dpi=110)
    print(f"wrote {prefix}_decode_latency.png")


DEVICE_COUNTS_VARIANTS = {0: "device counts, fallback", 1: "padded, Auto", 2: "host counts",
                   3: "device counts, one launch", 4: "counts in the lines", 5: "padded, NCCL",
                   6: "in the lines, counts gathered"}
_DEVICE_COUNTS = re.compile(r"BM_DeviceCounts(Gather|Combine)/ranks:(\d+)/mean_tokens:(\d+)/variant:(\d)"
                     r"(?:/nvfp4:(\d))?/graph:(\d)")


def device_counts_runs(doc):
    """{(op, input, ranks, mean, graph): {variant: [real_time per repetition, us]}}. The
    combine's NCCL baseline (variant 5, BF16) also stands beside its NVFP4 rows."""
    runs = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        m = _DEVICE_COUNTS.match(b["name"])
        if not m:
            continue
        op, ranks, mean, variant, nvfp4, graph = m.groups()
        inputs = ["nvfp4"] if op == "Gather" else ["nvfp4" if nvfp4 == "1" else "bf16"]
        if op == "Combine" and variant == "5":
            inputs = ["bf16", "nvfp4"]
        for dtype in inputs:
            key = (op, dtype, int(ranks), int(mean), int(graph))
            runs.setdefault(key, {}).setdefault(int(variant), []).append(_time_us(b))
    return runs


def _ratio_padded(by_variant, ours):
    """ours / the better of the padded calls, variants 1 and 5 (_ratio_best_of)."""
    return _ratio_best_of(by_variant, ours, (1, 5))


def device_counts_markdown(runs, context):
    variants = sorted({v for by_variant in runs.values() for v in by_variant})
    header = (["op", "in", "ranks", "mean tokens", "launch"] +
              [DEVICE_COUNTS_VARIANTS[v] for v in variants] +
              ["one launch / better padded", "in the lines / better padded",
               "gathered / better padded"])
    out = [f"# Device-count calls against the padded call: {context}", "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (op, dtype, ranks, mean, graph), by_variant in sorted(runs.items()):
        cells = [f"{statistics.median(by_variant[v]):.2f} us" if v in by_variant else "-"
                 for v in variants]
        cells += [_fmt_ratio(_ratio_padded(by_variant, v)) for v in (3, 4, 6)]
        out.append(f"| {op.lower()} | {dtype} | {ranks} | {mean} | "
                   f"{'graph' if graph else 'eager'} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def write_device_counts(prefix, path):
    doc, context = _load_micro(path)
    with open(f"{prefix}_device_counts.md", "w") as f:
        f.write(device_counts_markdown(device_counts_runs(doc), context))
    print(f"wrote {prefix}_device_counts.md")


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
    if len(sys.argv) >= 4 and sys.argv[1] == "--latency":
        plot_latency(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "--device-counts":
        write_device_counts(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    prefix, files = sys.argv[1], sys.argv[2:]
    series, meta = load(files)
    title = f'{meta["gpu_count"]} x {meta["gpu"]}, NCCL {meta["nccl"]}, {meta["date"]}'
#One rank has no bus traffic(busbw = algbw * 0) : plot the algorithm bandwidth instead.
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
