#!/usr/bin/env python3
"""Fails when a shared library that shares the process's C++ runtime (libsymmcomm_torch.so,
which passes tensors, strings and exceptions to PyTorch) defines a private, local copy of
something libstdc++ exports (hidden visibility, -fvisibility-inlines-hidden): such a copy can
never bind to the runtime's, and a stream or locale member among them uses locale facet ids the
runtime never registered (formatting a number then calls a wrong facet: a segmentation fault).
Weak and unique definitions are not counted: the dynamic linker can bind them to the runtime's
(symmcomm._torch_library puts libstdc++ first in its lookup order). libsymmcomm_c.so is the opposite case: a whole private static runtime
behind a C boundary, which this check is not for.

Usage: scripts/check_runtime_copies.py LIBRARY [LIBSTDCXX]
LIBSTDCXX: the libstdc++ to compare with (default: the one the library resolves, from ldd).
Exit 0: none; 1: the copies are listed; 2: a tool (nm, ldd) or file is missing.
"""
import os
import subprocess
import sys


def defined_symbols(path, dynamic):
    """(type letter, mangled name) of every symbol `path` defines."""
    args = ["nm", "--defined-only"] + (["-D"] if dynamic else []) + [path]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            symbols.append((parts[1], parts[2].split("@")[0]))  # without the symbol version
    return symbols


def resolved_libstdcxx(library):
    out = subprocess.run(["ldd", library], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "libstdc++" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return None


def demangle(names):
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return out.stdout.splitlines() if out.returncode == 0 else names


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    library = sys.argv[1]
    try:
        runtime = sys.argv[2] if len(sys.argv) == 3 else resolved_libstdcxx(library)
        if runtime is None or not os.path.exists(library):
            print("check_runtime_copies: %s or its libstdc++ is missing" % library, file=sys.stderr)
            return 2
        exported = {name for _, name in defined_symbols(runtime, dynamic=True)}
        # Lower-case types are local (defined and bound here, never to the runtime), except
        # u (GNU unique: one instance per process), v and w (weak).
        copies = sorted({name for kind, name in defined_symbols(library, dynamic=False)
                         if kind.islower() and kind not in "uvw" and name in exported})
    except (OSError, subprocess.CalledProcessError) as e:
        print("check_runtime_copies: %s" % e, file=sys.stderr)
        return 2
    if os.environ.get("SYMMCOMM_RUNTIME_COPIES_TYPES"):  # diagnosis: every kind of copy
        kinds = {}
        for kind, name in defined_symbols(library, dynamic=False):
            if name in exported:
                kinds.setdefault(kind, []).append(name)
        for kind in sorted(kinds):
            print("  nm type %s: %d, e.g. %s" % (kind, len(kinds[kind]),
                                                  ", ".join(demangle(kinds[kind][:2]))))
    if copies:
        print("check_runtime_copies: %s defines %d local copies of what %s exports "
              "(build it with default visibility):" % (library, len(copies), runtime))
        for name in demangle(copies)[:20]:
            print("  " + name)
        return 1
    print("check_runtime_copies: %s binds every libstdc++ symbol to %s (%d exported there)"
          % (library, runtime, len(exported)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
