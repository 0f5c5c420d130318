#!/usr/bin/env python3
"""Lists the CUDA code embedded in ELF files, static archives and shared libraries: every
fatbinary (magic 0xBA55ED50) in the file is read entry by entry, ELF (SASS) entries as sm_NN and
PTX entries as compute_NN, without cuobjdump (absent on CPU-only machines; where it exists,
`cuobjdump --list-elf` lists the same SASS).

Usage: fatbin_archs.py FILE... [--require-sass 90,100,120] [--require-ptx 120]
Prints one line per file; with --require-*, exits 1 naming each file that lacks one.
"""
import argparse
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)
KIND_PTX = 1
KIND_ELF = 2


def entries(blob):
    """(kind, arch) of every entry of every fatbinary in `blob`."""
    found = []
    at = blob.find(MAGIC)
    while at >= 0:
        if at + 16 <= len(blob):
            version, header_size, fat_size = struct.unpack_from("<HHQ", blob, at + 4)
            end = at + header_size + fat_size
            if version == 1 and header_size >= 16 and end <= len(blob):
                pos = at + header_size
                while pos + 0x20 <= end:
                    kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, pos)
                    arch = struct.unpack_from("<I", blob, pos + 0x1C)[0]
                    if kind not in (KIND_PTX, KIND_ELF) or entry_header < 0x20:
                        break
                    found.append((kind, arch))
                    pos += entry_header + payload
        at = blob.find(MAGIC, at + 4)
    return found


def code_of(path):
    with open(path, "rb") as f:
        listed = entries(f.read())
    sass = sorted({arch for kind, arch in listed if kind == KIND_ELF})
    ptx = sorted({arch for kind, arch in listed if kind == KIND_PTX})
    return sass, ptx


def numbers(text):
    return [int(x) for x in text.split(",") if x.strip()] if text else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--require-sass", default="", help="comma-separated sm numbers, e.g. 90,100")
    ap.add_argument("--require-ptx", default="", help="comma-separated compute numbers")
    args = ap.parse_args()
    missing = False
    for path in args.files:
        sass, ptx = code_of(path)
        listing = " ".join([f"sm_{a}" for a in sass] + [f"compute_{a}" for a in ptx])
        print(f"{path}: {listing or 'no CUDA code'}")
        lack = [f"sm_{a}" for a in numbers(args.require_sass) if a not in sass]
        lack += [f"compute_{a}" for a in numbers(args.require_ptx) if a not in ptx]
        if lack:
            print(f"{path}: MISSING {' '.join(lack)}", file=sys.stderr)
            missing = True
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
