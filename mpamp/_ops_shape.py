"""Shape ops with torch's names and signatures: split/chunk/unbind/tensor_split/narrow, repeat,
repeat_interleave, roll, flip, movedim, the function forms of the view methods (mpamp.reshape,
mpamp.flatten, ...), linspace/eye, Tensor.new_* and Tensor.int(). The work is in C (views,
_C._split, _C._flip, copies); what is composed here is argument handling and view chains."""
import warnings

from . import _C
from ._tensor import Tensor

_TORCH_NAME = {_C.float32: "Float", _C.float16: "Half", _C.bfloat16: "BFloat16",
               _C.int64: "Long", _C.bool: "Bool", _C.uint8: "Byte"}

_bool = bool
_int = int


def _tensor(x, fname, arg="input"):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{fname}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _wrap(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def _ints(x):
    """An int, a sequence of ints or an int tensor, as a tuple."""
    if isinstance(x, (list, tuple)):
        return tuple(x)
    if isinstance(x, Tensor):
        return tuple(x.tolist()) if x.ndim else (x.item(),)
    return (x,)


# ---- pieces ----

def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces: of split_size each (the last may be smaller), or of the
    given sizes."""
    return _C._split(_tensor(tensor, "split", "tensor"), split_size_or_sections, dim)


def chunk(input, chunks, dim=0):  # noqa: A002
    """At most `chunks` views of equal size (the last may be smaller)."""
    _tensor(input, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    size = input.shape[_wrap(dim, input.ndim)]
    if size == 0:
        return _C._split(input, [0] * chunks, dim)
    return _C._split(input, -(-size // chunks), dim)


def unbind(input, dim=0):  # noqa: A002
    """The views input.select(dim, i) for every i."""
    return _C._unbind(_tensor(input, "unbind"), dim)


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """Views split into n nearly equal sections, or at the given indices."""
    _tensor(input, "tensor_split")
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _wrap(dim, input.ndim)
    size = input.shape[d]
    pre = (slice(None),) * d
    sec = indices_or_sections
    if isinstance(sec, Tensor) and sec.dtype != _C.int64:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of "
                           f"long, but got {_TORCH_NAME[sec.dtype]}")
    if isinstance(sec, Tensor) and sec.ndim > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                           "zero-dimensional or one-dimensional tensor, but got a tensor with "
                           f"{sec.ndim} dims")
    if isinstance(sec, Tensor) and sec.ndim == 0:
        sec = sec.item()
    if isinstance(sec, _int) and not isinstance(sec, _bool):
        if sec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sec}")
        base, extra = divmod(size, sec)
        bounds = [0]
        for i in range(sec):
            bounds.append(bounds[-1] + base + (i < extra))
    else:
        bounds = [0] + [_int(i) for i in (sec.tolist() if isinstance(sec, Tensor) else sec)]
        bounds.append(size)
    return tuple(input[pre + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:]))


def narrow(input, dim, start, length):  # noqa: A002
    """The view input[..., start:start + length, ...] along dim."""
    return _C._narrow(_tensor(input, "narrow"), dim, start, length)


# ---- copies ----

def _repeat(self, *sizes):
    """The tensor tiled sizes[i] times along each dim (leading new dims allowed)."""
    if len(sizes) == 1 and not hasattr(sizes[0], "__index__"):
        sizes = tuple(sizes[0])
    sizes = tuple(_int(s) for s in sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(sizes) - self.ndim) + tuple(self.shape)
    final = [r * s for r, s in zip(sizes, shape)]
    if any(r < 0 for r in sizes):
        bad = next(f for f in final if f < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {final}")
    if all(r == 1 for r in sizes):
        return self.reshape(final).clone()
    ones = [v for s in shape for v in (1, s)]
    tiled = [v for r, s in zip(sizes, shape) for v in (r, s)]
    return self.reshape(ones).expand(tiled).contiguous().view(final)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element (or slice along dim) repeated repeats (an int or an int64 tensor) times;
    repeat_interleave(repeats) alone gives the indices."""
    if repeats is None:
        return _C._repeat_index(_tensor(input, "repeat_interleave"), output_size)
    _tensor(input, "repeat_interleave")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _wrap(dim, x.ndim)
    if x.ndim == 0:
        x = x.reshape(1)
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1:
        repeats = repeats.item() if repeats.dtype == _C.int64 else repeats
    if isinstance(repeats, Tensor):
        if repeats.ndim == 1 and repeats.shape[0] != x.shape[d]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.shape[0]} and input.size({d}) = "
                               f"{x.shape[d]}")
        return x.index_select(d, _C._repeat_index(repeats, output_size))
    r = _int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(x.shape)
    if output_size is not None and output_size != shape[d] * r:
        raise RuntimeError("allocated size does not match required size")
    expanded = shape[:d + 1] + [r] + shape[d + 1:]
    final = shape[:d] + [shape[d] * r] + shape[d + 1:]
    out = x.unsqueeze(d + 1).expand(expanded).reshape(final)
    return out.clone() if r == 1 else out


