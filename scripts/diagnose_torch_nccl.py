#!/usr/bin/env python3
"""Diagnose NCCL inside a PyTorch process, step by step, for the symmcomm C ABI.

PyTorch loads its own NCCL (a wheel) before anything else; a library loaded later that needs
libnccl.so.2 gets that copy, whatever version it was built against. This script prints which
NCCL is loaded and initialises a one-rank communicator three ways, each in its own process, so
a crash names the step that crashed:
  1. NCCL directly (ctypes on the already loaded libnccl.so.2), after `import torch`;
  2. symmcomm_comm_init without torch (the NCCL symmcomm was linked with);
  3. symmcomm_comm_init after `import torch` (torch's NCCL).
Usage: python3 scripts/diagnose_torch_nccl.py path/to/libsymmcomm_c.so
With SYMMCOMM_SEGV_BACKTRACE=1, libsymmcomm_c prints a native backtrace on a crash.
"""
import subprocess
import sys

SYMMCOMM_INIT = """
lib = ctypes.CDLL(sys.argv[1])
lib.symmcomm_last_error.restype = ctypes.c_char_p
uid = ctypes.create_string_buffer(lib.symmcomm_unique_id_bytes())
assert lib.symmcomm_get_unique_id(uid) == 0
comm = ctypes.c_void_p()
r = lib.symmcomm_comm_init(1, uid, 0, 0, ctypes.byref(comm))
print("symmcomm_comm_init ->", r, lib.symmcomm_last_error().decode())
assert r == 0
lib.symmcomm_comm_release(comm)
"""

STEPS = {
    "nccl-direct-after-torch": """
import ctypes, torch
torch.cuda.set_device(0)
nccl = ctypes.CDLL("libnccl.so.2")
v = ctypes.c_int(); nccl.ncclGetVersion(ctypes.byref(v)); print("loaded NCCL", v.value)
class UniqueId(ctypes.Structure):  # ncclUniqueId, passed by value
    _fields_ = [("internal", ctypes.c_char * 128)]
uid = UniqueId(); assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
comm = ctypes.c_void_p()
nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
r = nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0); print("ncclCommInitRank ->", r)
assert r == 0
nccl.ncclCommDestroy(comm)
""",
    "symmcomm-without-torch": "import ctypes, sys" + SYMMCOMM_INIT,
    "symmcomm-after-torch": "import ctypes, sys, torch\ntorch.cuda.set_device(0)" + SYMMCOMM_INIT,
}


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    failed = 0
    for name, code in STEPS.items():
        p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code, sys.argv[1]],
                           capture_output=True, text=True, timeout=120)
        status = "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})"
        print(f"== {name}: {status}")
        out = (p.stdout + p.stderr).strip().splitlines()
        print("\n".join("   " + line for line in out[-25:]))
        failed += p.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
