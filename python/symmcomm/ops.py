"""symmcomm's collectives and codecs as PyTorch operators (torch.ops.<namespace>.*), so that
torch.compile traces them without graph breaks and CUDA graphs capture them.

    import symmcomm, symmcomm.ops
    symmcomm.ops.register_communicator("tp", comm)   # a name, as process groups have
    ops = symmcomm.ops.register_ops()                # torch.ops.symmcomm (or your namespace)
    y = ops.all_gather(x, "tp")                      # [world * x.shape[0], *x.shape[1:]]
    data, scales, globals_ = ops.quantize_all_gather_nvfp4(x, None, "tp", None)

Conventions (engines' tensors are [tokens, hidden]):
- Gathers concatenate along dim 0; all_gatherv's `counts` are rows (dim-0 entries) per rank;
  all_gatherv_device* take this rank's row count as a device int32 tensor, x with capacity rows,
  and write every rank's count, their prefix and an overflow flag into given int32 tensors
  (symmcomm.all_gatherv_device), so one captured graph serves every count.
  Reduce-scatters split dim 0 into comm-size shards (dim 0 divisible by the size); the v form
  keeps `counts[rank]` rows.
- NVFP4 tensors are three tensors: data (uint8 or float4_e2m1fn_x2, [rows, hidden / 2]),
  block scales (float8_e4m3fn or uint8, [rows, hidden / 16]; swizzled, a flat byte tensor of
  symmcomm.swizzled_scale_bytes(rows, hidden / 16)) and global scales (float32, one per rank
  the tensor holds). FP8 tensors are data (float8_e4m3fn / float8_e5m2) and scales (float32).
- The communicator is named by a string registered with register_communicator, so operators
  carry no Python objects; each operator runs on the current CUDA stream.
- reduce_scatter_nvfp4 / _fp8 sum into bf16 or fp32 (out_dtype); reduce_scatter_nvfp4_q /
  _fp8_q re-quantize the sum into the input's own format (NVFP4: data, linear block scales and
  one global scale computed from the sum; FP8: data and its one scale).
- Functional operators return new tensors; `*_out` operators write into given tensors and
  declare them mutated. all_gatherv_device* leave the output rows past the total count as they
  were (a new tensor's are unspecified, as torch.empty's): read rows below offsets[-1] +
  counts[-1].
- Python implementations give every argument that has a default in the schema the same
  default: the dispatcher drops arguments equal to their default before calling them.
- MoE dispatch and combine by expert (moe_dispatch, moe_combine) run a symmcomm.moe.MoeGroup
  registered by name (register_moe_group); moe_dispatch writes into the group's own tensors
  (moe_buffers) without a copy. python/symmcomm/_moe_ops.py says how.

Implementations. Every operator has a C++ implementation in libsymmcomm_torch.so, built beside
libsymmcomm_c.so where CMake finds a CUDA PyTorch: PyTorch's dispatcher calls it without a
Python frame. Where that library is absent or cannot load, the Python implementations here run
(native_library() says why). Both check the same things with the same texts and give the same
outputs; an invalid argument raises ValueError (symmcomm.LogicError, a ValueError, from Python
implementations), another failure RuntimeError from C++ and symmcomm's own error types from
Python. register_ops(implementation=...) or $SYMMCOMM_TORCH_OPS ("auto", "c++", "python")
chooses; implementation(name) says which runs.

Every operator has a fake implementation computing its output shapes from its inputs' shapes
(symmcomm.shapes' arithmetic), so torch.compile sizes outputs without running anything. The
Python implementations call the package's functions (symmcomm.all_gather, ...): every argument
is checked there or by the library, and errors name it.
"""
import os
import threading
import warnings

import torch

import symmcomm
import symmcomm.shapes
from symmcomm import _core, _moe_ops, _torch_library
from symmcomm._moe_ops import MoeBuffers

__all__ = ["register_communicator", "unregister_communicator", "communicator", "register_ops",
           "implementation", "native_operators", "native_library", "OPS",
           "register_moe_group", "unregister_moe_group", "moe_buffers", "MoeBuffers"]

_comms = {}
_moe_groups = {}  # name -> symmcomm.moe.MoeGroup (the library's), under _comms_lock
_comms_lock = threading.Lock()

_IMPLEMENTATIONS = ("auto", "c++", "python")
_native = None  # _torch_library.Library, made by _native_library() under _comms_lock


def _native_library():
    """libsymmcomm_torch.so, looked for on first use (callers hold _comms_lock). Communicators
    already registered are named to it when it loads."""
    global _native
    if _native is None:
        _native = _torch_library.load()
        for name, (comm, _, _, _) in _comms.items():
            _native.set_communicator(name, comm)
        for name, group in _moe_groups.items():
            _native.set_moe_group(name, group)
    return _native


