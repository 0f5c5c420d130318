"""Registers libsymmcomm_torch.so's operators against symmcomm.ops' schemas in a PyTorch without
a GPU (scripts/check_torch_ops_cpu.sh builds the library for it): every C++ signature must match
its schema, the library must name the operators it implements, and a mismatching schema must be
refused with the dispatcher's text. Then, registered on the CPU key with communicators known only
by name (tests/torch_ops/cpu_check_support.cpp), the operators' own checks run on CPU tensors:
each refusal must raise the exception type and text the Python implementations give. Exits
non-zero on the first failure."""
import ctypes
import sys

import torch

import symmcomm
import symmcomm.ops as so
from symmcomm import _capi

EXPECTED = set(so.OPS)  # every operator


def check(cond, what):
    if not cond:
        sys.exit("check_registration: FAILED: " + what)
    print("ok:", what)


where = so.native_library()
check("error" not in where, "the library loads (%s)" % where)
check(set(where["operators"]) == EXPECTED, "it implements every operator of symmcomm.ops.OPS")
lib = so._native_library().lib
err = ctypes.create_string_buffer(4096)

schemas = torch.library.Library("symmcomm_schema_check", "DEF")
for name, (schema, _, _, _) in so.OPS.items():
    schemas.define(name + schema)
rc = lib.symmcomm_torch_register(b"symmcomm_schema_check", err, len(err))
check(rc == 0, "every C++ signature matches its schema (PyTorch %s): %s"
      % (torch.__version__, err.value.decode()))
check(lib.symmcomm_torch_register(b"symmcomm_schema_check", err, len(err)) == 0,
      "registering a namespace again does nothing")

wrong = torch.library.Library("symmcomm_schema_wrong", "DEF")
wrong.define("all_gather(Tensor x, int group) -> Tensor")
rc = lib.symmcomm_torch_register(b"symmcomm_schema_wrong", err, len(err))
text = err.value.decode()
check(rc == 1 and "all_gather" in text and "str" in text,
      "a mismatching schema is refused, naming the operator and type: %s" % text.splitlines()[0])
check(lib.symmcomm_torch_register(b"", err, len(err)) == 1 and "ns" in err.value.decode(),
      "an empty namespace is refused, naming ns")

check(lib.symmcomm_torch_remove_communicator(b"absent") == 0, "removing an unknown name: 0")
rc = lib.symmcomm_torch_set_communicator(b"x", None, err, len(err))
check(rc == 1 and err.value, "a NULL communicator is refused: %s" % err.value.decode())
# ---- the operators' own checks, on CPU tensors --------------------------------------------------
lib.symmcomm_torch_check_register_cpu.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                  ctypes.c_size_t]
lib.symmcomm_torch_check_name_communicator.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                                       ctypes.c_int, ctypes.c_int]
cpu_schemas = torch.library.Library("symmcomm_cpu_check", "DEF")
for name, (schema, _, _, _) in so.OPS.items():
    cpu_schemas.define(name + schema)
err.value = b""
rc = lib.symmcomm_torch_check_register_cpu(b"symmcomm_cpu_check", err, len(err))
check(rc == 0, "the operators register on the CPU key: %s" % err.value.decode())
lib.symmcomm_torch_check_name_communicator(b"one", 0, 1, 0)
lib.symmcomm_torch_check_name_communicator(b"two", 1, 2, 0)
ops = torch.ops.symmcomm_cpu_check
bf16 = torch.bfloat16
x = torch.zeros(4, 8, dtype=bf16)
data, bs, gs = (torch.zeros(4, 16, dtype=torch.uint8), torch.zeros(4, 2, dtype=torch.uint8),
                torch.ones(1))


def refused(kind, text, call):
    try:
        call()
    except kind as e:
        check(text in str(e), "%s %r" % (kind.__name__, text))
        return
    except Exception as e:  # noqa: BLE001 (the wrong kind is the failure reported)
        check(False, "%s %r, got %s: %s" % (kind.__name__, text, type(e).__name__, e))
    check(False, "%s %r, got no error" % (kind.__name__, text))


refused(ValueError, "no communicator registered as 'nope' (register_communicator); registered: "
        "one, two", lambda: ops.all_gather(x, "nope"))
