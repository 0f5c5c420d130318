"""symmcomm for Python: low-precision all-gather and reduce-scatter over NCCL symmetric memory.

A thin layer over the C ABI (libsymmcomm_c.so, loaded with ctypes: no compiled extension).
Everything that does not move tensors works without PyTorch; the collectives take PyTorch CUDA
tensors (or any object with the same attributes: data_ptr(), numel(), dtype, is_cuda,
is_contiguous(), device) and check their shapes, dtypes, devices and contiguity here, naming the
argument, before anything reaches the GPU.

    import symmcomm
    comm = symmcomm.Communicator.wrap(nccl_comm_address)      # or Communicator.init(...)
    pool = symmcomm.Pool(comm, initial_bytes=256 << 20)        # symmetric windows
    plan = symmcomm.all_gather(comm, symmcomm.Nvfp4Tensor(data, scales, g), recv)
    print(plan.path, plan.reason)

Library lookup: see symmcomm._capi.candidates() ($SYMMCOMM_LIBRARY first).
"""
import collections
import ctypes
import sys

from . import _capi
from .errors import (CudaError, Error, InternalError, LogicError, NcclError, NotSymmetricError,
                     OutOfMemoryError, TimeoutError, error_for)

__all__ = [
    "Error", "LogicError", "CudaError", "NcclError", "OutOfMemoryError", "NotSymmetricError",
    "TimeoutError", "InternalError", "version", "abi_version", "library_path", "unique_id",
    "Communicator", "Pool", "Plan", "Nvfp4Tensor", "Fp8Tensor", "provenance", "is_symmetric",
    "verify", "torch_mem_pool", "all_gather", "all_gatherv", "reduce_scatter",
    "quantize_all_gather", "reduce_scatterv", "nccl_version", "DeviceCounts",
    "all_gatherv_device", "reduce_scatterv_device", "device_counts_overflowed", "share_gpus_if_needed", "rank_part",
    "swizzled_scale_bytes",
    "quantize_nvfp4", "dequantize_nvfp4", "quantize_fp8", "dequantize_fp8", "shared_unique_id",
]

_lib, _path = _capi.load()

#: The loaded library's version, "major.minor.patch" (the package follows the library's).
__version__ = _lib.symmcomm_version().decode()

#: NVFP4 elements per block scale.
NVFP4_BLOCK = 16


def _check(status):
    if status != _capi.SUCCESS:
        raise error_for(status, _lib.symmcomm_last_error().decode("utf-8", "replace"))


def _fail(message):
    raise LogicError(message, _capi.INVALID_ARGUMENT)


def version():
    """The library's version, "major.minor.patch"."""
    return _lib.symmcomm_version().decode()


def abi_version():
    """The C ABI version of the loaded library (checked against the package's at import)."""
    return _lib.symmcomm_abi_version()


def library_path():
    """The path libsymmcomm_c.so was loaded from."""
    return _path


