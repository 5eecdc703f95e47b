"""Top-level torch names that scripts call at setup and that have nothing to do in mpamp:
compile (returns the model or function unchanged, with one warning) and the float32 matmul
precision (recorded; mpamp's fp32 products are always full fp32, there is no TF32)."""
import warnings

from .backends import cuda as _backends_cuda

_COMPILE_NOTE = ("mpamp.compile() returns the model unchanged: mpamp has no graph compiler "
                 "(ops already run as C kernels with a small per-op cost), so the model runs "
                 "eagerly")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, disable=False):
    """torch.compile: a no-op that warns once per call; usable as @compile and @compile(...)."""
    if model is None:
        return lambda fn: _unchanged(fn, disable)
    return _unchanged(model, disable)


def _unchanged(model, disable):
    if not callable(model):
        raise RuntimeError(f"compile(): the model must be a callable (an nn.Module or a "
                           f"function), got {type(model).__name__}")
    if not disable:
        warnings.warn(_COMPILE_NOTE, UserWarning, stacklevel=3)
    return model


def set_float32_matmul_precision(precision):
    """Record 'highest', 'high' or 'medium' (mpamp computes fp32 products in full fp32)."""
    _backends_cuda._set_precision(precision)


def get_float32_matmul_precision():
    """The recorded float32 matmul precision ('highest' by default)."""
    return _backends_cuda._state["precision"]

