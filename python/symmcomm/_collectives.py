"""The collectives and codecs (private: the package re-exports them)."""
import collections
import ctypes

from . import _capi
from ._core import _check, _fail, _int_arg, _lib
from ._tensors import (_BF16, _F32, Fp8Tensor, Nvfp4Tensor, _call, _device_index, _fp8,
                       _gather_views, _nvfp4, _nvfp4_only, _path_arg, _plain, _stream_arg,
                       _tensor)


def all_gather(comm, send, recv, stream=None, path="auto", row_elements=None):
    """Gathers every rank's `send` into `recv` (rank r's part at r * send's size): bf16
    tensors, Fp8Tensor or Nvfp4Tensor (gathered global scales: comm.size floats). NVFP4 with
    `row_elements`: recv.block_scales in the swizzled 128 x 4 layout NVFP4 GEMMs read, for rows
    of that many elements (swizzled_scale_bytes). Returns the Plan."""
    rank, size, device, _ = comm.info()
    _nvfp4_only(send, row_elements, "all_gather")
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    a, b = _gather_views(send, recv, device, size, row_elements)
    return _call(_lib.symmcomm_all_gather, comm, ctypes.byref(a), ctypes.byref(b), stream=s,
                 options=o)


def _counts_arg(counts, size):
    """The C array of a v-collective's host counts: a list of comm.size ints >= 0 (how they
    relate to the tensors is the library's check)."""
    if not isinstance(counts, (list, tuple)) or len(counts) != size:
        _fail("counts must be a list of comm.size (%d) ints, got %r" % (size, counts))
    n = [_int_arg(c, "counts[%d]" % i) for i, c in enumerate(counts)]
    return (ctypes.c_size_t * size)(*n)


def all_gatherv(comm, send, recv, counts, stream=None, path="auto", row_elements=None):
    """Gathers counts[r] elements from every rank r into `recv` (rank r's part after ranks
    0..r-1): bf16 tensors, Fp8Tensor or Nvfp4Tensor (counts multiples of 16; gathered scales:
    comm.size floats). `counts`: one int per rank, the same on every rank; send holds
    counts[rank] elements, recv their sum. NVFP4 with `row_elements`: swizzled block scales as
    in all_gather (every count whole rows). Returns the Plan."""
    rank, size, device, _ = comm.info()
    _nvfp4_only(send, row_elements, "all_gatherv")
    arr = _counts_arg(counts, size)
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    a, b = _gather_views(send, recv, device, size, row_elements)
    return _call(_lib.symmcomm_all_gatherv, comm, ctypes.byref(a), ctypes.byref(b), arr,
                 stream=s, options=o)


def _reduce_send(send, device, fp32_ok=False):
    """The send tensor of a reduce-scatter: NVFP4, FP8 (one scale), bf16, or with `fp32_ok`
    float32."""
    if isinstance(send, Nvfp4Tensor):
        return _nvfp4(send, "send", device, 1)
    if isinstance(send, Fp8Tensor):
        return _fp8(send, "send", device, 1)
    return _plain(send, "send", _BF16 + _F32 if fp32_ok else _BF16, device)


def _reduce_views(send, recv, device):
    """The send and recv tensors of a reduce-scatter, their combination checked."""
    quantized = isinstance(send, (Nvfp4Tensor, Fp8Tensor))
    a = _reduce_send(send, device, fp32_ok=True)
    if isinstance(recv, (Nvfp4Tensor, Fp8Tensor)):
        if type(recv) is not type(send):
            _fail("recv is a %s: a re-quantized output needs send of the same format, got %s"
                  % (type(recv).__name__, type(send).__name__))
        if isinstance(recv, Nvfp4Tensor):
            b = _nvfp4(recv, "recv", device, 1)
        else:
            b = _fp8(recv, "recv", device, 1)
            if b.dtype != a.dtype:
                _fail("send and recv have different FP8 formats")
        return a, b
    if a.dtype == _capi.DTYPES["fp32"]:
        return a, _plain(recv, "recv", _F32, device)  # NCCL's sum in fp32
    return a, _plain(recv, "recv", _BF16 + _F32 if quantized else _BF16, device)


