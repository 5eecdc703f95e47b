"""Indexing ops with torch's names and signatures: gather, scatter(_), scatter_add(_),
index_select, index_add(_), index_copy(_), index_fill(_), index_put(_), take_along_dim,
masked_select, nonzero, argwhere, and their Tensor methods. The work (range checks included)
is in C (_C._gather, _C._index_put, ...; csrc/core/ops/ops_index.h); t[key] indexing itself is the
Tensor type's __getitem__/__setitem__ in C."""
from . import _C
from ._tensor import Tensor


_DTYPE_INDEX = {getattr(_C, d["name"]): i for i, d in enumerate(_C._dtype_table())}

def _tensor(x, fname, arg="input"):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{fname}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _broadcast(a, b):
    """NumPy's broadcast of two shapes, with torch's message."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


# ---- gather / scatter ----

def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    """out[i][j] = input[index[i][j]][j] (dim 0), ...: values picked along dim."""
    return _C._gather(input, dim, index, False)


def _scatter_src(src, value, fname):
    if src is None and value is None:
        raise TypeError(f"{fname}() missing 1 required argument: 'src' or 'value'")
    return src if src is not None else value


def scatter(input, dim, index, src=None, value=None, *, reduce=None):  # noqa: A002
    """A copy of input with src (a tensor or a number) written at index along dim."""
    return _C._scatter(input, dim, index, _scatter_src(src, value, "scatter"), reduce, False)


def scatter_add(input, dim, index, src):  # noqa: A002
    """A copy of input with src added at index along dim (duplicates accumulate)."""
    return _C._scatter_add(input, dim, index, src, False)


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """Values of input at indices along dim (broadcast), or of the flattened input."""
    _tensor(input, "take_along_dim")
    _tensor(indices, "take_along_dim", "indices")
    if indices.dtype != _C.int64:
        name = _C._dtype_table()[_DTYPE_INDEX[indices.dtype]]["torch_name"]
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{name}")
    if dim is None:
        return _C._gather(input.reshape(-1), 0, indices.reshape(-1), True)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    n = max(input.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    d = dim % n
    if input.ndim == 0:
        return _C._gather(input, 0, indices, True)
    shape = list(input.shape)
    shape[d] = indices.shape[d]
    bshape = list(_broadcast(shape, indices.shape))
    idx = indices.expand(bshape)
    bshape[d] = input.shape[d]
    return _C._gather(input.expand(bshape), d, idx, True)


# ---- index_* along one dim ----

def index_select(input, dim, index):  # noqa: A002
    """The slices of input at index (a vector) along dim."""
    return _C._index_select(input, dim, index)


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """A copy of input with alpha * source's slices added at index along dim."""
    return _C._index_add(input, dim, index, source, alpha, False)


def index_copy(input, dim, index, source):  # noqa: A002
    """A copy of input with source's slices written at index along dim."""
    return _C._index_copy(input, dim, index, source, 0, False)


def index_fill(input, dim, index, value):  # noqa: A002
    """A copy of input with the slices at index along dim set to value."""
    return _C._index_fill(input, dim, index, value, 0, False)


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """A copy of input with input[indices] = values (or += with accumulate)."""
    return _C._index_put(input, indices, values, accumulate, False)


# ---- selection by mask ----

