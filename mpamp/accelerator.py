"""mpamp.accelerator: the current accelerator, as torch.accelerator. mpamp's accelerator is
CUDA, and it is available exactly when mpamp.cuda.is_available() is; on a machine without a
GPU the answers are torch's CPU build's (False, None, 0, and a RuntimeError for the calls that
need a device)."""
from . import cuda as _cuda
from ._size import device as _device

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    """True when an accelerator (a CUDA device) can be used."""
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when there is an accelerator, else None."""
    return _device("cuda") if is_available() else None


def device_count():
    """Number of accelerator devices (0 without one)."""
    return _cuda.device_count() if is_available() else 0


def current_device_index():
    """Index of the current accelerator device (raises without one)."""
    if not is_available():
        raise RuntimeError(_NONE)
    return _cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device):
    """Select the accelerator device (raises without one)."""
    if not is_available():
        raise RuntimeError(_NONE)
    _cuda.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None):
    """Wait for the accelerator's work (raises without one)."""
    if not is_available():
        raise RuntimeError(_NONE)
    _cuda.synchronize(device)


def empty_cache():
    """Release the accelerator's cached memory (nothing is cached)."""
    _cuda.empty_cache()


def memory_allocated(device_index=None):
    """Bytes held on the accelerator: 0."""
    return _cuda.memory_allocated(device_index)


def max_memory_allocated(device_index=None):
    """Peak bytes held on the accelerator: 0."""
    return _cuda.max_memory_allocated(device_index)


def reset_peak_memory_stats(device_index=None):
    """Reset the peaks (nothing to reset)."""
    _cuda.reset_peak_memory_stats(device_index)
