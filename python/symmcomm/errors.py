"""Typed exceptions carrying the library's message (symmcomm_last_error())."""
import builtins

from . import _capi


class Error(Exception):
    """Any failure reported by symmcomm; `status` is the C ABI's symmcomm_status_t."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class LogicError(Error, ValueError):
    """A bad argument or state (symmcomm::LogicError), from the library or from this package's
    own checks of shapes, dtypes, devices and contiguity."""


class CudaError(Error):
    """A CUDA runtime call failed."""


class NcclError(Error):
    """An NCCL call failed."""


class OutOfMemoryError(Error, MemoryError):
    """Device (or pool) memory exhausted."""


class NotSymmetricError(Error):
    """verify() found ranks whose windows or allocations differ."""


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 (shadows on purpose)
    """A bounded wait expired (SYMMCOMM_WAIT_TIMEOUT_S): a peer may have gone."""


class InternalError(Error):
    """An unexpected failure inside symmcomm."""


# By the library's name of each status (symmcomm_enum_name): the codes come from the library.
_BY_NAME = {
    "invalid-argument": LogicError,
    "cuda": CudaError,
    "nccl": NcclError,
    "out-of-memory": OutOfMemoryError,
    "not-symmetric": NotSymmetricError,
    "internal": InternalError,
    "timeout": TimeoutError,
}


def error_for(status, message):
    """The exception for a failed call's status."""
    names = {v: n for n, v in getattr(_capi, "STATUS", {}).items()}
    cls = _BY_NAME.get(names.get(status))
    if cls is None:
        cls = InternalError
        message = "unknown symmcomm status %d: %s" % (status, message)
    return cls(message, status)
