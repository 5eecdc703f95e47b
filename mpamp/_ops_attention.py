"""Functional forms of masked_fill, tril and triu (mpamp.masked_fill, mpamp.tril, ...), with
torch's signatures. The work and the Tensor methods (masked_fill, masked_fill_, tril, tril_,
triu, triu_) are in C (csrc/core/ops/ops_mask.c, csrc/bindings/ops_bind_attention.c)."""
from . import _C


def masked_fill(input, mask, value):  # noqa: A002 - torch's parameter names
    """input with value (a number or 0-d tensor) where the bool mask is True (broadcast)."""
    return _C._masked_fill(input, mask, value)


def tril(input, diagonal=0):  # noqa: A002
    """The lower triangle of the last two dims (j <= i + diagonal); the rest zero."""
    return _C._triangle(input, diagonal, False)


def triu(input, diagonal=0):  # noqa: A002
    """The upper triangle of the last two dims (j >= i + diagonal); the rest zero."""
    return _C._triangle(input, diagonal, True)


__all__ = ["masked_fill", "tril", "triu"]
