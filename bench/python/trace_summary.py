#!/usr/bin/env python3
"""Where a traced decode step's time goes (bench/python/moe_step.py --trace): from a Chrome trace
of one rank's replays of the whole-step CUDA graph (torch.profiler's export), the step's span per
replay (the first kernel's start to the last one's end, over the replays), the time its kernels,
copies and memsets cover (their union: work of one stream may overlap), the idle rest (launch
gaps, graph dependencies, waits outside kernels) and each kind of work's share. A rank's kernel
that waits for a peer counts as busy: a slower peer shows as a longer collective kernel.
Plain Python, so that a stored trace is summarised again on any machine.

Usage: bench/python/trace_summary.py TRACE.json [...]   (prints a table row per trace)
       bench/python/trace_summary.py --kernels A.json B.json [N]
           each kernel's launches and time per replay in A and in B, the N (30) that differ most
       bench/python/trace_summary.py --overlap RANK0.json OTHER.json [...]
           how much of rank 0's work ran while another rank's GEMM did (traces of one step's
           replays on ranks sharing a GPU, moe_step.py --trace-every-rank), and how long rank 0's
           other kernels took with and without one beside them
Traces may be gzip-compressed (.json.gz).
"""
import gzip
import json
import sys

# Kinds of kernel, by a lower-case part of their name; the first that matches names the kind.
KINDS = (("nccl", "NCCL"), ("symmcomm", "symmcomm"),
         ("gemm", "GEMM"), ("cutlass", "GEMM"), ("xmma", "GEMM"), ("nvjet", "GEMM"),
         ("grouped_mm", "GEMM"))
KIND_ORDER = ("GEMM", "NCCL", "symmcomm", "other", "copies")
# Chrome trace categories of GPU work: kernels, and copies and memsets (kind "copies").
GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def kind_of(name, category="kernel"):
    """The kind of GPU work `name` is: "copies" for a copy or memset, else by KINDS, "other"
    when none matches."""
    if category != "kernel":
        return "copies"
    lower = name.lower()
    return next((kind for part, kind in KINDS if part in lower), "other")


def kernels_of(trace, base_ns=None):
    """(start, end, name, category) of every kernel, copy and memset of a Chrome trace (dict or
    event list), in us, by start. torch.profiler's times count from the trace's
    "baseTimeNanoseconds", which each process takes for itself: with `base_ns` (another trace's),
    they count from that one instead, so that traces of several processes share one clock."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    shift = 0.0
    if base_ns is not None and isinstance(trace, dict) and "baseTimeNanoseconds" in trace:
        shift = (int(trace["baseTimeNanoseconds"]) - int(base_ns)) / 1000.0
    out = [(float(e["ts"]) + shift, float(e["ts"]) + shift + float(e.get("dur", 0.0)),
            e.get("name", "?"), e["cat"])
           for e in events if e.get("ph") == "X" and e.get("cat") in GPU_WORK]
    return sorted(out)


def merged(intervals):
    """The union of (start, end, ...) intervals sorted by start, as disjoint [start, end] pairs."""
    out = []
    for s, e, *_ in intervals:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def covered(intervals):
    """The length of the union of (start, end) intervals sorted by start."""
    return sum(e - s for s, e in merged(intervals))


def summarize(trace, replays):
    """Per replay of the step (`replays` of them in the trace): span, busy, idle and each kind's
    time, us, and the three kernels (or copies) that took longest in all, with their totals."""
    ks = kernels_of(trace)
    if not ks or replays < 1:
        raise ValueError("a trace with GPU work and replays >= 1 is needed (got %d kernels, "
                         "copies and memsets; replays %r)" % (len(ks), replays))
    span = (max(k[1] for k in ks) - ks[0][0]) / replays
    busy = covered(ks) / replays
    kinds = {k: 0.0 for k in KIND_ORDER}
    for s, e, name, category in ks:
        kinds[kind_of(name, category)] += (e - s) / replays
    longest = sorted(((name, us) for name, (_, us) in per_kernel(trace, replays).items()),
                     key=lambda kv: -kv[1])[:3]
    return {"span_us": span, "busy_us": busy, "idle_us": span - busy, "kinds_us": kinds,
            "work_per_replay": len(ks) / replays, "longest": longest}


def per_kernel(trace, replays):
    """{name: (launches per replay, us per replay)} of a trace's kernels, copies and memsets."""
    out = {}
    for s, e, name, _ in kernels_of(trace):
        n, us = out.get(name, (0.0, 0.0))
        out[name] = (n + 1.0 / replays, us + (e - s) / replays)
    return out


