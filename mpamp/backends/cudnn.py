"""mpamp.backends.cudnn: torch.backends.cudnn's flags. mpamp does not use cuDNN, so
is_available() is False and version() None (torch's CPU build answers the same); the flags
keep torch's defaults and may be set (scripts set benchmark/deterministic) but change nothing.
"""
import contextlib

enabled = True
benchmark = False
benchmark_limit = None
deterministic = False
allow_tf32 = True


def is_available():
    """False: mpamp has no cuDNN kernels."""
    return False


def version():
    """None: cuDNN is not used."""
    return None


def is_acceptable(tensor):
    """False: no tensor goes to cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the flags for a block and restore them after (they change no result)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {k: g[k] for k in names}
    g.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
             deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(saved)
