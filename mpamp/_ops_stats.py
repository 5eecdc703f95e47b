"""prod, std/var (+ std_mean/var_mean), logsumexp, norm, dist, cumsum and cumprod (functions
and Tensor methods) with torch's signatures, legacy overloads included (var(x, unbiased),
var(x, dim, unbiased, keepdim)). The work is in C (_C._prod, _C._var, _C._vector_norm, ...)."""
import warnings

from . import _C
from ._tensor import Tensor

_SUM, _PROD = 0, 1


def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - torch's names
    """Product of all elements, or along one dim; integer inputs give int64."""
    if dim is None and keepdim:
        raise TypeError("prod(): keepdim=True needs a dim: prod(input, dim, keepdim=True)")
    return _C._prod(input, dim, keepdim, dtype)


def _correction(fname, dim, unbiased, correction):
    """(dim, correction) from torch's overloads: (dim, *, correction), (dim, unbiased) and
    (unbiased)."""
    if isinstance(dim, bool):                 # var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{fname}(): unbiased was given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{fname}() received an invalid combination of arguments: unbiased "
                        "and correction cannot both be given")
    if correction is None:
        correction = 0 if unbiased is not None and not unbiased else 1
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{fname}(): argument 'correction' must be Number, not "
                        f"{type(correction).__name__}")
    return dim, correction


def _warn_dof(fname, input, out, correction):  # noqa: A002
    n_out = out.numel()
    if n_out and input.numel() // n_out - correction <= 0:
        warnings.warn(f"{fname}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      stacklevel=3)


def _var(fname, input, dim, unbiased, keepdim, correction, take_sqrt, with_mean):  # noqa: A002
    dim, correction = _correction(fname, dim, unbiased, correction)
    out = _C._var(input, dim, correction, keepdim, take_sqrt, with_mean)
    _warn_dof(fname, input, out[0] if with_mean else out, correction)
    return out


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Variance over dim (int, tuple or None) with divisor N - correction (default 1)."""
    return _var("var", input, dim, unbiased, keepdim, correction, False, False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Standard deviation over dim (int, tuple or None), divisor N - correction (default 1)."""
    return _var("std", input, dim, unbiased, keepdim, correction, True, False)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """(var, mean) over dim, as var and mean."""
    return _var("var_mean", input, dim, unbiased, keepdim, correction, False, True)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """(std, mean) over dim, as std and mean."""
    return _var("std_mean", input, dim, unbiased, keepdim, correction, True, True)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """log(sum(exp(input))) over dim (int or tuple), computed stably; ints give float32."""
    return _C._logsumexp(input, dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """torch.norm: 'fro' (the 2-norm over dim or everything) or a vector p-norm over dim."""
    if out is not None:
        raise TypeError("norm(): out= is not supported by mpamp; use the returned tensor")
    if isinstance(input, _C.TensorBase):
        (input,) = _C._autocast_cast("norm", input)
    if isinstance(p, str):
        dims = (dim,) if isinstance(dim, int) else dim
        if p == "fro" and (dims is None or len(dims) <= 2):
            return _C._vector_norm(input, 2.0, dim, keepdim, dtype)
        if p == "fro":
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(str(d) for d in dims))
        if p == "nuc":
            raise RuntimeError("norm(): the nuclear norm (p='nuc') needs singular values, "
                               "which mpamp does not compute")
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return _C._vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype)


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of input - other (broadcast)."""
    input, other = _C._autocast_cast("dist", input, other)
    return _C._vector_norm(input - other, p, None, False, None)


def cumsum(input, dim, *, dtype=None):  # noqa: A002
    """Running sums along dim; integer inputs give int64."""
    return _C._cumsum(input, dim, dtype, _SUM)


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Running products along dim; integer inputs give int64."""
    return _C._cumsum(input, dim, dtype, _PROD)


# ---- Tensor methods ----

def _prod_method(self, dim=None, keepdim=False, *, dtype=None):
    """Product of all elements, or along one dim."""
    return prod(self, dim, keepdim, dtype=dtype)


def _var_method(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over dim."""
    return _var("var", self, dim, unbiased, keepdim, correction, False, False)


def _std_method(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over dim."""
    return _var("std", self, dim, unbiased, keepdim, correction, True, False)


def _logsumexp_method(self, dim, keepdim=False):
    """log(sum(exp(self))) over dim."""
    return _C._logsumexp(self, dim, keepdim)


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """The 'fro' or p-norm over dim."""
    return norm(self, p, dim, keepdim, dtype=dtype)


def _dist_method(self, other, p=2):
    """The p-norm of self - other."""
    return dist(self, other, p)


def _cumsum_method(self, dim, *, dtype=None):
    """Running sums along dim."""
    return _C._cumsum(self, dim, dtype, _SUM)


def _cumprod_method(self, dim, *, dtype=None):
    """Running products along dim."""
    return _C._cumsum(self, dim, dtype, _PROD)


for _name, _fn in (("prod", _prod_method), ("var", _var_method), ("std", _std_method),
                   ("logsumexp", _logsumexp_method), ("norm", _norm_method),
                   ("dist", _dist_method), ("cumsum", _cumsum_method),
                   ("cumprod", _cumprod_method)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["prod", "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "dist",
           "cumsum", "cumprod"]