def masked_select(input, mask):  # noqa: A002
    """The elements of input where mask (broadcast) is True, as a 1-D tensor."""
    _tensor(input, "masked_select")
    _tensor(mask, "masked_select", "mask")
    if mask.dtype != _C.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = _broadcast(input.shape, mask.shape)
    return _C._index(input.expand(shape), (mask.expand(shape),))


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Coordinates of the non-zero elements: an (n, ndim) int64 tensor, or one per dim."""
    _tensor(input, "nonzero")
    if not as_tuple:
        return _C._nonzero(input)
    return _C._unbind(_C._nonzero(input.reshape(1) if input.ndim == 0 else input), 1)


def argwhere(input):  # noqa: A002
    """nonzero(input)."""
    return _C._nonzero(_tensor(input, "argwhere"))


# ---- Tensor methods ----

def _gather_method(self, dim, index, *, sparse_grad=False):
    """Values picked along dim."""
    return _C._gather(self, dim, index, False)


def _scatter_method(self, dim, index, src=None, value=None, *, reduce=None):
    """A copy with src (or value) written at index along dim."""
    return _C._scatter(self, dim, index, _scatter_src(src, value, "scatter"), reduce, False)


def _scatter__method(self, dim, index, src=None, value=None, *, reduce=None):
    """In place: src (or value) written at index along dim."""
    return _C._scatter(self, dim, index, _scatter_src(src, value, "scatter_"), reduce, True)


def _scatter_add_method(self, dim, index, src):
    """A copy with src added at index along dim."""
    return _C._scatter_add(self, dim, index, src, False)


def _scatter_add__method(self, dim, index, src):
    """In place: src added at index along dim."""
    return _C._scatter_add(self, dim, index, src, True)


def _index_select_method(self, dim, index):
    """The slices at index along dim."""
    return _C._index_select(self, dim, index)


def _index_add_method(self, dim, index, source, *, alpha=1):
    """A copy with alpha * source added at index along dim."""
    return _C._index_add(self, dim, index, source, alpha, False)


def _index_add__method(self, dim, index, source, *, alpha=1):
    """In place: alpha * source added at index along dim."""
    return _C._index_add(self, dim, index, source, alpha, True)


def _index_copy_method(self, dim, index, source):
    """A copy with source written at index along dim."""
    return _C._index_copy(self, dim, index, source, 0, False)


def _index_copy__method(self, dim, index, source):
    """In place: source written at index along dim."""
    return _C._index_copy(self, dim, index, source, 0, True)


def _index_fill_method(self, dim, index, value):
    """A copy with the slices at index along dim set to value."""
    return _C._index_fill(self, dim, index, value, 0, False)


def _index_fill__method(self, dim, index, value):
    """In place: the slices at index along dim set to value."""
    return _C._index_fill(self, dim, index, value, 0, True)


def _index_put_method(self, indices, values, accumulate=False):
    """A copy with self[indices] = values (or +=)."""
    return _C._index_put(self, indices, values, accumulate, False)


def _index_put__method(self, indices, values, accumulate=False):
    """In place: self[indices] = values (or +=)."""
    return _C._index_put(self, indices, values, accumulate, True)


def _take_along_dim_method(self, indices, dim=None):
    """Values at indices along dim."""
    return take_along_dim(self, indices, dim)


def _masked_select_method(self, mask):
    """The elements where mask is True, as a 1-D tensor."""
    return masked_select(self, mask)


def _nonzero_method(self, *, as_tuple=False):
    """Coordinates of the non-zero elements."""
    return nonzero(self, as_tuple=as_tuple)


def _argwhere_method(self):
    """Coordinates of the non-zero elements."""
    return _C._nonzero(self)


for _name, _fn in (("gather", _gather_method), ("scatter", _scatter_method),
                   ("scatter_", _scatter__method), ("scatter_add", _scatter_add_method),
                   ("scatter_add_", _scatter_add__method),
                   ("index_select", _index_select_method), ("index_add", _index_add_method),
                   ("index_add_", _index_add__method), ("index_copy", _index_copy_method),
                   ("index_copy_", _index_copy__method), ("index_fill", _index_fill_method),
                   ("index_fill_", _index_fill__method), ("index_put", _index_put_method),
                   ("index_put_", _index_put__method),
                   ("take_along_dim", _take_along_dim_method),
                   ("masked_select", _masked_select_method), ("nonzero", _nonzero_method),
                   ("argwhere", _argwhere_method)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["gather", "scatter", "scatter_add", "take_along_dim", "index_select", "index_add",
           "index_copy", "index_fill", "index_put", "masked_select", "nonzero", "argwhere"]
