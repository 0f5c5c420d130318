#!/usr/bin/env python3
"""Collectives whose counts live on the device have one name, "device counts"
(docs/architecture.md, glossary). Fails when a tracked file outside bench/results/ (the stored
runs keep the names they were made with) uses a name they had before: "ragged" (tests,
benchmarks, docs) or "counted" as a kernel's name (`Counted...`, `counted_...`, `..._counted`,
"counted gather/reduce/kernel"). A path into bench/results/ inside a file is not a name.
Host counts that differ per rank are "uneven".

Usage: scripts/check_names.py"""
import os
import re
import subprocess
import sys

OLD = re.compile(r"[Rr]agged|RAGGED|Counted|counted_|_counted|\bcounted (gather|reduce|kernel)")
STORED = re.compile(r"bench/results/\S*")


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    bad = []
    for path in files:
        if not path or path.startswith("bench/results/") or path == "scripts/check_names.py":
            continue
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (OSError, UnicodeDecodeError):
            continue  # binary or absent (a deleted file still listed)
        for number, line in enumerate(lines, 1):
            if OLD.search(STORED.sub("", line)):
                bad.append("%s:%d: %s" % (path, number, line.strip()))
        if OLD.search(os.path.basename(path)):
            bad.append("%s: the file's own name" % path)
    if bad:
        print("check_names: %d line(s) use an old name of device counts (say 'device counts', "
              "or 'uneven' for host counts):" % len(bad))
        print("\n".join(bad))
        return 1
    print("check_names: device counts have one name")
    return 0


if __name__ == "__main__":
    sys.exit(main())