def reduce_scatter(comm, send, recv, stream=None, path="auto"):
    """Sums `send` over the ranks and leaves this rank's shard in `recv`. send bf16: recv bf16
    (NCCL's sum); send float32: recv float32 (NCCL's sum in fp32). send an Nvfp4Tensor /
    Fp8Tensor with per-rank scales (dequantized, summed in fp32): recv a bf16 tensor (rounded once), a float32 tensor (no rounding), or a tensor of
    send's own format (re-quantized: an Nvfp4Tensor, or an Fp8Tensor of the same FP8 format, its
    one scale computed from the sum). Returns the Plan."""
    rank, size, device, _ = comm.info()
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    a, b = _reduce_views(send, recv, device)
    return _call(_lib.symmcomm_reduce_scatter, comm, ctypes.byref(a), ctypes.byref(b), stream=s,
                 options=o)


def reduce_scatterv(comm, send, recv, counts, stream=None, path="auto"):
    """Sums `send` over the ranks and leaves counts[rank] elements of the sum in `recv` (rank
    r's shard after those of ranks 0..r-1): bf16 -> bf16, or an Nvfp4Tensor / Fp8Tensor with
    per-rank scales -> bf16 (summed in fp32, rounded once; counts multiples of 16). `counts`:
    one int per rank, the same on every rank; send holds their sum. Returns the Plan."""
    rank, size, device, _ = comm.info()
    arr = _counts_arg(counts, size)
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    if isinstance(recv, (Nvfp4Tensor, Fp8Tensor)):
        _fail("reduce_scatterv: recv must be a bf16 tensor, got %s" % type(recv).__name__)
    a = _reduce_send(send, device)
    b = _plain(recv, "recv", _BF16, device)
    return _call(_lib.symmcomm_reduce_scatterv, comm, ctypes.byref(a), ctypes.byref(b), arr,
                 stream=s, options=o)


def quantize_all_gather(comm, input, recv, scale=None, stream=None, path="auto",
                        row_elements=None):
    """Quantizes this rank's bf16 `input` into every rank's `recv` (an Nvfp4Tensor or
    Fp8Tensor of input.numel() x comm.size elements and comm.size scales) in one launch where
    symmcomm's LSA kernel can run, else quantize then gather. `scale`: this rank's device scale
    (float32 tensor of 1 element), or None to compute it from the data. NVFP4 with
    `row_elements`: swizzled block scales as in all_gather. Returns the Plan."""
    rank, size, device, _ = comm.info()
    _nvfp4_only(recv, row_elements, "quantize_all_gather")
    a = _plain(input, "input", _BF16, device)
    s_ptr = None
    if scale is not None:
        s_ptr, k = _tensor(scale, "scale", _F32, device)
        if k < 1:
            _fail("scale is empty")
    o = _path_arg(path)
    st = _stream_arg(stream, device)
    if isinstance(recv, Nvfp4Tensor):
        b = _nvfp4(recv, "recv", device, size, row_elements)
    elif isinstance(recv, Fp8Tensor):
        b = _fp8(recv, "recv", device, size)
    else:
        _fail("recv must be a symmcomm.Nvfp4Tensor or Fp8Tensor, got %s" % type(recv).__name__)
    return _call(_lib.symmcomm_quantize_all_gather, comm, ctypes.byref(a), ctypes.c_void_p(s_ptr),
                 ctypes.byref(b), stream=st, options=o)


#: The device-side counts of a device-count gather (int32 CUDA tensors): `count` this rank's rows
#: (1 element, read when the call runs), `counts` and `offsets` comm.size elements the call
#: writes (every rank's count, their exclusive prefix), `overflow` 1 element set to 1 when a
#: count is outside 0..capacity. reduce_scatterv_device also takes `count` None: `counts`
#: already holds every rank's count (the dispatch's all_gatherv_device wrote it), read, not
#: written.
DeviceCounts = collections.namedtuple("DeviceCounts", ["count", "counts", "offsets", "overflow"])

