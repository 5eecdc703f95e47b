"""The CPU kernel level: which instruction set the kernels use (chosen once at import).

MPAMP_CPU_ISA=scalar|avx2|avx512|avx512bf16 lowers the level (never raises it above what the
CPU supports).
"""
import os
import warnings

from .. import _C

ISA_LEVELS = ("scalar", "avx2", "avx512", "avx512bf16")


def get_isa():
    """The ISA level the kernels use: 'scalar', 'avx2', 'avx512' or 'avx512bf16'."""
    return _C._get_isa()


def detected_isa():
    """The highest level this CPU supports (ignores MPAMP_CPU_ISA)."""
    return _C._detected_isa()


def supported_isas():
    """Every level this CPU can run, lowest first."""
    return list(_C._supported_isas())


def get_cpu_capability():
    """Alias of get_isa(), after torch.backends.cpu.get_cpu_capability."""
    return get_isa()


def allocator_stats():
    """Counters of the caching allocator (allocs, cache_hits, cached_bytes, ...)."""
    return dict(_C._alloc_stats())


def reset_peak_stats():
    """Start a new peak: allocator_stats()['peak_in_use_bytes'] becomes the bytes in use now."""
    _C._alloc_reset_peak()


def empty_cache():
    """Return every cached block to the system."""
    _C._empty_cache()


def _check_env():
    forced = os.environ.get("MPAMP_CPU_ISA")
    if not forced:
        return
    if forced not in ISA_LEVELS:
        warnings.warn(f"MPAMP_CPU_ISA={forced!r} is not one of {', '.join(ISA_LEVELS)}; "
                      f"ignoring it and using {get_isa()!r}", RuntimeWarning, stacklevel=3)
    elif ISA_LEVELS.index(forced) > ISA_LEVELS.index(detected_isa()):
        warnings.warn(f"MPAMP_CPU_ISA={forced!r} is above what this CPU supports; using "
                      f"{get_isa()!r}", RuntimeWarning, stacklevel=3)


_check_env()