refused(ValueError, "send must be on a CUDA device, got cpu", lambda: ops.all_gather(x, "one"))
refused(ValueError, "x must have at least one dimension (rows), got a 0-d tensor",
        lambda: ops.all_gather(torch.zeros((), dtype=bf16), "one"))
refused(RuntimeError, "dim 0 (3) is not divisible by the communicator's size 2",
        lambda: ops.reduce_scatter(torch.zeros(3, 8, dtype=bf16), "two"))
refused(RuntimeError, "data's dim 0 (3) is not divisible by the communicator's size 2",
        lambda: ops.reduce_scatter_nvfp4(data[:3], bs[:3], gs, "two", bf16))
refused(ValueError, "counts must be a list of comm.size (2) ints, got [32, 32, 32]",
        lambda: ops.all_gatherv(x, [4, 4, 4], "two"))
refused(ValueError, "counts[1] must be >= 0, got -8", lambda: ops.all_gatherv(x, [5, -1], "two"))
refused(ValueError, "counts has 1 entries; rank 1 needs its own",
        lambda: ops.reduce_scatterv(x, [4], "two"))
refused(ValueError, "row_elements must be >= 1, got 0",
        lambda: ops.all_gather_nvfp4(data, bs, gs, "one", 0))
refused(ValueError, "row_elements must be >= 1, got -16",
        lambda: ops.quantize_all_gather_nvfp4(x, None, "one", -16))
refused(ValueError, "send.data must be on a CUDA device, got cpu",
        lambda: ops.all_gatherv_nvfp4(data, bs, gs, [4, 4], "two", None))
refused(RuntimeError, "dim 0 (3) is not divisible by the communicator's size 2",
        lambda: ops.reduce_scatter_nvfp4_q(data[:3], bs[:3], gs, "two"))
i32 = torch.zeros(1, dtype=torch.int32)
refused(ValueError, "send must be on a CUDA device, got cpu",
        lambda: ops.reduce_scatterv_device(x, i32, i32, i32, i32, "one"))
refused(RuntimeError, "data's dim 0 (3) is not divisible by the communicator's size 2",
        lambda: ops.reduce_scatterv_device_nvfp4(data[:3], bs[:3], gs, i32, i32, i32, i32, "two"))

# ---- every check after the device's: CPU tensors stand for device -1's in this build ----------
# A call that passes every check stops at the stand-in CUDA stream (cpu_check_support.cpp).
lib.symmcomm_torch_check_name_communicator(b"cpu-one", 0, 1, -1)
lib.symmcomm_torch_check_name_communicator(b"cpu-two", 1, 2, -1)
STOP = "cpu_check_support: this build of libsymmcomm_torch.so has no CUDA"
x32 = torch.zeros(4, 32, dtype=bf16)
f64 = torch.ones(1, dtype=torch.float64)
one_row = [torch.zeros(n, dtype=torch.int32) for n in (1, 1, 1, 1)]
two_rows = [torch.zeros(n, dtype=torch.int32) for n in (1, 2, 2, 1)]
refused(RuntimeError, STOP, lambda: ops.all_gather(x, "cpu-one"))
refused(RuntimeError, STOP, lambda: ops.all_gather_nvfp4(data, bs, gs, "cpu-one", None))
refused(RuntimeError, STOP, lambda: ops.all_gather_nvfp4(data, bs, gs, "cpu-one", 32))
refused(RuntimeError, STOP, lambda: ops.all_gatherv(x, [4, 4], "cpu-two"))
refused(RuntimeError, STOP, lambda: ops.reduce_scatterv(x, [2, 2], "cpu-two"))
refused(RuntimeError, STOP, lambda: ops.reduce_scatter_nvfp4(data, bs, gs, "cpu-one", bf16))
refused(RuntimeError, STOP, lambda: ops.all_gatherv_device(x, *two_rows, "cpu-two"))
refused(RuntimeError, STOP, lambda: ops.dequantize_nvfp4(data, bs, gs))
refused(ValueError, "send has dtype float32; expected bfloat16",
        lambda: ops.all_gather(x.float(), "cpu-one"))
refused(ValueError, "recv must be contiguous",
        lambda: ops.all_gather_out(x, torch.zeros(8, 8, dtype=bf16)[::2], "cpu-one"))
