#!/usr/bin/env python3
"""Markdown table of symmcomm-bench --scenario moe-a2a JSONs: per tokens per rank and path, the
median and min-max over the cycles of dispatch, combine and their sum, and the sum's median
against the all-gather/reduce-scatter layer (ag-rs) and ncclAlltoAll padded of the same run.

Usage: scripts/moe_a2a_table.py run.json [run.json ...]   (one table per file)"""
import json
import statistics
import sys
from collections import OrderedDict


def span(values):
    return "%.1f (%.1f-%.1f)" % (statistics.median(values), min(values), max(values))


def table(path):
    doc = json.load(open(path))
    meta = doc["meta"]
    print("### %s: %d ranks, %s, NCCL %s, %s" % (path.rsplit("/", 1)[-1], meta["ranks"],
                                                 meta["gpu"], meta["nccl"], meta["date"]))
    print("\n%s. `%s`\n" % (meta.get("sharing") or "one rank per GPU", meta["command"]))
    rows = OrderedDict()
    for r in doc["moe"]:
        rows.setdefault((r["tokens_per_rank"], r["path"]), []).append(r)
    cycles = max(len(v) for v in rows.values())
    asked, done = meta.get("cycles", cycles), meta.get("cycles_done", cycles)
    if done < asked:
        print("**Stopped after %d of %d cycles** (the rows of the cycles it finished).\n"
              % (done, asked))
    print("Medians of up to %d cycles (min-max), us; x: the sum's median over ag-rs's and "
          "nccl-alltoall's.\n" % cycles)
    print("| tokens/rank | path | dispatch | combine | sum | x ag-rs | x alltoall |")
    print("|---|---|---|---|---|---|---|")
    for (tokens, name), runs in rows.items():
        total = statistics.median(r["total_us"] for r in runs)
        ref = {p: statistics.median(r["total_us"] for r in rows.get((tokens, p), []))
               for p in ("ag-rs", "nccl-alltoall") if (tokens, p) in rows}
        print("| %d | %s | %s | %s | %s | %s | %s |" % (
            tokens, name, span([r["dispatch_us"] for r in runs]),
            span([r["combine_us"] for r in runs]), span([r["total_us"] for r in runs]),
            "%.2f" % (total / ref["ag-rs"]) if "ag-rs" in ref else "-",
            "%.2f" % (total / ref["nccl-alltoall"]) if "nccl-alltoall" in ref else "-"))
    print()


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv[1:]:
        table(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
