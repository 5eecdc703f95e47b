"""sort, argsort, msort and topk (functions and Tensor methods) with torch's signatures. The
work is in C (_C._sort, _C._topk): a stable sort by (value, index), NaN as the largest value,
so `stable=` changes nothing and topk's ties give the lower index first."""
from . import _C
from ._tensor import Tensor
from .return_types import sort as _SortResult
from .return_types import topk as _TopkResult

_new_tuple = tuple.__new__


def _check_stable(fname, stable):
    if not isinstance(stable, bool):
        raise TypeError(f"{fname}(): argument 'stable' must be bool, not "
                        f"{type(stable).__name__}")


def sort(input, dim=-1, descending=False, *, stable=False):  # noqa: A002 - torch's names
    """(values, indices) of input sorted along dim (always stable)."""
    _check_stable("sort", stable)
    return _new_tuple(_SortResult, _C._sort(input, dim, descending))


def argsort(input, dim=-1, descending=False, *, stable=False):  # noqa: A002
    """The indices that sort input along dim (always stable)."""
    _check_stable("argsort", stable)
    return _C._sort(input, dim, descending)[1]


def msort(input):  # noqa: A002
    """input sorted along its first dim."""
    return _C._sort(input, 0, False)[0]


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (or smallest) elements along dim, in order."""
    return _new_tuple(_TopkResult, _C._topk(input, k, dim, largest))


def _sort_method(self, dim=-1, descending=False, *, stable=False):
    """(values, indices) of self sorted along dim."""
    return sort(self, dim, descending, stable=stable)


def _argsort_method(self, dim=-1, descending=False, *, stable=False):
    """The indices that sort self along dim."""
    return argsort(self, dim, descending, stable=stable)


def _msort_method(self):
    """self sorted along its first dim."""
    return _C._sort(self, 0, False)[0]


def _topk_method(self, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (or smallest) along dim."""
    return _new_tuple(_TopkResult, _C._topk(self, k, dim, largest))


for _name, _fn in (("sort", _sort_method), ("argsort", _argsort_method),
                   ("msort", _msort_method), ("topk", _topk_method)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["sort", "argsort", "msort", "topk"]
