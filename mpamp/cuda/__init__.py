"""CUDA queries, as torch.cuda. Without a GPU (or without a CUDA build) nothing is available
and every call that needs a device raises a clear RuntimeError (torch's CPU build raises an
AssertionError there); seeding, memory counters and caches behave as torch's CPU build does
without a GPU (no-ops, zeros), so setup code of CUDA scripts runs anywhere."""
from .. import _C
from .._C import OutOfMemoryError   # the same class as mpamp.OutOfMemoryError, as torch's
from .._size import device as _device_type
from ._cublaslt import _find_cublaslt, _set_cublaslt_path  # noqa: F401

if _C._cuda_is_built():
    _set_cublaslt_path()    # before the first matmul reads it (cuda/gemm.cu)


def is_available():
    """True when a CUDA device is usable: a real one (CUDA build) or the simulated GPU
    (MPAMP_CUDA_SIM=1)."""
    return _C._cuda_count() > 0


def is_simulated():
    """True when the CUDA device is mpamp's simulated GPU (MPAMP_CUDA_SIM=1; for tests)."""
    return bool(_C._cuda_is_sim()) and is_available()


def sim_stats():
    """Test-only: the simulated GPU's host<->device copy and synchronisation counts."""
    if not is_simulated():
        raise RuntimeError("mpamp.cuda.sim_stats() needs the simulated GPU (MPAMP_CUDA_SIM=1)")
    st = _C._cuda_memory_stats()
    return {k: st[k] for k in ("h2d", "d2h", "d2d", "syncs")}


def is_built():
    """True when the CUDA kernels were compiled into this build."""
    return bool(_C._cuda_is_built())


def device_count():
    """Number of usable CUDA devices (0 without a GPU)."""
    return int(_C._cuda_count())


def is_bf16_supported(including_emulation=True):
    """True when the CUDA device has compute capability 8.0 or more (False without one)."""
    if not is_available():
        return False
    try:
        return get_device_capability() >= (8, 0)
    except RuntimeError:   # a real GPU whose properties mpamp cannot query yet
        return True


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
    """Wait for the device's work to finish."""
    _require("synchronize")
    _C._cuda_synchronize()


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


def _index(device):
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    d = _device_type(device)
    return 0 if d.index is None else d.index


def _props(fname, device):
    _require(fname)
    return _C._cuda_properties(_index(device))


def get_device_name(device=None):
    """The device's name (raises without a device)."""
    return _props("get_device_name", device)[0]


def get_device_capability(device=None):
    """The device's (major, minor) compute capability (raises without a device)."""
    p = _props("get_device_capability", device)
    return (p[1], p[2])


class _DeviceProperties:
    __slots__ = ("name", "major", "minor", "total_memory", "multi_processor_count")

    def __init__(self, name, major, minor, total, sms):
        self.name, self.major, self.minor = name, major, minor
        self.total_memory, self.multi_processor_count = total, sms

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    """The device's properties (raises without a device)."""
    return _DeviceProperties(*_props("get_device_properties", device))


def mem_get_info(device=None):
    """(free, total) device memory (raises without a device)."""
    total = _props("mem_get_info", device)[3]
    return (total - _C._cuda_memory_stats()["reserved_bytes"], total)


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
