"""Tensors as the C ABI sees them (private): Plan, the NVFP4 and FP8 tensor types, and the
checks that turn PyTorch tensors (or look-alikes) into symmcomm_tensor_t, naming the argument.

Python checks only what the library cannot see: Python types, dtypes, devices, contiguity and
the sizes of the tensors behind each pointer (a block-scale or scale tensor too small for its
data). How counts relate - send against recv, counts against tensors, whole blocks, whole rows -
is the library's one check (validate_call), whose text reaches the caller as a LogicError."""
import collections
import ctypes
import sys

from . import _capi
from ._core import NVFP4_BLOCK, _check, _fail, _int_arg, _lib

# ---- tensors ---------------------------------------------------------------------------------

class Plan:
    """The path a collective took ("nccl-symmetric", "lsa-kernel" or "fallback"), why (`why`:
    the reason's name, e.g. "buffer-not-symmetric"), whether plain buffers were staged, and
    `reason`, symmcomm's explanation (Plan::reason()): formatted by the library only when read.
    Unpacks as (path, reason)."""

    __slots__ = ("_c", "_text")

    def __init__(self, c_plan):
        self._c = c_plan  # fields read when asked: operators drop the plan unread
        self._text = None

    @property
    def path(self):
        """The path taken: "nccl-symmetric", "lsa-kernel" or "fallback"."""
        return _capi.TAKEN.get(self._c.path, "unknown")

    @property
    def why(self):
        """The reason's name, e.g. "buffer-not-symmetric"."""
        return _capi.REASONS.get(self._c.reason, "unknown")

    @property
    def staged(self):
        """Whether plain buffers were copied through staging scratch."""
        return bool(self._c.staged)

    @property
    def reason(self):
        """symmcomm's explanation of the path (Plan::reason()), formatted when first read."""
        if self._text is None:
            needed = ctypes.c_size_t(0)
            _check(_lib.symmcomm_plan_describe(ctypes.byref(self._c), None, 0,
                                               ctypes.byref(needed)))
            buf = ctypes.create_string_buffer(needed.value)
            _check(_lib.symmcomm_plan_describe(ctypes.byref(self._c), buf, needed.value, None))
            self._text = buf.value.decode("utf-8", "replace")
        return self._text

    def __iter__(self):
        return iter((self.path, self.reason))

    def __repr__(self):
        return "Plan(path=%r, why=%r)" % (self.path, self.why)

#: An NVFP4 tensor: packed data (uint8 or float4_e2m1fn_x2, count/2), block scales
#: (float8_e4m3fn or uint8, count/16) and global scale(s) (float32: 1 for a rank's tensor,
#: comm.size for a gathered one).
Nvfp4Tensor = collections.namedtuple("Nvfp4Tensor", ["data", "block_scales", "global_scale"])

#: An FP8 tensor: codes (float8_e4m3fn / float8_e5m2 or uint8) and fp32 scale(s); `format`
#: "e4m3" or "e5m2" (default: from the codes' dtype, else e4m3).
Fp8Tensor = collections.namedtuple("Fp8Tensor", ["data", "scale", "format"], defaults=(None,))



def rank_part(gathered, rank, size):
    """Rank `rank`'s part of an Nvfp4Tensor or Fp8Tensor gathered from `size` ranks with equal
    counts (all_gather, quantize_all_gather): views of its data and block scales and of its own
    scale. Dequantize a gathered tensor part by part: dequantize_nvfp4 / dequantize_fp8 apply a
    tensor's first scale to all of it, which is rank 0's."""
    _int_arg(size, "size", 1)
    _int_arg(rank, "rank")
    if rank >= size:
        _fail("rank %d is outside 0..%d" % (rank, size - 1))
    if isinstance(gathered, Nvfp4Tensor):
        n = gathered.data.numel()
        if n % size or (n // size) % (NVFP4_BLOCK // 2):
            _fail("gathered.data holds %d bytes: not %d equal parts of whole 16-element blocks"
                  % (n, size))
        part, blocks = n // size, gathered.block_scales.numel() // size
        return Nvfp4Tensor(gathered.data[rank * part:(rank + 1) * part],
                           gathered.block_scales[rank * blocks:(rank + 1) * blocks],
                           gathered.global_scale[rank:rank + 1])
    if isinstance(gathered, Fp8Tensor):
        n = gathered.data.numel()
        if n % size:
            _fail("gathered.data holds %d elements: not %d equal parts" % (n, size))
        part = n // size
        return Fp8Tensor(gathered.data[rank * part:(rank + 1) * part],
                         gathered.scale[rank:rank + 1], gathered.format)
    _fail("gathered must be a symmcomm.Nvfp4Tensor or Fp8Tensor, got %s"
          % type(gathered).__name__)


_BF16 = ("bfloat16",)
_BYTES = ("uint8", "int8")
_FP4 = ("float4_e2m1fn_x2",) + _BYTES
_E4M3 = ("float8_e4m3fn",)
_E5M2 = ("float8_e5m2",)
_F32 = ("float32",)


_TENSOR_ATTRS = ("data_ptr", "numel", "dtype", "is_contiguous")
_TENSOR_TYPES = set()  # types seen to have every attribute in _TENSOR_ATTRS


def _is_tensor(x):
    """Whether `x` has PyTorch's tensor attributes (decided once per type: a call's checks run on
    every collective)."""
    cls = type(x)
    if cls in _TENSOR_TYPES:
        return True
    if all(hasattr(x, a) for a in _TENSOR_ATTRS):
        _TENSOR_TYPES.add(cls)
        return True
    return False


_DTYPE_NAMES = {}


def _dtype_name(t):
    dt = t.dtype
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt).replace("torch.", "")
    return name


