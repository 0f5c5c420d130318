"""symmcomm.moe.MoeGroup's dispatch and combine as PyTorch operators (private: symmcomm.ops
defines them with the other operators and registers the groups by name).

    group = symmcomm.moe.MoeGroup(comm, config)             # the library's group, collective
    symmcomm.ops.register_moe_group("layer0", group)
    ops = symmcomm.ops.register_ops()
    d = symmcomm.ops.moe_buffers("layer0")                  # the group's own tensors
    ops.moe_dispatch(x, None, scale, topk_idx, topk_weights, None, *d, "layer0")
    y = expert_gemm(d.data, d.block_scales, d.expert_count, d.global_scale)
    out = ops.moe_combine(y, d.expert_count, x.shape[0], "layer0")   # [tokens, hidden] bf16

moe_dispatch(x, block_scales, global_scale, topk_idx, topk_weights, num_tokens, out_data,
out_block_scales, out_expert_count, out_global_scale, out_overflow, out_error, group) -> ():
x bf16 [rows, hidden] (quantized in the dispatch with `global_scale`, the layer's static NVFP4
scale; None on the fp8e4m3 wire, quantized per 128-element block, and on a bf16 wire) or NVFP4 data [rows, hidden / 2] with `block_scales`
[rows, hidden / 16] and its `global_scale` [1]; topk_idx int32 and topk_weights float32
[rows, top_k]; num_tokens int32 [1] on the device, or None: all `rows` are tokens. `rows` may be
anything up to the group's max_tokens_per_rank, a symbolic size under torch.compile (rows past it
are padded on the device: no pair). The dispatch's tensors are written into the six `out_`
tensors (MoeBuffers' shapes and dtypes, declared mutated): where they are the group's own
(moe_buffers) nothing is copied; other tensors (what a functionalised graph may pass) get a copy.

moe_combine(expert_out, expert_count, num_rows, group) -> [num_rows, hidden] bf16: each token's
top-k expert outputs (expert_out bf16 or float32 [L, capacity, hidden]) weighted, summed in fp32
and rounded once; `expert_count` is the dispatch's (it orders the combine after the dispatch in a
graph); num_rows the dispatch's rows (rows past its num_tokens are unspecified).

The group is the library's (path "lsa" or "fallback"): its buffers are what the operators
return, so path="python" groups are refused at registration.
"""
import collections

import torch

import symmcomm

#: A registered group's dispatch tensors, views of its buffers (the same for every dispatch):
#: data uint8 [L, capacity, hidden / 2] (uint8 [L, capacity, hidden] e4m3 codes on an fp8e4m3
#: wire, bf16 [L, capacity, hidden] on a bf16 wire), block_scales uint8 [L, expert scale bytes]
#: (symmcomm.moe.fp8_scales views an fp8e4m3 wire's as float32; uint8 [L, 0] on a bf16 wire), expert_count int32
#: [L], global_scale float32 [1], overflow int32 [1], error int32 [1].
MoeBuffers = collections.namedtuple(
    "MoeBuffers", ["data", "block_scales", "expert_count", "global_scale", "overflow", "error"])


def buffers_of(group):
    """The MoeBuffers of a library group (symmcomm.moe.MoeGroup on path "lsa" or "fallback")."""
    n = group._native
    L = group.config.local_experts
    scales = n.block_scales if n.block_scales is not None else \
        torch.empty(L, 0, dtype=torch.uint8, device=n.expert_count.device)
    return MoeBuffers(n.data, scales, n.expert_count, n.global_scale, n.overflow, n.error)


def _fail(text):
    raise symmcomm.LogicError(text)


def _shape(t):
    return list(t.shape)


def _expect(t, name, shape, dtypes):
    """`t` (named `name`) has `shape` (ints or symbolic sizes; a symbolic one becomes a guard)
    and one of `dtypes`; the C++ operators' texts."""
    if t.dim() != len(shape) or not all(
            symmcomm.shapes.is_symbolic(a) or symmcomm.shapes.is_symbolic(b) or a == b
            for a, b in zip(t.shape, shape)):
        _fail("%s has shape %s; expected %s" % (name, _shape(t), list(shape)))
    for a, b in zip(t.shape, shape):
        if symmcomm.shapes.is_symbolic(a) or symmcomm.shapes.is_symbolic(b):
            torch._check(a == b, lambda: "%s has shape %s; expected %s"
                         % (name, _shape(t), list(shape)))
    if str(t.dtype).replace("torch.", "") not in dtypes:
        _fail("%s has dtype %s; expected %s" % (name, str(t.dtype).replace("torch.", ""),
                                                 " or ".join(dtypes)))


_DATA = ("float4_e2m1fn_x2", "uint8", "int8")
_SCALES = ("float8_e4m3fn", "uint8", "int8")


