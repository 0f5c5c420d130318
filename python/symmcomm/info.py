"""What symmcomm will do on this machine: ``python -m symmcomm.info [--json]``.

Prints the library's own report (symmcomm_system_report in the C ABI, the same as the
``symmcomm-info`` tool): versions, CUDA architectures built, CUDA and NCCL, GPUs and whether the
build has SASS for them, P2P reachability, the environment variables that matter and, for each
path, what it needs and whether this machine has it; then what the Python package adds: where
it and its library are, and which implementation the torch operators run (key "python" in the
JSON). Works without a GPU; attach ``--json`` to bug reports.
"""
import argparse
import ctypes
import json
import os
import sys

from ._core import _check, _lib, _path


def report(as_json=False, ranks=0):
    """The report as text, or as a dict (schema "symmcomm-info/1") when ``as_json``; with
    ``ranks`` > 0 also what that many ranks sharing GPU 0 find (see symmcomm-info --ranks)."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or not 0 <= ranks <= 64:
        raise ValueError("ranks must be an int in 0..64, got %r" % (ranks,))
    mode = 1 if as_json else 0
    # The report is made anew on each call (a probe even makes communicators): ask once with
    # room to spare, and again only if that was not enough.
    capacity = 1 << 16
    while True:
        needed = ctypes.c_size_t(0)
        buffer = ctypes.create_string_buffer(capacity)
        _check(_lib.symmcomm_system_report(mode, ranks, buffer, capacity, ctypes.byref(needed)))
        if needed.value <= capacity:
            break
        capacity = needed.value + 4096
    text = buffer.value.decode("utf-8", "replace")
    return json.loads(text) if as_json else text


def python_report():
    """The Python package's part: {"package", "library" (the libsymmcomm_c.so loaded), "torch"
    (PyTorch's version, None where it is not installed), "torch_operators" (where PyTorch is:
    symmcomm.ops.native_library(), the C++ operators' library or why the Python ones run)}."""
    out = {"package": os.path.dirname(os.path.abspath(__file__)), "library": _path,
           "torch": None, "torch_operators": None}
    try:
        import torch
    except Exception as e:  # noqa: BLE001 (any failure to import means: no usable PyTorch)
        out["torch_error"] = "%s: %s" % (type(e).__name__, e)
        return out
    out["torch"] = torch.__version__
    from . import ops
    out["torch_operators"] = ops.native_library()
    return out


def python_text(section):
    """python_report() as the text report's last section."""
    lines = ["", "Python package", "  package          %s" % section["package"],
             "  library          %s" % section["library"]]
    if section["torch"] is None:
        lines.append("  PyTorch          not importable (%s): no torch operators"
                     % section.get("torch_error", "?"))
    else:
        lines.append("  PyTorch          %s" % section["torch"])
        native = section["torch_operators"]
        if "error" in native:
            lines.append("  torch operators  Python implementations (%s)" % native["error"])
        else:
            lines.append("  torch operators  C++: %s (built against PyTorch %s, %d operators)"
                         % (native["path"], native["built_against"], len(native["operators"])))
    return "\n".join(lines) + "\n"


def main(argv=None):
    """`python -m symmcomm.info`: prints the machine report (--json for bug reports)."""
    parser = argparse.ArgumentParser(prog="python -m symmcomm.info", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="JSON for bug reports")
    parser.add_argument("--ranks", type=int, default=0,
                        help="also make this many ranks sharing GPU 0 and report what they find")
    args = parser.parse_args(argv)
    if args.json:
        whole = report(True, args.ranks)
        whole["python"] = python_report()
        json.dump(whole, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report(False, args.ranks))
        sys.stdout.write(python_text(python_report()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
