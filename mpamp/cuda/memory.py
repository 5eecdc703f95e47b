"""mpamp.cuda.memory: CUDA memory statistics, as torch.cuda.memory.

The counters are the device backend's caching allocator's (size classes, blocks reused across
steps). Without a CUDA device they are 0, the stats empty and the resets no-ops, which is what
torch's CPU build returns without a GPU (torch's reset_peak_memory_stats and memory_summary
fail there; these do not).
"""
import collections

from .. import _C


def _stats():
    return _C._cuda_memory_stats() if _C._cuda_count() > 0 else None


def empty_cache():
    """Release the cached (free) device blocks."""
    if _stats() is not None:
        _C._cuda_empty_cache()


def memory_allocated(device=None):
    """Bytes held by CUDA tensors (by size class)."""
    st = _stats()
    return st["allocated_bytes"] if st else 0


def max_memory_allocated(device=None):
    """Peak bytes held by CUDA tensors since the last reset."""
    st = _stats()
    return st["peak_allocated_bytes"] if st else 0


def memory_reserved(device=None):
    """Bytes reserved by the CUDA caching allocator (held plus cached)."""
    st = _stats()
    return st["reserved_bytes"] if st else 0


def max_memory_reserved(device=None):
    """Peak bytes reserved by the CUDA caching allocator."""
    st = _stats()
    return st["peak_reserved_bytes"] if st else 0


def reset_peak_memory_stats(device=None):
    """Start new peaks at the current values."""
    if _stats() is not None:
        _C._cuda_reset_peak()


def reset_max_memory_allocated(device=None):
    """Reset the allocated peak (with the reserved one, as one call does both here)."""
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Reset the reserved peak."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    """Reset the accumulated counters (mpamp keeps none beyond the peaks)."""


def memory_stats(device=None):
    """The allocator's statistics in torch's key names (empty without a device)."""
    st = _stats()
    if not st:
        return collections.OrderedDict()
    return collections.OrderedDict([
        ("allocated_bytes.all.current", st["allocated_bytes"]),
        ("allocated_bytes.all.peak", st["peak_allocated_bytes"]),
        ("reserved_bytes.all.current", st["reserved_bytes"]),
        ("reserved_bytes.all.peak", st["peak_reserved_bytes"]),
        ("num_alloc_retries", 0),
        ("allocation.all.allocated", st["alloc_calls"]),
    ])


def memory_summary(device=None, abbreviated=False):
    """A short summary of the device allocator."""
    st = _stats()
    if not st:
        return "mpamp: no CUDA memory is allocated (no CUDA device)\n"
    return (f"mpamp CUDA allocator: {st['allocated_bytes']} bytes allocated (peak "
            f"{st['peak_allocated_bytes']}), {st['reserved_bytes']} reserved\n")
