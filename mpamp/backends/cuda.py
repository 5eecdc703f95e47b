"""mpamp.backends.cuda: torch.backends.cuda's switches, so CUDA scripts' setup lines run.

`matmul.allow_tf32` and mpamp.set_float32_matmul_precision share one setting, as in torch:
any precision but "highest" lets fp32 products on a real GPU use TF32 (cuBLASLt); the CPU
and the simulated GPU always compute them in full fp32. The cuDNN and attention flags are
recorded and read back (with torch's defaults) but change no result.
"""
import contextlib
import warnings

from .. import _C

_PRECISIONS = ("highest", "high", "medium")
_state = {"precision": "highest"}
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built():
    """True when mpamp's CUDA kernels were compiled in (torch: built with CUDA)."""
    return bool(_C._cuda_is_built())


def _set_precision(precision):
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=3)
        return
    _state["precision"] = precision
    _C._cuda_set_allow_tf32(precision != "highest")


class _CuBLASModule:
    """torch.backends.cuda.matmul: allow_tf32 and the reduced-precision reduction flags."""

    _FLAGS = ("allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_flags", {k: True for k in self._FLAGS})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _state["precision"] != "highest"
        if name in self._FLAGS:
            return self._flags[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _set_precision("high" if value else "highest")
        elif name in self._FLAGS:
            self._flags[name] = bool(value)
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _CuBLASModule()


def flash_sdp_enabled():
    """Whether the flash attention kernel may be used (recorded only)."""
    return _sdp["flash"]


def enable_flash_sdp(enabled):
    """Allow or forbid the flash attention kernel (recorded only)."""
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled():
    """Whether the memory-efficient attention kernel may be used (recorded only)."""
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled):
    """Allow or forbid the memory-efficient attention kernel (recorded only)."""
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled():
    """Whether the math attention path may be used (recorded only)."""
    return _sdp["math"]


def enable_math_sdp(enabled):
    """Allow or forbid the math attention path (recorded only)."""
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled():
    """Whether the cuDNN attention kernel may be used (recorded only)."""
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled):
    """Allow or forbid the cuDNN attention kernel (recorded only)."""
    _sdp["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Deprecated context manager that sets the four sdp flags and restores them on exit."""
    warnings.warn("`mpamp.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.update(saved)
