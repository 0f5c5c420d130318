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
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "bench", "results", "figures.json")
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- figures:begin (scripts/readme_figures.py) -->", "<!-- figures:end -->"
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


def replaced(text, block):
    if BEGIN not in text or END not in text:
        raise SystemExit("readme_figures: README.md lacks the figures markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + block + "\n" + END + tail


def main(argv):
    block = table()
    if "--write" in argv or "--check" in argv:
        text = open(README).read()
        want = replaced(text, block)
        if "--check" in argv:
            if want != text:
                print("readme_figures: README.md's figures table differs from the stored results; "
                      "run scripts/readme_figures.py --write")
                return 1
            print("readme_figures: OK (README's figures table matches bench/results/figures.json)")
            return 0
        open(README, "w").write(want)
        return 0
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