_I32 = ("int32",)


def _device_counts(counts, size, device, capacity, gathered_ok=False):
    """symmcomm_device_counts_t of `counts`; `gathered_ok`: counts.count may be None (counts
    gathered before the call, reduce_scatterv_device)."""
    if not isinstance(counts, DeviceCounts):
        _fail("counts must be a symmcomm.DeviceCounts(count, counts, offsets, overflow), got %s"
              % type(counts).__name__)
    ptrs = []
    for name, want in (("count", 1), ("counts", size), ("offsets", size), ("overflow", 1)):
        if name == "count" and gathered_ok and counts.count is None:
            ptrs.append(None)
            continue
        p, k = _tensor(getattr(counts, name), "counts." + name, _I32, device)
        if k != want:
            _fail("counts.%s has %d elements; expected %d" % (name, k, want))
        ptrs.append(p)
    return _capi.DeviceCountsC(ptrs[0], capacity, ptrs[1], ptrs[2], ptrs[3])


def _capacity_rows(mine, row):
    """The capacity (rows per rank) of a device-count call: the rows of `row` elements that
    `mine` holds (whole rows, and the other tensor comm.size times as many, are the library's
    check)."""
    return mine.count // row


def all_gatherv_device(comm, send, recv, counts, row_elements, stream=None, path="auto",
                       swizzled_scales=False):
    """Gathers rows whose counts are on the device (DP attention without padding; one CUDA graph
    serves every count): `send` (bf16 tensor, Fp8Tensor or Nvfp4Tensor) holds capacity rows of
    `row_elements` elements, the first counts.count of them this rank's; `recv` has room for
    comm.size x capacity rows; rank r's rows land at row counts.offsets[r]. A count outside
    0..capacity is clamped and raises counts.overflow (device_counts_overflowed).
    `swizzled_scales` (NVFP4): recv.block_scales is the 128 x 4 layout NVFP4 GEMMs read for
    comm.size x capacity rows (symmcomm.swizzled_scale_bytes); the rows past the total count are
    written as 0 there. Returns the Plan: with recv, counts.counts and the scales in a pool's
    windows and an LSA team spanning the ranks, symmcomm's one-launch kernel, which moves only
    the counted rows; else the fallback (rows gathered at capacity, then compacted on the
    device; path="fallback" forces it)."""
    rank, size, device, _ = comm.info()
    row = _int_arg(row_elements, "row_elements", 1)
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    if swizzled_scales and not isinstance(send, Nvfp4Tensor):
        _fail("all_gatherv_device: swizzled_scales applies to NVFP4 only, got %s"
              % type(send).__name__)
    if isinstance(send, Nvfp4Tensor):
        a = _nvfp4(send, "send", device, 1)
        b = _nvfp4(recv, "recv", device, size, row if swizzled_scales else None)
    else:
        a, b = _gather_views(send, recv, device, size, None)
    capacity = _capacity_rows(a, row)
    dc = _device_counts(counts, size, device, capacity)
    return _call(_lib.symmcomm_all_gatherv_device, comm, ctypes.byref(a), ctypes.byref(b), row,
                 ctypes.byref(dc), stream=s, options=o)


