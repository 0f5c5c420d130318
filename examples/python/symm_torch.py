#!/usr/bin/env python3
"""PyTorch + symmcomm through the C ABI, with ctypes only (no build step for the user).

Tensors allocated inside a torch.cuda.MemPool backed by symmcomm's pluggable allocator land in
NCCL symmetric windows (checked through provenance); an NVFP4 all-gather and a BF16
reduce-scatter then run through the C ABI and are checked against PyTorch.

Usage: python3 examples/python/symm_torch.py [path/to/libsymmcomm_c.so]
One process per GPU; with torch.distributed env variables (RANK, WORLD_SIZE, MASTER_ADDR, ...)
the NCCL id is shared over a gloo process group, else it runs one rank.
"""
import ctypes
import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# The library: argv[1], else SYMMCOMM_LIBRARY, else the build folders the scripts make
# (scripts/test.sh: build-test, scripts/bench.sh: build-bench) or a developer's build-dev.
CANDIDATES = [os.path.join(ROOT, d, "src", "libsymmcomm_c.so")
              for d in ("build-test", "build-bench", "build-dev")]


def library_path():
    if len(sys.argv) > 1:
        return sys.argv[1]
    if os.environ.get("SYMMCOMM_LIBRARY"):
        return os.environ["SYMMCOMM_LIBRARY"]
    for path in CANDIDATES:
        if os.path.exists(path):
            return path
    sys.exit("libsymmcomm_c.so not found: pass its path, set SYMMCOMM_LIBRARY, or build with "
             "scripts/test.sh (looked in: " + ", ".join(CANDIDATES) + ")")




class Tensor(ctypes.Structure):
    """symmcomm_tensor_t (c_api.h): dtype 0 = NVFP4, 3 = BF16; scale layout 0 = linear."""
    _fields_ = [("dtype", ctypes.c_int), ("scale_layout", ctypes.c_int),
                ("data", ctypes.c_void_p), ("block_scales", ctypes.c_void_p),
                ("scales", ctypes.c_void_p), ("count", ctypes.c_size_t),
                ("row_elements", ctypes.c_size_t)]


NVFP4, BF16 = 0, 3