def roll(input, shifts, dims=None):  # noqa: A002
    """Elements shifted along dims, wrapping around (the flattened tensor when dims is None)."""
    _tensor(input, "roll")
    shifts = _ints(shifts)
    dims = () if dims is None else _ints(dims)
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        return roll(input.flatten(), shifts, 0).view(input.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = _wrap(_int(d), input.ndim)
        n = out.shape[d] if out.ndim else 1
        s = _int(s) % n if n else 0
        if s:
            out = _C._cat((out.narrow(d, n - s, s), out.narrow(d, 0, n - s)), d, False)
    return out.clone() if out is input else out


def flip(input, dims):  # noqa: A002
    """A copy reversed along dims (mpamp has no negative strides, as torch's flip copies)."""
    _tensor(input, "flip")
    if isinstance(dims, _int):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    return _C._flip(input, dims)


def _flip_method(self, *dims):
    """A copy reversed along dims."""
    if len(dims) == 1 and not hasattr(dims[0], "__index__"):
        dims = dims[0]
    return _C._flip(self, dims)


def fliplr(input):  # noqa: A002
    """flip(input, [1])."""
    if _tensor(input, "fliplr").ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _C._flip(input, (1,))


def flipud(input):  # noqa: A002
    """flip(input, [0])."""
    if _tensor(input, "flipud").ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _C._flip(input, (0,))


def movedim(input, source, destination):  # noqa: A002
    """A view with the dims at source moved to destination, the others in order."""
    _tensor(input, "movedim")
    src, dst = _ints(source), _ints(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    n = input.ndim
    src = [_wrap(_int(d), n) for d in src]
    dst = [_wrap(_int(d), n) for d in dst]
    for name, ds, given in (("source", src, source), ("destination", dst, destination)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(_ints(given))})")
    order = [-1] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [o if o >= 0 else next(rest) for o in order]
    return input.permute(order) if n else input


moveaxis = movedim


def swapaxes(input, axis0, axis1):  # noqa: A002
    """input.transpose(axis0, axis1)."""
    return _tensor(input, "swapaxes").transpose(axis0, axis1)


def swapdims(input, dim0, dim1):  # noqa: A002
    """input.transpose(dim0, dim1)."""
    return _tensor(input, "swapdims").transpose(dim0, dim1)


# ---- function forms of view methods ----

def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """input.flatten(start_dim, end_dim)."""
    return _tensor(input, "flatten").flatten(start_dim, end_dim)


def reshape(input, shape):  # noqa: A002
    """input.reshape(shape)."""
    return _tensor(input, "reshape").reshape(shape)


def transpose(input, dim0, dim1):  # noqa: A002
    """input.transpose(dim0, dim1)."""
    return _tensor(input, "transpose").transpose(dim0, dim1)


def permute(input, dims):  # noqa: A002
    """input.permute(dims)."""
    return _tensor(input, "permute").permute(dims)


def squeeze(input, dim=None):  # noqa: A002
    """input without size-1 dims (all, one, or a tuple of them)."""
    _tensor(input, "squeeze")
    if dim is None or hasattr(dim, "__index__"):
        return input.squeeze(dim)
    out = input
    for d in sorted({_wrap(_int(d), input.ndim) for d in dim}, reverse=True):
        out = out.squeeze(d)
    return out


def unsqueeze(input, dim):  # noqa: A002
    """input with a size-1 dim inserted at dim."""
    return _tensor(input, "unsqueeze").unsqueeze(dim)


def clone(input, *, memory_format=None):  # noqa: A002
    """A contiguous copy (memory_format is accepted and ignored)."""
    return _tensor(input, "clone").clone()


def t(input):  # noqa: A002
    """input.t()."""
    return _tensor(input, "t").t()


# ---- factories ----

def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    """steps values evenly spaced from start to end inclusive."""
    from ._factories import _check_device, _finish
    dev = _check_device(device)
    if out is not None:
        raise TypeError("linspace(): out= is not supported by mpamp")
    return _finish(_C._linspace(start, end, steps, dtype), requires_grad, dev)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    """An n x m (default n x n) tensor with ones on the diagonal."""
    from ._factories import _check_device, _finish
    dev = _check_device(device)
    if out is not None:
        raise TypeError("eye(): out= is not supported by mpamp")
    return _finish(_C._eye(n, m, dtype), requires_grad, dev)


# ---- Tensor methods ----

def _new_args(self, size, dtype):
    if len(size) == 1 and not hasattr(size[0], "__index__"):
        size = tuple(size[0])
    return size, self.dtype if dtype is None else dtype


def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """zeros(size) with self's dtype and device unless given."""
    from ._factories import zeros
    size, dtype = _new_args(self, size, dtype)
    return zeros(size, dtype=dtype, device=self.device if device is None else device,
               requires_grad=requires_grad)


def _new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """ones(size) with self's dtype and device unless given."""
    from ._factories import ones
    size, dtype = _new_args(self, size, dtype)
    return ones(size, dtype=dtype, device=self.device if device is None else device,
               requires_grad=requires_grad)


def _new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """empty(size) with self's dtype and device unless given."""
    from ._factories import empty
    size, dtype = _new_args(self, size, dtype)
    return empty(size, dtype=dtype, device=self.device if device is None else device,
               requires_grad=requires_grad)


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """full(size, fill_value) with self's dtype and device unless given."""
    from ._factories import full
    return full(tuple(size), fill_value, dtype=self.dtype if dtype is None else dtype,
                device=self.device if device is None else device, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """tensor(data) with self's dtype and device unless given."""
    from ._factories import tensor
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
    return tensor(data, dtype=self.dtype if dtype is None else dtype,
                  device=self.device if device is None else device, requires_grad=requires_grad)


def _int_method(self):
    """self as int64 (mpamp has no int32: torch's .int() gives int32)."""
    return self.long()


def _split_method(self, split_size, dim=0):
    """Views of consecutive pieces of split_size (an int, or a list of sizes)."""
    return _C._split(self, split_size, dim)


def _chunk_method(self, chunks, dim=0):
    """At most `chunks` views of equal size."""
    return chunk(self, chunks, dim)


def _unbind_method(self, dim=0):
    """The views self.select(dim, i) for every i."""
    return _C._unbind(self, dim)


def _tensor_split_method(self, indices_or_sections, dim=0):
    """Views split into n nearly equal sections, or at the given indices."""
    return tensor_split(self, indices_or_sections, dim)


def _narrow_method(self, dim, start, length):
    """The view self[..., start:start + length, ...] along dim."""
    return _C._narrow(self, dim, start, length)


def _repeat_interleave_method(self, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated."""
    if repeats is None:
        return _C._repeat_index(self, output_size)
    return repeat_interleave(self, repeats, dim, output_size=output_size)


def _roll_method(self, shifts, dims=None):
    """Elements shifted along dims, wrapping around."""
    return roll(self, shifts, dims)


def _movedim_method(self, source, destination):
    """A view with the dims at source moved to destination."""
    return movedim(self, source, destination)


def _moveaxis_method(self, source, destination):
    """A view with the dims at source moved to destination."""
    return movedim(self, source, destination)


def _swapaxes_method(self, axis0, axis1):
    """self.transpose(axis0, axis1)."""
    return self.transpose(axis0, axis1)


def _swapdims_method(self, dim0, dim1):
    """self.transpose(dim0, dim1)."""
    return self.transpose(dim0, dim1)


for _name, _fn in (("new_zeros", _new_zeros), ("new_ones", _new_ones),
                   ("new_empty", _new_empty), ("new_full", _new_full),
                   ("new_tensor", _new_tensor), ("int", _int_method), ("split", _split_method),
                   ("chunk", _chunk_method), ("unbind", _unbind_method),
                   ("tensor_split", _tensor_split_method), ("narrow", _narrow_method),
                   ("repeat", _repeat), ("repeat_interleave", _repeat_interleave_method),
                   ("roll", _roll_method), ("flip", _flip_method), ("fliplr", fliplr),
                   ("flipud", flipud), ("movedim", _movedim_method),
                   ("moveaxis", _moveaxis_method), ("swapaxes", _swapaxes_method),
                   ("swapdims", _swapdims_method)):
    if _fn.__name__.startswith("_"):
        _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["split", "chunk", "unbind", "tensor_split", "narrow", "repeat_interleave", "roll",
           "flip", "fliplr", "flipud", "movedim", "moveaxis", "swapaxes", "swapdims", "flatten",
           "reshape", "transpose", "permute", "squeeze", "unsqueeze", "clone", "t", "linspace",
           "eye"]
