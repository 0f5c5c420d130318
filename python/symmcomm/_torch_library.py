"""Loading of libsymmcomm_torch.so, the torch operators' C++ implementations, and its C entry
points (src/torch_ops/symmcomm_torch.h) (private: symmcomm.ops uses it). Plain ctypes: no
PyTorch import here, but the library needs the PyTorch it was built against loaded first."""
import ctypes
import os

from . import _core
from .errors import LogicError

#: The library's file name and the version of its C entry points (SYMMCOMM_TORCH_ABI_VERSION).
LIBRARY_NAME = "libsymmcomm_torch.so"
ABI_VERSION = 2


class Library:
    """libsymmcomm_torch.so once looked for: `lib` the loaded library, or None and `error` why
    not (every call then does nothing)."""

    def __init__(self, lib=None, path=None, error=None):
        self.lib, self.path, self.error = lib, path, error
        self.operators = frozenset()
        self.built_against = None
        if lib is not None:
            self.operators = frozenset(n for n in lib.symmcomm_torch_operators().decode()
                                       .split(",") if n)
            self.built_against = lib.symmcomm_torch_built_against().decode()

    def set_communicator(self, name, comm):
        """Names the symmcomm.Communicator `comm` to the operators."""
        if self.lib is not None:
            _call(self.lib.symmcomm_torch_set_communicator, name.encode(), comm._h())

    def remove_communicator(self, name):
        if self.lib is not None:
            self.lib.symmcomm_torch_remove_communicator(name.encode())

    def set_moe_group(self, name, group):
        """Names the library's MoE group of the symmcomm.moe.MoeGroup `group` to the
        operators."""
        if self.lib is not None:
            from . import _capi
            c = group.config
            config = _capi.MoeConfigC(c.num_experts, c.top_k, c.hidden, c.max_tokens_per_rank,
                                      c.capacity, _capi.PATHS["auto"], _capi.DTYPES[c.wire],
                                      int(c.combine_in_place))
            _call(self.lib.symmcomm_torch_set_moe_group, name.encode(), group._native.handle,
                  ctypes.byref(config), group._native.device)

    def remove_moe_group(self, name):
        if self.lib is not None:
            self.lib.symmcomm_torch_remove_moe_group(name.encode())

    def register(self, namespace):
        """Registers the C++ implementations in `namespace` (its schemas defined); None, or the
        dispatcher's reason for refusing them."""
        error = ctypes.create_string_buffer(2048)
        if self.lib.symmcomm_torch_register(namespace.encode(), error, len(error)) != 0:
            return error.value.decode("utf-8", "replace")
        return None


def candidates():
    """Where the library is looked for: $SYMMCOMM_TORCH_LIBRARY; beside the libsymmcomm_c.so
    the package loaded (a build folder or an install's lib directory); beside the package."""
    env = os.environ.get("SYMMCOMM_TORCH_LIBRARY")
    if env:
        return [env]
    paths = [os.path.join(os.path.dirname(_core._path), LIBRARY_NAME),
             os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)]
    return [p for i, p in enumerate(paths) if p not in paths[:i]]  # an install's one folder


def _runtime_first():
    """Puts the C++ runtime this process already holds (PyTorch's libstdc++) first in the
    dynamic linker's lookup order. The operators' library defines some libstdc++ template
    members itself (as every C++ library may); looked up in its own scope they bind to those
    copies, whose locale facet ids the runtime never registered, and formatting a number in an
    error text then crashes. A process that holds libstdc++ globally (a C++ executable, an
    LD_PRELOAD that needs it) never had the problem; a plain Python interpreter does not."""
    try:
        ctypes.CDLL("libstdc++.so.6", mode=os.RTLD_GLOBAL | getattr(os, "RTLD_NOLOAD", 0))
    except OSError:
        pass  # not loaded yet: the library's own dependency brings the one it binds to


def _open(path):
    """The loaded library at `path`, checked and declared; raises OSError saying why not."""
    _runtime_first()
    lib = ctypes.CDLL(path)
    if not hasattr(lib, "symmcomm_torch_abi_version"):
        raise OSError("not symmcomm's operator library (no symmcomm_torch_abi_version)")
    lib.symmcomm_torch_abi_version.restype = ctypes.c_int
    found = lib.symmcomm_torch_abi_version()
    if found != ABI_VERSION:
        raise OSError("its entry points are version %d, this package needs %d"
                      % (found, ABI_VERSION))
    lib.symmcomm_torch_c_library.restype = ctypes.c_void_p
    ours = ctypes.cast(_core._lib.symmcomm_abi_version, ctypes.c_void_p).value
    if lib.symmcomm_torch_c_library() != ours:
        raise OSError("it is bound to another copy of libsymmcomm_c.so than the one this "
                      "package loaded (%s): communicators could not be shared" % _core._path)
    c = ctypes
    for name, restype, argtypes in (
            ("symmcomm_torch_built_against", c.c_char_p, []),
            ("symmcomm_torch_operators", c.c_char_p, []),
            ("symmcomm_torch_register", c.c_int, [c.c_char_p, c.c_char_p, c.c_size_t]),
            ("symmcomm_torch_set_communicator", c.c_int,
             [c.c_char_p, c.c_void_p, c.c_char_p, c.c_size_t]),
            ("symmcomm_torch_remove_communicator", c.c_int, [c.c_char_p]),
            ("symmcomm_torch_set_moe_group", c.c_int,
             [c.c_char_p, c.c_void_p, c.c_void_p, c.c_int, c.c_char_p, c.c_size_t]),
            ("symmcomm_torch_remove_moe_group", c.c_int, [c.c_char_p])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def _call(fn, *args):
    """Runs a C entry point that reports failure with a text."""
    error = ctypes.create_string_buffer(1024)
    if fn(*args, error, len(error)) != 0:
        raise LogicError(error.value.decode("utf-8", "replace"))


def load():
    """The Library from the first candidate that loads, or one saying what each was."""
    tried = []
    for path in candidates():
        if not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return Library(_open(path), path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    return Library(error="%s not loaded: %s" % (LIBRARY_NAME, "; ".join(tried)))
