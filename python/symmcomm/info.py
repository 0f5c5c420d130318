"""What symmcomm will do on this machine: ``python -m symmcomm.info [--json]``.

Prints the library's own report (symmcomm_system_report in the C ABI, the same as the
``symmcomm-info`` tool): versions, CUDA architectures built, CUDA and NCCL, GPUs and whether the
build has SASS for them, P2P reachability, the environment variables that matter and, for each
path, what it needs and whether this machine has it. Works without a GPU; attach ``--json`` to
bug reports.
"""
import argparse
import ctypes
import json
import sys

from ._core import _check, _lib


def report(as_json=False):
    """The report as text, or as a dict (schema "symmcomm-info/1") when ``as_json``."""
    needed = ctypes.c_size_t(0)
    _check(_lib.symmcomm_system_report(1 if as_json else 0, None, 0, ctypes.byref(needed)))
    # The report is gathered anew on each call: leave room for a longer second answer.
    capacity = needed.value + 4096
    buffer = ctypes.create_string_buffer(capacity)
    _check(_lib.symmcomm_system_report(1 if as_json else 0, buffer, capacity, ctypes.byref(needed)))
    text = buffer.value.decode("utf-8", "replace")
    return json.loads(text) if as_json else text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m symmcomm.info", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="JSON for bug reports")
    args = parser.parse_args(argv)
    if args.json:
        json.dump(report(True), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report(False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
