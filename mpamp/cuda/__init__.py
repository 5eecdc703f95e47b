"""CUDA queries, as torch.cuda. Without a GPU (or without a CUDA build) nothing is available
and every call that needs a device raises a clear RuntimeError (torch's CPU build raises an
AssertionError there); seeding, memory counters and caches behave as torch's CPU build does
without a GPU (no-ops, zeros), so setup code of CUDA scripts runs anywhere."""
from .. import _C
from .._C import OutOfMemoryError   # the same class as mpamp.OutOfMemoryError, as torch's
from .._size import device as _device_type


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


def _no_cuda_error(fname):
    from .._tensor import _no_cuda_message
    return RuntimeError(f"mpamp.cuda.{fname}(): {_no_cuda_message()}")


def _require(fname):
    if not is_available():
        raise _no_cuda_error(fname)


def is_initialized():
    """Whether CUDA has been initialised: True exactly when a device is available."""
    return is_available()


def init():
    """Initialise CUDA (raises without a device, as torch)."""
    _require("init")


def synchronize(device=None):
    """Wait for the device's work to finish (mpamp's CUDA calls are synchronous)."""
    _require("synchronize")


def current_device():
    """Index of the current CUDA device (0; raises without a device)."""
    _require("current_device")
    return 0


def set_device(device):
    """Select the CUDA device (only device 0 is used; raises without a device)."""
    _require("set_device")


def _unsupported_query(fname):
    _require(fname)
    raise RuntimeError(f"mpamp.cuda.{fname}(): mpamp does not query CUDA device properties "
                       f"yet")


def get_device_name(device=None):
    """The device's name (raises without a device)."""
    _unsupported_query("get_device_name")


def get_device_capability(device=None):
    """The device's (major, minor) compute capability (raises without a device)."""
    _unsupported_query("get_device_capability")


def get_device_properties(device=None):
    """The device's properties (raises without a device)."""
    _unsupported_query("get_device_properties")


def mem_get_info(device=None):
    """(free, total) device memory (raises without a device)."""
    _unsupported_query("mem_get_info")


class device:
    """Context manager that selects a CUDA device, as torch.cuda.device (no-op here)."""

    def __init__(self, device):
        self.idx = device.index if isinstance(device, _device_type) else device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


from . import amp  # noqa: E402,F401 - torch.cuda.amp
from . import memory, random  # noqa: E402,F401
from .memory import (empty_cache, max_memory_allocated, max_memory_reserved,  # noqa: E402,F401
                     memory_allocated, memory_reserved, memory_stats, memory_summary,
                     reset_accumulated_memory_stats, reset_max_memory_allocated,
                     reset_max_memory_cached, reset_peak_memory_stats)
from .random import (get_rng_state, get_rng_state_all, initial_seed,  # noqa: E402,F401
                     manual_seed, manual_seed_all, seed, seed_all, set_rng_state,
                     set_rng_state_all)
