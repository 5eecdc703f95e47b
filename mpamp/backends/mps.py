"""mpamp.backends.mps: Apple's Metal backend, which mpamp does not have (torch's non-Mac
builds answer the same)."""


def is_available():
    """False: mpamp has no MPS kernels."""
    return False


def is_built():
    """False: mpamp was not built with MPS."""
    return False
