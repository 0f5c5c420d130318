"""Loading of libsymmcomm_c.so and the C ABI's prototypes (include/symmcomm/c_api.h)."""
import ctypes
import os

#: The C ABI this package is written against (SYMMCOMM_C_ABI_VERSION in c_api.h).
ABI_VERSION = 3

# symmcomm_status_t
SUCCESS = 0
INVALID_ARGUMENT = 1
CUDA = 2
NCCL = 3
OUT_OF_MEMORY = 4
NOT_SYMMETRIC = 5
INTERNAL = 6
TIMEOUT = 7

# symmcomm_path_t (requested) and symmcomm_path_taken_t
PATHS = {"auto": 0, "nccl-symmetric": 1, "lsa-kernel": 2, "fallback": 3}
TAKEN = {0: "nccl-symmetric", 1: "lsa-kernel", 2: "fallback"}
FP8_FORMATS = {"e4m3": 0, "e5m2": 1}

LIBRARY_NAME = "libsymmcomm_c.so"
_HERE = os.path.dirname(os.path.abspath(__file__))


class Nvfp4(ctypes.Structure):
    """symmcomm_nvfp4_t"""
    _fields_ = [("data", ctypes.c_void_p), ("block_scales", ctypes.c_void_p),
                ("global_scale", ctypes.c_void_p), ("count", ctypes.c_size_t)]


class Fp8(ctypes.Structure):
    """symmcomm_fp8_t"""
    _fields_ = [("data", ctypes.c_void_p), ("scale", ctypes.c_void_p),
                ("count", ctypes.c_size_t), ("format", ctypes.c_int)]


def candidates():
    """Where the library is looked for, in order: $SYMMCOMM_LIBRARY; beside the package (a
    cmake --install or a copy); the install prefix's lib directories; a source checkout's build
    folders (scripts/test.sh: build-test, scripts/bench.sh: build-bench, build-dev); then the
    dynamic loader's own search (LD_LIBRARY_PATH)."""
    found = []
    env = os.environ.get("SYMMCOMM_LIBRARY")
    if env:
        return [env]
    found.append(os.path.join(_HERE, LIBRARY_NAME))
    # <prefix>/lib/python3/dist-packages/symmcomm -> <prefix>/lib, <prefix>/lib64
    prefix = os.path.abspath(os.path.join(_HERE, "..", "..", "..", ".."))
    for lib in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
        found.append(os.path.join(prefix, lib, LIBRARY_NAME))
    root = os.path.abspath(os.path.join(_HERE, "..", ".."))
    for build in ("build-test", "build-bench", "build-dev"):
        found.append(os.path.join(root, build, "src", LIBRARY_NAME))
    found.append(LIBRARY_NAME)
    return found


def load():
    """The loaded library and its path; ImportError naming every place tried otherwise."""
    tried = []
    for path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        if not hasattr(lib, "symmcomm_abi_version"):
            raise ImportError("symmcomm: %s predates symmcomm_abi_version(); this package needs C "
                              "ABI %d: rebuild the library" % (path, ABI_VERSION))
        lib.symmcomm_abi_version.restype = ctypes.c_int
        found = lib.symmcomm_abi_version()
        if found != ABI_VERSION:
            raise ImportError("symmcomm: %s has C ABI %d, this package needs %d: install the "
                              "matching library and package" % (path, found, ABI_VERSION))
        _declare(lib)
        return lib, path
    raise ImportError("symmcomm: cannot load %s; set SYMMCOMM_LIBRARY to its path. Tried: %s"
                      % (LIBRARY_NAME, "; ".join(tried)))


