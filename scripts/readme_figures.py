#!/usr/bin/env python3
"""The README's figures table, regenerated from the stored results so that a figure cannot drift
from its file. bench/results/figures.json names each row: the results file (Google Benchmark
JSON), the benchmark run and the field; every row is printed as the median of the file's
repetitions with min-max beside it, their count, and the file. Rows with fewer than 5 runs say so.

Usage: scripts/readme_figures.py            print the table
       scripts/readme_figures.py --write    rewrite the README between its figures markers
       scripts/readme_figures.py --check    exit 1 when the README's table differs (CI)
"""
import json
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "bench", "results", "figures.json")
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- figures:begin (scripts/readme_figures.py) -->", "<!-- figures:end -->"
LATENCY_BEGIN = "<!-- latency:begin (scripts/readme_figures.py) -->"
LATENCY_END = "<!-- latency:end -->"
_LATENCY = re.compile(r"BM_Latency(\w+)/ranks:(\d+)/bytes:(\d+)/variant:(\d)/graph:(\d)")
MIN_RUNS = 5


def span(values, digits):
    fmt = "{:.%df}" % digits
    med = fmt.format(statistics.median(values))
    if len(values) == 1 or min(values) == max(values):
        return med
    return "%s (%s-%s)" % (med, fmt.format(min(values)), fmt.format(max(values)))


def runs_of(paths, name):
    """Every repetition of `name` in the files `paths` (one path or a list: runs of the same
    configuration in several device calls count together)."""
    runs = []
    for path in [paths] if isinstance(paths, str) else paths:
        doc = json.load(open(os.path.join(ROOT, path)))
        runs += [b for b in doc["benchmarks"]
                 if b.get("run_type") == "iteration" and b.get("run_name") == name]
    if not runs:
        raise SystemExit("readme_figures: %s has no run %s" % (paths, name))
    return runs


def row(r):
    runs = runs_of(r["file"], r["benchmark"])
    field, scale = r.get("field", "real_time"), r.get("scale", 1.0)
    unit = r.get("unit") or runs[0].get("time_unit", "")
    figure = span([x[field] * scale for x in runs], r.get("digits", 2)) + " " + unit
    copy = span([x["vs_copy"] for x in runs], 3) if "vs_copy" in runs[0] else ""
    mix = span([x["vs_mix"] for x in runs], 3) if "vs_mix" in runs[0] else ""
    n = len(runs)
    count = "%d%s" % (n, "" if n >= MIN_RUNS else " (< %d)" % MIN_RUNS)
    first = r["file"] if isinstance(r["file"], str) else r["file"][0]
    files = 1 if isinstance(r["file"], str) else len(r["file"])
    link = "[%s](%s)%s" % (os.path.basename(os.path.dirname(first)), first,
                           "" if files == 1 else " (+%d files)" % (files - 1))
    return "| %s | %s | %s | %s | %s | %s |" % (r["what"], figure, copy, mix, count, link)


def table():
    manifest = json.load(open(MANIFEST))
    lines = ["| what | median (min-max) | x device-to-device copy | x same mix | runs | results |",
             "|---|---|---|---|---|---|"]
    lines += [row(r) for r in manifest["rows"]]
    return "\n".join(lines)


def latency_table(spec):
    """Ours (variant "variant", default 0) / the better of NCCL's two paths (symmetric, plain) per
    rank count and size, each the median (min-max) of the repetitions paired one by one; a
    "before" column where asked; the spec's "title" above the table where given."""
    times = {}
    files = [spec["file"]] if isinstance(spec["file"], str) else spec["file"]
    benchmarks = []
    for f in files:
        benchmarks += json.load(open(os.path.join(ROOT, f)))["benchmarks"]
    for b in benchmarks:
        m = _LATENCY.match(b.get("name", ""))
        if b.get("run_type") != "iteration" or b.get("error_occurred") or not m:
            continue
        op, ranks, size, variant, graph = m.group(1), *map(int, m.groups()[1:])
        if op == spec["op"] and graph == spec["graph"]:
            times.setdefault((ranks, size, variant), []).append(b["real_time"])

    def ratio(ranks, size, ours):
        got, sym, plain = (times.get((ranks, size, v)) for v in (ours, 1, 2))
        if not got or not sym or not plain:
            return "-"
        r = [g / min(s, p) for g, s, p in zip(got, sym, plain)]
        return span(r, 2)

    sizes = spec["bytes"]
    head = ["ranks sharing one %s" % spec.get("gpu", "H200")]
    head += ["%d KiB" % (s // 1024) for s in sizes]
    if "before" in spec:
        head.append("%d KiB, %s" % (sizes[0] // 1024, spec["before"]["label"]))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ranks in spec["ranks"]:
        cells = [ratio(ranks, s, spec.get("variant", 0)) for s in sizes]
        if "before" in spec:
            cells.append(ratio(ranks, sizes[0], spec["before"]["variant"]))
        lines.append("| %d | %s |" % (ranks, " | ".join(cells)))
    runs = min((len(v) for v in times.values()), default=0)
    lines.append("")
    lines.append("Ours / the better of NCCL's symmetric and plain %s, median "
                 "(min-max) over %d repetitions paired one by one%s: [%s](%s)%s."
                 % (spec.get("reference", "calls of the same bytes"), runs,
                    " (< %d)" % MIN_RUNS if runs < MIN_RUNS else "",
                    os.path.basename(os.path.dirname(files[0])), files[0],
                    "" if len(files) == 1 else " (+%d files)" % (len(files) - 1)))
    if "title" in spec:
        lines = [spec["title"], ""] + lines
    return "\n".join(lines)


def latency_tables(specs):
    """Every latency spec's table (one spec, or a list of them), a blank line between."""
    if isinstance(specs, dict):
        specs = [specs]
    return "\n\n".join(latency_table(spec) for spec in specs)


def replaced(text, block, begin=BEGIN, end=END):
    if begin not in text or end not in text:
        raise SystemExit("readme_figures: README.md lacks the markers %s" % begin)
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + block + "\n" + end + tail


def main(argv):
    block = table()
    latency = latency_tables(json.load(open(MANIFEST))["latency"])
    if "--write" in argv or "--check" in argv:
        text = open(README).read()
        want = replaced(replaced(text, block), latency, LATENCY_BEGIN, LATENCY_END)
        if "--check" in argv:
            if want != text:
                print("readme_figures: README.md's figures table differs from the stored results; "
                      "run scripts/readme_figures.py --write")
                return 1
            print("readme_figures: OK (README's figures table matches bench/results/figures.json)")
            return 0
        open(README, "w").write(want)
        return 0
    print(block + "\n\n" + latency)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
