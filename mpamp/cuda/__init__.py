"""CUDA queries, as torch.cuda. Without a GPU (or without a CUDA build) nothing is available
and every call that needs a device raises a clear RuntimeError."""
from .. import _C
from .._C import OutOfMemoryError   # the same class as mpamp.OutOfMemoryError, as torch's


def is_available():
    """True when mpamp was built with CUDA and a device is present."""
    return bool(_C._cuda_is_built()) and _C._cuda_device_count() > 0


def is_built():
    """True when the CUDA kernels were compiled into this build."""
    return bool(_C._cuda_is_built())


def device_count():
    """Number of usable CUDA devices (0 without a GPU)."""
    return int(_C._cuda_device_count())


def is_bf16_supported(including_emulation=True):
    """True when a CUDA device with bfloat16 support is present (False without a GPU)."""
    return is_available()


from . import amp  # noqa: E402,F401 - torch.cuda.amp