def _declare(lib):
    c = ctypes
    status = c.c_int
    ptr = c.c_void_p
    protos = {
        "symmcomm_last_error": (c.c_char_p, []),
        "symmcomm_version": (c.c_char_p, []),
        "symmcomm_abi_version": (c.c_int, []),
        "symmcomm_last_plan_reason": (c.c_char_p, []),
        "symmcomm_unique_id_bytes": (c.c_size_t, []),
        "symmcomm_get_unique_id": (status, [ptr]),
        "symmcomm_comm_init": (status, [c.c_int, ptr, c.c_int, c.c_int, c.POINTER(ptr)]),
        "symmcomm_comm_wrap": (status, [ptr, c.c_int, c.POINTER(ptr)]),
        "symmcomm_comm_release": (status, [ptr]),
        "symmcomm_comm_info": (status, [ptr] + [c.POINTER(c.c_int)] * 4),
        "symmcomm_pool_create": (status, [ptr, c.c_size_t, c.c_size_t, c.c_int, c.POINTER(ptr)]),
        "symmcomm_pool_destroy": (status, [ptr]),
        "symmcomm_pool_reserve": (status, [ptr, c.c_size_t]),
        "symmcomm_pool_allocate": (status, [ptr, c.c_size_t, c.c_size_t, ptr, c.POINTER(ptr)]),
        "symmcomm_pool_free": (status, [ptr, ptr]),
        "symmcomm_pool_free_async": (status, [ptr, ptr, ptr]),
        "symmcomm_pool_stats": (status, [ptr] + [c.POINTER(c.c_size_t)] * 4),
        "symmcomm_verify": (status, [ptr, ptr]),
        "symmcomm_provenance": (status, [ptr, ptr, c.c_size_t, c.POINTER(c.c_int),
                                         c.POINTER(c.c_size_t)]),
        "symmcomm_quantize_nvfp4": (status, [ptr, c.POINTER(Nvfp4), c.c_int, ptr]),
        "symmcomm_dequantize_nvfp4": (status, [c.POINTER(Nvfp4), ptr, ptr]),
        "symmcomm_quantize_fp8": (status, [ptr, c.POINTER(Fp8), c.c_int, ptr]),
        "symmcomm_dequantize_fp8": (status, [c.POINTER(Fp8), ptr, ptr]),
        "symmcomm_quantize_all_gather_nvfp4": (status, [ptr, ptr, c.c_size_t, c.POINTER(Nvfp4), ptr,
                                                        c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_quantize_all_gather_fp8": (status, [ptr, ptr, c.c_size_t, c.POINTER(Fp8), ptr,
                                                      c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_all_gather_bf16": (status, [ptr, ptr, ptr, c.c_size_t, c.c_int, ptr,
                                              c.POINTER(c.c_int)]),
        "symmcomm_all_gather_fp8": (status, [ptr, c.POINTER(Fp8), c.POINTER(Fp8), c.c_int, ptr,
                                             c.POINTER(c.c_int)]),
        "symmcomm_all_gather_nvfp4": (status, [ptr, c.POINTER(Nvfp4), c.POINTER(Nvfp4), c.c_int,
                                               ptr, c.POINTER(c.c_int)]),
        "symmcomm_all_gatherv_bf16": (status, [ptr, ptr, ptr, c.POINTER(c.c_size_t), c.c_int, ptr,
                                               c.POINTER(c.c_int)]),
        "symmcomm_all_gatherv_fp8": (status, [ptr, c.POINTER(Fp8), c.POINTER(Fp8),
                                              c.POINTER(c.c_size_t), c.c_int, ptr,
                                              c.POINTER(c.c_int)]),
        "symmcomm_all_gatherv_nvfp4": (status, [ptr, c.POINTER(Nvfp4), c.POINTER(Nvfp4),
                                                c.POINTER(c.c_size_t), c.c_int, ptr,
                                                c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_bf16": (status, [ptr, ptr, ptr, c.c_size_t, c.c_int, ptr,
                                                  c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_nvfp4_bf16": (status, [ptr, c.POINTER(Nvfp4), ptr, c.c_size_t,
                                                        c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_fp8_bf16": (status, [ptr, c.POINTER(Fp8), ptr, c.c_size_t,
                                                      c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_nvfp4_fp32": (status, [ptr, c.POINTER(Nvfp4), ptr, c.c_size_t,
                                                        c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_fp8_fp32": (status, [ptr, c.POINTER(Fp8), ptr, c.c_size_t,
                                                      c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_nvfp4_nvfp4": (status, [ptr, c.POINTER(Nvfp4), c.POINTER(Nvfp4),
                                                         c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_reduce_scatter_fp8_fp8": (status, [ptr, c.POINTER(Fp8), c.POINTER(Fp8), c.c_int,
                                                     ptr, c.POINTER(c.c_int)]),
        "symmcomm_all_gather_nvfp4_swizzled": (status, [ptr, c.POINTER(Nvfp4), c.POINTER(Nvfp4),
                                                        c.c_size_t, c.c_int, ptr,
                                                        c.POINTER(c.c_int)]),
        "symmcomm_all_gatherv_nvfp4_swizzled": (status, [ptr, c.POINTER(Nvfp4), c.POINTER(Nvfp4),
                                                         c.POINTER(c.c_size_t), c.c_size_t,
                                                         c.c_int, ptr, c.POINTER(c.c_int)]),
        "symmcomm_quantize_all_gather_nvfp4_swizzled": (status, [ptr, ptr, c.c_size_t,
                                                                 c.POINTER(Nvfp4), ptr, c.c_size_t,
                                                                 c.c_int, ptr,
                                                                 c.POINTER(c.c_int)]),
        "symmcomm_torch_set_pool": (status, [ptr]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
