"""from_dlpack: a tensor sharing memory with any DLPack producer (NumPy, PyTorch, JAX, ...).

The capsule is checked and its memory wrapped in C (csrc/bindings/interop_dlpack.c); this module
speaks the Python side of the protocol: asking the producer for a capsule (on CUDA, for the
legacy default stream mpamp runs on: stream=1), copy= and device=. CPU memory and cuda:0 memory
are imported (the simulated GPU's included); other devices are refused.
Export is Tensor.__dlpack__ / Tensor.__dlpack_device__, in C. mpamp has no read-only tensors:
memory a producer flags read-only is imported anyway, with the warning from_numpy gives.
NumPy cannot export ml_dtypes.bfloat16 arrays through DLPack; use from_numpy for those.
"""
import warnings

from . import _C
from ._tensor import _check_device, _no_cuda_message

_HOST_DEVICES = (1, 3)   # kDLCPU, kDLCUDAHost (pinned host memory)
_CUDA = 2                # kDLCUDA
_LEGACY_DEFAULT_STREAM = 1


def _request_capsule(obj, copy):
    """(capsule, copied): obj.__dlpack__ asked for a versioned capsule, else a legacy one."""
    kwargs = {"max_version": (1, 0)}
    get_device = getattr(obj, "__dlpack_device__", None)
    if get_device is not None:
        dev = tuple(int(x) for x in get_device())
        if dev == (_CUDA, 0):
            if not _C._cuda_count():
                raise BufferError(f"from_dlpack: the memory is on DLPack device (2, 0), CUDA, "
                                  f"and {_no_cuda_message()}")
            kwargs["stream"] = _LEGACY_DEFAULT_STREAM
        elif dev[0] not in _HOST_DEVICES:
            raise BufferError(f"from_dlpack: mpamp imports CPU memory and cuda:0 memory "
                              f"(DLPack devices (1, 0), (3, 0) and (2, 0)), got DLPack device "
                              f"({dev[0]}, {dev[1]}); copy the tensor to one of those first")
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return obj.__dlpack__(**kwargs), bool(copy)
    except TypeError:
        pass    # a producer older than DLPack 1.0 / the 2023.12 array API: no keywords
    if "stream" in kwargs:
        return obj.__dlpack__(stream=kwargs["stream"]), False
    return obj.__dlpack__(), False


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with a DLPack producer (an object with __dlpack__, or a capsule).

    device= moves the result there, which is a copy unless it is already there (copy=False
    then raises BufferError)."""
    target = None if device is None else _check_device(device)
    if hasattr(ext_tensor, "__dlpack__"):
        capsule, copied = _request_capsule(ext_tensor, copy)
    else:
        capsule, copied = ext_tensor, False
    t, readonly = _C._from_dlpack(capsule)
    if target is not None and t.device.type != target.type:
        if copy is False:
            raise BufferError(f"from_dlpack: the memory is on {t.device} and device={target} "
                              f"asks for a copy, but copy=False")
        return t.to(target)
    if copy and not copied:
        return t.clone()
    if readonly:
        warnings.warn("The given DLPack tensor is read-only, and mpamp does not support "
                      "non-writable tensors. Writing to this tensor would write to read-only "
                      "memory.", UserWarning, stacklevel=2)
    return t
