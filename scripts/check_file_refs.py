#!/usr/bin/env python3
"""Fails when a comment names a file of this repository that does not exist (a file renamed or
merged and its mentions left behind). Looks at the comments of the project's C++, CUDA, CMake,
shell and Python sources: every path-like token ending in a source or text extension whose
first folder is one of the repository's (src/, collectives/, tests/, ...), resolved against the
repository root, src/, include/, include/symmcomm/ and the file's own folder.

Usage: scripts/check_file_refs.py [--list]     (--list: print every reference and where it resolved)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = (".hpp", ".cpp", ".cu", ".cuh", ".h", ".c", ".py", ".sh", ".cmake", ".txt")
# A comment: // or # (shell, Python, CMake) to the end of the line, or a /* ... */ line; Python
# docstrings are read whole (they are the Python files' comments).
C_COMMENT = re.compile(r"(//.*$|/\*.*?(\*/|$)|^\s*\*.*$)")
HASH_COMMENT = re.compile(r"#.*$")
PATH = re.compile(r"(?<![\w./-])((?:\.\./|\./)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\."
                  r"(?:hpp|cpp|cu|cuh|h|c|py|sh|md|cmake|txt|json|toml|in))(?![\w/])")
BASES = ("", "src", "include", os.path.join("include", "symmcomm"), "tests", "bench",
         os.path.join("src", "testing"))


def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files"], check=True, capture_output=True,
                         text=True).stdout
    return [f for f in out.splitlines() if f.endswith(SOURCES) or f == ".ci/run"]


def folders():
    """Every folder name of the repository (a reference's first folder must be one)."""
    names = set()
    for f in subprocess.run(["git", "-C", ROOT, "ls-files"], check=True, capture_output=True,
                            text=True).stdout.splitlines():
        names.update(f.split("/")[:-1])
    return names


def comment_text(path, text):
    if path.endswith(".py"):
        return text.splitlines()  # docstrings and comments alike
    comment = HASH_COMMENT if path.endswith((".sh", ".cmake", ".txt")) else C_COMMENT
    lines = []
    for line in text.splitlines():
        m = comment.search(line)
        if m:
            lines.append(m.group(0))
        else:
            lines.append("")
    return lines


def resolve(ref, source):
    here = os.path.dirname(source)
    for base in BASES + (here,):
        candidate = os.path.normpath(os.path.join(ROOT, base, ref))
        if os.path.exists(candidate):
            return os.path.relpath(candidate, ROOT)
    return None


def main():
    listing = "--list" in sys.argv[1:]
    known = folders()
    missing = []
    for source in tracked_files():
        if source.startswith("bench/results/"):
            continue  # records of past runs name the files of their tree
        try:
            text = open(os.path.join(ROOT, source), encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(comment_text(source, text), 1):
            for m in PATH.finditer(line):
                ref = m.group(1)
                first = ref.lstrip("./").split("/")[0]
                if first not in known or "://" in line[max(0, m.start() - 8):m.start() + 1]:
                    continue
                where = resolve(ref, source)
                if listing:
                    print("%s:%d: %s -> %s" % (source, number, ref, where))
                if where is None:
                    missing.append("%s:%d: %s" % (source, number, ref))
    if missing:
        print("check_file_refs: %d comment(s) name a file that does not exist:" % len(missing))
        for m in missing:
            print("  " + m)
        return 1
    print("check_file_refs: every repository file named in a comment exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
