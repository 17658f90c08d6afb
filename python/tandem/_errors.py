"""tandem's exception classes, one per tdm_status.

Each is a TandemError; where a Python built-in means the same thing the class
derives from it too, so ``except ValueError`` catches a bad argument.
"""


class TandemError(Exception):
    """A tandem call failed. ``status`` is the C status name
    (e.g. ``"TDM_ERR_CAPACITY"``); the message is tandem's sentence."""

    def __init__(self, message, status="TDM_ERR_UNKNOWN"):
        super().__init__(message)
        self.status = status


class InvalidArgument(TandemError, ValueError):
    """Bad input: shape, length, memory space, a closed object, ..."""


class Unsupported(TandemError, TypeError):
    """A dtype or option combination the operation does not define."""


class OutOfMemory(TandemError, MemoryError):
    """A host or device allocation failed; nothing was changed."""


class NoDevice(TandemError):
    """CUDA was asked for but is not built in or no usable device exists."""


class DeviceError(TandemError):
    """A CUDA call failed; the message has the CUDA error text."""


class CapacityError(TandemError):
    """A fixed-capacity structure or an output is too small."""


class CorruptError(TandemError):
    """validate() found a broken invariant."""


_BY_STATUS = {
    "TDM_ERR_INVALID_ARGUMENT": InvalidArgument,
    "TDM_ERR_UNSUPPORTED": Unsupported,
    "TDM_ERR_OUT_OF_MEMORY": OutOfMemory,
    "TDM_ERR_NO_DEVICE": NoDevice,
    "TDM_ERR_DEVICE": DeviceError,
    "TDM_ERR_CAPACITY": CapacityError,
    "TDM_ERR_CORRUPT": CorruptError,
}


def class_for(status):
    """The exception class for a status name (TandemError for others)."""
    return _BY_STATUS.get(status, TandemError)


def invalid(message):
    return InvalidArgument(message, "TDM_ERR_INVALID_ARGUMENT")


def unsupported(message):
    return Unsupported(message, "TDM_ERR_UNSUPPORTED")
