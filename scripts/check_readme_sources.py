#!/usr/bin/env python3
"""Fails when a measured figure in the README has no source: every paragraph or list item that
quotes a time, a ratio or a rate (us, ms, x, GB/s, TB/s, %) must name the stored results it
comes from (a bench/results/ path that exists, or the tests/ file that computes it) or lie in a
block scripts/readme_figures.py generates; a table may name it in the paragraph just above it; a figure measured by
others is marked <!-- source: ... --> in its paragraph. Code blocks and generated blocks are
skipped.

Usage: scripts/check_readme_sources.py [README]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?(?:\s?(?:us|ms|GB/s|TB/s)|%|x)(?![\w])")
SOURCE = re.compile(r"(?:bench/results|tests)/[A-Za-z0-9_./-]+")
# A figure measured by others, named as such in the text: <!-- source: who and where -->.
EXTERNAL = "<!-- source:"
GENERATED = re.compile(r"<!-- (\w+):begin")


def blocks(text):
    """(first line number, text) of each paragraph or list item outside code and generated
    blocks."""
    out, current, start = [], [], 0
    in_code = in_generated = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if GENERATED.search(line):
            in_generated = True
        if in_generated:
            if ":end -->" in line:
                in_generated = False
            continue
        if in_code:
            continue
        table_row = line.lstrip().startswith("|")
        in_table = bool(current) and current[-1].lstrip().startswith("|")
        new_item = not line.strip() or line.lstrip().startswith(("- ", "* ", "#")) or (
            table_row != in_table)
        if new_item and current:
            out.append((start, "\n".join(current)))
            current = []
        if line.strip():
            if not current:
                start = number
            current.append(line)
    if current:
        out.append((start, "\n".join(current)))
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "README.md")
    text = open(path, encoding="utf-8").read()
    problems = []
    found = blocks(text)
    for i, (number, block) in enumerate(found):
        figures = FIGURE.findall(block)
        if not figures or EXTERNAL in block:
            continue
        sources = SOURCE.findall(block)
        if not sources and block.lstrip().startswith("|") and i > 0:  # a table: its caption's
            sources = SOURCE.findall(found[i - 1][1])
        if not sources:
            problems.append("%s:%d: %s without a bench/results source" % (
                os.path.basename(path), number, ", ".join(figures[:4])))
        for src in sources:
            if not os.path.exists(os.path.join(ROOT, src.rstrip(".)"))):
                problems.append("%s:%d: %s does not exist" % (os.path.basename(path), number, src))
    if problems:
        print("check_readme_sources: %d figure(s) without a stored source:" % len(problems))
        for p in problems:
            print("  " + p)
        return 1
    print("check_readme_sources: every figure in %s names its stored results"
          % os.path.basename(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
