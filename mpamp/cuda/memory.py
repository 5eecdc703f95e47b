"""mpamp.cuda.memory: CUDA memory statistics, as torch.cuda.memory.

mpamp does not keep tensors on a GPU yet, so no CUDA memory is ever allocated: the counters
are 0, the stats empty and the resets no-ops, which is what torch's CPU build returns without
a GPU (torch's reset_peak_memory_stats and memory_summary fail there; these do not).
"""
import collections


def empty_cache():
    """Release cached CUDA memory (there is none)."""


def memory_allocated(device=None):
    """Bytes held by CUDA tensors: 0."""
    return 0


def max_memory_allocated(device=None):
    """Peak bytes held by CUDA tensors: 0."""
    return 0


def memory_reserved(device=None):
    """Bytes reserved by the CUDA caching allocator: 0."""
    return 0


def max_memory_reserved(device=None):
    """Peak bytes reserved by the CUDA caching allocator: 0."""
    return 0


def reset_peak_memory_stats(device=None):
    """Reset the peaks (nothing to reset)."""


def reset_max_memory_allocated(device=None):
    """Reset the allocated peak (nothing to reset)."""


def reset_max_memory_cached(device=None):
    """Reset the reserved peak (nothing to reset)."""


def reset_accumulated_memory_stats(device=None):
    """Reset the accumulated counters (nothing to reset)."""


def memory_stats(device=None):
    """The allocator's statistics: empty, as torch's without CUDA memory."""
    return collections.OrderedDict()


def memory_summary(device=None, abbreviated=False):
    """A one-line summary: mpamp holds no CUDA memory."""
    return "mpamp: no CUDA memory is allocated (tensors live on the CPU in this version)\n"
