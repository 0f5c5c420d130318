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
import ctypes
import sys

from . import _capi
from .errors import (CudaError, Error, InternalError, LogicError, NcclError, NotSymmetricError,
                     OutOfMemoryError, TimeoutError)

__all__ = [
    "Error", "LogicError", "CudaError", "NcclError", "OutOfMemoryError", "NotSymmetricError",
    "TimeoutError", "InternalError", "version", "abi_version", "library_path", "unique_id",
    "Communicator", "Pool", "Plan", "Nvfp4Tensor", "Fp8Tensor", "provenance", "is_symmetric",
    "verify", "torch_mem_pool", "all_gather", "all_gatherv", "reduce_scatter",
    "quantize_all_gather", "reduce_scatterv", "nccl_version", "DeviceCounts",
    "all_gatherv_device", "reduce_scatterv_device", "device_counts_overflowed",
    "share_gpus_if_needed", "rank_part", "swizzled_scale_bytes", "NVFP4_BLOCK",
    "quantize_nvfp4", "dequantize_nvfp4", "quantize_fp8", "dequantize_fp8", "shared_unique_id",
]

from ._collectives import (DeviceCounts, all_gather, all_gatherv, all_gatherv_device,
                           dequantize_fp8, dequantize_nvfp4, device_counts_overflowed,
                           quantize_all_gather, quantize_fp8, quantize_nvfp4, reduce_scatter,
                           reduce_scatterv, reduce_scatterv_device)
from ._core import NVFP4_BLOCK, _check, _fail, _int_arg, _lib, _path
from ._tensors import (Fp8Tensor, Nvfp4Tensor, Plan, _is_tensor, _stream_arg, rank_part,
                       swizzled_scale_bytes)

#: The loaded library's version, "major.minor.patch" (the package follows the library's).
__version__ = _lib.symmcomm_version().decode()

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
        """This process's rank in the communicator."""
        return self.info()[0]

    @property
    def size(self):
        """Ranks in the communicator."""
        return self.info()[1]

    @property
    def device(self):
        """The CUDA device index of this rank."""
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
        while such a graph lives (symmcomm then warns and leaks it rather than wait). The names
        symmcomm.ops.register_communicator gave it are forgotten first."""
        if self._handle is not None:
            ops = sys.modules.get("symmcomm.ops")  # its operators must not reach a freed handle
            if ops is not None:
                ops._forget(self)
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
