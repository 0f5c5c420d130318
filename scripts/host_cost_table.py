#!/usr/bin/env python3
"""Markdown table of the host cost of a call (scripts/gpu_host_cost.sh), one tree or the tree
before the one-descriptor call path beside this one, both measured in the same device call.

From BM_HostCost* JSON (Google Benchmark, repetitions as iterations): every case's median
(min-max) of its repetitions, and symmcomm's own host work per call, the call's median minus the
median of the empty kernel launch from as many threads at once as the call has ranks (N ranks
sharing the GPU are N threads launching into one context), of the same process, with the widest
range the repetitions allow (the call's min minus the launch's max, to the call's max minus the
launch's min). A run without per-thread launches (BM_HostCostEmptyKernel alone) is the baseline
of every case.
Paired own work (cases that carry the own_us counter): each iteration times the calls and as many
empty launches on the same thread and stream back to back, and own_us is the median of their
differences; the column gives the median (min-max) of own_us over the repetitions. It is free of
the drift between separately run cases, which the first estimate is not.
From ops_overhead.json (bench/python/ops_overhead.py): the operator against torch.distributed
and the operator's own layer (operator minus the ctypes call), per row, for each tree.

Usage: scripts/host_cost_table.py OUT.md AFTER_host_cost.json [--before BEFORE_host_cost.json]
           [--ops AFTER_ops_overhead.json] [--ops-before BEFORE_ops_overhead.json]
A file that does not exist (a run cut short) leaves its columns or rows out."""
import argparse
import json
import os
import statistics
from collections import OrderedDict

EMPTY = "BM_HostCostEmptyKernel"
GATHER = "BM_HostCostNvfp4AllGather"


def baseline(runs, case):
    """The empty-launch repetitions `case` compares with: as many threads as its ranks, else the
    one empty-launch case of an older run; None when the run has neither."""
    ranks = [p.split(":")[1] for p in case.split("/") if p.startswith("ranks:")]
    if ranks and "%s/threads:%s" % (EMPTY, ranks[0]) in runs:
        return runs["%s/threads:%s" % (EMPTY, ranks[0])]
    return runs.get(EMPTY)


def repetitions(doc):
    """{case name: [per-call us of each repetition]} in file order, with each case's label and
    {case name: [own_us of each repetition]} for the cases that carry it."""
    runs, labels, paired = OrderedDict(), {}, {}
    for b in doc["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        name = b["run_name"].split("/iterations:")[0]
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
        runs.setdefault(name, []).append(b["real_time"] * scale)
        labels[name] = b.get("label", "")
        if "own_us" in b:
            paired.setdefault(name, []).append(b["own_us"])
    return runs, labels, paired


def span(values):
    """[median, min, max]"""
    return [statistics.median(values), min(values), max(values)]


def own_work(call, empty):
    """The call's host time beyond an empty launch: [median difference, widest low, widest high]."""
    return [statistics.median(call) - statistics.median(empty), min(call) - max(empty),
            max(call) - min(empty)]


def cell(v):
    return "%.2f (%.2f-%.2f)" % tuple(v) if v else "-"


def host_cost_rows(after, before=None):
    """One row per case of the after run: (case, label, before span, after span, before own
    work, after own work, before paired own work, after paired own work); the before columns
    are None where that run lacks the case, the paired ones where a case has no own_us."""
    a_runs, a_labels, a_paired = repetitions(after)
    b_runs, _, b_paired = repetitions(before) if before else ({}, {}, {})
    rows = []
    for name, reps in a_runs.items():
        b = b_runs.get(name)
        row = [name, a_labels[name], span(b) if b else None, span(reps), None, None,
               span(b_paired[name]) if name in b_paired else None,
               span(a_paired[name]) if name in a_paired else None]
        if name.startswith(GATHER):
            b_empty, a_empty = baseline(b_runs, name), baseline(a_runs, name)
            if b and b_empty:
                row[4] = own_work(b, b_empty)
            if a_empty:
                row[5] = own_work(reps, a_empty)
        rows.append(row)
    return rows


def ops_rows(after, before=None):
    """(tensor, bytes, tree, op span, torch span, op / torch, op - direct) per row and tree."""
    out = []
    for tree, doc in (("before", before), ("after", after)):
        for r in (doc or {}).get("rows", []):
            out.append((r["what"], r["bytes"], tree, r["op"], r["torch"],
                        r["op"][0] / r["torch"][0], r["op"][0] - r["direct"][0]))
    return out


def markdown(after, before=None, ops_after=None, ops_before=None):
    lines = ["## Host time per eager call, us: median (min-max) of the repetitions", "",
             "Own work: the call's median minus the median of the empty kernel launch from as "
             "many threads at once as the call has ranks, in the same process (range: widest the "
             "repetitions allow). Paired: the median over iterations of the calls minus as many "
             "empty launches timed beside them on the same thread, median (min-max) over the "
             "repetitions.", "",
             "| case | label | before | after | own work before | own work after "
             "| paired before | paired after |",
             "|---|---|---|---|---|---|---|---|"]
    for name, label, b, a, own_b, own_a, pair_b, pair_a in host_cost_rows(after, before):
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |"
                     % (name, label, cell(b), cell(a), cell(own_b), cell(own_a), cell(pair_b),
                        cell(pair_a)))
    if ops_after:
        lines += ["", "## torch operator, ctypes call and torch.distributed, us per call: median "
                  "(min-max)", "",
                  "| tensor | bytes | tree | torch.ops.symmcomm | torch.distributed | op / torch "
                  "| op - direct |", "|---|---|---|---|---|---|---|"]
        for what, nbytes, tree, op, torch, ratio, layer in ops_rows(ops_after, ops_before):
            lines.append("| %s | %d | %s | %s | %s | %.2f | %.2f |"
                         % (what, nbytes, tree, cell(op), cell(torch), ratio, layer))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("after")
    ap.add_argument("--before")
    ap.add_argument("--ops")
    ap.add_argument("--ops-before")
    a = ap.parse_args()

    def load(path):
        if path is None or not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    after = load(a.after)
    if after is None:
        ap.error("after: no host-cost JSON at %r" % a.after)
    text = markdown(after, load(a.before), load(a.ops), load(a.ops_before))
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