def native_library():
    """Where the C++ operators come from: {"path", "built_against" (PyTorch's version),
    "operators"} once libsymmcomm_torch.so is loaded, else {"error": why not} (absent where
    CMake found no PyTorch: SYMMCOMM_TORCH_OPS, SYMMCOMM_TORCH_PYTHON)."""
    with _comms_lock:
        n = _native_library()
    if n.lib is None:
        return {"error": n.error}
    return {"path": n.path, "built_against": n.built_against, "operators": sorted(n.operators)}


def native_operators():
    """The names of the operators with a C++ implementation loaded (every operator of OPS; empty
    without the library)."""
    with _comms_lock:
        return _native_library().operators


def register_communicator(name, comm):
    """Makes `comm` (a symmcomm.Communicator) reachable from the operators as `name`, until
    unregister_communicator(name) or comm.release()."""
    if not isinstance(name, str) or not name:
        raise symmcomm.LogicError("name must be a non-empty str, got %r" % (name,))
    if not isinstance(comm, symmcomm.Communicator):
        raise symmcomm.LogicError("comm must be a symmcomm.Communicator, got %s"
                                  % type(comm).__name__)
    rank, size, device, _ = comm.info()
    with _comms_lock:
        if _native is not None:
            _native.set_communicator(name, comm)
        _comms[name] = (comm, rank, size, device)


def unregister_communicator(name):
    """Forgets `name` (the communicator itself is left as it is)."""
    with _comms_lock:
        _comms.pop(name, None)
        if _native is not None:
            _native.remove_communicator(name)


def register_moe_group(name, group):
    """Makes `group` (a symmcomm.moe.MoeGroup on the library's paths, "lsa" or "fallback")
    reachable from moe_dispatch and moe_combine as `name`, until unregister_moe_group(name).
    The group must outlive its registration (destroy it after unregistering)."""
    from symmcomm import moe
    if not isinstance(name, str) or not name:
        raise symmcomm.LogicError("name must be a non-empty str, got %r" % (name,))
    if not isinstance(group, moe.MoeGroup):
        raise symmcomm.LogicError("group must be a symmcomm.moe.MoeGroup, got %s"
                                  % type(group).__name__)
    if group._native is None:
        raise symmcomm.LogicError("group takes path=\"python\", which has no buffers of its "
                                  "own for the operators to write: make it with path=\"auto\"")
    with _comms_lock:
        if _native is not None:
            _native.set_moe_group(name, group)
        _moe_groups[name] = group


def unregister_moe_group(name):
    """Forgets the MoE group `name` (the group itself is left as it is)."""
    with _comms_lock:
        _moe_groups.pop(name, None)
        if _native is not None:
            _native.remove_moe_group(name)


def _forget_moe_group(group):
    """Forgets every name of `group` (MoeGroup.destroy calls this before releasing it)."""
    with _comms_lock:
        for name in [n for n, g in _moe_groups.items() if g is group]:
            del _moe_groups[name]
            if _native is not None:
                _native.remove_moe_group(name)


def _moe_group(name):
    group = _moe_groups.get(name)  # one dict read, as _entry
    if group is None:
        raise symmcomm.LogicError("no MoE group registered as %r (register_moe_group); "
                                  "registered: %s" % (name, ", ".join(sorted(_moe_groups))
                                                      or "none"))
    return group


def _moe_shape(name):
    """(config, bytes of one expert's block scales) of the group registered as `name`."""
    group = _moe_group(name)
    return group.config, _moe_ops.buffers_of(group).block_scales.shape[1]


def moe_buffers(name):
    """The MoeBuffers of the group registered as `name`: its dispatch tensors, which
    moe_dispatch writes without a copy when given them (the same for every dispatch)."""
    return _moe_ops.buffers_of(_moe_group(name))


def _forget(comm):
    """Forgets every name of `comm` (Communicator.release calls this before releasing it)."""
    with _comms_lock:
        for name in [n for n, entry in _comms.items() if entry[0] is comm]:
            del _comms[name]
            if _native is not None:
                _native.remove_communicator(name)


def _entry(group):
    # One dict read, atomic in CPython (and locked inside the dict where the GIL is off): every
    # operator call reads it, so no lock of ours on this path; writers serialise on _comms_lock.
    entry = _comms.get(group)
    if entry is None:
        raise symmcomm.LogicError("no communicator registered as %r (register_communicator); "
                                  "registered: %s" % (group, ", ".join(sorted(_comms)) or "none"))
    return entry


def communicator(group):
    """The communicator registered as `group`."""
    return _entry(group)[0]


