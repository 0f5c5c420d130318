#!/usr/bin/env python3
"""Fails when a function body in src/, include/ or bench/ runs past LIMIT lines (default 80):
a long function is several steps that want names of their own. A function is a brace block
whose header holds a parameter list and that sits outside any other function (lambdas and
blocks inside count towards their function); comments and string literals are ignored.
Usage: scripts/check_function_length.py [limit] [dir ...]"""
import os
import re
import sys


def strip(src):
    """`src` without comments and literals' contents (newlines kept, so lines still count)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif src.startswith('R"', i) and re.match(r'R"[^(\s]*\(', src[i:]):
            delim = re.match(r'R"([^(\s]*)\(', src[i:]).group(1)
            j = src.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
        elif src[i] in "\"'" and not (src[i] == "'" and i > 0 and src[i - 1].isalnum()):
            # a literal (a ' right after a digit is a C++14 digit separator)
            quote, j = src[i], i + 1
            while j < n and src[j] != quote and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(quote * 2)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def long_functions(path, limit):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    stack, header_from, found = [], 0, []
    for at, ch in enumerate(text):
        if ch == "{":
            header = " ".join(text[header_from:at].split())
            if header.startswith("extern") or re.search(r"\bnamespace\b", header):
                kind = "namespace"
            elif re.search(r"\b(struct|class|union|enum)\b[^()]*$", header):
                kind = "type"
            elif ")" in header and not header.endswith("=") and "function" not in stack:
                kind = "function"
            else:
                kind = "block"
            stack.append(kind)
            stack.append(at)
            header_from = at + 1
        elif ch == "}":
            if stack:
                start, kind = stack.pop(), stack.pop()
                lines = text.count("\n", start, at)
                if kind == "function" and lines > limit:
                    found.append((lines, path, text.count("\n", 0, start) + 1))
            header_from = at + 1
        elif ch == ";":
            header_from = at + 1
    return found


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    roots = sys.argv[2:] or ["src", "include", "bench"]
    found = []
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")):
                    found += long_functions(os.path.join(folder, name), limit)
    for lines, path, line in sorted(found, reverse=True):
        print("%s:%d: a function of %d lines (limit %d): split it by what its steps do"
              % (path, line, lines, limit))
    if found:
        return 1
    print("check_function_length: no function in %s over %d lines" % (", ".join(roots), limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
