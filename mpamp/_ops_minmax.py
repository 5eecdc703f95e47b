"""min, argmin, amax, amin, aminmax and the elementwise maximum/minimum/fmax/fmin (functions
and Tensor methods) with torch's signatures. The work is in C (_C._min, _C._amax,
_C._maximum, ...); mpamp.max lives in _ops_reduce.py beside argmax."""
from . import _C
from ._tensor import Tensor
from .return_types import aminmax as _AminmaxResult
from .return_types import min as _MinResult

_new_tuple = tuple.__new__
_MAXIMUM, _MINIMUM, _FMAX, _FMIN = (_C.op_ids[n] for n in ("maximum", "minimum", "fmax", "fmin"))


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001,A002 - torch's names
    """The smallest element, (values, indices) of the smallest along dim, or min(input, other):
    the elementwise minimum."""
    if isinstance(dim, _C.TensorBase) or other is not None:
        if keepdim or (other is not None and dim is not None):
            raise TypeError("min(): min(input, other) takes no dim or keepdim")
        return _C._maximum(_MINIMUM, input, dim if other is None else other)
    if dim is None:
        if keepdim:
            raise TypeError("min(): keepdim=True needs a dim: min(input, dim, keepdim=True)")
        return _C._min(input, None, False)
    return _new_tuple(_MinResult, _C._min(input, dim, keepdim))


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the smallest element (of the flattened input when dim is None)."""
    return _C._argmin(input, dim, keepdim)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    """The largest values over dim (an int or a tuple; () reduces every dim)."""
    return _C._amax(input, dim, keepdim, False)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    """The smallest values over dim (an int or a tuple; () reduces every dim)."""
    return _C._amax(input, dim, keepdim, True)


def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    """(min, max) over dim (every element when dim is None)."""
    if isinstance(input, _C.TensorBase):
        nd = input.ndim
        empty = input.numel() == 0 if dim is None else (
            isinstance(dim, int) and nd > 0 and -nd <= dim < nd and input.shape[dim] == 0)
        if empty:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
    dims = () if dim is None else dim
    return _new_tuple(_AminmaxResult, (_C._amax(input, dims, keepdim, True),
                                       _C._amax(input, dims, keepdim, False)))


def maximum(input, other):  # noqa: A002
    """Elementwise maximum (NaN propagates); broadcasts and promotes."""
    return _C._maximum(_MAXIMUM, input, other)


def minimum(input, other):  # noqa: A002
    """Elementwise minimum (NaN propagates); broadcasts and promotes."""
    return _C._maximum(_MINIMUM, input, other)


def fmax(input, other):  # noqa: A002
    """Elementwise maximum that ignores a NaN when the other element is a number."""
    return _C._maximum(_FMAX, input, other)


def fmin(input, other):  # noqa: A002
    """Elementwise minimum that ignores a NaN when the other element is a number."""
    return _C._maximum(_FMIN, input, other)


# ---- Tensor methods ----

def _min_method(self, dim=None, keepdim=False, *, other=None):
    """The smallest element, (values, indices) of the smallest along dim, or the elementwise
    minimum with other."""
    return min(self, dim, keepdim, other=other)


def _argmin_method(self, dim=None, keepdim=False):
    """Index of the smallest element (of the flattened tensor when dim is None)."""
    return _C._argmin(self, dim, keepdim)


def _amax_method(self, dim=(), keepdim=False):
    """The largest values over dim."""
    return _C._amax(self, dim, keepdim, False)


def _amin_method(self, dim=(), keepdim=False):
    """The smallest values over dim."""
    return _C._amax(self, dim, keepdim, True)


def _aminmax_method(self, *, dim=None, keepdim=False):
    """(min, max) over dim."""
    return aminmax(self, dim=dim, keepdim=keepdim)


def _maximum_method(self, other):
    """Elementwise maximum."""
    return _C._maximum(_MAXIMUM, self, other)


def _minimum_method(self, other):
    """Elementwise minimum."""
    return _C._maximum(_MINIMUM, self, other)


def _fmax_method(self, other):
    """Elementwise maximum ignoring NaN."""
    return _C._maximum(_FMAX, self, other)


def _fmin_method(self, other):
    """Elementwise minimum ignoring NaN."""
    return _C._maximum(_FMIN, self, other)


for _name, _fn in (("min", _min_method), ("argmin", _argmin_method), ("amax", _amax_method),
                   ("amin", _amin_method), ("aminmax", _aminmax_method),
                   ("maximum", _maximum_method), ("minimum", _minimum_method),
                   ("fmax", _fmax_method), ("fmin", _fmin_method)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["min", "argmin", "amax", "amin", "aminmax", "maximum", "minimum", "fmax", "fmin"]
