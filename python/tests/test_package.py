"""The package on any machine: loading, the ABI check, error mapping and every argument check
that needs no GPU (tensors are stand-ins with PyTorch's attributes; the library is never
reached with them). GPU and PyTorch tests: test_torch.py."""
import builtins
import ctypes
import os
import sys

import pytest

import symmcomm
from symmcomm import _capi, errors


class Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class Device:
    def __init__(self, index):
        self.index = index

    def __str__(self):
        return "cuda:%d" % self.index if self.index is not None else "cpu"


class FakeTensor:
    """PyTorch's tensor attributes without PyTorch (never dereferenced)."""

    def __init__(self, dtype, numel, cuda=True, device=0, contiguous=True, ptr=1 << 20):
        self.dtype = Dtype(dtype)
        self._numel = numel
        self.is_cuda = cuda
        self.device = Device(device if cuda else None)
        self._contiguous = contiguous
        self._ptr = ptr

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._numel

    def element_size(self):
        return 2 if self.dtype.name == "bfloat16" else 4 if self.dtype.name == "float32" else 1

    def is_contiguous(self):
        return self._contiguous


class FakeComm(symmcomm.Communicator):
    """A communicator of `size` ranks on cuda:0 whose handle the checks never reach."""

    def __init__(self, size=2):
        super().__init__(ctypes.c_void_p(0))
        self._size = size

    def info(self):
        return 0, self._size, 0, False


