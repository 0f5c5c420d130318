#!/usr/bin/env python3
"""Merges Google Benchmark JSON files into one (the first file's context, every file's runs):
the device scripts run a sweep as several processes, so a part cut at its time limit loses only
itself; a part stopped mid-write is left out. Writes nothing and exits 1 when no part is whole.
Usage: scripts/merge_benchmark_json.py OUT.json PART.json [PART.json ...]"""
import json
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    merged = None
    for path in sys.argv[2:]:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if merged is None:
            merged = doc
        else:
            merged["benchmarks"].extend(doc.get("benchmarks", []))
    if merged is None:
        return 1
    with open(sys.argv[1], "w") as f:
        json.dump(merged, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