class Plan(ctypes.Structure):
    """symmcomm_plan_t; struct_size set before a call."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("path", ctypes.c_int), ("reason", ctypes.c_int),
                ("staged", ctypes.c_int), ("private_data", ctypes.c_uint64 * 24)]


def load(path):
    lib = ctypes.CDLL(os.path.abspath(path))
    vp, sz, i, st = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int
    sigs = {
        "symmcomm_last_error": ([], ctypes.c_char_p),
        "symmcomm_unique_id_bytes": ([], sz),
        "symmcomm_get_unique_id": ([vp], st),
        "symmcomm_comm_init": ([i, vp, i, i, ctypes.POINTER(vp)], st),
        "symmcomm_comm_info": ([vp, ctypes.POINTER(i), ctypes.POINTER(i), ctypes.POINTER(i),
                                ctypes.POINTER(i)], st),
        "symmcomm_comm_release": ([vp], st),
        "symmcomm_pool_create": ([vp, sz, sz, i, ctypes.POINTER(vp)], st),
        "symmcomm_pool_destroy": ([vp], st),
        "symmcomm_torch_set_pool": ([vp], st),
        "symmcomm_provenance": ([vp, vp, sz, ctypes.POINTER(i), ctypes.POINTER(sz)], st),
        "symmcomm_quantize": ([ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), i, vp], st),
        "symmcomm_dequantize": ([ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), vp], st),
        # options NULL: the defaults (path auto).
        "symmcomm_all_gather": ([vp, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), vp, vp,
                                 ctypes.POINTER(Plan)], st),
        "symmcomm_reduce_scatter": ([vp, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), vp, vp,
                                     ctypes.POINTER(Plan)], st),
        "symmcomm_enum_name": ([i, i], ctypes.c_char_p),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def check(lib, status, what):
    if status != 0:
        raise RuntimeError(f"{what}: status {status}: {lib.symmcomm_last_error().decode()}")


def main():
    if not torch.cuda.is_available():
        print("symm_torch.py: no CUDA GPU; nothing to run")
        return 77
    lib_path = library_path()
    lib = load(lib_path)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count()
    torch.cuda.set_device(device)
    uid = ctypes.create_string_buffer(lib.symmcomm_unique_id_bytes())
    if rank == 0:
        check(lib, lib.symmcomm_get_unique_id(uid), "get_unique_id")
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        t = torch.frombuffer(bytearray(uid.raw), dtype=torch.uint8)
        dist.broadcast(t, 0)
        ctypes.memmove(uid, bytes(t.tolist()), len(t))
    comm = ctypes.c_void_p()
    check(lib, lib.symmcomm_comm_init(world, uid, rank, device, ctypes.byref(comm)), "comm_init")
    symmetric = ctypes.c_int()
    check(lib, lib.symmcomm_comm_info(comm, None, None, None, ctypes.byref(symmetric)), "info")
    pool = ctypes.c_void_p()
    # No on-demand growth: PyTorch may allocate in different orders on different ranks.
    check(lib, lib.symmcomm_pool_create(comm, 512 << 20, 0, 0, ctypes.byref(pool)), "pool_create")
    check(lib, lib.symmcomm_torch_set_pool(pool), "torch_set_pool")

    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        os.path.abspath(lib_path), "symmcomm_torch_alloc", "symmcomm_torch_free")
    mempool = torch.cuda.MemPool(allocator.allocator())
    tokens, hidden = 64, 7168
    n = tokens * hidden
    with torch.cuda.use_mem_pool(mempool):
        x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device="cuda") * (rank + 1)
        data = torch.empty(n // 2, dtype=torch.uint8, device="cuda")
        scales = torch.empty(n // 16, dtype=torch.uint8, device="cuda")
        gscale = torch.empty(1, dtype=torch.float32, device="cuda")
        gdata = torch.empty(world * n // 2, dtype=torch.uint8, device="cuda")
        gscales = torch.empty(world * n // 16, dtype=torch.uint8, device="cuda")
        gglobal = torch.empty(world, dtype=torch.float32, device="cuda")
        y = torch.randn(world * n, dtype=torch.bfloat16, device="cuda")
        z = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    sym, off = ctypes.c_int(), ctypes.c_size_t()
    windows = []
    for name, t in (("x", x), ("data", data), ("gdata", gdata), ("y", y)):
        check(lib, lib.symmcomm_provenance(comm, t.data_ptr(), t.numel() * t.element_size(),
                                           ctypes.byref(sym), ctypes.byref(off)), "provenance")
        windows.append(sym.value == 1)
        # NCCL may refuse windows on a communicator without symmetric support (the pool's memory
        # is then plain, and provenance says so); with support every pool tensor is in a window.
        assert sym.value == 1 or not symmetric.value, \
            f"{name} is not in a symmetric window: {lib.symmcomm_last_error().decode()}"
    print(f"pool tensors in symmetric windows: {all(windows)}")

    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    def bf16(t):
        return Tensor(BF16, 0, t.data_ptr(), None, None, t.numel(), 0)

    xt = bf16(x)
    q = Tensor(NVFP4, 0, data.data_ptr(), scales.data_ptr(), gscale.data_ptr(), n, 0)
    g = Tensor(NVFP4, 0, gdata.data_ptr(), gscales.data_ptr(), gglobal.data_ptr(), world * n, 0)
    plan = Plan(struct_size=ctypes.sizeof(Plan))
    check(lib, lib.symmcomm_quantize(ctypes.byref(xt), ctypes.byref(q), 1, stream), "quantize")
    check(lib, lib.symmcomm_all_gather(comm, ctypes.byref(q), ctypes.byref(g), None, stream,
                                       ctypes.byref(plan)), "all_gather")
    ag_path = lib.symmcomm_enum_name(2, plan.path).decode()  # 2: SYMMCOMM_ENUM_PATH_TAKEN
    back = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
    backt, yt, zt = bf16(back), bf16(y), bf16(z)
    check(lib, lib.symmcomm_dequantize(ctypes.byref(g), ctypes.byref(backt), stream), "dequantize")
    check(lib, lib.symmcomm_reduce_scatter(comm, ctypes.byref(yt), ctypes.byref(zt), None, stream,
                                           ctypes.byref(plan)), "reduce_scatter")
    torch.cuda.synchronize()

    # Checks against PyTorch: this rank's slice of the gather is its own NVFP4 tensor (relative
    # L2 error of NVFP4 on Gaussian data ~0.1), and the reduce-scatter equals torch's sum.
    mine = back.view(world, n)[rank].float()
    err = ((mine - x.flatten().float()).norm() / x.flatten().float().norm()).item()
    assert err < 0.15, f"NVFP4 round trip error {err}"
    if world == 1:
        assert torch.equal(z, y), "one-rank reduce-scatter must return its input"
    rs_path = lib.symmcomm_enum_name(2, plan.path).decode()
    print(f"rank {rank}/{world}: tensors in symmetric windows; NVFP4 all-gather ({ag_path}) "
          f"round-trip error {err:.4f}; BF16 reduce-scatter ({rs_path}) OK; "
          f"NCCL symmetric support: {bool(symmetric.value)}")

    del x, data, scales, gscale, gdata, gscales, gglobal, y, z, back
    del mempool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    check(lib, lib.symmcomm_pool_destroy(pool), "pool_destroy")
    check(lib, lib.symmcomm_comm_release(comm), "comm_release")
    print("symm_torch.py: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