def nvfp4(count, globals_=1, **kw):
    return symmcomm.Nvfp4Tensor(FakeTensor("uint8", count // 2, **kw),
                                FakeTensor("float8_e4m3fn", count // 16, **kw),
                                FakeTensor("float32", globals_, **kw))


def logic_error(fn):
    with pytest.raises(symmcomm.LogicError) as e:
        fn()
    assert isinstance(e.value, ValueError)
    assert e.value.status == _capi.INVALID_ARGUMENT
    return str(e.value)


class NullComm(FakeComm):
    """A FakeComm whose handle reaches the library as NULL: every Python check passes, the C
    ABI refuses the communicator, so each call's arguments cross ctypes for real."""

    def _h(self):
        return None


def left_to_the_library(fn):
    """`fn` (a call on a NullComm) passed every Python check and reached the C ABI, which names
    the NULL communicator. Python leaves how counts relate to the library's one check, whose
    texts tests/unit/collectives/validate_call_test.cpp asserts and test_torch.py sees arrive."""
    m = logic_error(fn)
    assert "comm is NULL" in m, m


# ---- loading and the ABI ---------------------------------------------------------------------

@pytest.mark.skipif(os.environ.get("SYMMCOMM_EXPECT_WHEEL") != "1",
                    reason="only against an installed wheel (scripts/python_wheel.sh)")
def test_the_installed_package_carries_its_library():
    pkg = os.path.dirname(symmcomm.__file__)
    assert symmcomm.library_path() == os.path.join(pkg, "libsymmcomm_c.so")
    assert "SYMMCOMM_LIBRARY" not in os.environ


def test_every_public_name_is_there_and_documented():
    # The package is split by job (_core, _tensors, _collectives): what __all__ promises must be
    # reachable from the package itself, each with its docstring.
    for name in symmcomm.__all__:
        assert hasattr(symmcomm, name), name
        obj = getattr(symmcomm, name)
        if callable(obj) and not (isinstance(obj, type) and issubclass(obj, Exception)):
            assert obj.__doc__, name
    assert symmcomm.NVFP4_BLOCK == 16
    assert symmcomm.Plan.__module__ == "symmcomm._tensors"


def test_loads_the_library_and_reports_versions():
    assert os.path.exists(symmcomm.library_path())
    assert symmcomm.version() == "0.1.0"
    assert symmcomm.__version__ == symmcomm.version()
    assert symmcomm.abi_version() == _capi.ABI_VERSION


def test_an_abi_mismatch_is_refused_at_load(monkeypatch):
    monkeypatch.setattr(_capi, "ABI_VERSION", _capi.ABI_VERSION + 1)
    monkeypatch.setenv("SYMMCOMM_LIBRARY", symmcomm.library_path())
    with pytest.raises(ImportError) as e:
        _capi.load()
    assert "has C ABI %d, this package needs %d" % (_capi.ABI_VERSION - 1,
                                                   _capi.ABI_VERSION) in str(e.value)


def test_a_missing_library_names_where_it_looked(monkeypatch, tmp_path):
    missing = str(tmp_path / "libsymmcomm_c.so")
    monkeypatch.setenv("SYMMCOMM_LIBRARY", missing)
    with pytest.raises(ImportError) as e:
        _capi.load()
    assert missing in str(e.value) and "SYMMCOMM_LIBRARY" in str(e.value)


def test_the_search_order_starts_beside_the_package(monkeypatch):
    monkeypatch.delenv("SYMMCOMM_LIBRARY", raising=False)
    paths = _capi.candidates()
    assert paths[0] == os.path.join(os.path.dirname(_capi.__file__), "libsymmcomm_c.so")
    assert paths[-1] == "libsymmcomm_c.so"  # the dynamic loader's own search last


# ---- errors ----------------------------------------------------------------------------------

def test_every_status_maps_to_its_exception():
    expected = {
        _capi.INVALID_ARGUMENT: (symmcomm.LogicError, ValueError),
        _capi.CUDA: (symmcomm.CudaError,),
        _capi.NCCL: (symmcomm.NcclError,),
        _capi.OUT_OF_MEMORY: (symmcomm.OutOfMemoryError, MemoryError),
        _capi.NOT_SYMMETRIC: (symmcomm.NotSymmetricError,),
        _capi.INTERNAL: (symmcomm.InternalError,),
        _capi.TIMEOUT: (symmcomm.TimeoutError, builtins.TimeoutError),
    }
    for status, classes in expected.items():
        e = errors.error_for(status, "text %d" % status)
        for cls in classes + (symmcomm.Error,):
            assert isinstance(e, cls), (status, cls)
        assert e.status == status and str(e) == "text %d" % status
    unknown = errors.error_for(99, "x")
    assert isinstance(unknown, symmcomm.InternalError) and "unknown symmcomm status 99" in str(unknown)


def test_the_library_message_reaches_the_exception():
    # A NULL pool: the C ABI's own argument check, its text carried over.
    with pytest.raises(symmcomm.LogicError) as e:
        symmcomm._check(symmcomm._lib.symmcomm_pool_stats(None, None, None, None, None))
    assert "pool is NULL" in str(e.value)


def test_codecs_without_a_gpu_say_so():
    if _has_gpu():
        pytest.skip("this machine has a GPU (test_torch.py covers the codecs)")
    src = FakeTensor("bfloat16", 64)
    with pytest.raises(symmcomm.CudaError) as e:
        symmcomm.quantize_nvfp4(src, nvfp4(64))
    assert "no CUDA device" in str(e.value)


def _has_gpu():
    n = ctypes.c_int(0)
    try:
        cudart = ctypes.CDLL("libcudart.so")
    except OSError:
        return False
    return cudart.cudaGetDeviceCount(ctypes.byref(n)) == 0 and n.value > 0


# ---- argument checks -------------------------------------------------------------------------

def test_communicator_arguments_are_named():
    uid = b"\0" * 128
    assert "nranks must be >= 1, got 0" in logic_error(lambda: symmcomm.Communicator.init(0, uid, 0, 0))
    assert "rank 2 is outside 0..1" in logic_error(lambda: symmcomm.Communicator.init(2, uid, 2, 0))
    assert "device must be an int" in logic_error(lambda: symmcomm.Communicator.init(2, uid, 0, "0"))
    assert "uid must be the 128 bytes" in logic_error(lambda: symmcomm.Communicator.init(2, b"x", 0, 0))
    assert "non-null address" in logic_error(lambda: symmcomm.Communicator.wrap(0))
    assert "non-null address" in logic_error(lambda: symmcomm.Communicator.wrap("0x1"))
    # Never a segfault or a silent truncation: refused, naming the value.
    assert "-1 cannot be a pointer" in logic_error(lambda: symmcomm.Communicator.wrap(-1))
    assert "%d cannot be a pointer" % 2**70 in logic_error(lambda: symmcomm.Communicator.wrap(2**70))
    assert "cannot be the address of an ncclComm_t" in logic_error(
        lambda: symmcomm.Communicator.wrap(0x1003, probe=False))
    assert "cannot be the address of an ncclComm_t" in logic_error(
        lambda: symmcomm.Communicator.wrap(12, probe=False))
    released = symmcomm.Communicator(None)
    assert "released" in logic_error(released.info)


def test_pool_arguments_are_named():
    assert "comm must be a symmcomm.Communicator" in logic_error(lambda: symmcomm.Pool(object()))
    assert "initial_bytes must be >= 0, got -1" in logic_error(
        lambda: symmcomm.Pool(FakeComm(), initial_bytes=-1))
    assert "growth_bytes must be >= 1" in logic_error(
        lambda: symmcomm.Pool(FakeComm(), growth_bytes=0))


def test_all_gather_checks_every_tensor():
    comm = FakeComm(size=2)
    ok_send, ok_recv = nvfp4(64), nvfp4(128, globals_=2)
    left_to_the_library(lambda: symmcomm.all_gather(NullComm(size=2), ok_send,
                                                    nvfp4(96, globals_=2)))
    m = logic_error(lambda: symmcomm.all_gather(comm, ok_send, nvfp4(128, globals_=1)))
    assert "recv.global_scale has 1 elements; expected 2" in m
    bad_scales = ok_send._replace(block_scales=FakeTensor("float8_e4m3fn", 3))
    m = logic_error(lambda: symmcomm.all_gather(comm, bad_scales, ok_recv))
    assert "send.block_scales has 3 elements; 32 data bytes need 4" in m
    wrong_type = ok_send._replace(global_scale=FakeTensor("bfloat16", 1))
    m = logic_error(lambda: symmcomm.all_gather(comm, wrong_type, ok_recv))
    assert "send.global_scale has dtype bfloat16; expected float32" in m
    on_cpu = ok_send._replace(data=FakeTensor("uint8", 32, cuda=False))
    assert "send.data must be on a CUDA device" in logic_error(
        lambda: symmcomm.all_gather(comm, on_cpu, ok_recv))
    other_gpu = ok_send._replace(data=FakeTensor("uint8", 32, device=1))
    assert "send.data is on cuda:1, but the communicator's rank is on cuda:0" in logic_error(
        lambda: symmcomm.all_gather(comm, other_gpu, ok_recv))
    strided = ok_send._replace(data=FakeTensor("uint8", 32, contiguous=False))
    assert "send.data must be contiguous" in logic_error(
        lambda: symmcomm.all_gather(comm, strided, ok_recv))
    assert "recv must be a symmcomm.Nvfp4Tensor" in logic_error(
        lambda: symmcomm.all_gather(comm, ok_send, FakeTensor("uint8", 64)))
    assert "path must be one of" in logic_error(
        lambda: symmcomm.all_gather(comm, ok_send, ok_recv, path="nccl"))
    assert "stream must be" in logic_error(
        lambda: symmcomm.all_gather(comm, ok_send, ok_recv, stream=-1))
    # bf16 and FP8
    m = logic_error(lambda: symmcomm.all_gather(comm, FakeTensor("float16", 8),
                                                FakeTensor("bfloat16", 16)))
    assert "send has dtype float16; expected bfloat16" in m
    e4 = symmcomm.Fp8Tensor(FakeTensor("float8_e4m3fn", 16), FakeTensor("float32", 1))
    e5 = symmcomm.Fp8Tensor(FakeTensor("float8_e5m2", 32), FakeTensor("float32", 2))
    assert "different FP8 formats" in logic_error(lambda: symmcomm.all_gather(comm, e4, e5))
    contradiction = e4._replace(format="e5m2")
    assert "contradicts send.data's dtype float8_e4m3fn" in logic_error(
        lambda: symmcomm.all_gather(comm, contradiction, e5))


def test_reduce_scatter_checks_shapes_and_types():
    comm = FakeComm(size=4)
    out = FakeTensor("bfloat16", 16)
    left_to_the_library(lambda: symmcomm.reduce_scatter(NullComm(size=4), nvfp4(32), out))
    m = logic_error(lambda: symmcomm.reduce_scatter(comm, FakeTensor("bfloat16", 64),
                                                    FakeTensor("float32", 16)))
    assert "recv has dtype float32; expected bfloat16" in m  # fp32 output: quantized sends only
    m = logic_error(lambda: symmcomm.reduce_scatter(comm, nvfp4(64), FakeTensor("float16", 16)))
    assert "recv has dtype float16; expected bfloat16 or float32" in m
    # Re-quantized outputs: the send's own format, a quarter of its elements at 4 ranks.
    m = logic_error(lambda: symmcomm.reduce_scatter(comm, FakeTensor("bfloat16", 64), nvfp4(16)))
    assert "recv is a Nvfp4Tensor: a re-quantized output needs send of the same format" in m
    left_to_the_library(lambda: symmcomm.reduce_scatter(NullComm(size=4), nvfp4(64), nvfp4(32)))
    e4 = symmcomm.Fp8Tensor(FakeTensor("float8_e4m3fn", 64), FakeTensor("float32", 1))
    e5 = symmcomm.Fp8Tensor(FakeTensor("float8_e5m2", 16), FakeTensor("float32", 1))
    assert "different FP8 formats" in logic_error(lambda: symmcomm.reduce_scatter(comm, e4, e5))
    m = logic_error(lambda: symmcomm.reduce_scatter(
        comm, symmcomm.Fp8Tensor(FakeTensor("uint8", 64), FakeTensor("float32", 1), "e6m1"), out))
    assert "send.format must be 'e4m3' or 'e5m2'" in m
    odd = symmcomm.Nvfp4Tensor(FakeTensor("uint8", 12), FakeTensor("uint8", 1),
                               FakeTensor("float32", 1))
    left_to_the_library(lambda: symmcomm.reduce_scatter(NullComm(size=4), odd, out))


def test_all_gatherv_checks_counts_and_tensors():
    comm = FakeComm(size=2)
    assert "counts must be a list of comm.size (2) ints" in logic_error(
        lambda: symmcomm.all_gatherv(comm, nvfp4(32), nvfp4(64, globals_=2), [32]))
    assert "counts[1] must be >= 0, got -16" in logic_error(
        lambda: symmcomm.all_gatherv(comm, nvfp4(32), nvfp4(64, globals_=2), [32, -16]))
    assert "counts[1] must be an int" in logic_error(
        lambda: symmcomm.all_gatherv(comm, nvfp4(32), nvfp4(64, globals_=2), [32, 16.0]))
    null = NullComm(size=2)
    for counts in ([32, 24], [16, 48], [32, 48]):  # odd blocks, send, sum: the library's
        left_to_the_library(
            lambda: symmcomm.all_gatherv(null, nvfp4(32), nvfp4(64, globals_=2), counts))
    assert "recv.global_scale has 1 elements; expected 2" in logic_error(
        lambda: symmcomm.all_gatherv(comm, nvfp4(32), nvfp4(80, globals_=1), [32, 48]))
    left_to_the_library(lambda: symmcomm.all_gatherv(
        null, FakeTensor("bfloat16", 5), FakeTensor("bfloat16", 10), [5, 7]))
    e4 = symmcomm.Fp8Tensor(FakeTensor("float8_e4m3fn", 16), FakeTensor("float32", 1))
    e5 = symmcomm.Fp8Tensor(FakeTensor("float8_e5m2", 40), FakeTensor("float32", 2))
    assert "different FP8 formats" in logic_error(
        lambda: symmcomm.all_gatherv(comm, e4, e5, [16, 24]))


def test_swizzled_scales_are_checked_and_sized():
    comm = FakeComm(size=2)
    # 2 ranks x 3 rows of 112 elements (7 scale columns): 6 rows -> 128 x 8 bytes.
    assert symmcomm.swizzled_scale_bytes(6, 7) == 1024
    send = nvfp4(3 * 112)
    good = symmcomm.Nvfp4Tensor(FakeTensor("uint8", 6 * 112 // 2),
                                FakeTensor("uint8", 1024), FakeTensor("float32", 2))
    small = good._replace(block_scales=FakeTensor("uint8", 6 * 112 // 16))
    assert "recv.block_scales has 42 elements; swizzled scales of 6 rows of 112 need 1024" in \
        logic_error(lambda: symmcomm.all_gather(comm, send, small, row_elements=112))
    # Rows that are no NVFP4 rows, or not whole: the library's check, not a scale-size error.
    for row in (100, 256):
        left_to_the_library(
            lambda: symmcomm.all_gather(NullComm(size=2), send, good, row_elements=row))
    assert "all_gather: row_elements (swizzled block scales) applies to NVFP4 only" in \
        logic_error(lambda: symmcomm.all_gather(comm, FakeTensor("bfloat16", 8),
                                                FakeTensor("bfloat16", 16), row_elements=16))
    fp8 = symmcomm.Fp8Tensor(FakeTensor("float8_e4m3fn", 128), FakeTensor("float32", 2))
    assert "quantize_all_gather: row_elements" in logic_error(
        lambda: symmcomm.quantize_all_gather(comm, FakeTensor("bfloat16", 64), fp8,
                                             row_elements=16))
    assert "recv.block_scales has 42 elements" in logic_error(
        lambda: symmcomm.all_gatherv(comm, send, small, [336, 336], row_elements=112))


def test_rank_part_checks_its_arguments():
    assert "rank 2 is outside 0..1" in logic_error(lambda: symmcomm.rank_part(nvfp4(64), 2, 2))
    assert "not 3 equal parts" in logic_error(lambda: symmcomm.rank_part(nvfp4(64), 0, 3))
    assert "gathered must be a symmcomm.Nvfp4Tensor or Fp8Tensor" in logic_error(
        lambda: symmcomm.rank_part(FakeTensor("uint8", 64), 0, 2))


def test_the_loaded_nccl_version_reads_like_a_release():
    parts = symmcomm.nccl_version().split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts) and int(parts[0]) == 2


def test_codec_arguments_are_checked():
    m = logic_error(lambda: symmcomm.quantize_nvfp4(FakeTensor("bfloat16", 64), nvfp4(32)))
    assert "dst holds 32 elements, src 64" in m
    m = logic_error(lambda: symmcomm.dequantize_nvfp4(nvfp4(64), FakeTensor("float32", 64)))
    assert "dst has dtype float32; expected bfloat16" in m


def test_quantize_all_gather_checks_its_arguments():
    comm = FakeComm(size=2)
    x = FakeTensor("bfloat16", 64)
    null = NullComm(size=2)
    left_to_the_library(lambda: symmcomm.quantize_all_gather(null, x, nvfp4(64, globals_=2)))
    left_to_the_library(lambda: symmcomm.quantize_all_gather(null, FakeTensor("bfloat16", 40),
                                                             nvfp4(80, globals_=2)))
    m = logic_error(lambda: symmcomm.quantize_all_gather(comm, x, nvfp4(128, globals_=2),
                                                         scale=FakeTensor("bfloat16", 1)))
    assert "scale has dtype bfloat16; expected float32" in m
    m = logic_error(lambda: symmcomm.quantize_all_gather(comm, x, FakeTensor("uint8", 128)))
    assert "recv must be a symmcomm.Nvfp4Tensor or Fp8Tensor" in m
    fp8 = symmcomm.Fp8Tensor(FakeTensor("float8_e5m2", 128), FakeTensor("float32", 1))
    assert "recv.scale has 1 elements; expected 2" in logic_error(
        lambda: symmcomm.quantize_all_gather(comm, x, fp8))


def test_fp8_codecs_check_arguments_and_say_when_there_is_no_gpu():
    codes = symmcomm.Fp8Tensor(FakeTensor("float8_e4m3fn", 32), FakeTensor("float32", 1))
    assert "dst holds 32 elements, src 64" in logic_error(
        lambda: symmcomm.quantize_fp8(FakeTensor("bfloat16", 64), codes))
    assert "dst has dtype float16; expected bfloat16" in logic_error(
        lambda: symmcomm.dequantize_fp8(codes, FakeTensor("float16", 32)))
    if _has_gpu():
        return
    with pytest.raises(symmcomm.CudaError) as e:
        symmcomm.quantize_fp8(FakeTensor("bfloat16", 32), codes)
    assert "no CUDA device" in str(e.value)


class FakeDist:
    """torch.distributed's calls shared_unique_id makes: rank 0 broadcasts to the others."""

    def __init__(self, rank, initialized=True, deliver=None):
        self.rank, self.initialized, self.deliver, self.sent = rank, initialized, deliver, None

    def is_initialized(self):
        return self.initialized

    def get_rank(self, group=None):
        return self.rank

    def broadcast_object_list(self, objects, src=0, group=None):
        assert src == 0
        if self.rank == 0:
            self.sent = objects[0]
        else:
            objects[0] = self.deliver


def test_shared_unique_id_broadcasts_rank_zeros_id(monkeypatch):
    n = symmcomm._lib.symmcomm_unique_id_bytes()
    fresh = bytes(range(n % 256)) + bytes(n - n % 256)
    monkeypatch.setattr(symmcomm, "unique_id", lambda: fresh)
    root = FakeDist(0)
    assert symmcomm.shared_unique_id(root) == fresh and root.sent == fresh
    assert symmcomm.shared_unique_id(FakeDist(3, deliver=fresh)) == fresh
    assert "not initialised" in logic_error(
        lambda: symmcomm.shared_unique_id(FakeDist(0, initialized=False)))
    assert "not %d bytes" % n in logic_error(
        lambda: symmcomm.shared_unique_id(FakeDist(1, deliver=b"short")))


# ---- the C ABI v2 underneath -----------------------------------------------------------------

def test_enumerations_come_from_the_library():
    lib = symmcomm._lib
    for kind, table in ((1, _capi.PATHS), (3, _capi.DTYPES), (4, _capi.SCALE_LAYOUTS),
                        (0, _capi.STATUS)):
        assert table, kind
        for name, value in table.items():
            assert lib.symmcomm_enum_name(kind, value).decode() == name
        assert lib.symmcomm_enum_name(kind, len(table)) is None
    assert set(_capi.PATHS) == {"auto", "nccl-symmetric", "lsa-kernel", "fallback"}
    assert set(_capi.TAKEN.values()) == {"nccl-symmetric", "lsa-kernel", "fallback"}
    assert {"nvfp4", "fp8e4m3", "fp8e5m2", "bf16", "fp32"} == set(_capi.DTYPES)
    assert _capi.SUCCESS == 0 and _capi.INVALID_ARGUMENT == _capi.STATUS["invalid-argument"]
    assert "buffer-not-symmetric" in _capi.REASONS.values()


def test_every_collective_reaches_its_c_entry_point():
    comm = NullComm(size=2)
    bf = lambda n: FakeTensor("bfloat16", n)  # noqa: E731
    calls = {
        "all_gather": lambda: symmcomm.all_gather(comm, nvfp4(32), nvfp4(64, globals_=2)),
        "all_gather swizzled": lambda: symmcomm.all_gather(
            comm, nvfp4(64), symmcomm.Nvfp4Tensor(FakeTensor("uint8", 64),
                                                   FakeTensor("uint8", 512),
                                                   FakeTensor("float32", 2)), row_elements=64),
        "all_gatherv": lambda: symmcomm.all_gatherv(comm, bf(16), bf(48), [16, 32]),
        "reduce_scatter": lambda: symmcomm.reduce_scatter(comm, nvfp4(64),
                                                          FakeTensor("float32", 32)),
        "reduce_scatterv": lambda: symmcomm.reduce_scatterv(comm, nvfp4(64), bf(16), [16, 48]),
        "quantize_all_gather": lambda: symmcomm.quantize_all_gather(
            comm, bf(32), symmcomm.Fp8Tensor(FakeTensor("float8_e5m2", 64),
                                             FakeTensor("float32", 2))),
    }
    for name, call in calls.items():
        m = logic_error(call)
        assert "comm is NULL" in m, (name, m)


def test_reduce_scatterv_checks_counts_and_tensors():
    comm = FakeComm(size=2)
    m = logic_error(lambda: symmcomm.reduce_scatterv(comm, nvfp4(64), FakeTensor("bfloat16", 16),
                                                     [16]))
    assert "counts must be a list of comm.size (2) ints" in m
    null = NullComm(size=2)
    for send, recv, counts in ((64, 24, [24, 40]), (64, 32, [16, 48]), (80, 16, [16, 48])):
        left_to_the_library(lambda: symmcomm.reduce_scatterv(
            null, nvfp4(send), FakeTensor("bfloat16", recv), counts))
    m = logic_error(lambda: symmcomm.reduce_scatterv(comm, nvfp4(64), nvfp4(16), [16, 48]))
    assert "reduce_scatterv: recv must be a bf16 tensor, got Nvfp4Tensor" in m
    m = logic_error(lambda: symmcomm.reduce_scatterv(comm, FakeTensor("float32", 64),
                                                     FakeTensor("bfloat16", 16), [16, 48]))
    assert "send has dtype float32; expected bfloat16" in m


def test_a_plan_no_collective_wrote_has_no_reason():
    plan = symmcomm.Plan(_capi.plan_out())
    assert plan.path == "nccl-symmetric" and plan.why == "all-symmetric" and not plan.staged
    with pytest.raises(symmcomm.LogicError) as e:
        plan.reason  # noqa: B018 (formatted on read)
    assert "plan->struct_size" not in str(e.value)


def test_device_count_gathers_check_their_arguments():
    comm = FakeComm(size=2)
    i32 = lambda n: FakeTensor("int32", n)  # noqa: E731
    dc = symmcomm.DeviceCounts(i32(1), i32(2), i32(2), i32(1))
    bf = lambda n: FakeTensor("bfloat16", n)  # noqa: E731
    # Rows that are not whole, a recv that is not comm.size x send: the library's check.
    left_to_the_library(lambda: symmcomm.all_gatherv_device(NullComm(size=2), bf(64), bf(128),
                                                            dc, 24))
    left_to_the_library(lambda: symmcomm.all_gatherv_device(NullComm(size=2), bf(64), bf(64),
                                                            dc, 16))
    m = logic_error(lambda: symmcomm.all_gatherv_device(comm, bf(64), bf(128), (1, 2), 16))
    assert "counts must be a symmcomm.DeviceCounts" in m
    bad = symmcomm.DeviceCounts(i32(1), i32(3), i32(2), i32(1))
    m = logic_error(lambda: symmcomm.all_gatherv_device(comm, bf(64), bf(128), bad, 16))
    assert "counts.counts has 3 elements; expected 2" in m
    wrong = symmcomm.DeviceCounts(FakeTensor("int64", 1), i32(2), i32(2), i32(1))
    m = logic_error(lambda: symmcomm.all_gatherv_device(comm, bf(64), bf(128), wrong, 16))
    assert "counts.count has dtype int64; expected int32" in m
    # Well formed: the arguments cross ctypes and the library names the NULL communicator.
    m = logic_error(lambda: symmcomm.all_gatherv_device(NullComm(size=2), nvfp4(64),
                                                        nvfp4(128, globals_=2), dc, 16))
    assert "comm is NULL" in m
    left_to_the_library(lambda: symmcomm.reduce_scatterv_device(NullComm(size=2), bf(64), bf(48),
                                                                dc, 16))
    m = logic_error(lambda: symmcomm.reduce_scatterv_device(comm, bf(64), nvfp4(32), dc, 16))
    assert "recv must be a bf16 tensor, got Nvfp4Tensor" in m
    m = logic_error(lambda: symmcomm.reduce_scatterv_device(NullComm(size=2), nvfp4(64), bf(32),
                                                            dc, 16))
    assert "comm is NULL" in m
    m = logic_error(lambda: symmcomm.device_counts_overflowed(NullComm(size=2), dc))
    assert "comm is NULL" in m


def test_pool_reserve_is_refused_during_capture(monkeypatch):
    class Cuda:
        @staticmethod
        def is_available():
            return True

        @staticmethod
        def is_current_stream_capturing():
            return True

    class Torch:
        cuda = Cuda()

    monkeypatch.setitem(sys.modules, "torch", Torch())
    pool = symmcomm.Pool.__new__(symmcomm.Pool)  # no communicator needed: refused before use
    pool._handle = ctypes.c_void_p(1)
    m = logic_error(lambda: pool.reserve(1 << 20))
    assert "Pool.reserve(1048576) during CUDA graph capture is refused" in m


def _check_info_module():
    """tests/tools/check_info.py: the same schema check as the symmcomm-info tool's test."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "tools", "check_info.py")
    spec = importlib.util.spec_from_file_location("check_info", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_machine_report_follows_its_schema_without_a_gpu(monkeypatch):
    from symmcomm import info
    monkeypatch.setenv("SYMMCOMM_LSA_LL", "0")
    report = info.report(as_json=True)
    _check_info_module().check_report(report, {"SYMMCOMM_LSA_LL": "0"})
    assert report["symmcomm"]["version"] == symmcomm.__version__
    assert report["symmcomm"]["c_abi_version"] == _capi.ABI_VERSION
    text = info.report()
    assert "Paths" in text and "built for CUDA architectures" in text
    with pytest.raises(ValueError, match="ranks must be an int in 0..64"):
        info.report(ranks=65)


def test_python_m_symmcomm_info_runs_and_prints_json():
    import json
    import subprocess
    out = subprocess.run([sys.executable, "-m", "symmcomm.info", "--json"], capture_output=True,
                         text=True, check=True)
    whole = json.loads(out.stdout)
    assert whole["schema"] == "symmcomm-info/1"
    assert whole["python"]["library"] == symmcomm.library_path()
    out = subprocess.run([sys.executable, "-m", "symmcomm.info"], capture_output=True, text=True,
                         check=True)
    assert out.stdout.startswith("symmcomm ")
    assert "Python package" in out.stdout and symmcomm.library_path() in out.stdout


def test_the_info_says_which_torch_operators_run():
    from symmcomm import info
    section = info.python_report()
    assert section["library"] == symmcomm.library_path()
    assert os.path.isfile(os.path.join(section["package"], "__init__.py"))
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001
        assert section["torch"] is None and section["torch_operators"] is None
        assert "not importable" in info.python_text(section)
        return
    native = section["torch_operators"]
    assert ("error" in native) != ("path" in native), native
    text = info.python_text(section)
    assert ("Python implementations" in text) == ("error" in native), text


def test_register_ops_names_a_bad_implementation(monkeypatch):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    import symmcomm.ops
    with pytest.raises(symmcomm.LogicError,
                       match=r"implementation must be one of auto, c\+\+, python, got 'fast'"):
        symmcomm.ops.register_ops("symmcomm_bad_implementation", "fast")
    monkeypatch.setenv("SYMMCOMM_TORCH_OPS", "cpp")
    with pytest.raises(symmcomm.LogicError,
                       match=r"\$SYMMCOMM_TORCH_OPS must be one of auto, c\+\+, python, got 'cpp'"):
        symmcomm.ops.register_ops("symmcomm_bad_implementation")
    with pytest.raises(symmcomm.LogicError, match="no operators registered in namespace"):
        symmcomm.ops.implementation("all_gather", "symmcomm_bad_implementation")


def _undocumented(module):
    """Public names of `module` (its __all__, else names without a leading underscore) defined
    in symmcomm that have no docstring, and their public methods and properties without one."""
    import inspect
    missing = []
    names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue
        if not getattr(obj, "__module__", "").startswith("symmcomm"):
            continue  # re-exported from elsewhere (typing, ctypes, ...)
        if not inspect.getdoc(obj):
            missing.append("%s.%s" % (module.__name__, name))
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                if isinstance(value, (property, staticmethod, classmethod)) or callable(value):
                    doc = value.__doc__ if isinstance(value, property) else inspect.getdoc(value)
                    if not doc:
                        missing.append("%s.%s.%s" % (module.__name__, name, member))
    return missing


def test_every_public_name_has_a_docstring():
    import importlib
    modules = ["symmcomm", "symmcomm.shapes", "symmcomm.errors", "symmcomm.info", "symmcomm.moe"]
    try:
        import torch  # noqa: F401 (symmcomm.ops needs it)
        modules.append("symmcomm.ops")
    except ImportError:
        pass
    missing = [m for name in modules for m in _undocumented(importlib.import_module(name))]
    assert not missing, "public names without a docstring: %s" % ", ".join(missing)