def _size(group):
    return _entry(group)[2]


def _rank(group):
    return _entry(group)[1]


def _rows(t, name):
    """Dim 0 of `t` (named `name`), the rows a collective gathers or splits; refused for a 0-d
    tensor with the C++ operators' text."""
    if t.dim() == 0:
        raise symmcomm.LogicError("%s must have at least one dimension (rows), got a 0-d tensor"
                                  % name)
    return t.shape[0]


def _size_arg(value, name, minimum=0):
    """A size or count argument of a fake: an int checked here with the package's text, or a
    symbolic size (torch.SymInt under torch.compile's dynamic shapes) whose bound becomes a guard
    or a run-time assertion through torch._check_value, as PyTorch asks of fakes: never int() of
    it, which would specialise the graph to one value."""
    if not symmcomm.shapes.is_symbolic(value):
        return _core._int_arg(value, name, minimum)
    check = getattr(torch, "_check_value", None)  # PyTorch >= 2.1
    message = lambda: "%s must be >= %d, got %s" % (name, minimum, value)  # noqa: E731
    if check is not None:
        check(value >= minimum, message)
    elif not value >= minimum:  # the guard PyTorch 1.13's symbolic ints take
        raise symmcomm.LogicError(message())
    return value


def _rows_scaled(t, factor, name):
    return (_rows(t, name) * factor,) + tuple(t.shape[1:])


def _row_elements_of(t):
    """Elements per dim-0 row of `t` (its numel / rows; 1 for a 1-D tensor)."""
    n = 1
    for d in t.shape[1:]:
        n *= d
    return n


def _gathered_scales(bs, rows_total, elements_total, row_elements):
    """The receive tensor for gathered block scales: linear [rows_total, *bs.shape[1:]], or
    (row_elements not None) the flat swizzled layout of rows of `row_elements` elements."""
    if row_elements is not None:
        _size_arg(row_elements, "row_elements", 1)
        return bs.new_empty((symmcomm.shapes.swizzled_scale_bytes(
            elements_total // row_elements, row_elements // symmcomm.NVFP4_BLOCK),))
    return bs.new_empty((rows_total,) + tuple(bs.shape[1:]))


# ---- implementations (CUDA) and fakes --------------------------------------------------------
# Each entry: schema, CUDA implementation, fake. Implementations of functional operators
# allocate their outputs and call the package; fakes allocate the same shapes and dtypes.

def _all_gather(x, group):
    out = x.new_empty(_rows_scaled(x, _size(group), "x"))
    symmcomm.all_gather(communicator(group), x.contiguous(), out)
    return out


def _all_gather_fake(x, group):
    return x.new_empty(_rows_scaled(x, _size(group), "x"))


def _all_gather_out(x, out, group):
    symmcomm.all_gather(communicator(group), x.contiguous(), out)


def _nvfp4_gather_outputs(data, bs, gs, size, rows_total, row_elements):
    """Gathered NVFP4 parts of `rows_total` data rows (each 2 x its bytes elements)."""
    elements_total = rows_total * _row_elements_of(data) * 2
    return (data.new_empty((rows_total,) + tuple(data.shape[1:])),
            _gathered_scales(bs, rows_total, elements_total, row_elements),
            gs.new_empty((size,)))


def _all_gather_nvfp4(data, bs, gs, group, row_elements=None):
    size = _size(group)
    outs = _nvfp4_gather_outputs(data, bs, gs, size, _rows(data, "data") * size, row_elements)
    symmcomm.all_gather(communicator(group),
                        symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs),
                        symmcomm.Nvfp4Tensor(*outs), row_elements=row_elements)
    return outs


def _all_gather_nvfp4_fake(data, bs, gs, group, row_elements=None):
    size = _size(group)
    return _nvfp4_gather_outputs(data, bs, gs, size, _rows(data, "data") * size, row_elements)


def _all_gather_nvfp4_out(data, bs, gs, out_data, out_bs, out_gs, group, row_elements=None):
    symmcomm.all_gather(communicator(group),
                        symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs),
                        symmcomm.Nvfp4Tensor(out_data, out_bs, out_gs), row_elements=row_elements)


def _all_gather_fp8(data, scale, group):
    size = _size(group)
    out = (data.new_empty(_rows_scaled(data, size, "data")), scale.new_empty((size,)))
    symmcomm.all_gather(communicator(group), symmcomm.Fp8Tensor(data.contiguous(), scale),
                        symmcomm.Fp8Tensor(*out))
    return out


def _all_gather_fp8_fake(data, scale, group):
    size = _size(group)
    return data.new_empty(_rows_scaled(data, size, "data")), scale.new_empty((size,))


def _counts_elements(counts, per_row, group):
    """A v-collective's row counts as the element counts the package takes, checked as it
    checks them (one per rank, none negative) before any output is allocated; symbolic counts
    and row lengths (dynamic shapes) stay symbolic."""
    size = _size(group)
    if not isinstance(counts, (list, tuple)):
        raise symmcomm.LogicError("counts must be a list of comm.size (%d) ints, got %r"
                                  % (size, counts))
    elements = [c * per_row for c in counts]
    if len(elements) != size:
        raise symmcomm.LogicError("counts must be a list of comm.size (%d) ints, got [%s]"
                                  % (size, ", ".join(str(e) for e in elements)))
    return [_size_arg(e, "counts[%d]" % i) for i, e in enumerate(elements)]


def _all_gatherv_fake(x, counts, group):
    _size(group)
    _rows(x, "x")
    _counts_elements(counts, _row_elements_of(x), group)
    return x.new_empty((sum(counts),) + tuple(x.shape[1:]))


def _all_gatherv(x, counts, group):
    out = _all_gatherv_fake(x, counts, group)
    symmcomm.all_gatherv(communicator(group), x.contiguous(), out,
                         _counts_elements(counts, _row_elements_of(x), group))
    return out


def _all_gatherv_nvfp4(data, bs, gs, counts, group, row_elements=None):
    size = _size(group)
    _rows(data, "data")
    elements = _counts_elements(counts, _row_elements_of(data) * 2, group)
    outs = _nvfp4_gather_outputs(data, bs, gs, size, sum(counts), row_elements)
    symmcomm.all_gatherv(communicator(group),
                         symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs),
                         symmcomm.Nvfp4Tensor(*outs), elements, row_elements=row_elements)
    return outs


