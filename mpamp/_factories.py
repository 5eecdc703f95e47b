"""Tensor creation: tensor(), from_numpy(), zeros/ones/empty/full(+_like), arange and the
random factories. Parsing happens here; memory and per-element work happen in _C."""
import warnings

import numpy as np

from . import _C
from ._random import default_generator
from ._size import device as _device
from ._tensor import Tensor, _ml_dtypes, _no_cuda_message
from ._tensor import _check_device as _tensor_check_device

_SUPPORTED = "float32, float16, bfloat16 (ml_dtypes), int64, bool and uint8"


_default_device = [None]    # set_default_device's device when it is not the CPU


def set_default_device(device):
    """The device factories use when device= is not given (torch.set_default_device): tensor,
    as_tensor, empty/zeros/ones/full, arange, linspace, eye, the random factories, and so the
    parameters of nn modules. None or "cpu" restores the CPU. *_like factories and
    Tensor.new_* keep following their input's device. Unlike torch, a device this process
    does not have is refused here rather than at the next factory call."""
    if device is None:
        _default_device[0] = None
        return
    d = _tensor_check_device(device)
    _default_device[0] = None if d.type == "cpu" else d


def get_default_device():
    """The device factories use when device= is not given (torch.get_default_device)."""
    d = _default_device[0]
    return _device("cpu") if d is None else _device(d.type, 0 if d.index is None else d.index)


def _check_device(dev):
    """The device of a factory's device= argument, or the default one (None for the CPU)."""
    if dev is None:
        return _default_device[0]
    d = _tensor_check_device(dev)
    return None if d.type == "cpu" else d


def _code(dev):
    return 0 if dev is None else 1


def _finish(t, requires_grad, device=None):
    if device is not None:
        t = t._to_device(1)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shape(size):
    if len(size) == 1 and not hasattr(size[0], "__index__"):
        return size[0]
    return size


# ---- from data ----

def _is_bf16_array(arr):
    ml = _ml_dtypes()
    return ml is not None and arr.dtype == np.dtype(ml.bfloat16)


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array (float32/float16/bfloat16/int64/bool/uint8)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if _is_bf16_array(ndarray):
        t, readonly = _C._from_buffer(ndarray.view(np.uint16), True)
    elif ndarray.dtype in (np.float32, np.float16, np.int64, np.bool_, np.uint8) and \
            ndarray.dtype.isnative:
        t, readonly = _C._from_buffer(ndarray, False)
    else:
        raise TypeError(f"can't convert np.ndarray of type numpy.{ndarray.dtype}. The only "
                        f"supported types are: {_SUPPORTED}.")
    if readonly:
        warnings.warn("The given NumPy array is not writable, and mpamp does not support "
                      "non-writable tensors. Writing to this tensor would write to the array.",
                      UserWarning, stacklevel=2)
    return t


_NUMBERS = (bool, int, float, np.number, np.bool_, Tensor, np.ndarray)
_NOT_FOUND = object()


def _first_bad_element(data):
    """The first leaf of a nested sequence that is not a number (or _NOT_FOUND)."""
    if isinstance(data, (list, tuple)):
        for x in data:
            bad = _first_bad_element(x)
            if bad is not _NOT_FOUND:
                return bad
        return _NOT_FOUND
    return _NOT_FOUND if isinstance(data, _NUMBERS) else data


def _ragged_message(data, dim=0):
    """torch's wording for a ragged nested list, or None when the nesting is regular."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    lengths = [len(x) if isinstance(x, (list, tuple)) else None for x in data]
    first = lengths[0]
    for n in lengths[1:]:
        if n != first:
            return f"expected sequence of length {first} at dim {dim + 1} (got {n})"
    for x in data:
        msg = _ragged_message(x, dim + 1)
        if msg:
            return msg
    return None


def _as_array(data):
    """data as a NumPy array of a dtype mpamp supports (float64 -> float32 etc.)."""
    if isinstance(data, np.ndarray):
        arr = data
    else:
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as exc:
            msg = _ragged_message(data)
            if msg:
                raise ValueError(msg) from None
            raise TypeError(f"could not convert {type(data).__name__} to a tensor: {exc}") \
                from None
        except OverflowError:
            raise OverflowError("Overflow when unpacking long: a value does not fit in int64") \
                from None
    if _is_bf16_array(arr):
        return arr
    kind = arr.dtype.kind
    if kind == "f":
        return arr.astype(np.float32, copy=False) if arr.dtype != np.float16 else arr
    if arr.dtype == np.uint8:
        return arr                       # uint8 stays uint8 (images), as torch
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise OverflowError("value does not fit in int64")
        return arr.astype(np.int64, copy=False)
    if kind == "b":
        return arr
    if kind == "O":
        bad = _first_bad_element(data)
        if bad is _NOT_FOUND:      # only numbers: NumPy fell back to objects for huge ints
            raise OverflowError("Overflow when unpacking long: a value does not fit in int64")
        raise TypeError(f"Could not infer dtype of {type(bad).__name__}")
    name = {"U": "str", "S": "bytes", "c": "complex", "M": "datetime64",
            "m": "timedelta64", "V": "void"}.get(kind, str(arr.dtype))
    raise TypeError(f"Could not infer dtype of {name}" if not isinstance(data, np.ndarray) else
                    f"can't convert np.ndarray of type numpy.{arr.dtype}. The only supported "
                    f"types are: {_SUPPORTED}.")


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor (always a copy) from a scalar, nested sequence, NumPy array or tensor."""
    dev = _check_device(device)
    if isinstance(data, Tensor):
        src = data.detach()
    else:
        arr = _as_array(data)
        if not (arr.flags.c_contiguous and arr.flags.writeable and arr.dtype.isnative):
            arr = np.array(arr, order="C", copy=True)     # keeps 0-d arrays 0-d
        src = from_numpy(arr)
    return _finish(src._to_dtype(dtype, True), requires_grad, dev)