def reduce_scatterv_device(comm, send, recv, counts, row_elements, stream=None, path="auto"):
    """Sums `send` over the ranks and leaves this rank's counts.count rows of it in `recv`, the
    shard sizes on the device (MoE combine after all_gatherv_device): `send` (bf16 tensor or
    Nvfp4Tensor with per-rank global scales) holds every rank's shard compactly (rank r's rows
    at counts.offsets[r]) in room for comm.size x capacity rows of `row_elements`; `recv` (bf16)
    holds capacity rows, the ones past this rank's count written as 0. A `send` (NVFP4: its
    data, block scales and global scale) and counts.counts allocated in a symmcomm pool
    (torch.cuda.use_mem_pool(torch_mem_pool(pool))) take symmcomm's one-launch kernel (only this
    rank's rows are read from each peer; NVFP4 needs its data 8-byte and `recv` 16-byte
    aligned, as pool allocations are); otherwise the fallback. Returns the Plan (its reason says
    which). counts.count None: counts.counts already holds every rank's count (the dispatch's
    all_gatherv_device left it there); the counts-in-lines kernel then sends the rows without a
    count exchange first (the plan's reason says so), and a rank whose peers took other counts
    for it raises counts.overflow."""
    rank, size, device, _ = comm.info()
    row = _int_arg(row_elements, "row_elements", 1)
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    if isinstance(recv, (Nvfp4Tensor, Fp8Tensor)):
        _fail("reduce_scatterv_device: recv must be a bf16 tensor, got %s" % type(recv).__name__)
    if isinstance(send, Fp8Tensor):
        _fail("reduce_scatterv_device: send must be a bf16 tensor or an Nvfp4Tensor, got "
              "Fp8Tensor")
    a = _reduce_send(send, device)
    b = _plain(recv, "recv", _BF16, device)
    capacity = _capacity_rows(b, row)
    dc = _device_counts(counts, size, device, capacity, gathered_ok=True)
    return _call(_lib.symmcomm_reduce_scatterv_device, comm, ctypes.byref(a), ctypes.byref(b), row,
                 ctypes.byref(dc), stream=s, options=o)


def device_counts_overflowed(comm, counts, stream=None, clear=True):
    """Whether a device-count gather saw a count outside 0..capacity since counts.overflow was last
    cleared (a bounded host wait for `stream`); clears it when `clear`."""
    rank, size, device, _ = comm.info()
    dc = _device_counts(counts, size, device, 0)
    flag = ctypes.c_int(0)
    _check(_lib.symmcomm_device_counts_overflowed(
        comm._h(), ctypes.byref(dc), ctypes.c_void_p(_stream_arg(stream, device)),
        1 if clear else 0, ctypes.byref(flag)))
    return bool(flag.value)


def _quantize(view_of, src, dst, compute_scale, stream):
    a = _plain(src, "src", _BF16)
    b = view_of(dst, "dst", _device_index(src), 1)
    if b.count != a.count:
        _fail("dst holds %d elements, src %d" % (b.count, a.count))
    _check(_lib.symmcomm_quantize(ctypes.byref(a), ctypes.byref(b), 1 if compute_scale else 0,
                                  ctypes.c_void_p(_stream_arg(stream, _device_index(src)))))


def _dequantize(view_of, src, dst, stream):
    b = _plain(dst, "dst", _BF16)
    a = view_of(src, "src", _device_index(dst), 1)
    if a.count != b.count:
        _fail("dst holds %d elements, src %d" % (b.count, a.count))
    _check(_lib.symmcomm_dequantize(ctypes.byref(a), ctypes.byref(b),
                                    ctypes.c_void_p(_stream_arg(stream, _device_index(dst)))))


def quantize_fp8(src, dst, compute_scale=True, stream=None):
    """BF16 tensor -> Fp8Tensor `dst` (same element count; a multiple of 8)."""
    _quantize(_fp8, src, dst, compute_scale, stream)


def dequantize_fp8(src, dst, stream=None):
    """Fp8Tensor -> BF16 tensor `dst` (same element count)."""
    _dequantize(_fp8, src, dst, stream)


def quantize_nvfp4(src, dst, compute_scale=True, stream=None):
    """BF16 tensor -> Nvfp4Tensor `dst` (same element count); with compute_scale the global
    scale is computed from the data and stored, else dst.global_scale is used."""
    _quantize(_nvfp4, src, dst, compute_scale, stream)


def dequantize_nvfp4(src, dst, stream=None):
    """Nvfp4Tensor -> BF16 tensor `dst` (same element count)."""
    _dequantize(_nvfp4, src, dst, stream)
