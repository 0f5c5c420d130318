"""Output shapes of symmcomm's collectives and codecs, computed from input shapes alone: what a
fake (meta) implementation of each operation returns, so that torch.compile can size outputs
without running anything. Plain Python: no library call, no PyTorch, no GPU.

Conventions are the package's (see symmcomm.Nvfp4Tensor / Fp8Tensor): element counts are of
the logical tensor; an NVFP4 tensor is (data: count/2 bytes, block_scales: count/16 codes, or
the swizzled 128 x 4 layout of rows of `row_elements` when asked, global_scale: one float per
rank it holds); an FP8 tensor is (data: count codes, scale: one float per rank). Each function
returns a dict of part name -> (shape tuple, dtype name) and raises ValueError naming the
argument and value for inputs no call would accept.
"""

NVFP4_BLOCK = 16
_KINDS = ("bf16", "fp32", "fp8", "nvfp4")


#: The class names of PyTorch's symbolic ints: torch.SymInt (2.x), torch.SymIntNode (1.13).
_SYMBOLIC_INTS = ("SymInt", "SymIntNode")


def is_symbolic(value):
    """True for a symbolic size (torch.SymInt under torch.compile's dynamic shapes; SymIntNode
    in PyTorch 1.13): its value is unknown while tracing; the real call checks it."""
    return type(value).__name__ in _SYMBOLIC_INTS


def _positive(value, name, multiple=1):
    if is_symbolic(value):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("%s must be a non-negative int, got %r" % (name, value))
    if multiple > 1 and value % multiple:
        raise ValueError("%s %d is not a multiple of %d" % (name, value, multiple))
    return value


def _kind(kind, name="kind"):
    if kind not in _KINDS:
        raise ValueError("%s must be one of %s, got %r" % (name, ", ".join(_KINDS), kind))
    return kind


def swizzled_scale_bytes(rows, scale_cols):
    """Bytes of the swizzled (128 x 4 tile) block scales of a [rows, scale_cols] matrix,
    padding included (symmcomm.swizzled_scale_bytes, without the library)."""
    _positive(rows, "rows")
    _positive(scale_cols, "scale_cols")
    return (rows + 127) // 128 * 128 * ((scale_cols + 3) // 4 * 4)


def tensor_parts(kind, count, ranks=1, row_elements=None):
    """The parts of a `kind` tensor of `count` elements holding `ranks` ranks' scales; NVFP4
    with `row_elements`: block scales in the swizzled layout (count whole rows)."""
    _kind(kind)
    _positive(ranks, "ranks")
    if kind == "bf16":
        return {"data": ((_positive(count, "count"),), "bfloat16")}
    if kind == "fp32":
        return {"data": ((_positive(count, "count"),), "float32")}
    if kind == "fp8":
        return {"data": ((_positive(count, "count"),), "float8"), "scale": ((ranks,), "float32")}
    _positive(count, "count", NVFP4_BLOCK)
    if row_elements is None:
        scales = count // NVFP4_BLOCK
    else:
        _positive(row_elements, "row_elements", NVFP4_BLOCK)
        if not (is_symbolic(count) or is_symbolic(row_elements)) and (
                row_elements == 0 or count % row_elements):
            raise ValueError("count %d is not whole rows of row_elements %d" % (count, row_elements))
        scales = swizzled_scale_bytes(count // row_elements, row_elements // NVFP4_BLOCK)
    return {"data": ((count // 2,), "uint8"), "block_scales": ((scales,), "float8_e4m3fn"),
            "global_scale": ((ranks,), "float32")}


def all_gather(kind, count_per_rank, ranks, row_elements=None):
    """recv of all_gather: `ranks` parts of `count_per_rank` elements, one scale per rank."""
    _positive(ranks, "ranks")
    return tensor_parts(kind, _positive(count_per_rank, "count_per_rank") * ranks, ranks,
                        row_elements)


def all_gatherv(kind, counts, row_elements=None):
    """recv of all_gatherv: sum(counts) elements, one scale per rank (every count whole rows
    with `row_elements`)."""
    if not isinstance(counts, (list, tuple)) or not counts:
        raise ValueError("counts must be a non-empty list of ints, got %r" % (counts,))
    multiple = NVFP4_BLOCK if kind == "nvfp4" else 1
    if row_elements is not None:
        multiple = _positive(row_elements, "row_elements", NVFP4_BLOCK) or NVFP4_BLOCK
    total = sum(_positive(c, "counts[%d]" % i, multiple) for i, c in enumerate(counts))
    return tensor_parts(kind, total, len(counts), row_elements)


def reduce_scatter(send_kind, send_count, ranks, out_kind):
    """recv of reduce_scatter: this rank's shard (send_count / ranks elements) as `out_kind`:
    bf16/fp32 sums, or re-quantized in the send's own format (one scale)."""
    _kind(send_kind, "send_kind")
    _kind(out_kind, "out_kind")
    _positive(ranks, "ranks")
    if ranks == 0 or send_count % ranks:
        raise ValueError("send_count %r is not divisible by ranks %r" % (send_count, ranks))
    shard = _positive(send_count, "send_count") // ranks
    if out_kind in ("fp8", "nvfp4") and out_kind != send_kind:
        raise ValueError("a re-quantized output has the send's format: send %s, out %s"
                         % (send_kind, out_kind))
    if send_kind in ("bf16", "fp32") and out_kind != send_kind:
        raise ValueError("a %s reduce-scatter writes %s, not %s" % (send_kind, send_kind, out_kind))
    if send_kind in ("fp8", "nvfp4"):
        _positive(shard, "shard", NVFP4_BLOCK)
    return tensor_parts(out_kind, shard, 1)


def quantize_all_gather(kind, input_count, ranks, row_elements=None):
    """recv of quantize_all_gather: every rank's bf16 input quantized to `kind` (fp8 or nvfp4)
    and gathered."""
    if kind not in ("fp8", "nvfp4"):
        raise ValueError("kind must be fp8 or nvfp4, got %r" % (kind,))
    return all_gather(kind, input_count, ranks, row_elements)


def quantize(kind, count):
    """Output of quantize_nvfp4 / quantize_fp8 of `count` bf16 elements (one scale)."""
    if kind not in ("fp8", "nvfp4"):
        raise ValueError("kind must be fp8 or nvfp4, got %r" % (kind,))
    return tensor_parts(kind, count, 1)


def dequantize(count):
    """Output of dequantize_nvfp4 / dequantize_fp8: `count` bf16 elements."""
    return tensor_parts("bf16", count)
