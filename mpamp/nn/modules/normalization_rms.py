"""RMSNorm (torch.nn.RMSNorm, which torch keeps in normalization.py): root-mean-square
normalisation over the trailing dimensions with an optional elementwise weight (no bias),
over the C op F.rms_norm."""
import numbers

from ... import _factories
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RMSNorm"]


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims (normalized_shape)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_factories.ones(self.normalized_shape, dtype=dtype,
                                                    device=device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        """weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