def _tensor(t, name, dtypes, device=None):
    """(pointer, elements) of a CUDA tensor, checked: a tensor, on a CUDA device (the same as
    `device` when given), contiguous, of one of `dtypes`."""
    if not _is_tensor(t):
        _fail("%s must be a CUDA tensor, got %s" % (name, type(t).__name__))
    if not getattr(t, "is_cuda", False):
        _fail("%s must be on a CUDA device, got %s" % (name, getattr(t, "device", "?")))
    if device is not None and _device_index(t) != device:
        _fail("%s is on cuda:%s, but the communicator's rank is on cuda:%d"
              % (name, _device_index(t), device))
    if not t.is_contiguous():
        _fail("%s must be contiguous" % name)
    dt = _dtype_name(t)
    if dt not in dtypes:
        _fail("%s has dtype %s; expected %s" % (name, dt, " or ".join(dtypes)))
    return t.data_ptr(), t.numel()


def _device_index(t):
    get_device = getattr(t, "get_device", None)  # an int, without making a torch.device
    if get_device is not None:
        return get_device()
    d = getattr(t, "device", None)
    return getattr(d, "index", None)


def _fp8_format(t, fmt, name):
    if fmt is None:
        return "e5m2" if _dtype_name(t) in _E5M2 else "e4m3"
    if fmt not in ("e4m3", "e5m2"):
        _fail("%s.format must be 'e4m3' or 'e5m2', got %r" % (name, fmt))
    dt = _dtype_name(t)
    if (dt in _E4M3 and fmt != "e4m3") or (dt in _E5M2 and fmt != "e5m2"):
        _fail("%s.format %r contradicts %s.data's dtype %s" % (name, fmt, name, dt))
    return fmt