def nccl_version():
    """The NCCL this process loaded, "major.minor.patch": the one symmcomm calls, and the one
    PyTorch calls when both are loaded (they share the libnccl.so.2 loaded first)."""
    nccl = ctypes.CDLL("libnccl.so.2")
    code = ctypes.c_int()
    if nccl.ncclGetVersion(ctypes.byref(code)) != 0:
        raise NcclError("ncclGetVersion failed", _capi.NCCL)
    v = code.value  # NCCL_VERSION_CODE: major*10000 + minor*100 + patch (from 2.9)
    major, rest = (v // 10000, v % 10000) if v >= 10000 else (v // 1000, v % 1000)
    return "%d.%d.%d" % (major, rest // 100, rest % 100)


def _gpu_count():
    torch = sys.modules.get("torch")
    if torch is not None:
        return torch.cuda.device_count()
    n = ctypes.c_int(0)
    try:
        cudart = ctypes.CDLL("libcudart.so")
    except OSError:
        return 0
    return n.value if cudart.cudaGetDeviceCount(ctypes.byref(n)) == 0 else 0


def share_gpus_if_needed(rank, local_size, gpus=None):
    """Lets `local_size` ranks on this host share fewer GPUs (tests, small machines), as the C++
    symmcomm::share_gpus_if_needed does: call in every rank before any NCCL communicator exists
    in the process (PyTorch's included). With NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 (real
    symmetric windows; point-to-point kept on the LL protocol, which that mode needs); before
    2.30, a distinct NCCL_HOSTID per rank (NCCL then sees separate hosts: socket transport, no
    symmetric memory: the fallback path). NVLink multicast is turned off either way. Variables
    already set are kept. Returns what it did."""
    import os
    _int_arg(rank, "rank")
    _int_arg(local_size, "local_size", 1)
    gpus = _gpu_count() if gpus is None else _int_arg(gpus, "gpus")
    if gpus <= 0:
        _fail("share_gpus_if_needed: no CUDA GPU is visible")
    if local_size <= gpus:
        return "one GPU per rank"
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    sharing = "%d ranks share %d GPU(s): " % (local_size, gpus)
    major, minor = (int(x) for x in nccl_version().split(".")[:2])
    if (major, minor) >= (2, 30):
        os.environ.setdefault("NCCL_MULTI_RANK_GPU_ENABLE", "1")
        os.environ.setdefault("NCCL_P2P_LL_THRESHOLD", "1073741824")
        return sharing + "NCCL_MULTI_RANK_GPU_ENABLE=1"
    os.environ.setdefault("NCCL_HOSTID", "symmcomm-rank-%d" % rank)
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    return sharing + "one NCCL_HOSTID per rank (socket transport, fallback path only)"


def unique_id():
    """A fresh NCCL unique id (bytes) for Communicator.init; rank 0 makes it and shares it."""
    n = _lib.symmcomm_unique_id_bytes()
    buf = ctypes.create_string_buffer(n)
    _check(_lib.symmcomm_get_unique_id(buf))
    return buf.raw


def shared_unique_id(dist=None, group=None):
    """The same fresh unique id on every rank of a torch.distributed process group (rank 0
    makes it, a broadcast shares it): what Communicator.init needs. `dist` defaults to
    torch.distributed, which must be initialised."""
    if dist is None:
        import torch.distributed as dist  # only here: the rest works without PyTorch
    if not dist.is_initialized():
        _fail("shared_unique_id: torch.distributed is not initialised "
              "(dist.init_process_group first)")
    box = [unique_id() if dist.get_rank(group) == 0 else None]
    dist.broadcast_object_list(box, src=0, group=group)
    n = _lib.symmcomm_unique_id_bytes()
    if not isinstance(box[0], (bytes, bytearray)) or len(box[0]) != n:
        _fail("shared_unique_id: the broadcast gave %r, not %d bytes" % (type(box[0]).__name__, n))
    return bytes(box[0])


def _int_arg(value, name, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int):
        _fail("%s must be an int, got %r (%s)" % (name, value, type(value).__name__))
    if value < minimum:
        _fail("%s must be >= %d, got %d" % (name, minimum, value))
    return value


class Communicator:
    """A symmcomm communicator: owned (init) or an engine's NCCL communicator (wrap)."""

    def __init__(self, handle):
        self._handle = handle
        self._info = None  # fixed for the communicator's life: asked once

    @classmethod
    def init(cls, nranks, uid, rank, device):
        """Rank `rank` of `nranks` on CUDA device `device`, from unique_id() bytes made by rank 0.
        Collective."""
        _int_arg(nranks, "nranks", 1)
        _int_arg(rank, "rank")
        _int_arg(device, "device")
        if rank >= nranks:
            _fail("rank %d is outside 0..%d (nranks %d)" % (rank, nranks - 1, nranks))
        n = _lib.symmcomm_unique_id_bytes()
        if not isinstance(uid, (bytes, bytearray)) or len(uid) != n:
            _fail("uid must be the %d bytes of symmcomm.unique_id(), got %r" %
                  (n, type(uid).__name__ if not isinstance(uid, (bytes, bytearray))
                   else "%d bytes" % len(uid)))
        out = ctypes.c_void_p()
        _check(_lib.symmcomm_comm_init(nranks, bytes(uid), rank, device, ctypes.byref(out)))
        return cls(out)

    @classmethod
    def wrap(cls, nccl_comm, probe=True):
        """Borrows an engine's ncclComm_t, given as its address (an int). Collective when
        `probe` (symmetric-memory capabilities are probed with the peers).

        Values that cannot be a pointer (not an int, 0 or negative, wider than 64 bits, below
        4096 or not 8-byte aligned) raise LogicError naming the value. Any other int is trusted:
        an arbitrary address cannot be validated, and a wrong one crashes the process."""
        if isinstance(nccl_comm, bool) or not isinstance(nccl_comm, int) or nccl_comm == 0:
            _fail("nccl_comm must be the non-null address (int) of an ncclComm_t, got %r"
                  % (nccl_comm,))
        if nccl_comm < 0 or nccl_comm >= 1 << 64:
            _fail("nccl_comm %r cannot be a pointer: an address is an int in 1..2**64-1" % (nccl_comm,))
        out = ctypes.c_void_p()
        _check(_lib.symmcomm_comm_wrap(ctypes.c_void_p(nccl_comm), 1 if probe else 0,
                                       ctypes.byref(out)))
        return cls(out)

    @classmethod
    def from_process_group(cls, group=None, probe=True):
        """Borrows the NCCL communicator of a torch.distributed NCCL process group (default: the
        world group) through ProcessGroupNCCL._comm_ptr(). NCCL creates it lazily, so a barrier
        on the group runs first when it does not exist yet. The group keeps owning it: release
        this wrapper before destroying the group. Collective when `probe`.

        PyTorch and symmcomm share the libnccl.so.2 loaded first; when that is not the NCCL
        symmcomm was built with, the device-API rule applies (the same 2.28 release, or from
        2.29.2 one at least as new): otherwise the communicator works on the fallback path and
        `info()`'s symmetric flag is False."""
        import torch
        import torch.distributed as dist
        if not dist.is_initialized():
            _fail("from_process_group: torch.distributed is not initialised "
                  "(dist.init_process_group first)")
        if group is None:
            group = dist.group.WORLD
        try:
            backend = group._get_backend(torch.device("cuda"))
        except Exception as e:  # noqa: BLE001 - PyTorch raises RuntimeError or ValueError
            _fail("from_process_group: the group has no CUDA (NCCL) backend: %s" % e)
        if not hasattr(backend, "_comm_ptr"):
            _fail("from_process_group: this PyTorch (%s) does not expose its NCCL communicator "
                  "(ProcessGroupNCCL._comm_ptr); use Communicator.init(size, "
                  "shared_unique_id(), rank, device) instead" % torch.__version__)
        ptr = backend._comm_ptr()
        if not ptr:
            dist.barrier(group=group, device_ids=[torch.cuda.current_device()])
            torch.cuda.synchronize()
            ptr = backend._comm_ptr()
        if not ptr:
            _fail("from_process_group: the group's NCCL communicator does not exist even after a "
                  "barrier on it")
        return cls.wrap(int(ptr), probe)

    def _h(self):
        if self._handle is None or not self._handle.value:
            _fail("the communicator was released")
        return self._handle

    def info(self):
        """(rank, size, device, symmetric) as the library sees them (fixed when the communicator
        is made: asked of the library once)."""
        h = self._h()
        if self._info is None:
            r, s, d, sym = (ctypes.c_int() for _ in range(4))
            _check(_lib.symmcomm_comm_info(h, ctypes.byref(r), ctypes.byref(s), ctypes.byref(d),
                                           ctypes.byref(sym)))
            self._info = (r.value, s.value, d.value, bool(sym.value))
        return self._info

    @property
    def rank(self):
        return self.info()[0]

    @property
    def size(self):
        return self.info()[1]

    @property
    def device(self):
        return self.info()[2]

    @property
    def symmetric(self):
        """True when NCCL's symmetric kernels and symmcomm's LSA kernels can run on this
        communicator (device API probed, every rank load/store reachable). Windows may exist
        without it (NCCL registers them on socket-only communicators too): is_symmetric() says
        whether a tensor lies in one, this says whether a symmetric path can use it."""
        return self.info()[3]

    def release(self):
        """Releases the handle (an owned communicator is destroyed once its pools are gone).
        Destroy CUDA graphs that captured its collectives first: NCCL keeps a communicator
        while such a graph lives (symmcomm then warns and leaks it rather than wait)."""
        if self._handle is not None:
            _check(_lib.symmcomm_comm_release(self._handle))
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Pool:
    """Symmetric memory for `comm`: a few registered arenas, sub-allocated deterministically
    (ranks that make the same calls get the same offsets). Creation with initial_bytes > 0,
    reserve() and growth are collective."""

    def __init__(self, comm, initial_bytes=0, growth_bytes=256 << 20, allow_growth=True):
        if not isinstance(comm, Communicator):
            _fail("comm must be a symmcomm.Communicator, got %s" % type(comm).__name__)
        _int_arg(initial_bytes, "initial_bytes")
        _int_arg(growth_bytes, "growth_bytes", 1)
        self.comm = comm
        out = ctypes.c_void_p()
        _check(_lib.symmcomm_pool_create(comm._h(), initial_bytes, growth_bytes,
                                         1 if allow_growth else 0, ctypes.byref(out)))
        self._handle = out

    def _h(self):
        if self._handle is None:
            _fail("the pool was destroyed")
        return self._handle

    def reserve(self, nbytes):
        """Adds an arena of `nbytes`: the explicit way to grow a pool. Collective (every rank,
        in the same order). Refused while PyTorch captures a CUDA graph on the current stream:
        registering a window there is illegal, and a rank that grows while serving and one that
        does not would wait for each other in NCCL's registration (SGLang issue 36943);
        reserve before capturing."""
        _int_arg(nbytes, "nbytes", 1)
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and \
                torch.cuda.is_current_stream_capturing():
            _fail("Pool.reserve(%d) during CUDA graph capture is refused: registering a window "
                  "is illegal under capture; reserve before capturing" % nbytes)
        _check(_lib.symmcomm_pool_reserve(self._h(), nbytes))

    def allocate(self, nbytes, alignment=0, stream=0):
        """A device pointer (int) to `nbytes` of symmetric memory, for use on `stream`."""
        _int_arg(nbytes, "nbytes", 1)
        _int_arg(alignment, "alignment")
        out = ctypes.c_void_p()
        _check(_lib.symmcomm_pool_allocate(self._h(), nbytes, alignment,
                                           ctypes.c_void_p(_stream_arg(stream)), ctypes.byref(out)))
        return out.value

    def free(self, ptr, stream=None):
        """Returns an allocation; with a stream, stream-ordered (reused only once `stream`
        passes this point)."""
        _int_arg(ptr, "ptr", 1)
        if stream is None:
            _check(_lib.symmcomm_pool_free(self._h(), ctypes.c_void_p(ptr)))
        else:
            _check(_lib.symmcomm_pool_free_async(self._h(), ctypes.c_void_p(ptr),
                                                 ctypes.c_void_p(_stream_arg(stream))))

    def stats(self):
        """reserved_bytes, in_use_bytes, arenas, live_allocations."""
        vals = [ctypes.c_size_t() for _ in range(4)]
        _check(_lib.symmcomm_pool_stats(self._h(), *(ctypes.byref(v) for v in vals)))
        return dict(zip(("reserved_bytes", "in_use_bytes", "arenas", "live_allocations"),
                        (v.value for v in vals)))

    def use_for_torch(self):
        """Routes symmcomm's PyTorch pluggable-allocator entry points for this pool's device
        here (see MemPool-style use in examples/python)."""
        _check(_lib.symmcomm_torch_set_pool(self._h()))

    def destroy(self):
        """Releases every arena (collective)."""
        if self._handle is not None:
            _check(_lib.symmcomm_pool_destroy(self._handle))
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()


def torch_mem_pool(pool):
    """A torch.cuda.MemPool whose tensors come from `pool` (so they lie in its symmetric
    windows): `with torch.cuda.use_mem_pool(symmcomm.torch_mem_pool(pool)): ...`. Routes the
    library's PyTorch allocator entry points for the pool's device to `pool`. Create the pool
    with allow_growth=False and enough initial_bytes: growth is collective, and PyTorch may
    allocate in different orders on different ranks."""
    import torch  # only here: the rest of the package works without PyTorch
    if not isinstance(pool, Pool):
        _fail("pool must be a symmcomm.Pool, got %s" % type(pool).__name__)
    pool.use_for_torch()
    allocator = torch.cuda.memory.CUDAPluggableAllocator(library_path(), "symmcomm_torch_alloc",
                                                         "symmcomm_torch_free")
    return torch.cuda.MemPool(allocator.allocator())


def verify(comm, stream=0):
    """Collective check that every rank holds the same windows and allocations
    (NotSymmetricError names the first difference)."""
    _check(_lib.symmcomm_verify(comm._h(), ctypes.c_void_p(_stream_arg(stream))))


def provenance(comm, ptr, nbytes):
    """(symmetric, window_offset, why) for [ptr, ptr + nbytes) on `comm`; a tensor may be
    passed for ptr (its storage is used, nbytes may then be None)."""
    if _is_tensor(ptr):
        t = ptr
        ptr = t.data_ptr()
        if nbytes is None:
            nbytes = t.numel() * t.element_size()
    _int_arg(ptr, "ptr")
    _int_arg(nbytes, "nbytes")
    sym, off = ctypes.c_int(), ctypes.c_size_t()
    _check(_lib.symmcomm_provenance(comm._h(), ctypes.c_void_p(ptr), nbytes, ctypes.byref(sym),
                                    ctypes.byref(off)))
    why = "" if sym.value else _lib.symmcomm_last_error().decode("utf-8", "replace")
    return bool(sym.value), off.value, why


def is_symmetric(comm, tensor):
    """True when the tensor's bytes lie in a symmetric window of `comm`."""
    return provenance(comm, tensor, None)[0]


# ---- tensors ---------------------------------------------------------------------------------

class Plan:
    """The path a collective took ("nccl-symmetric", "lsa-kernel" or "fallback"), why (`why`:
    the reason's name, e.g. "buffer-not-symmetric"), whether plain buffers were staged, and
    `reason`, symmcomm's explanation (Plan::reason()): formatted by the library only when read.
    Unpacks as (path, reason)."""

    __slots__ = ("path", "why", "staged", "_c", "_text")

    def __init__(self, c_plan):
        self._c = c_plan
        self.path = _capi.TAKEN.get(c_plan.path, "unknown")
        self.why = _capi.REASONS.get(c_plan.reason, "unknown")
        self.staged = bool(c_plan.staged)
        self._text = None

    @property
    def reason(self):
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


def _is_tensor(x):
    return all(hasattr(x, a) for a in ("data_ptr", "numel", "dtype", "is_contiguous"))


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
    if count % NVFP4_BLOCK:
        _fail("%s.data holds %d bytes = %d elements, not a multiple of %d"
              % (name, n_data, count, NVFP4_BLOCK))
    layout = _capi.SCALE_LAYOUTS["linear"]
    if row_elements is not None:
        _int_arg(row_elements, "row_elements", 1)
        if row_elements % NVFP4_BLOCK:
            _fail("row_elements %d is not a multiple of %d" % (row_elements, NVFP4_BLOCK))
        if count % row_elements:
            _fail("%s holds %d elements, not whole rows of row_elements %d"
                  % (name, count, row_elements))
        need = swizzled_scale_bytes(count // row_elements, row_elements // NVFP4_BLOCK)
        if n_scales < need:
            _fail("%s.block_scales has %d elements; swizzled scales of %d rows of %d need %d "
                  "(symmcomm.swizzled_scale_bytes)" % (name, n_scales, count // row_elements,
                                                       row_elements, need))
        layout = _capi.SCALE_LAYOUTS["swizzled128x4"]
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


def _path_arg(path):
    if path not in _capi.PATHS:
        _fail("path must be one of %s, got %r" % (", ".join(_capi.PATHS), path))
    return _capi.options(_capi.PATHS[path])


def _stream_arg(stream, device=None):
    """The cudaStream_t (int) for `stream`: an int, a torch.cuda.Stream, or None for PyTorch's
    current stream of CUDA device `device` (an index: the communicator's, or a checked tensor's;
    0 without PyTorch or without a device)."""
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and device is not None and device >= 0:
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is not None:  # the address alone, without a torch.cuda.Stream object
                return raw(device)
            return torch.cuda.current_stream(device).cuda_stream
        return 0
    if hasattr(stream, "cuda_stream"):
        return stream.cuda_stream
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        _fail("stream must be a torch.cuda.Stream, a cudaStream_t address (int) or None, got %r"
              % (stream,))
    return stream


def _first_tensor(v):
    return v.data if isinstance(v, (Nvfp4Tensor, Fp8Tensor)) else v


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
    if b.count != a.count * size:
        _fail("recv holds %d elements, not send's %d x comm.size %d" % (b.count, a.count, size))
    return _call(_lib.symmcomm_all_gather, comm, ctypes.byref(a), ctypes.byref(b), stream=s,
                 options=o)


def _counts_arg(counts, size, quantized):
    if not isinstance(counts, (list, tuple)) or len(counts) != size:
        _fail("counts must be a list of comm.size (%d) ints, got %r" % (size, counts))
    n = [_int_arg(c, "counts[%d]" % i) for i, c in enumerate(counts)]
    if quantized:
        for i, c in enumerate(n):
            if c % NVFP4_BLOCK:
                _fail("counts[%d] = %d is not a multiple of %d (NVFP4 blocks)" % (i, c, NVFP4_BLOCK))
    return n, (ctypes.c_size_t * size)(*n)


def _check_v_counts(mine, whole, n, rank):
    """A v-collective's sizes: `mine` (name, tensor) holds counts[rank] elements, `whole` their
    sum."""
    if mine[1].count != n[rank]:
        _fail("%s holds %d elements, not counts[%d] = %d" % (mine[0], mine[1].count, rank, n[rank]))
    if whole[1].count != sum(n):
        _fail("%s holds %d elements, not sum(counts) = %d" % (whole[0], whole[1].count, sum(n)))


def all_gatherv(comm, send, recv, counts, stream=None, path="auto", row_elements=None):
    """Gathers counts[r] elements from every rank r into `recv` (rank r's part after ranks
    0..r-1): bf16 tensors, Fp8Tensor or Nvfp4Tensor (counts multiples of 16; gathered scales:
    comm.size floats). `counts`: one int per rank, the same on every rank; send holds
    counts[rank] elements, recv their sum. NVFP4 with `row_elements`: swizzled block scales as
    in all_gather (every count whole rows). Returns the Plan."""
    rank, size, device, _ = comm.info()
    _nvfp4_only(send, row_elements, "all_gatherv")
    n, arr = _counts_arg(counts, size, isinstance(send, Nvfp4Tensor))
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    a, b = _gather_views(send, recv, device, size, row_elements)
    _check_v_counts(("send", a), ("recv", b), n, rank)
    return _call(_lib.symmcomm_all_gatherv, comm, ctypes.byref(a), ctypes.byref(b), arr,
                 stream=s, options=o)


def _reduce_send(send, device):
    """The send tensor of a reduce-scatter: NVFP4, FP8 (one scale) or bf16."""
    if isinstance(send, Nvfp4Tensor):
        return _nvfp4(send, "send", device, 1)
    if isinstance(send, Fp8Tensor):
        return _fp8(send, "send", device, 1)
    return _plain(send, "send", _BF16, device)


def _reduce_views(send, recv, device):
    """The send and recv tensors of a reduce-scatter, their combination checked."""
    quantized = isinstance(send, (Nvfp4Tensor, Fp8Tensor))
    a = _reduce_send(send, device)
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
    return a, _plain(recv, "recv", _BF16 + _F32 if quantized else _BF16, device)


def reduce_scatter(comm, send, recv, stream=None, path="auto"):
    """Sums `send` over the ranks and leaves this rank's shard in `recv`. send bf16: recv bf16
    (NCCL's sum). send an Nvfp4Tensor / Fp8Tensor with per-rank scales (dequantized, summed in
    fp32): recv a bf16 tensor (rounded once), a float32 tensor (no rounding), or a tensor of
    send's own format (re-quantized: an Nvfp4Tensor, or an Fp8Tensor of the same FP8 format, its
    one scale computed from the sum). Returns the Plan."""
    rank, size, device, _ = comm.info()
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    a, b = _reduce_views(send, recv, device)
    if a.count != b.count * size:
        _fail("send holds %d elements, not recv's %d x comm.size %d" % (a.count, b.count, size))
    return _call(_lib.symmcomm_reduce_scatter, comm, ctypes.byref(a), ctypes.byref(b), stream=s,
                 options=o)


def reduce_scatterv(comm, send, recv, counts, stream=None, path="auto"):
    """Sums `send` over the ranks and leaves counts[rank] elements of the sum in `recv` (rank
    r's shard after those of ranks 0..r-1): bf16 -> bf16, or an Nvfp4Tensor / Fp8Tensor with
    per-rank scales -> bf16 (summed in fp32, rounded once; counts multiples of 16). `counts`:
    one int per rank, the same on every rank; send holds their sum. Returns the Plan."""
    rank, size, device, _ = comm.info()
    quantized = isinstance(send, (Nvfp4Tensor, Fp8Tensor))
    n, arr = _counts_arg(counts, size, quantized)
    o = _path_arg(path)
    s = _stream_arg(stream, device)
    if isinstance(recv, (Nvfp4Tensor, Fp8Tensor)):
        _fail("reduce_scatterv: recv must be a bf16 tensor, got %s" % type(recv).__name__)
    a = _reduce_send(send, device)
    b = _plain(recv, "recv", _BF16, device)
    _check_v_counts(("recv", b), ("send", a), n, rank)
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
    if a.count % NVFP4_BLOCK:
        _fail("input holds %d elements, not a multiple of %d" % (a.count, NVFP4_BLOCK))
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
    if b.count != a.count * size:
        _fail("recv holds %d elements, not input's %d x comm.size %d" % (b.count, a.count, size))
    return _call(_lib.symmcomm_quantize_all_gather, comm, ctypes.byref(a), ctypes.c_void_p(s_ptr),
                 ctypes.byref(b), stream=st, options=o)


#: The device-side counts of a ragged gather (int32 CUDA tensors): `count` this rank's rows
#: (1 element, read when the call runs), `counts` and `offsets` comm.size elements the call
#: writes (every rank's count, their exclusive prefix), `overflow` 1 element set to 1 when a
#: count is outside 0..capacity.
DeviceCounts = collections.namedtuple("DeviceCounts", ["count", "counts", "offsets", "overflow"])

_I32 = ("int32",)


def _device_counts(counts, size, device, capacity):
    if not isinstance(counts, DeviceCounts):
        _fail("counts must be a symmcomm.DeviceCounts(count, counts, offsets, overflow), got %s"
              % type(counts).__name__)
    ptrs = []
    for name, want in (("count", 1), ("counts", size), ("offsets", size), ("overflow", 1)):
        p, k = _tensor(getattr(counts, name), "counts." + name, _I32, device)
        if k != want:
            _fail("counts.%s has %d elements; expected %d" % (name, k, want))
        ptrs.append(p)
    return _capi.DeviceCountsC(ptrs[0], capacity, ptrs[1], ptrs[2], ptrs[3])


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
    if a.count % row:
        _fail("send holds %d elements, not whole rows of row_elements %d" % (a.count, row))
    capacity = a.count // row
    if b.count != size * a.count:
        _fail("recv holds %d elements, not comm.size %d x send's %d (capacity rows)"
              % (b.count, size, a.count))
    dc = _device_counts(counts, size, device, capacity)
    return _call(_lib.symmcomm_all_gatherv_device, comm, ctypes.byref(a), ctypes.byref(b), row,
                 ctypes.byref(dc), stream=s, options=o)


def reduce_scatterv_device(comm, send, recv, counts, row_elements, stream=None, path="auto"):
    """Sums `send` over the ranks and leaves this rank's counts.count rows of it in `recv`, the
    shard sizes on the device (MoE combine after all_gatherv_device): `send` (bf16 tensor or
    Nvfp4Tensor with per-rank global scales) holds every rank's shard compactly (rank r's rows
    at counts.offsets[r]) in room for comm.size x capacity rows of `row_elements`; `recv` (bf16)
    holds capacity rows, the ones past this rank's count written as 0. Returns the Plan."""
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
    if b.count % row:
        _fail("recv holds %d elements, not whole rows of row_elements %d" % (b.count, row))
    capacity = b.count // row
    if a.count != size * b.count:
        _fail("send holds %d elements, not comm.size %d x recv's %d (capacity rows)"
              % (a.count, size, b.count))
    dc = _device_counts(counts, size, device, capacity)
    return _call(_lib.symmcomm_reduce_scatterv_device, comm, ctypes.byref(a), ctypes.byref(b), row,
                 ctypes.byref(dc), stream=s, options=o)


def device_counts_overflowed(comm, counts, stream=None, clear=True):
    """Whether a ragged gather saw a count outside 0..capacity since counts.overflow was last
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
