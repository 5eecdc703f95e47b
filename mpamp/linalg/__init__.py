"""mpamp.linalg: the norms of torch.linalg (vector_norm, matrix_norm for 'fro', 1, -1, inf,
-inf, and norm choosing between them). The work is in C (_C._vector_norm) and in amax/amin
over sums; matrix norms that need singular values (2, -2, 'nuc') are not supported."""
import math

from .. import _C

__all__ = ["vector_norm", "matrix_norm", "norm"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """(sum |x|^ord)^(1/ord) over dim (every element when None); ord may be inf, -inf or 0."""
    if out is not None:
        raise TypeError("linalg.vector_norm(): out= is not supported by mpamp")
    return _C._vector_norm(x, ord, dim, keepdim, dtype)


def _wrap(d, ndim):
    if not -ndim <= d < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {d})")
    return d % ndim


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    """Matrix norm over the two dims: 'fro', or 1 / -1 / inf / -inf (max/min column or row
    sums of |A|)."""
    if not isinstance(A, _C.TensorBase):
        raise TypeError(f"linalg.matrix_norm(): argument 'A' must be Tensor, not "
                        f"{type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                           + " ".join(str(d) for d in dim))
    if ord == "fro":
        return _C._vector_norm(A, 2.0, dim, keepdim, dtype)
    if ord in ("nuc", 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: ord={ord} needs singular values, which mpamp "
                           "does not compute")
    if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = (_wrap(d, A.ndim) for d in dim)
    if dtype is not None:
        A = A.to(dtype)
    if ord in (math.inf, -math.inf):
        d0, d1 = d1, d0                         # row sums, then over the rows
    sums = A.abs().sum(d0, keepdim=True)
    res = _C._amax(sums, d1, True, ord < 0)
    return res if keepdim else res.squeeze(max(d0, d1)).squeeze(min(d0, d1))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.norm: a vector norm (1-D input, one dim, or ord None) or a matrix norm
    (2-D input, two dims)."""
    if out is not None:
        raise TypeError("linalg.norm(): out= is not supported by mpamp")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) == 2 and ord is not None:
            return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
        if len(dim) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dim)}")
        return _C._vector_norm(A, 2.0 if ord is None else ord, dim, keepdim, dtype)
    if ord is None:
        return _C._vector_norm(A, 2.0, None, keepdim, dtype)
    if not isinstance(A, _C.TensorBase):
        raise TypeError(f"linalg.norm(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.ndim == 1:
        if isinstance(ord, str):
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                               "dimensions.")
        return _C._vector_norm(A, ord, None, keepdim, dtype)
    raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D "
                       f"or 2D. Got {A.ndim}D.")