def _all_gatherv_nvfp4_fake(data, bs, gs, counts, group, row_elements=None):
    _size(group)
    _rows(data, "data")
    _counts_elements(counts, _row_elements_of(data) * 2, group)
    return _nvfp4_gather_outputs(data, bs, gs, _size(group), sum(counts), row_elements)


def _shard_shape(t, group, name):
    size = _size(group)
    rows = _rows(t, name)
    torch._check(rows % size == 0,
                 lambda: "dim 0 (%s) is not divisible by the communicator's size %d"
                 % (rows, size))
    return (rows // size,) + tuple(t.shape[1:])


def _reduce_scatter(x, group):
    out = x.new_empty(_shard_shape(x, group, "x"))
    symmcomm.reduce_scatter(communicator(group), x.contiguous(), out)
    return out


def _reduce_scatter_fake(x, group):
    return x.new_empty(_shard_shape(x, group, "x"))


def _reduce_scatter_out(x, out, group):
    symmcomm.reduce_scatter(communicator(group), x.contiguous(), out)


def _nvfp4_sum_shape(data, group):
    """The shard of the logical [rows, hidden] tensor whose data is [rows, hidden / 2] (1-D
    data: n / 2 bytes, n elements)."""
    size = _size(group)
    rows = _rows(data, "data")
    torch._check(rows % size == 0,
                 lambda: "data's dim 0 (%s) is not divisible by the communicator's size %d"
                 % (rows, size))
    if data.dim() == 1:
        return (rows * 2 // size,)
    return (rows // size,) + tuple(data.shape[1:-1]) + (data.shape[-1] * 2,)


def _reduce_scatter_nvfp4(data, bs, gs, group, out_dtype):
    out = data.new_empty(_nvfp4_sum_shape(data, group), dtype=out_dtype)
    symmcomm.reduce_scatter(communicator(group),
                            symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs), out)
    return out


def _reduce_scatter_nvfp4_fake(data, bs, gs, group, out_dtype):
    return data.new_empty(_nvfp4_sum_shape(data, group), dtype=out_dtype)


def _reduce_scatter_fp8(data, scale, group, out_dtype):
    out = data.new_empty(_shard_shape(data, group, "data"), dtype=out_dtype)
    symmcomm.reduce_scatter(communicator(group), symmcomm.Fp8Tensor(data.contiguous(), scale),
                            out)
    return out


def _reduce_scatter_fp8_fake(data, scale, group, out_dtype):
    return data.new_empty(_shard_shape(data, group, "data"), dtype=out_dtype)


def _reduce_scatter_nvfp4_q(data, bs, gs, group):
    outs = _reduce_scatter_nvfp4_q_fake(data, bs, gs, group)
    symmcomm.reduce_scatter(communicator(group),
                            symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs),
                            symmcomm.Nvfp4Tensor(*outs))
    return outs


def _reduce_scatter_nvfp4_q_fake(data, bs, gs, group):
    _size(group)
    _rows(data, "data")
    _rows(bs, "block_scales")  # both before either's divisibility, as the C++ operator checks
    return (data.new_empty(_shard_shape(data, group, "data")),
            bs.new_empty(_shard_shape(bs, group, "block_scales")), gs.new_empty((1,)))


def _reduce_scatter_fp8_q(data, scale, group):
    outs = _reduce_scatter_fp8_q_fake(data, scale, group)
    symmcomm.reduce_scatter(communicator(group), symmcomm.Fp8Tensor(data.contiguous(), scale),
                            symmcomm.Fp8Tensor(*outs))
    return outs


def _reduce_scatter_fp8_q_fake(data, scale, group):
    return data.new_empty(_shard_shape(data, group, "data")), scale.new_empty((1,))


def _v_shard_shape(x, counts, group):
    rank = _rank(group)
    _rows(x, "x")
    if len(counts) <= rank:
        raise symmcomm.LogicError("counts has %d entries; rank %d needs its own"
                                  % (len(counts), rank))
    return (counts[rank],) + tuple(x.shape[1:])  # checked with the others before allocating


def _reduce_scatterv(x, counts, group):
    shape = _v_shard_shape(x, counts, group)
    elements = _counts_elements(counts, _row_elements_of(x), group)
    out = x.new_empty(shape)
    symmcomm.reduce_scatterv(communicator(group), x.contiguous(), out, elements)
    return out


def _reduce_scatterv_fake(x, counts, group):
    shape = _v_shard_shape(x, counts, group)
    _counts_elements(counts, _row_elements_of(x), group)
    return x.new_empty(shape)


def _quantize_nvfp4_shapes(x):
    _rows(x, "x")
    if x.dim() > 1:
        return ((tuple(x.shape[:-1]) + (x.shape[-1] // 2,)),
                (tuple(x.shape[:-1]) + (x.shape[-1] // symmcomm.NVFP4_BLOCK,)))
    return (x.shape[0] // 2,), (x.shape[0] // symmcomm.NVFP4_BLOCK,)


def _quantize_nvfp4_fake(x, global_scale):
    d, s = _quantize_nvfp4_shapes(x)
    return (x.new_empty(d, dtype=torch.uint8), x.new_empty(s, dtype=torch.float8_e4m3fn),
            x.new_empty((1,), dtype=torch.float32))


def _quantize_nvfp4(x, global_scale):
    data, bs, gs = _quantize_nvfp4_fake(x, global_scale)
    if global_scale is not None:
        gs.copy_(global_scale.reshape(1))
    symmcomm.quantize_nvfp4(x.contiguous(), symmcomm.Nvfp4Tensor(data, bs, gs),
                            compute_scale=global_scale is None)
    return data, bs, gs


def _quantize_all_gather_nvfp4_fake(x, scale, group, row_elements=None):
    size = _size(group)
    d, s = _quantize_nvfp4_shapes(x)
    data = x.new_empty((d[0] * size,) + tuple(d[1:]), dtype=torch.uint8)
    if row_elements is None:
        bs = x.new_empty((s[0] * size,) + tuple(s[1:]), dtype=torch.float8_e4m3fn)
    else:
        _size_arg(row_elements, "row_elements", 1)
        bs = x.new_empty((symmcomm.shapes.swizzled_scale_bytes(
            x.numel() * size // row_elements, row_elements // symmcomm.NVFP4_BLOCK),),
            dtype=torch.uint8)
    return data, bs, x.new_empty((size,), dtype=torch.float32)


def _quantize_all_gather_nvfp4(x, scale, group, row_elements=None):
    outs = _quantize_all_gather_nvfp4_fake(x, scale, group, row_elements)
    symmcomm.quantize_all_gather(communicator(group), x.contiguous(), symmcomm.Nvfp4Tensor(*outs),
                                 scale=scale, row_elements=row_elements)
    return outs


def _dequantize_nvfp4_fake(data, bs, gs):
    _rows(data, "data")
    if data.dim() > 1:
        return data.new_empty(tuple(data.shape[:-1]) + (data.shape[-1] * 2,),
                              dtype=torch.bfloat16)
    return data.new_empty((data.shape[0] * 2,), dtype=torch.bfloat16)


def _dequantize_nvfp4(data, bs, gs):
    out = _dequantize_nvfp4_fake(data, bs, gs)
    symmcomm.dequantize_nvfp4(symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs), out)
    return out


def _device_counts_t(count, counts, offsets, overflow):
    return symmcomm.DeviceCounts(count, counts, offsets, overflow)


def _all_gatherv_device_fake(x, count, counts, offsets, overflow, group):
    return x.new_empty(_rows_scaled(x, _size(group), "x"))


def _all_gatherv_device(x, count, counts, offsets, overflow, group):
    out = _all_gatherv_device_fake(x, count, counts, offsets, overflow, group)
    symmcomm.all_gatherv_device(communicator(group), x.contiguous(), out,
                                _device_counts_t(count, counts, offsets, overflow),
                                max(1, _row_elements_of(x)))
    return out


def _all_gatherv_device_nvfp4_fake(data, bs, gs, count, counts, offsets, overflow, group,
                                   swizzled_scales=False):
    size = _size(group)
    rows = _rows(data, "data") * size
    row_elements = _size_arg(_row_elements_of(data) * 2, "row_elements", 1)  # rows of none
    scales = (_gathered_scales(bs, rows, rows * row_elements, row_elements) if swizzled_scales
              else bs.new_empty(_rows_scaled(bs, size, "block_scales")))
    return data.new_empty(_rows_scaled(data, size, "data")), scales, gs.new_empty((size,))


def _all_gatherv_device_nvfp4(data, bs, gs, count, counts, offsets, overflow, group,
                              swizzled_scales=False):
    outs = _all_gatherv_device_nvfp4_fake(data, bs, gs, count, counts, offsets, overflow, group,
                                          swizzled_scales)
    symmcomm.all_gatherv_device(communicator(group),
                                symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs),
                                symmcomm.Nvfp4Tensor(*outs),
                                _device_counts_t(count, counts, offsets, overflow),
                                _row_elements_of(data) * 2, swizzled_scales=swizzled_scales)
    return outs


def _reduce_scatterv_device_fake(x, count, counts, offsets, overflow, group):
    return x.new_empty(_shard_shape(x, group, "x"))


def _reduce_scatterv_device(x, count, counts, offsets, overflow, group):
    out = _reduce_scatterv_device_fake(x, count, counts, offsets, overflow, group)
    symmcomm.reduce_scatterv_device(communicator(group), x.contiguous(), out,
                                    _device_counts_t(count, counts, offsets, overflow),
                                    max(1, _row_elements_of(x)))
    return out


def _reduce_scatterv_device_nvfp4_fake(data, bs, gs, count, counts, offsets, overflow, group):
    return data.new_empty(_nvfp4_sum_shape(data, group), dtype=torch.bfloat16)


def _reduce_scatterv_device_nvfp4(data, bs, gs, count, counts, offsets, overflow, group):
    out = _reduce_scatterv_device_nvfp4_fake(data, bs, gs, count, counts, offsets, overflow, group)
    symmcomm.reduce_scatterv_device(communicator(group),
                                    symmcomm.Nvfp4Tensor(data.contiguous(), bs.contiguous(), gs),
                                    out, _device_counts_t(count, counts, offsets, overflow),
                                    _row_elements_of(data) * 2)
    return out


def _moe_dispatch(x, block_scales, global_scale, topk_idx, topk_weights, num_tokens, out_data,
                  out_block_scales, out_expert_count, out_global_scale, out_overflow, out_error,
                  group):
    _moe_ops.dispatch(_moe_group(group), x, block_scales, global_scale, topk_idx, topk_weights,
                      num_tokens, (out_data, out_block_scales, out_expert_count,
                                   out_global_scale, out_overflow, out_error))


def _moe_dispatch_fake(x, block_scales, global_scale, topk_idx, topk_weights, num_tokens,
                       out_data, out_block_scales, out_expert_count, out_global_scale,
                       out_overflow, out_error, group):
    config, scale_bytes = _moe_shape(group)
    _moe_ops.dispatch_fake(config, scale_bytes, x, block_scales, global_scale, topk_idx,
                           topk_weights, num_tokens, (out_data, out_block_scales,
                                                      out_expert_count, out_global_scale,
                                                      out_overflow, out_error))


def _moe_combine(expert_out, expert_count, num_rows, group):
    return _moe_ops.combine(_moe_group(group), expert_out, expert_count, num_rows)


def _moe_combine_fake(expert_out, expert_count, num_rows, group):
    return _moe_ops.combine_fake(_moe_shape(group)[0], expert_out, expert_count, num_rows)


_MOE_OUTS = ("out_data", "out_block_scales", "out_expert_count", "out_global_scale",
             "out_overflow", "out_error")

#: name -> (schema after the name, CUDA implementation, fake, mutated argument names)
OPS = {
    "all_gather": ("(Tensor x, str group) -> Tensor", _all_gather, _all_gather_fake, ()),
    "all_gather_out": ("(Tensor x, Tensor(a!) out, str group) -> ()", _all_gather_out,
                       lambda x, out, group: None, ("out",)),
    "all_gather_nvfp4": ("(Tensor data, Tensor block_scales, Tensor global_scale, str group, "
                         "SymInt? row_elements=None) -> (Tensor, Tensor, Tensor)",
                         _all_gather_nvfp4, _all_gather_nvfp4_fake, ()),
    "all_gather_nvfp4_out": ("(Tensor data, Tensor block_scales, Tensor global_scale, "
                             "Tensor(a!) out_data, Tensor(b!) out_block_scales, "
                             "Tensor(c!) out_global_scale, str group, SymInt? row_elements=None) "
                             "-> ()", _all_gather_nvfp4_out,
                             lambda *a: None,
                             ("out_data", "out_block_scales", "out_global_scale")),
    "all_gather_fp8": ("(Tensor data, Tensor scale, str group) -> (Tensor, Tensor)",
                       _all_gather_fp8, _all_gather_fp8_fake, ()),
    "all_gatherv": ("(Tensor x, SymInt[] counts, str group) -> Tensor", _all_gatherv,
                    _all_gatherv_fake, ()),
    "all_gatherv_nvfp4": ("(Tensor data, Tensor block_scales, Tensor global_scale, "
                          "SymInt[] counts, str group, SymInt? row_elements=None) -> "
                          "(Tensor, Tensor, Tensor)",
                          _all_gatherv_nvfp4, _all_gatherv_nvfp4_fake, ()),
    "all_gatherv_device": ("(Tensor x, Tensor count, Tensor(a!) counts, Tensor(b!) offsets, "
                           "Tensor(c!) overflow, str group) -> Tensor", _all_gatherv_device,
                           _all_gatherv_device_fake, ("counts", "offsets", "overflow")),
    "all_gatherv_device_nvfp4": ("(Tensor data, Tensor block_scales, Tensor global_scale, "
                                 "Tensor count, Tensor(a!) counts, Tensor(b!) offsets, "
                                 "Tensor(c!) overflow, str group, bool swizzled_scales=False) "
                                 "-> (Tensor, Tensor, Tensor)",
                                 _all_gatherv_device_nvfp4, _all_gatherv_device_nvfp4_fake,
                                 ("counts", "offsets", "overflow")),
    "reduce_scatterv_device": ("(Tensor x, Tensor count, Tensor(a!) counts, Tensor(b!) offsets, "
                               "Tensor(c!) overflow, str group) -> Tensor",
                               _reduce_scatterv_device, _reduce_scatterv_device_fake,
                               ("counts", "offsets", "overflow")),
    "reduce_scatterv_device_nvfp4": ("(Tensor data, Tensor block_scales, Tensor global_scale, "
                                     "Tensor count, Tensor(a!) counts, Tensor(b!) offsets, "
                                     "Tensor(c!) overflow, str group) -> Tensor",
                                     _reduce_scatterv_device_nvfp4,
                                     _reduce_scatterv_device_nvfp4_fake,
                                     ("counts", "offsets", "overflow")),
    "reduce_scatter": ("(Tensor x, str group) -> Tensor", _reduce_scatter, _reduce_scatter_fake,
                       ()),
    "reduce_scatter_out": ("(Tensor x, Tensor(a!) out, str group) -> ()", _reduce_scatter_out,
                           lambda x, out, group: None, ("out",)),
    "reduce_scatter_nvfp4": ("(Tensor data, Tensor block_scales, Tensor global_scale, str group, "
                             "ScalarType out_dtype) -> Tensor", _reduce_scatter_nvfp4,
                             _reduce_scatter_nvfp4_fake, ()),
    "reduce_scatter_fp8": ("(Tensor data, Tensor scale, str group, ScalarType out_dtype) -> "
                           "Tensor", _reduce_scatter_fp8, _reduce_scatter_fp8_fake, ()),
    "reduce_scatter_nvfp4_q": ("(Tensor data, Tensor block_scales, Tensor global_scale, "
                               "str group) -> (Tensor, Tensor, Tensor)",
                               _reduce_scatter_nvfp4_q, _reduce_scatter_nvfp4_q_fake, ()),
    "reduce_scatter_fp8_q": ("(Tensor data, Tensor scale, str group) -> (Tensor, Tensor)",
                             _reduce_scatter_fp8_q, _reduce_scatter_fp8_q_fake, ()),
    "reduce_scatterv": ("(Tensor x, SymInt[] counts, str group) -> Tensor", _reduce_scatterv,
                        _reduce_scatterv_fake, ()),
    "quantize_all_gather_nvfp4": ("(Tensor x, Tensor? scale, str group, SymInt? row_elements=None) "
                                  "-> (Tensor, Tensor, Tensor)", _quantize_all_gather_nvfp4,
                                  _quantize_all_gather_nvfp4_fake, ()),
    "quantize_nvfp4": ("(Tensor x, Tensor? global_scale) -> (Tensor, Tensor, Tensor)",
                       _quantize_nvfp4, _quantize_nvfp4_fake, ()),
    "dequantize_nvfp4": ("(Tensor data, Tensor block_scales, Tensor global_scale) -> Tensor",
                         _dequantize_nvfp4, _dequantize_nvfp4_fake, ()),
    "moe_dispatch": ("(Tensor x, Tensor? block_scales, Tensor? global_scale, Tensor topk_idx, "
                     "Tensor topk_weights, Tensor? num_tokens, Tensor(a!) out_data, "
                     "Tensor(b!) out_block_scales, Tensor(c!) out_expert_count, "
                     "Tensor(d!) out_global_scale, Tensor(e!) out_overflow, "
                     "Tensor(f!) out_error, str group) -> ()",
                     _moe_dispatch, _moe_dispatch_fake, _MOE_OUTS),
    "moe_combine": ("(Tensor expert_out, Tensor expert_count, SymInt num_rows, str group) -> "
                    "Tensor", _moe_combine, _moe_combine_fake, ()),
}

_libraries = {}  # namespace -> (torch.library.Library, {operator: "c++" or "python"})
_libraries_lock = threading.Lock()


def _implementation_arg(implementation):
    if implementation is None:
        implementation = os.environ.get("SYMMCOMM_TORCH_OPS") or "auto"
        where = "$SYMMCOMM_TORCH_OPS"
    else:
        where = "implementation"
    if implementation not in _IMPLEMENTATIONS:
        raise symmcomm.LogicError("%s must be one of %s, got %r"
                                  % (where, ", ".join(_IMPLEMENTATIONS), implementation))
    return implementation


def register_ops(namespace="symmcomm", implementation=None):
    """Defines every operator of OPS in `namespace` (once per namespace; later calls return the
    same) and returns torch.ops.<namespace>. Implementations are on the CUDA dispatch key (the
    low-overhead route vLLM takes) with a fake for each. `implementation`: "auto" (the C++ ones
    where libsymmcomm_torch.so is loaded, Python for the rest; the default, or
    $SYMMCOMM_TORCH_OPS), "c++" (the same, but an absent or unusable library raises) or
    "python" (Python for every operator)."""
    explicit = implementation is not None
    implementation = _implementation_arg(implementation)
    with _libraries_lock:
        if namespace in _libraries:
            has = set(_libraries[namespace][1].values())
            if explicit and ((implementation == "python" and "c++" in has)
                             or (implementation == "c++" and "c++" not in has)):
                raise symmcomm.LogicError(
                    "namespace %r already has %s operators; register implementation=%r in "
                    "another namespace" % (namespace, " and ".join(sorted(has)), implementation))
            return getattr(torch.ops, namespace)
        native = None
        if implementation != "python":
            with _comms_lock:
                native = _native_library()
            if native.lib is None:
                if implementation == "c++":
                    raise symmcomm.LogicError("register_ops(%r, implementation='c++'): %s"
                                              % (namespace, native.error))
                native = None
        lib = torch.library.Library(namespace, "FRAGMENT")
        chosen = {}
        for name, (schema, impl, fake, _) in OPS.items():
            lib.define(name + schema)
            torch.library.register_fake("%s::%s" % (namespace, name), fake, lib=lib)
            chosen[name] = "c++" if native is not None and name in native.operators else "python"
        if native is not None:
            why = native.register(namespace)
            if why is not None:
                if implementation == "c++":
                    raise symmcomm.LogicError("register_ops(%r): %s refused: %s"
                                              % (namespace, native.path, why))
                warnings.warn("symmcomm.ops: the C++ operators of %s were not registered (%s); "
                              "using the Python ones" % (native.path, why), RuntimeWarning)
                chosen = dict.fromkeys(chosen, "python")
        for name, (_, impl, _, _) in OPS.items():
            if chosen[name] == "python":
                lib.impl(name, impl, "CUDA")
        _libraries[namespace] = (lib, chosen)
    return getattr(torch.ops, namespace)


def implementation(name, namespace="symmcomm"):
    """Which implementation of operator `name` runs in `namespace`: "c++" or "python"."""
    with _libraries_lock:
        entry = _libraries.get(namespace)
    if entry is None:
        raise symmcomm.LogicError("no operators registered in namespace %r (register_ops)"
                                  % (namespace,))
    if name not in entry[1]:
        raise symmcomm.LogicError("no operator %r; operators: %s"
                                  % (name, ", ".join(sorted(entry[1]))))
    return entry[1][name]
