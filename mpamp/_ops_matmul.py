"""Functional forms of the matrix products, joining, lookup, dropout, clamp and where
(mpamp.mm, mpamp.cat, mpamp.dropout, ...), with torch's signatures. The work is in C
(csrc/core/ops/ops_matmul.c, ops_shape.c, ops_clamp.c); this module parses keyword arguments,
draws dropout's random stream from the default generator and attaches ``@`` to Tensor."""
from . import _C
from ._random import default_generator
from ._tensor import Tensor


def mm(input, mat2):  # noqa: A002 - torch's parameter names
    """Matrix product of two 2-D tensors (fp32 accumulation)."""
    return _C._mm(input, mat2)


def bmm(input, mat2):  # noqa: A002
    """Batched matrix product of two 3-D tensors with the same batch size."""
    return _C._bmm(input, mat2)


def matmul(input, other):  # noqa: A002
    """Matrix product with torch.matmul's rules: 1-D operands and broadcast batch dims."""
    return _C._matmul(input, other)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product's shape."""
    return _C._addmm(input, mat1, mat2, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (batch1 @ batch2) for 3-D batches, input broadcast."""
    return _C._baddbmm(input, batch1, batch2, beta, alpha)


def linear(input, weight, bias=None):  # noqa: A002
    """input @ weight.T + bias, for any number of leading dims of input."""
    return _C._linear(input, weight, bias)


def cat(tensors, dim=0):
    """Concatenate tensors along an existing dim (dtypes promoted as torch.cat)."""
    return _C._cat(_tensor_list(tensors, "cat"), dim, False)


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join equally-shaped tensors along a new dim."""
    return _C._cat(_tensor_list(tensors, "stack"), dim, True)


def _tensor_list(tensors, fname):
    if isinstance(tensors, (list, tuple)):
        return tensors
    if isinstance(tensors, _C.TensorBase):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of "
                        f"Tensors, not Tensor")
    try:
        return list(tensors)
    except TypeError:
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of "
                        f"Tensors, not {type(tensors).__name__}") from None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by the int64 indices in input; padding_idx gets no gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported by mpamp")
    if padding_idx is None:
        padding_idx = -1
    else:
        rows = weight.shape[0] if weight.ndim > 0 else 0
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")   # as torch
        if padding_idx < 0:
            padding_idx += rows
    return _C._embedding(weight, input, padding_idx)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input                       # torch too: the input itself, no node, no draw
    out = default_generator._draw(_C._dropout, input, p)
    if inplace:
        return input.copy_(out)
    return out


def clamp(input, min=None, max=None):  # noqa: A001,A002
    """Limit input to [min, max]; either bound may be None (not both)."""
    return _C._clamp(input, min, max)


clip = clamp


def where(condition, input=None, other=None):  # noqa: A002
    """input where condition is True, else other (either may be a Python number);
    where(condition) alone is nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        from ._ops_index import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes either 1 argument (condition) or 3 (condition, input, "
                        "other)")
    return _C._where(condition, input, other)


Tensor.__matmul__ = _C.TensorBase._matmul_op
Tensor.__rmatmul__ = _C.TensorBase._rmatmul_op

__all__ = ["mm", "bmm", "matmul", "addmm", "baddbmm", "linear", "cat", "concat", "concatenate", "stack",
           "embedding", "dropout", "clamp", "clip", "where"]
