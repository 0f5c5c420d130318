#!/usr/bin/env python3
"""The decode-step benchmark's table (bench/python/moe_step.py), from its runs: step, tokens/s,
speedup over torch.distributed padded, each phase, the launch gaps and the communication share.
Plain Python (no PyTorch), so that a stored run's table can be made again on any machine.

The step is timed as one CUDA graph holding every phase; each phase is also timed in a graph of its
own. gaps = the step's median minus the sum of the phases' medians: what the whole step spends
outside its phases (the launch gaps between them, waits of one rank for another). It can be
negative: each phase's own graph pays a launch and a wait the step pays once.

Below the table, each batch's ceiling: the speedup over torch.distributed padded that a
communication taking no time at all would give, its step's median over that median less its
dispatch and combine medians. Where the expert phase dominates the step, no collective can reach a
speedup goal above it.

Usage: bench/python/step_table.py PREFIX.json   (writes PREFIX-phases.md and prints it)
"""
import json
import statistics
import sys

PHASES = ("quantize", "dispatch", "experts", "combine")
BASE = "torch.distributed padded"


def span(values):
    """'median (min-max)' of the runs, one decimal."""
    return "%.1f (%.1f-%.1f)" % (statistics.median(values), min(values), max(values))


def gaps_us(row):
    """The step's median minus the sum of its phases' medians, us."""
    return statistics.median(row["step_us"]) - sum(
        statistics.median(row[phase + "_us"]) for phase in PHASES)


def ceilings(results):
    """{tokens per rank: the speedup over BASE's step if its dispatch and combine took no time}
    for every batch BASE was measured at."""
    out = {}
    for r in results:
        if r["way"] != BASE:
            continue
        step = statistics.median(r["step_us"])
        comm = statistics.median(r["dispatch_us"]) + statistics.median(r["combine_us"])
        if step > comm:
            out[r["tokens_per_rank"]] = step / (step - comm)
    return out


def step_table(results, unavailable, world, sharing, gemm=None):
    """The markdown table of `results` (moe_step.py's rows), headed by the ranks, how they share
    the GPUs and the expert stand-in (`gemm`, where known), with a line per way that was not
    measured (`unavailable`: way -> why)."""
    lines = ["%d ranks (%s).%s Step and phases: us per step, median (min-max) of the runs; "
             "speedup: torch.distributed padded's step time over this way's; gaps: the step's "
             "median minus its phases' medians (bench/python/step_table.py)."
             % (world, sharing, " Experts: %s." % gemm if gemm else ""),
             "",
             "| tokens/rank | way | step | tokens/s | speedup | quantize | dispatch | experts | "
             "combine | gaps | comm share |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    base = {r["tokens_per_rank"]: statistics.median(r["step_us"]) for r in results
            if r["way"] == BASE}
    for r in results:
        step = statistics.median(r["step_us"])
        speed = base.get(r["tokens_per_rank"])
        lines.append("| %d | %s | %s | %.0f | %s | %s | %s | %s | %s | %.1f | %.3f |" % (
            r["tokens_per_rank"], r["way"], span(r["step_us"]), r["tokens_per_s"],
            "%.3f" % (speed / step) if speed else "-", span(r["quantize_us"]),
            span(r["dispatch_us"]), span(r["experts_us"]), span(r["combine_us"]), gaps_us(r),
            r["comm_share"]))
    top = ceilings(results)
    if top:
        lines.append("")
        lines.append("Ceiling, the speedup over %s if communication took no time (its step over "
                     "its step less its dispatch and combine), tokens/rank: ceiling: %s." % (
                         BASE, ", ".join("%d: %.3f" % (t, c) for t, c in sorted(top.items()))))
    for way, why in unavailable.items():
        lines.append("")
        lines.append("%s: not measured (%s)" % (way, why))
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2 or not argv[1].endswith(".json"):
        print("usage: step_table.py PREFIX.json (moe_step.py's stored runs)", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        doc = json.load(f)
    meta = doc["meta"]
    text = step_table(doc["results"], meta.get("unavailable", {}), meta["ranks"], meta["sharing"],
                      meta.get("gemm"))
    with open(argv[1][:-len(".json")] + "-phases.md", "w") as f:
        f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
