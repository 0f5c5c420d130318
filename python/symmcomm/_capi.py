"""Loading of libsymmcomm_c.so and the C ABI's prototypes (include/symmcomm/c_api.h)."""
import ctypes
import os

#: The C ABI this package is written against (SYMMCOMM_C_ABI_VERSION in c_api.h).
ABI_VERSION = 5

# The enumerations (status codes, paths, dtypes, scale layouts, plan reasons) are not typed here:
# load() reads their names from the library (symmcomm_enum_name) and defines, for each,
# a dict name -> value (STATUS, PATHS, TAKEN by value, DTYPES, SCALE_LAYOUTS, REASONS by value)
# and the status constants SUCCESS, INVALID_ARGUMENT, ... as module attributes.
_ENUM_KINDS = {"status": 0, "path": 1, "path_taken": 2, "dtype": 3, "scale_layout": 4,
               "plan_reason": 5}

LIBRARY_NAME = "libsymmcomm_c.so"
_HERE = os.path.dirname(os.path.abspath(__file__))


class Tensor(ctypes.Structure):
    """symmcomm_tensor_t"""
    _fields_ = [("dtype", ctypes.c_int), ("scale_layout", ctypes.c_int),
                ("data", ctypes.c_void_p), ("block_scales", ctypes.c_void_p),
                ("scales", ctypes.c_void_p), ("count", ctypes.c_size_t),
                ("row_elements", ctypes.c_size_t)]


class Options(ctypes.Structure):
    """symmcomm_options_t (size-versioned: struct_size set by options())"""
    _fields_ = [("struct_size", ctypes.c_size_t), ("path", ctypes.c_int),
                ("agree_plan", ctypes.c_int), ("pdl_fence", ctypes.c_int),
                ("allow_staging", ctypes.c_int), ("workspace", ctypes.c_void_p),
                ("workspace_bytes", ctypes.c_size_t), ("staging_send", ctypes.c_void_p),
                ("staging_send_bytes", ctypes.c_size_t), ("staging_recv", ctypes.c_void_p),
                ("staging_recv_bytes", ctypes.c_size_t)]


class PlanC(ctypes.Structure):
    """symmcomm_plan_t"""
    _fields_ = [("struct_size", ctypes.c_size_t), ("path", ctypes.c_int), ("reason", ctypes.c_int),
                ("staged", ctypes.c_int), ("private_data", ctypes.c_uint64 * 24)]


class DeviceCountsC(ctypes.Structure):
    """symmcomm_device_counts_t"""
    _fields_ = [("count", ctypes.c_void_p), ("capacity", ctypes.c_size_t),
                ("counts", ctypes.c_void_p), ("offsets", ctypes.c_void_p),
                ("overflow", ctypes.c_void_p)]


class MoeConfigC(ctypes.Structure):
    """symmcomm_moe_config_t"""
    _fields_ = [("num_experts", ctypes.c_int), ("top_k", ctypes.c_int), ("hidden", ctypes.c_int),
                ("max_tokens_per_rank", ctypes.c_int), ("capacity", ctypes.c_int),
                ("path", ctypes.c_int), ("wire", ctypes.c_int), ("combine_in_place", ctypes.c_int)]


class MoeBuffersC(ctypes.Structure):
    """symmcomm_moe_buffers_t"""
    _fields_ = [("data", ctypes.c_void_p), ("block_scales", ctypes.c_void_p),
                ("expert_count", ctypes.c_void_p), ("global_scale", ctypes.c_void_p),
                ("overflow", ctypes.c_void_p), ("error", ctypes.c_void_p),
                ("local_experts", ctypes.c_int), ("capacity", ctypes.c_int),
                ("expert_scale_bytes", ctypes.c_size_t), ("path", ctypes.c_int),
                ("expert_out", ctypes.c_void_p)]


def options(path):
    """symmcomm_options_t with `path` (a symmcomm_path_t value), defaults otherwise."""
    return Options(ctypes.sizeof(Options), path, 0, 1, 0, None, 0, None, 0, None, 0)