refused(ValueError, "send.block_scales has 6 elements; 64 data bytes need 8 (one per 16 elements)",
        lambda: ops.all_gather_nvfp4(data, bs[:-1], gs, "cpu-one", None))
refused(ValueError, "send.global_scale has 0 elements; expected 1",
        lambda: ops.all_gather_nvfp4(data, bs, torch.ones(0), "cpu-one", None))
refused(ValueError, "recv.block_scales has 100 elements; swizzled scales of 4 rows of 32 need 512 "
        "(symmcomm.swizzled_scale_bytes)",
        lambda: ops.all_gather_nvfp4_out(data, bs, gs, torch.zeros_like(data),
                                         torch.zeros(100, dtype=torch.uint8), torch.ones(1),
                                         "cpu-one", 32))
refused(ValueError, "recv has dtype float16; expected bfloat16 or float32",
        lambda: ops.reduce_scatter_nvfp4(data, bs, gs, "cpu-one", torch.float16))
refused(ValueError, "send.scale has dtype float64; expected float32",
        lambda: ops.reduce_scatter_fp8(data, f64, "cpu-one", bf16))
refused(ValueError, "scale has dtype float64; expected float32",
        lambda: ops.quantize_all_gather_nvfp4(x32, f64, "cpu-one", 32))
refused(ValueError, "send.block_scales has 4 elements; 64 data bytes need 8 (one per 16 elements)",
        lambda: ops.reduce_scatter_nvfp4_q(data, bs[:, :-1], gs, "cpu-one"))
refused(ValueError, "src.global_scale has dtype float64; expected float32",
        lambda: ops.dequantize_nvfp4(data, bs, f64))
refused(ValueError, "counts.count has dtype int64; expected int32",
        lambda: ops.reduce_scatterv_device(x, torch.zeros(1, dtype=torch.int64), *two_rows[1:],
                                           "cpu-two"))
refused(ValueError, "counts.counts has 1 elements; expected 2",
        lambda: ops.reduce_scatterv_device(x, *one_row, "cpu-two"))
# Negative counts are named before an output of negative size would be allocated.
refused(ValueError, "counts[0] must be >= 0, got -24",
        lambda: ops.all_gatherv(x, [-3, 0], "cpu-two"))
refused(ValueError, "counts[1] must be >= 0, got -16",
        lambda: ops.reduce_scatterv(x, [4, -2], "cpu-two"))
refused(ValueError, "counts[0] must be >= 0, got -128",
        lambda: ops.all_gatherv_nvfp4(data, bs, gs, [-4, 0], "cpu-two", None))
# Rows of no element: the library's row_elements check, never a division by zero.
refused(ValueError, "row_elements must be >= 1, got 0",
        lambda: ops.all_gatherv_device_nvfp4(data[:, :0], bs[:, :0], gs, *one_row, "cpu-one"))
refused(ValueError, "row_elements must be >= 1, got 0",
        lambda: ops.reduce_scatterv_device_nvfp4(data[:, :0], bs[:, :0], gs, *one_row, "cpu-one"))

# ---- the MoE group's operators (a group known by name: hidden 64, top-2, 2 experts here of
# capacity 4, 8 tokens per rank; "cpu-moe-bf16" on a bf16 wire) ---------------------------------
lib.symmcomm_torch_check_name_moe_group.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int,
                                                    ctypes.c_size_t, ctypes.c_int]
moe_configs = {}
for moe_name, wire in ((b"cpu-moe", "nvfp4"), (b"cpu-moe-bf16", "bf16")):
    moe_configs[moe_name] = _capi.MoeConfigC(4, 2, 64, 8, 4, _capi.PATHS["auto"],
                                             _capi.DTYPES[wire])
    lib.symmcomm_torch_check_name_moe_group(moe_name, ctypes.addressof(moe_configs[moe_name]), 2,
                                            symmcomm.swizzled_scale_bytes(4, 4), -1)
i32, f32 = torch.int32, torch.float32
tokens = torch.zeros(5, 64, dtype=bf16)
routing = (torch.zeros(5, 2, dtype=i32), torch.zeros(5, 2, dtype=f32))
moe_outs = (torch.zeros(2, 4, 32, dtype=torch.uint8),
            torch.zeros(2, symmcomm.swizzled_scale_bytes(4, 4), dtype=torch.uint8),
            torch.zeros(2, dtype=i32), torch.zeros(1), torch.zeros(1, dtype=i32),
            torch.zeros(1, dtype=i32))
