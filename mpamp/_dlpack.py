"""from_dlpack: a tensor sharing memory with any DLPack producer (NumPy, PyTorch, JAX, ...).

The capsule is checked and its memory wrapped in C (csrc/bindings/interop_dlpack.c); this module
speaks the Python side of the protocol: asking the producer for a capsule, copy= and device=.
Export is Tensor.__dlpack__ / Tensor.__dlpack_device__, in C. mpamp has no read-only tensors:
memory a producer flags read-only is imported anyway, with the warning from_numpy gives.
NumPy cannot export ml_dtypes.bfloat16 arrays through DLPack; use from_numpy for those.
"""
import warnings

from . import _C
from ._size import device as _device
from ._tensor import _no_cuda_message

_HOST_DEVICES = (1, 3)   # kDLCPU, kDLCUDAHost (pinned host memory)


def _request_capsule(obj, copy):
    """(capsule, copied): obj.__dlpack__ asked for a versioned capsule, else a legacy one."""
    get_device = getattr(obj, "__dlpack_device__", None)
    if get_device is not None:
        dev = tuple(get_device())
        if int(dev[0]) not in _HOST_DEVICES:
            raise BufferError(f"from_dlpack: mpamp can only import CPU memory, got DLPack "
                              f"device ({int(dev[0])}, {int(dev[1])}); copy the tensor to "
                              f"the CPU first")
    kwargs = {"max_version": (1, 0)}
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return obj.__dlpack__(**kwargs), bool(copy)
    except TypeError:
        pass    # a producer older than DLPack 1.0 / the 2023.12 array API: no keywords
    return obj.__dlpack__(), False


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with a DLPack producer (an object with __dlpack__, or a capsule)."""
    if device is not None and _device(device).type != "cpu":
        raise RuntimeError(_no_cuda_message())
    if hasattr(ext_tensor, "__dlpack__"):
        capsule, copied = _request_capsule(ext_tensor, copy)
    else:
        capsule, copied = ext_tensor, False
    t, readonly = _C._from_dlpack(capsule)
    if copy and not copied:
        return t.clone()
    if readonly:
        warnings.warn("The given DLPack tensor is read-only, and mpamp does not support "
                      "non-writable tensors. Writing to this tensor would write to read-only "
                      "memory.", UserWarning, stacklevel=2)
    return t
