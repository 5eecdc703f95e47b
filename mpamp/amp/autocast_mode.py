"""autocast: PyTorch's automatic mixed precision regions. The state and the per-op policy are
C (thread-local); this class is torch.amp.autocast's constructor checks, context manager and
decorator. mpamp.autocast differs in one way: device_type may be omitted (CUDA when present,
else CPU), so `with mpamp.autocast(dtype="bf16"):` runs anywhere."""
import functools
import warnings

from .. import _C
from .._C import bfloat16, float16, float32

_SUPPORTED = ("cpu", "cuda")
_LOWER = (bfloat16, float16)
_DTYPE_NAMES = {sp: getattr(_C, d["name"]) for d in _C._dtype_table() for sp in d["spellings"]}


def _cuda_available():
    return _C._cuda_count() > 0   # a real GPU or the simulated one (MPAMP_CUDA_SIM=1)


def _dtype(dtype):
    if dtype is None or isinstance(dtype, _C.dtype):
        return dtype
    if isinstance(dtype, str):
        if dtype in _DTYPE_NAMES:
            return _DTYPE_NAMES[dtype]
        spellings = ", ".join(repr(sp) for sp in _DTYPE_NAMES if _DTYPE_NAMES[sp] in _LOWER)
        raise ValueError(f"unknown autocast dtype {dtype!r}: expected mpamp.float16, "
                         f"mpamp.bfloat16 or one of the strings {spellings}")
    raise TypeError(f"autocast dtype must be an mpamp.dtype or a string, got "
                    f"{type(dtype).__name__}")


def is_autocast_available(device_type):
    """True for the device types autocast supports ('cpu', 'cuda')."""
    return device_type in _SUPPORTED


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is on for a device type in this thread."""
    return _C._is_autocast_enabled(device_type)


def set_autocast_enabled(device_type, enabled):
    """Turn autocast on or off for a device type in this thread."""
    _C._set_autocast_enabled(device_type, enabled)


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses for a device type in this thread."""
    return _C._get_autocast_dtype(device_type)


def set_autocast_dtype(device_type, dtype):
    """Set the lower-precision dtype for a device type in this thread."""
    _C._set_autocast_dtype(device_type, _dtype(dtype))


def is_autocast_cache_enabled():
    """Whether the weight-cast cache is on in this thread."""
    return _C._is_autocast_cache_enabled()


def set_autocast_cache_enabled(enabled):
    """Turn the weight-cast cache on or off in this thread."""
    _C._set_autocast_cache_enabled(enabled)


def clear_autocast_cache():
    """Drop every cached weight cast."""
    _C._clear_autocast_cache()


def _cast_cache_stats():
    """Debug counters of the weight-cast cache: hits, misses (casts stored), entries."""
    return dict(_C._cast_cache_stats())


class autocast:
    """Run the ops of a region (or decorated function) in mixed precision, as torch.amp.autocast.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        dtype = _dtype(dtype)
        fast_dtype = dtype if dtype is not None else _C._get_autocast_dtype(device_type) \
            if device_type in _SUPPORTED else None
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device = device_type
        self.fast_dtype = fast_dtype
        self._cache_enabled = (cache_enabled if cache_enabled is not None
                               else is_autocast_cache_enabled())
        if enabled and device_type == "cuda":
            if not _cuda_available():
                warnings.warn("CUDA is not available. Disabling "
                              "autocast.", UserWarning, stacklevel=2)
                enabled = False
            elif fast_dtype is bfloat16 and not _cuda_bf16_supported():
                raise RuntimeError("Current CUDA Device does not support bfloat16. Please "
                                   "switch dtype to float16.")
        elif enabled and fast_dtype not in _LOWER:
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype is not "
                          f"supported. Disabling autocast.\n{device_type.upper()} Autocast only "
                          f"supports dtypes of mpamp.bfloat16, mpamp.float16 currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = _C._is_autocast_enabled(self.device)
        self.prev_fastdtype = _C._get_autocast_dtype(self.device)
        _C._set_autocast_enabled(self.device, self._enabled)
        _C._set_autocast_dtype(self.device, self.fast_dtype)
        _C._autocast_increment_nesting()
        _C._set_autocast_cache_enabled(bool(self._cache_enabled))
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _C._autocast_decrement_nesting() == 0:
            _C._clear_autocast_cache()
        _C._set_autocast_enabled(self.device, self.prev)
        _C._set_autocast_dtype(self.device, self.prev_fastdtype)
        _C._set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cuda_bf16_supported():
    from ..cuda import is_bf16_supported
    return is_bf16_supported()


def _default_device():
    return "cuda" if _cuda_available() else "cpu"


class default_autocast(autocast):
    """mpamp.autocast: torch.autocast whose device_type defaults to CUDA when present, else CPU.
    """

    def __init__(self, device_type=None, dtype=None, enabled=True, cache_enabled=None):
        super().__init__(_default_device() if device_type is None else device_type, dtype,
                         enabled, cache_enabled)


def _cast(value, device_type, dtype):
    """Cast floating tensors inside nested containers (custom_fwd(cast_inputs=...))."""
    if isinstance(value, _C.TensorBase):
        if value.dtype.is_floating_point and value.device.type == device_type:
            return value.to(dtype)
        return value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_cast(v, device_type, dtype) for v in value]
        return type(value)(items) if isinstance(value, list) or type(value) is tuple else \
            type(value)(*items)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for autograd.Function.forward: record the autocast state for backward, and
    optionally run forward in cast_inputs with autocast off (torch.amp.custom_fwd)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, _dtype(cast_inputs)),
                           **_cast(kwargs, device_type, _dtype(cast_inputs)))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for autograd.Function.backward: run it under the autocast state forward saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