bf16_outs = (torch.zeros(2, 4, 64, dtype=bf16), torch.zeros(2, 0, dtype=torch.uint8)) + moe_outs[2:]
y = torch.zeros(2, 4, 64, dtype=bf16)
counts2 = torch.zeros(2, dtype=i32)
refused(ValueError, "no MoE group registered as 'nope' (register_moe_group); registered: cpu-moe, "
        "cpu-moe-bf16", lambda: ops.moe_combine(y, counts2, 5, "nope"))
refused(RuntimeError, STOP, lambda: ops.moe_dispatch(tokens, None, torch.ones(1), *routing, None,
                                                     *moe_outs, "cpu-moe"))
refused(RuntimeError, STOP, lambda: ops.moe_dispatch(
    torch.zeros(5, 32, dtype=torch.uint8), torch.zeros(5, 4, dtype=torch.uint8), torch.ones(1),
    *routing, torch.zeros(1, dtype=i32), *moe_outs, "cpu-moe"))
refused(RuntimeError, STOP, lambda: ops.moe_dispatch(tokens, None, None, *routing, None,
                                                     *bf16_outs, "cpu-moe-bf16"))
refused(RuntimeError, STOP, lambda: ops.moe_combine(y, counts2, 5, "cpu-moe"))
refused(RuntimeError, STOP, lambda: ops.moe_combine(y.float(), counts2, 8, "cpu-moe"))
refused(ValueError, "x has 9 rows; the group takes at most max_tokens_per_rank = 8",
        lambda: ops.moe_dispatch(torch.zeros(9, 64, dtype=bf16), None, torch.ones(1),
                                 torch.zeros(9, 2, dtype=i32), torch.zeros(9, 2), None, *moe_outs,
                                 "cpu-moe"))
refused(ValueError, "topk_idx has shape [5, 3]; expected [5, 2]",
        lambda: ops.moe_dispatch(tokens, None, torch.ones(1), torch.zeros(5, 3, dtype=i32),
                                 routing[1], None, *moe_outs, "cpu-moe"))
refused(ValueError, "global_scale: bf16 x is quantized in the dispatch with the layer's static "
        "NVFP4 scale", lambda: ops.moe_dispatch(tokens, None, None, *routing, None, *moe_outs,
                                                "cpu-moe"))
refused(ValueError, "global_scale must be None on a bf16 wire",
        lambda: ops.moe_dispatch(tokens, None, torch.ones(1), *routing, None, *bf16_outs,
                                 "cpu-moe-bf16"))
refused(ValueError, "x is NVFP4 (block_scales given) but the group's wire is bf16",
        lambda: ops.moe_dispatch(torch.zeros(5, 32, dtype=torch.uint8),
                                 torch.zeros(5, 4, dtype=torch.uint8), torch.ones(1), *routing,
                                 None, *bf16_outs, "cpu-moe-bf16"))
refused(ValueError, "out_block_scales has shape [2, 5]; expected [2, 512]",
        lambda: ops.moe_dispatch(tokens, None, torch.ones(1), *routing, None, moe_outs[0],
                                 torch.zeros(2, 5, dtype=torch.uint8), *moe_outs[2:], "cpu-moe"))
refused(ValueError, "out_expert_count has dtype int64; expected int32",
        lambda: ops.moe_dispatch(tokens, None, torch.ones(1), *routing, None, *moe_outs[:2],
                                 torch.zeros(2, dtype=torch.int64), *moe_outs[3:], "cpu-moe"))
refused(ValueError, "num_rows must be in 0..max_tokens_per_rank (8), got 9",
        lambda: ops.moe_combine(y, counts2, 9, "cpu-moe"))
refused(ValueError, "expert_out has shape [2, 4, 32]; expected [2, 4, 64]",
        lambda: ops.moe_combine(y[:, :, :32], counts2, 4, "cpu-moe"))

print("check_registration: all passed (PyTorch %s, %s)" % (torch.__version__, where["path"]))