def check_tokens(config, x, block_scales, global_scale, topk_idx, topk_weights, num_tokens):
    """The dispatch's inputs against the group's shape; the rows of x (at most
    max_tokens_per_rank, symbolic under dynamic shapes)."""
    if x.dim() != 2:
        _fail("x must be 2-D (tokens, hidden; NVFP4 data: hidden / 2 bytes), got shape %s"
              % _shape(x))
    rows, T, H = x.shape[0], config.max_tokens_per_rank, config.hidden
    if symmcomm.shapes.is_symbolic(rows):
        torch._check(rows <= T, lambda: "x has %s rows; the group takes at most "
                     "max_tokens_per_rank = %d" % (rows, T))
    elif rows > T:
        _fail("x has %d rows; the group takes at most max_tokens_per_rank = %d" % (rows, T))
    if block_scales is not None:
        if config.wire != "nvfp4":
            _fail("x is NVFP4 (block_scales given) but the group's wire is %s: pass bf16 tokens"
                  % config.wire)
        _expect(x, "x", (rows, H // 2), _DATA)
        _expect(block_scales, "block_scales", (rows, H // 16), _SCALES)
        if global_scale is None:
            _fail("global_scale: NVFP4 x needs its global scale")
        _expect(global_scale, "global_scale", (1,), ("float32",))
    else:
        _expect(x, "x", (rows, H), ("bfloat16",))
        if config.wire != "nvfp4":
            if global_scale is not None:
                _fail("global_scale must be None on a %s wire" % config.wire)
        elif global_scale is None:
            _fail("global_scale: bf16 x is quantized in the dispatch with the layer's static "
                  "NVFP4 scale; pass it (float32 [1])")
        else:
            _expect(global_scale, "global_scale", (1,), ("float32",))
    _expect(topk_idx, "topk_idx", (rows, config.top_k), ("int32",))
    _expect(topk_weights, "topk_weights", (rows, config.top_k), ("float32",))
    if num_tokens is not None:
        _expect(num_tokens, "num_tokens", (1,), ("int32",))
    return rows


def check_outputs(config, scale_bytes, outs):
    """The six output tensors against the group's buffers' shapes."""
    L, cap, H = config.local_experts, config.capacity, config.hidden
    if config.wire == "bf16":
        _expect(outs[0], "out_data", (L, cap, H), ("bfloat16",))
        _expect(outs[1], "out_block_scales", (L, 0), _SCALES)
    elif config.wire == "fp8e4m3":
        _expect(outs[0], "out_data", (L, cap, H), _SCALES)
        _expect(outs[1], "out_block_scales", (L, scale_bytes), _SCALES)
    else:
        _expect(outs[0], "out_data", (L, cap, H // 2), _DATA)
        _expect(outs[1], "out_block_scales", (L, scale_bytes), _SCALES)
    for t, name, dtype, shape in ((outs[2], "out_expert_count", "int32", (L,)),
                                  (outs[3], "out_global_scale", "float32", (1,)),
                                  (outs[4], "out_overflow", "int32", (1,)),
                                  (outs[5], "out_error", "int32", (1,))):
        _expect(t, name, shape, (dtype,))


def _padded(t, rows, fill):
    """`t` as `rows` rows, the rest `fill` (t itself when it has them all)."""
    if t.shape[0] == rows:
        return t
    full = t.new_full((rows,) + tuple(t.shape[1:]), fill)
    full[:t.shape[0]].copy_(t)
    return full


def dispatch(group, x, block_scales, global_scale, topk_idx, topk_weights, num_tokens, outs):
    """moe_dispatch's Python implementation on the library group `group`."""
    c = group.config
    rows = check_tokens(c, x, block_scales, global_scale, topk_idx, topk_weights, num_tokens)
    mine = buffers_of(group)
    check_outputs(c, mine.block_scales.shape[1], outs)
    T = c.max_tokens_per_rank
    if num_tokens is None:
        num_tokens = torch.full((1,), rows, dtype=torch.int32, device=x.device)
    idx, weights = _padded(topk_idx, T, -1), _padded(topk_weights, T, 0.0)
    if block_scales is not None:  # padded as bytes: float8 and float4 fill only on newer PyTorch
        tokens = symmcomm.Nvfp4Tensor(_padded(x.view(torch.uint8), T, 0),
                                      _padded(block_scales.view(torch.uint8), T, 0), global_scale)
    else:
        tokens = _padded(x, T, 0.0)
    group._native.dispatch(tokens, global_scale, idx, weights, num_tokens, None)
    for out, own in zip(outs, mine):
        if out.numel() and out.data_ptr() != own.data_ptr():
            out.copy_(own.view(out.dtype) if own.dtype != out.dtype else own)


def dispatch_fake(config, scale_bytes, x, block_scales, global_scale, topk_idx, topk_weights,
                  num_tokens, outs):
    check_tokens(config, x, block_scales, global_scale, topk_idx, topk_weights, num_tokens)
    check_outputs(config, scale_bytes, outs)


def combine_fake(config, expert_out, expert_count, num_rows):
    """[num_rows, hidden] bf16, the arguments checked."""
    L, T = config.local_experts, config.max_tokens_per_rank
    _expect(expert_out, "expert_out", (L, config.capacity, config.hidden),
            ("bfloat16", "float32"))
    _expect(expert_count, "expert_count", (L,), ("int32",))
    if symmcomm.shapes.is_symbolic(num_rows):
        torch._check(num_rows >= 0, lambda: "num_rows must be >= 0, got %s" % num_rows)
        torch._check(num_rows <= T, lambda: "num_rows must be in 0..max_tokens_per_rank (%d), "
                     "got %s" % (T, num_rows))
    elif not isinstance(num_rows, int) or isinstance(num_rows, bool) or \
            not 0 <= num_rows <= T:
        _fail("num_rows must be in 0..max_tokens_per_rank (%d), got %r" % (T, num_rows))
    return expert_out.new_empty((num_rows, config.hidden), dtype=torch.bfloat16)


def combine(group, expert_out, expert_count, num_rows):
    """moe_combine's Python implementation on the library group `group`."""
    c = group.config
    combine_fake(c, expert_out, expert_count, num_rows)
    out = torch.empty(c.max_tokens_per_rank, c.hidden, dtype=torch.bfloat16,
                      device=expert_out.device)
    group._native.combine(expert_out.to(torch.bfloat16).contiguous(), out, None)
    return out if num_rows == c.max_tokens_per_rank else out[:num_rows]
