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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m symmcomm.info", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="JSON for bug reports")
    parser.add_argument("--ranks", type=int, default=0,
                        help="also make this many ranks sharing GPU 0 and report what they find")
    args = parser.parse_args(argv)
    if args.json:
        json.dump(report(True, args.ranks), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report(False, args.ranks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
