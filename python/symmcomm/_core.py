"""The loaded library and the checks every module of the package shares (private)."""
from . import _capi
from .errors import LogicError, error_for

_lib, _path = _capi.load()

#: NVFP4 elements per block scale.
NVFP4_BLOCK = 16


def _check(status):
    if status != _capi.SUCCESS:
        raise error_for(status, _lib.symmcomm_last_error().decode("utf-8", "replace"))


def _fail(message):
    raise LogicError(message, _capi.INVALID_ARGUMENT)


def _int_arg(value, name, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int):
        _fail("%s must be an int, got %r (%s)" % (name, value, type(value).__name__))
    if value < minimum:
        _fail("%s must be >= %d, got %d" % (name, minimum, value))
    return value