def kernel_table(a, b, labels=("A", "B"), top=30):
    """Markdown table of the `top` kernels whose time per replay differs most between per_kernel()
    results `a` and `b`, and the totals of every kernel that both traces hold the same number of
    times (the same work: what differs there is how long it took)."""
    names = sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, (0, 0))[1] - b.get(k, (0, 0))[1]))
    lines = ["| kernel | %s us | %s us | %s - %s | launches %s / %s |" % (
        labels[0], labels[1], labels[0], labels[1], labels[0], labels[1]), "|---|---|---|---|---|"]
    for name in names[:top]:
        (na, ua), (nb, ub) = a.get(name, (0.0, 0.0)), b.get(name, (0.0, 0.0))
        lines.append("| %s | %.1f | %.1f | %+.1f | %.1f / %.1f |" % (
            name[:70].replace("|", "/"), ua, ub, ua - ub, na, nb))
    same = [k for k in a if k in b and abs(a[k][0] - b[k][0]) < 1e-9]
    ta, tb = sum(a[k][1] for k in same), sum(b[k][1] for k in same)
    slower = sum(1 for k in same if a[k][1] > b[k][1])
    lines += ["", "Kernels launched as often in both: %d; their time per replay %.1f us in %s, "
              "%.1f in %s (%+.1f); %d of them took longer in %s." % (
                  len(same), ta, labels[0], tb, labels[1], ta - tb, slower, labels[0])]
    return "\n".join(lines)


def overlap(mine, others):
    """Rank 0's kernels (`mine`, kernels_of) against the GEMMs of the other ranks' traces
    (`others`, kernels_of each): {kind: (us of that kind, us of it that ran beside another rank's
    GEMM)} over KIND_ORDER, and for rank 0's "other" kernels the mean us of those that overlapped
    such a GEMM and of those that did not, with their counts. Every trace must share one clock
    (CUPTI's, on one machine; kernels_of's `base_ns` puts them on one base)."""
    gemms = merged(sorted((s, e) for ks in others for s, e, name, cat in ks
                          if kind_of(name, cat) == "GEMM"))

    def beside(s, e):
        return sum(max(0.0, min(e, b) - max(s, a)) for a, b in gemms)

    kinds = {k: [0.0, 0.0] for k in KIND_ORDER}
    small = {True: [], False: []}
    for s, e, name, cat in mine:
        kind, both = kind_of(name, cat), beside(s, e)
        kinds[kind][0] += e - s
        kinds[kind][1] += both
        if kind == "other":
            small[both > 0].append(e - s)
    mean = {k: (sum(v) / len(v) if v else 0.0, len(v)) for k, v in small.items()}
    return {k: tuple(v) for k, v in kinds.items()}, mean


def load(path):
    """A stored trace (.json or .json.gz) and its replay count ('symmcomm_replays', else 1)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    return trace, int(trace.get("symmcomm_replays", 1))


def table(rows):
    """Markdown table of (label, summarize()) pairs."""
    lines = ["| way | span/replay | busy | idle | kernels and copies/replay | "
             + " | ".join(KIND_ORDER) + " | longest kernels (us per replay) |",
             "|---|---|---|---|---|" + "---|" * len(KIND_ORDER) + "---|"]
    for label, s in rows:
        longest = "; ".join("%s %.1f" % (name[:60], us) for name, us in s["longest"])
        lines.append("| %s | %.1f | %.1f | %.1f | %.1f | %s | %s |" % (
            label, s["span_us"], s["busy_us"], s["idle_us"], s["work_per_replay"],
            " | ".join("%.1f" % s["kinds_us"][k] for k in KIND_ORDER), longest))
    return "\n".join(lines)


def main(argv):
    if len(argv) >= 2 and argv[1] == "--kernels":
        if len(argv) not in (4, 5):
            print("usage: trace_summary.py --kernels A.json B.json [N]", file=sys.stderr)
            return 2
        (ta, ra), (tb, rb) = load(argv[2]), load(argv[3])
        print(kernel_table(per_kernel(ta, ra), per_kernel(tb, rb), (argv[2], argv[3]),
                           int(argv[4]) if len(argv) == 5 else 30))
        return 0
    if len(argv) >= 2 and argv[1] == "--overlap":
        if len(argv) < 4:
            print("usage: trace_summary.py --overlap RANK0.json OTHER.json [...]", file=sys.stderr)
            return 2
        traces = [load(path) for path in argv[2:]]
        replays = traces[0][1]
        base = traces[0][0].get("baseTimeNanoseconds")
        kinds, mean = overlap(kernels_of(traces[0][0], base),
                              [kernels_of(t, base) for t, _ in traces[1:]])
        print("| kind | us per replay | of it beside another rank's GEMM |\n|---|---|---|")
        for k in KIND_ORDER:
            print("| %s | %.1f | %.1f |" % (k, kinds[k][0] / replays, kinds[k][1] / replays))
        print("\nRank 0's other kernels: %.2f us each beside another rank's GEMM (%d of them), "
              "%.2f alone (%d)." % (mean[True][0], mean[True][1], mean[False][0], mean[False][1]))
        return 0
    if len(argv) < 2:
        print("usage: trace_summary.py TRACE.json [...] (moe_step.py --trace's traces; the "
              "replays are read from each trace's 'symmcomm_replays' field)", file=sys.stderr)
        return 2
    rows = []
    for path in argv[1:]:
        trace, replays = load(path)
        rows.append((path, summarize(trace, replays)))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
