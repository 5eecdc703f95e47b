"""mpamp.Tensor: the Python face of the C tensor (_C.TensorBase).

Hot methods (views, casts, item, shape) are C; this class adds what composes them:
repr, iteration, tolist, NumPy conversion, .to() argument parsing, Python number protocol.
"""
import numpy as np

from . import _C
from ._format import format_tensor
from ._size import device as _device


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


class Tensor(_C.TensorBase):
    """A strided n-dimensional array of float32, float16, bfloat16, int64, bool or uint8."""

    __hash__ = object.__hash__

    def __repr__(self):
        # torch names the device when it is not the default device's type (so a CPU tensor
        # says device='cpu' under set_default_device("cuda"), a CUDA one then says nothing)
        from ._factories import _default_device
        default = _default_device[0].type if _default_device[0] is not None else "cpu"
        if self.is_cuda:   # values are formatted from a host copy, as torch does
            return format_tensor(self.detach().cpu(), None if default == "cuda" else "cuda:0",
                                 self.requires_grad)
        return format_tensor(self, "cpu" if default != "cpu" else None)

    __str__ = __repr__

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    def tolist(self):
        """Values as (nested) Python lists of numbers."""
        if self.is_cuda:
            return self.detach().cpu().tolist()   # one device-to-host copy
        flat = self._flat_list()
        return flat[0] if self.ndim == 0 else _nest(flat, tuple(self.shape))

    # ---- NumPy ----

    def numpy(self, *, force=False):
        """A NumPy array sharing memory (bfloat16 needs ml_dtypes)."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self.is_cuda:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        if self.dtype is not _C.bfloat16:
            return np.asarray(_C._memoryview(self))
        ml = _ml_dtypes()
        if ml is None:
            raise TypeError("numpy() of a bfloat16 tensor needs the ml_dtypes package "
                            "(pip install ml_dtypes, or mpamp[bf16]); or call .float() first")
        return np.asarray(_C._memoryview(self)).view(ml.bfloat16)   # 'H' bits, relabelled

    # NumPy takes a tensor's buffer before it looks at __array__, so np.asarray/np.array of a
    # float32/float16/int64/bool/uint8 tensor never get here (the buffer path has the same zero-copy
    # and copy= behaviour). bfloat16 tensors refuse NumPy's typed buffer request (see
    # csrc/bindings/interop_buffer.c), so NumPy falls through to this method for them.
    def __array__(self, dtype=None, copy=None):
        """NumPy 2 protocol: copy=False never copies (ValueError instead), True always does."""
        if self.dtype is _C.bfloat16 and _ml_dtypes() is None:
            if copy is False:
                raise ValueError("a bfloat16 tensor cannot be viewed by NumPy without "
                                 "ml_dtypes; install it or allow a copy (to float32)")
            arr = self.detach().float().numpy()
            copied = True
        else:
            arr = self.detach().numpy()
            copied = False
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"converting a {self.dtype} tensor to {np.dtype(dtype)} needs "
                                 f"a copy, but copy=False was requested")
            return arr.astype(dtype)
        if copy and not copied:
            return arr.copy()
        return arr

    # ---- conversion ----

    def to(self, *args, dtype=None, device=None, copy=False, non_blocking=False):
        """Convert dtype and/or device: to(dtype), to(device), to(device, dtype), to(other)."""
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype if dtype is None else dtype
                device = a.device if device is None else device
            elif isinstance(a, _device):
                device = a
            elif isinstance(a, str) and not _is_dtype_string(a):
                try:
                    device = _device(a)
                except ValueError:
                    raise ValueError(f"to(): {a!r} is neither a device ('cpu', 'cuda') nor a "
                                     f"dtype string ({', '.join(sorted(_DTYPE_STRINGS))})") \
                        from None
            else:
                dtype = a
        if device is not None:
            dev = _check_device(device)
            if dev.type == "cuda" or self.is_cuda:
                return self._to_device(_DEVICE_CODES[dev.type], dtype, copy)
        return self._to_dtype(dtype, copy)

    def cpu(self, memory_format=None):
        """A copy in host memory (self when already there)."""
        return self._to_device(0) if self.is_cuda else self

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """A copy on the CUDA device (self when already there)."""
        _check_device("cuda" if device is None else
                      (f"cuda:{device}" if isinstance(device, int) else device), cuda_only=True)
        return self if self.is_cuda else self._to_device(1)

    def pin_memory(self, device=None):
        """Host memory is what copies use already: a copy marked as pinned is not needed."""
        if self.is_cuda:
            name = _TYPE_NAMES[repr(self.dtype).split('.')[-1]]
            raise RuntimeError(f"cannot pin 'mpamp.cuda.{name}' only dense CPU tensors can be "
                               f"pinned")
        return self

    def is_pinned(self, device=None):
        """False: mpamp does not page-lock host memory (copies work without it)."""
        return False

    def type(self, dtype=None):
        """The type name, or a conversion when dtype is given."""
        if dtype is None:
            return f"mpamp.{_TYPE_NAMES[repr(self.dtype).split('.')[-1]]}"
        return self.to(dtype)

    def double(self):
        """Unsupported: mpamp has no float64."""
        raise TypeError("mpamp has no float64 dtype; use .float() (float32)")

    @property
    def T(self):
        """Dimensions reversed."""
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def data(self):
        """The same data outside autograd (in-place writes through it are not versioned)."""
        return self._data_header()

    @data.setter
    def data(self, other):
        if not isinstance(other, _C.TensorBase):
            raise TypeError(f"data must be a Tensor, got {type(other).__name__}")
        _C._set_data(self, other)

    @property
    def is_cpu(self):
        """True for CPU tensors."""
        return not self.is_cuda

    # ---- Python number protocol ----

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype not in (_C.int64, _C.bool, _C.uint8) or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    # ---- autograd ----

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the leaves' .grad."""
        if create_graph or inputs is not None:
            from .autograd import backward
            return backward(self, None if gradient is None else (gradient,), retain_graph,
                            create_graph, inputs)
        _C._backward((self,), (gradient,), bool(retain_graph))

    def register_hook(self, hook):
        """Call hook(grad) when this tensor's gradient is computed; it may return a new one."""
        from .nn.utils.hooks import _CHookHandle
        return _CHookHandle(self._register_hook(hook))

    def register_post_accumulate_grad_hook(self, hook):
        """Call hook(tensor) after a leaf's .grad was accumulated in backward."""
        from .nn.utils.hooks import _CHookHandle
        return _CHookHandle(self._register_post_accumulate_grad_hook(hook))

    def view_as(self, other):
        """self.view(other.shape)."""
        return self.view(other.shape)

    def reshape_as(self, other):
        """self.reshape(other.shape)."""
        return self.reshape(other.shape)

    # ---- copying ----

    def __deepcopy__(self, memo):
        out = self.clone()
        out.requires_grad_(self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        """Pickles the values (copied to the host) with the device: a CUDA tensor unpickles
        on CUDA again, as torch's."""
        data = self.detach().cpu().contiguous()
        raw = bytes(_C._memoryview(data).cast("B")) if data.numel() else b""
        args = (raw, repr(self.dtype).split(".")[-1], tuple(self.shape), self.requires_grad)
        if self.device.type != "cpu":
            args += (str(self.device),)
        return (_rebuild, args)


# dtype name -> torch's ScalarType name ("Float") and tensor type name, from the core's table
_TORCH_NAMES = {d["name"]: d["torch_name"] for d in _C._dtype_table()}
_TYPE_NAMES = {name: torch_name + "Tensor" for name, torch_name in _TORCH_NAMES.items()}
_DTYPE_STRINGS = {sp for d in _C._dtype_table() for sp in d["spellings"]}


def _is_dtype_string(a):
    return isinstance(a, str) and a in _DTYPE_STRINGS


_DEVICE_CODES = {"cpu": 0, "cuda": 1}


def _check_device(dev, cuda_only=False):
    """A device argument parsed and checked against this process: cuda needs a device (or the
    simulator, MPAMP_CUDA_SIM=1), and only index 0 exists."""
    d = dev if type(dev) is _device else _device(dev)     # devices are immutable
    if cuda_only and d.type != "cuda":
        raise ValueError(f"Invalid device, must be cuda device, got {d}")
    if d.type == "cuda":
        if _C._cuda_count() == 0:
            raise RuntimeError(_no_cuda_message())
        if d.index is not None and d.index >= _C._cuda_count():
            raise RuntimeError("CUDA error: invalid device ordinal")
    return d


def _no_cuda_message():
    if _C._cuda_is_sim():
        return "CUDA not available: the simulated GPU (MPAMP_CUDA_SIM=1) could not start"
    if _C._cuda_is_built():
        return "CUDA not available: no CUDA device was found"
    return ("CUDA not available: mpamp was built without CUDA support (nvcc was not found or "
            "MPAMP_CUDA=0)")


def _nest(flat, shape):
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _rebuild(raw, dtype_name, shape, requires_grad, device=None):
    t = _C._empty(shape, getattr(_C, dtype_name))
    if raw:
        _C._memoryview(t).cast("B")[:] = raw
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t