def plan_out():
    """An initialised symmcomm_plan_t for a call to write."""
    p = PlanC()
    p.struct_size = ctypes.sizeof(PlanC)
    return p


def _read_enums(lib):
    """The enumerations' names from the library, as module attributes (see the top)."""
    tables = {}
    for kind, k in _ENUM_KINDS.items():
        names, v = {}, 0
        while True:
            name = lib.symmcomm_enum_name(k, v)
            if name is None:
                break
            names[name.decode()] = v
            v += 1
        tables[kind] = names
    g = globals()
    g["STATUS"] = tables["status"]
    for name, v in tables["status"].items():
        g[name.upper().replace("-", "_")] = v
    g["PATHS"] = tables["path"]
    g["TAKEN"] = {v: n for n, v in tables["path_taken"].items()}
    g["DTYPES"] = tables["dtype"]
    g["SCALE_LAYOUTS"] = tables["scale_layout"]
    g["REASONS"] = {v: n for n, v in tables["plan_reason"].items()}


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
        _read_enums(lib)
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
        "symmcomm_system_report": (status, [c.c_int, c.c_int, c.c_char_p, c.c_size_t,
                                            c.POINTER(c.c_size_t)]),
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
        "symmcomm_enum_name": (c.c_char_p, [c.c_int, c.c_int]),
        "symmcomm_plan_describe": (status, [c.POINTER(PlanC), c.c_char_p, c.c_size_t,
                                            c.POINTER(c.c_size_t)]),
        "symmcomm_quantize": (status, [c.POINTER(Tensor), c.POINTER(Tensor), c.c_int, ptr]),
        "symmcomm_dequantize": (status, [c.POINTER(Tensor), c.POINTER(Tensor), ptr]),
        "symmcomm_all_gather": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor),
                                         c.POINTER(Options), ptr, c.POINTER(PlanC)]),
        "symmcomm_all_gatherv": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor),
                                          c.POINTER(c.c_size_t), c.POINTER(Options), ptr,
                                          c.POINTER(PlanC)]),
        "symmcomm_reduce_scatter": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor),
                                             c.POINTER(Options), ptr, c.POINTER(PlanC)]),
        "symmcomm_reduce_scatterv": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor),
                                              c.POINTER(c.c_size_t), c.POINTER(Options), ptr,
                                              c.POINTER(PlanC)]),
        "symmcomm_quantize_all_gather": (status, [ptr, c.POINTER(Tensor), ptr, c.POINTER(Tensor),
                                                  c.POINTER(Options), ptr, c.POINTER(PlanC)]),
        "symmcomm_all_gatherv_device": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor),
                                                 c.c_size_t, c.POINTER(DeviceCountsC),
                                                 c.POINTER(Options), ptr, c.POINTER(PlanC)]),
        "symmcomm_reduce_scatterv_device": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor),
                                                     c.c_size_t, c.POINTER(DeviceCountsC),
                                                     c.POINTER(Options), ptr, c.POINTER(PlanC)]),
        "symmcomm_device_counts_overflowed": (status, [ptr, c.POINTER(DeviceCountsC), ptr, c.c_int,
                                                       c.POINTER(c.c_int)]),
        "symmcomm_torch_set_pool": (status, [ptr]),
        "symmcomm_moe_supported": (status, [ptr, c.POINTER(c.c_int)]),
        "symmcomm_moe_create": (status, [ptr, c.POINTER(MoeConfigC), ptr, c.POINTER(ptr)]),
        "symmcomm_moe_destroy": (status, [ptr]),
        "symmcomm_moe_buffers": (status, [ptr, c.POINTER(MoeBuffersC)]),
        "symmcomm_moe_reason": (status, [ptr, c.c_char_p, c.c_size_t, c.POINTER(c.c_size_t)]),
        "symmcomm_moe_dispatch": (status, [ptr, c.POINTER(Tensor), ptr, ptr, ptr, ptr, ptr]),
        "symmcomm_moe_combine": (status, [ptr, c.POINTER(Tensor), c.POINTER(Tensor), ptr]),
        "symmcomm_moe_check": (status, [ptr, ptr, c.POINTER(c.c_int32)]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
