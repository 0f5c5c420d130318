"""Calls every C++ torch operator with random arguments (shapes, dtypes, strides, counts,
row_elements, groups) on CPU tensors standing in for device -1's, in a check build of
libsymmcomm_torch.so (scripts/check_torch_ops_cpu.sh): each call must end in a Python exception
of the kinds the operators raise (ValueError for bad arguments, RuntimeError for shapes the
dispatcher or PyTorch refuse, for an allocation that fails, or for a call that passed every
check reaching the stand-in stream), never in a crash of the process. Run under ASan+UBSan by
the same script. Usage: fuzz_operators.py [seed] [calls]"""
import collections
import ctypes
import random
import sys

import torch

import symmcomm
import symmcomm.ops as so
from symmcomm import _capi

STOP = "cpu_check_support: this build of libsymmcomm_torch.so has no CUDA"
DTYPES = [torch.bfloat16, torch.float32, torch.uint8, torch.int8, torch.int32, torch.int64,
          torch.float16, torch.float64]
# The dtype each argument takes when right, so that calls get past the dtype checks.
RIGHT = {"data": torch.uint8, "out_data": torch.uint8, "block_scales": torch.uint8,
         "out_block_scales": torch.uint8, "global_scale": torch.float32,
         "out_global_scale": torch.float32, "scale": torch.float32, "count": torch.int32,
         "counts": torch.int32, "offsets": torch.int32, "overflow": torch.int32,
         "topk_idx": torch.int32, "topk_weights": torch.float32, "num_tokens": torch.int32,
         "expert_count": torch.int32, "out_expert_count": torch.int32,
         "out_overflow": torch.int32, "out_error": torch.int32}


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    lib = so._native_library().lib
    lib.symmcomm_torch_check_register_cpu.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                      ctypes.c_size_t]
    lib.symmcomm_torch_check_name_communicator.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                                           ctypes.c_int, ctypes.c_int]
    schemas = torch.library.Library("symmcomm_fuzz", "DEF")
    signatures = {}
    for name, (schema, _, _, _) in so.OPS.items():
        schemas.define(name + schema)
        params = [p.strip() for p in schema[1:schema.rindex(") ->")].split(",") if p.strip()]
        signatures[name] = [tuple(p.split("=")[0].split(" ")[:2]) for p in params]
    err = ctypes.create_string_buffer(4096)
    if lib.symmcomm_torch_check_register_cpu(b"symmcomm_fuzz", err, len(err)) != 0:
        sys.exit("fuzz_operators: registering failed: " + err.value.decode())
    groups = [("fuzz-1", 0, 1), ("fuzz-2", 1, 2), ("fuzz-4", 3, 4)]
    for name, rank, size in groups:
        lib.symmcomm_torch_check_name_communicator(name.encode(), rank, size, -1)
    # MoE groups of the same names, shapes the random tensors can meet: hidden 64, top-2, 2
    # experts here of capacity 4, 8 tokens per rank (a bf16 wire on one of them).
    lib.symmcomm_torch_check_name_moe_group.argtypes = [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    for name, _, size in groups:
        wire = "bf16" if size == 2 else "nvfp4"
        config = _capi.MoeConfigC(2 * size, 2, 64, 8, 4, _capi.PATHS["auto"], _capi.DTYPES[wire])
        lib.symmcomm_torch_check_name_moe_group(name.encode(), ctypes.addressof(config), 2,
                                                symmcomm.swizzled_scale_bytes(4, 4), -1)
    ops = torch.ops.symmcomm_fuzz
    rng = random.Random(seed)

    def tensor(name):
        dims = rng.choice([0, 1, 2, 3]) if rng.random() < 0.2 else rng.choice([1, 2, 2])
        shape = [rng.choice([0, 1, 2, 3, 4, 8, 16, 32, 64]) for _ in range(dims)]
        dtype = RIGHT.get(name, torch.bfloat16) if rng.random() < 0.85 else rng.choice(DTYPES)
        t = torch.zeros(shape, dtype=dtype)
        if dims >= 1 and t.shape[0] > 1 and rng.random() < 0.15:
            t = t[::2]
        if dims == 2 and rng.random() < 0.1:
            t = t.t()
        return t

    def argument(kind, name):
        if kind.startswith("Tensor?"):
            return None if rng.random() < 0.4 else tensor(name)
        if kind.startswith("Tensor"):
            return tensor(name)
        if kind == "str":
            return rng.choice([g[0] for g in groups] + ["no-such-group"])
        if kind in ("int", "SymInt"):
            return rng.choice([-1, 0, 1, 4, 8, 9, 1 << 40])
        if kind in ("int?", "SymInt?"):
            return None if rng.random() < 0.4 else rng.choice([-16, -1, 0, 1, 8, 16, 32, 1 << 40])
        if kind in ("int[]", "SymInt[]"):
            return [rng.choice([-3, 0, 1, 2, 4, 8, 1 << 40])
                    for _ in range(rng.choice([0, 1, 2, 4]))]
        if kind == "ScalarType":
            return rng.choice(DTYPES)
        if kind == "bool":
            return rng.random() < 0.5
        sys.exit("fuzz_operators: no generator for argument type %r" % kind)

    outcomes = collections.Counter()
    for _ in range(calls):
        name = rng.choice(sorted(signatures))
        args = [argument(kind, pname) for kind, pname in signatures[name]]
        try:
            getattr(ops, name)(*args)
            outcomes["returned"] += 1  # possible only for an operator that never reaches a stream
        except (ValueError, RuntimeError) as e:
            outcomes["reached the stream" if STOP in str(e) else type(e).__name__] += 1
    if outcomes["reached the stream"] == 0:
        sys.exit("fuzz_operators: FAILED: no call passed every check (%s)" % dict(outcomes))
    print("fuzz_operators: %d calls (seed %d), no crash: %s" % (calls, seed, dict(outcomes)))


if __name__ == "__main__":
    main()