def as_tensor(data, dtype=None, device=None):
    """Like tensor(), but shares memory with a tensor or NumPy array when it can."""
    dev = _check_device(device)
    if isinstance(data, Tensor):
        if dev is not None or data.is_cuda and device is not None:
            return data.to(dev if dev is not None else device, dtype)
        return data._to_dtype(dtype, False)
    if dev is not None:
        return tensor(data, dtype=dtype, device=dev)
    if isinstance(data, np.ndarray):
        try:
            return from_numpy(data)._to_dtype(dtype, False)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype)


# ---- filled ----

def empty(*size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor."""
    dev = _check_device(device)
    return _finish(_C._empty(_shape(size), dtype, _code(dev)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros."""
    dev = _check_device(device)
    return _finish(_C._full(_shape(size), 0, dtype, _code(dev)), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones."""
    dev = _check_device(device)
    return _finish(_C._full(_shape(size), 1, dtype, _code(dev)), requires_grad)


def _infer_dtype(value, dtype):
    if dtype is not None:
        return dtype
    if isinstance(value, (bool, np.bool_)):
        return _C.bool
    if isinstance(value, (int, np.integer)):
        return _C.int64
    return _C.float32


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor filled with fill_value (dtype inferred from it, as torch)."""
    dev = _check_device(device)
    return _finish(_C._full(size, fill_value, _infer_dtype(fill_value, dtype), _code(dev)),
                   requires_grad)


def _like(t, dtype, device=None):
    """(shape, dtype, device) of a *_like factory: t's unless given (torch: the input's
    device, not the default one)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor, got {type(t).__name__}")
    return (tuple(t.shape), t.dtype if dtype is None else dtype,
            t.device if device is None else device)


def empty_like(input, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """empty() with input's shape, dtype and device."""
    shape, dt, dev = _like(input, dtype, device)
    return empty(shape, dtype=dt, device=dev, requires_grad=requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """zeros() with input's shape, dtype and device."""
    shape, dt, dev = _like(input, dtype, device)
    return zeros(shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """ones() with input's shape, dtype and device."""
    shape, dt, dev = _like(input, dtype, device)
    return ones(shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """full() with input's shape, dtype and device."""
    shape, dt, dev = _like(input, dtype, device)
    return full(shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def arange(start=0, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values start, start+step, ... below end (int64 for integer arguments, else float32)."""
    dev = _check_device(device)
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (int, float, np.number)) or isinstance(v, bool):
            raise TypeError(f"arange(): argument '{name}' must be a number, not "
                            f"{type(v).__name__}")
    return _finish(_C._arange(start, end, step, dtype), requires_grad, dev)


# ---- random ----

def _random(kind, a, b, size, generator, dtype, device, requires_grad, fname):
    dev = _check_device(device)
    t = _C._empty(_shape(size), dtype)
    if kind != "int" and not t.dtype.is_floating_point:
        raise TypeError(f"{fname}(): dtype must be a floating point type, got {t.dtype}")
    (generator or default_generator)._fill(t, kind, a, b)
    return _finish(t, requires_grad, dev)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform random numbers in [0, 1)."""
    return _random("uniform", 0.0, 1.0, size, generator, dtype, device, requires_grad, "rand")


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal random numbers."""
    return _random("normal", 0.0, 1.0, size, generator, dtype, device, requires_grad, "randn")


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Random integers: randint(high, size) or randint(low, high, size)."""
    args = list(args)
    if size is None and args and not isinstance(args[-1], int):
        size = args.pop()
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if not isinstance(low, int) or not isinstance(high, int):
        raise TypeError("randint(): low and high must be integers")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    dtype = _C.int64 if dtype is None else dtype
    _check_int_bounds(dtype, low, high)
    return _random("int", low, high, (size,), generator, dtype, device, requires_grad,
                   "randint")


def _check_int_bounds(dtype, low, high):
    """torch's errors for bounds a uint8/bool tensor can't hold."""
    name = repr(_C._empty((0,), dtype).dtype).split(".")[-1]
    bounds = {"uint8": (255, "unsigned char"), "bool": (1, "bool")}.get(name)
    if bounds is not None:
        if not 0 <= low <= bounds[0]:
            raise RuntimeError(f"from is out of bounds for {bounds[1]}")
        if not 0 <= high - 1 <= bounds[0]:
            raise RuntimeError(f"to - 1 is out of bounds for {bounds[1]}")


def rand_like(input, dtype=None, generator=None, *, device=None,  # noqa: A002
              requires_grad=False):
    """rand() with input's shape, dtype and device."""
    shape, dt, dev = _like(input, dtype, device)
    return rand(shape, dtype=dt, generator=generator, device=dev, requires_grad=requires_grad)


def randn_like(input, dtype=None, generator=None, *, device=None,  # noqa: A002
               requires_grad=False):
    """randn() with input's shape, dtype and device."""
    shape, dt, dev = _like(input, dtype, device)
    return randn(shape, dtype=dt, generator=generator, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, dtype=None, generator=None, *,  # noqa: A002
                 device=None, requires_grad=False):
    """randint() with input's shape, dtype and device."""
    if high is None:
        low, high = 0, low
    shape, dt, dev = _like(input, dtype, device)
    return randint(low, high, shape, dtype=dt, generator=generator, device=dev,
                   requires_grad=requires_grad)