def swizzled_scale_bytes(rows, scale_cols):
    """Bytes of the swizzled (128 x 4 tile) block scales of a [rows, scale_cols] scale matrix,
    padding included: what recv.block_scales needs with row_elements (scale_cols =
    row_elements / 16, rows = recv elements / row_elements)."""
    _int_arg(rows, "rows")
    _int_arg(scale_cols, "scale_cols")
    return -(-rows // 128) * 128 * (-(-scale_cols // 4) * 4)


def _nvfp4(v, name, device, scales_expected, row_elements=None):
    """Checked symmcomm_tensor_t of an Nvfp4Tensor; with row_elements, its block scales are the
    swizzled layout of rows of that many elements (a gather's receive side)."""
    if not isinstance(v, Nvfp4Tensor):
        _fail("%s must be a symmcomm.Nvfp4Tensor(data, block_scales, global_scale), got %s"
              % (name, type(v).__name__))
    data, n_data = _tensor(v.data, name + ".data", _FP4, device)
    scales, n_scales = _tensor(v.block_scales, name + ".block_scales", _E4M3 + _BYTES, device)
    glob, n_glob = _tensor(v.global_scale, name + ".global_scale", _F32, device)
    count = 2 * n_data
    layout = _capi.SCALE_LAYOUTS["linear"]
    if row_elements is not None:
        _int_arg(row_elements, "row_elements", 1)
        layout = _capi.SCALE_LAYOUTS["swizzled128x4"]
        # The scale tensor's size, for rows the library will accept (it refuses the others).
        if row_elements % NVFP4_BLOCK == 0 and count % row_elements == 0:
            rows = count // row_elements
            need = swizzled_scale_bytes(rows, row_elements // NVFP4_BLOCK)
            if n_scales < need:
                _fail("%s.block_scales has %d elements; swizzled scales of %d rows of %d need "
                      "%d (symmcomm.swizzled_scale_bytes)"
                      % (name, n_scales, rows, row_elements, need))
    elif n_scales != count // NVFP4_BLOCK:
        _fail("%s.block_scales has %d elements; %d data bytes need %d (one per 16 elements)"
              % (name, n_scales, n_data, count // NVFP4_BLOCK))
    if n_glob < scales_expected:
        _fail("%s.global_scale has %d elements; expected %d" % (name, n_glob, scales_expected))
    return _capi.Tensor(_capi.DTYPES["nvfp4"], layout, data, scales, glob, count,
                        row_elements or 0)


def _fp8(v, name, device, scales_expected):
    """Checked symmcomm_tensor_t of an Fp8Tensor."""
    if not isinstance(v, Fp8Tensor):
        _fail("%s must be a symmcomm.Fp8Tensor(data, scale[, format]), got %s"
              % (name, type(v).__name__))
    data, n = _tensor(v.data, name + ".data", _E4M3 + _E5M2 + _BYTES, device)
    scale, n_scale = _tensor(v.scale, name + ".scale", _F32, device)
    if n_scale < scales_expected:
        _fail("%s.scale has %d elements; expected %d" % (name, n_scale, scales_expected))
    fmt = _fp8_format(v.data, v.format, name)
    return _capi.Tensor(_capi.DTYPES["fp8" + fmt], _capi.SCALE_LAYOUTS["linear"], data, None,
                        scale, n, 0)


def _plain(t, name, dtypes, device=None):
    """Checked symmcomm_tensor_t of a bf16 or float32 tensor."""
    ptr, n = _tensor(t, name, dtypes, device)
    dtype = "fp32" if _dtype_name(t) in _F32 else "bf16"
    return _capi.Tensor(_capi.DTYPES[dtype], _capi.SCALE_LAYOUTS["linear"], ptr, None, None, n, 0)


_OPTIONS = {}  # path name -> its symmcomm_options_t (the library only reads it)


def _path_arg(path):
    """The symmcomm_options_t of `path` ("auto", ...), made once per path."""
    o = _OPTIONS.get(path)
    if o is None:
        if path not in _capi.PATHS:
            _fail("path must be one of %s, got %r" % (", ".join(_capi.PATHS), path))
        o = _OPTIONS[path] = _capi.options(_capi.PATHS[path])
    return o


def _stream_arg(stream, device=None):
    """The cudaStream_t (int) for `stream`: an int, a torch.cuda.Stream, or None for PyTorch's
    current stream of CUDA device `device` (an index: the communicator's, or a checked tensor's;
    0 without PyTorch, with a PyTorch built without CUDA, or without a device)."""
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and device is not None and device >= 0:
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is not None:  # the address alone, without a torch.cuda.Stream object
                return raw(device)
            if getattr(torch.version, "cuda", None) is None:  # a CPU-only PyTorch has no stream
                return 0
            return torch.cuda.current_stream(device).cuda_stream
        return 0
    if hasattr(stream, "cuda_stream"):
        return stream.cuda_stream
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        _fail("stream must be a torch.cuda.Stream, a cudaStream_t address (int) or None, got %r"
              % (stream,))
    return stream


def _nvfp4_only(send, row_elements, call):
    if row_elements is not None and not isinstance(send, Nvfp4Tensor):
        _fail("%s: row_elements (swizzled block scales) applies to NVFP4 only, got %s"
              % (call, type(send).__name__))


def _call(fn, comm, *args, stream, options):
    """Runs a collective entry point fn(comm, *args, options, stream, plan); the Plan."""
    plan = _capi.plan_out()
    _check(fn(comm._h(), *args, ctypes.byref(options), ctypes.c_void_p(stream),
              ctypes.byref(plan)))
    return Plan(plan)


def _gather_views(send, recv, device, size, row_elements):
    """The send and recv tensors of a gather (one scale per rank on the receive side)."""
    if isinstance(send, Nvfp4Tensor):
        return _nvfp4(send, "send", device, 1), _nvfp4(recv, "recv", device, size, row_elements)
    if isinstance(send, Fp8Tensor):
        a, b = _fp8(send, "send", device, 1), _fp8(recv, "recv", device, size)
        if a.dtype != b.dtype:
            _fail("send and recv have different FP8 formats")
        return a, b
    return _plain(send, "send", _BF16, device), _plain(recv, "recv", _BF16, device)
