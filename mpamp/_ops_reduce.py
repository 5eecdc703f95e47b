"""Functional forms of the reductions, softmax, layer_norm and the losses (mpamp.sum,
mpamp.cross_entropy, ...) and the matching Tensor methods. The work is in C (_C._reduce,
_C._max, _C._nll_loss, ...); this module gives it torch's signatures and keywords."""
import warnings

from . import _C
from ._tensor import Tensor
from .return_types import max as _MaxResult

_SUM, _MEAN = _C.op_ids["sum"], _C.op_ids["mean"]          # the core's op table
_MSE, _L1 = _C.op_ids["mse_loss"], _C.op_ids["l1_loss"]
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_new_tuple = tuple.__new__


def _reduction(reduction):
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


# ---- reductions ----

def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001,A002 - torch's names
    """Sum over dim (an int, a tuple of ints, or None for all); bool/int64 give int64."""
    return _C._reduce(_SUM, input, dim, keepdim, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """Mean over dim (an int, a tuple of ints, or None for all) of a floating point tensor."""
    return _C._reduce(_MEAN, input, dim, keepdim, dtype)


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001,A002
    """The largest element, (values, indices) of the largest along dim, or max(input, other):
    the elementwise maximum."""
    if isinstance(dim, _C.TensorBase) or other is not None:
        if keepdim or (other is not None and dim is not None):
            raise TypeError("max(): max(input, other) takes no dim or keepdim")
        return _C._maximum(_C.op_ids["maximum"], input, dim if other is None else other)
    if dim is None:
        if keepdim:
            raise TypeError("max(): keepdim=True needs a dim: max(input, dim, keepdim=True)")
        return _C._max(input, None, False)
    return _new_tuple(_MaxResult, _C._max(input, dim, keepdim))


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the largest element (of the flattened input when dim is None)."""
    return _C._argmax(input, dim, keepdim)


# ---- softmax and normalisation ----

def softmax(input, dim, dtype=None):  # noqa: A002
    """exp(x) / sum(exp(x)) along dim; dtype casts the input first."""
    return _C._softmax(input, dim, False, dtype)


def log_softmax(input, dim, dtype=None):  # noqa: A002
    """log(softmax(x)) along dim, computed stably; dtype casts the input first."""
    return _C._softmax(input, dim, True, dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise over the last len(normalized_shape) dims, then scale and shift."""
    return _C._layer_norm(input, normalized_shape, weight, bias, eps)


# ---- losses ----

def _warn_shapes(input, target):  # noqa: A002
    if (isinstance(input, _C.TensorBase) and isinstance(target, _C.TensorBase)
            and target.shape != input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      f"to broadcasting. Please ensure they have the same size.", stacklevel=3)


def mse_loss(input, target, reduction="mean"):  # noqa: A002
    """Mean squared error: (input - target) ** 2, reduced."""
    red = _reduction(reduction)
    _warn_shapes(input, target)
    return _C._pointwise_loss(_MSE, input, target, red)


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    """Mean absolute error: |input - target|, reduced."""
    red = _reduction(reduction)
    _warn_shapes(input, target)
    return _C._pointwise_loss(_L1, input, target, red)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    """Negative log likelihood of class indices, given log-probabilities (N, C, ...)."""
    return _C._nll_loss(input, target, weight, ignore_index, _reduction(reduction), 0.0,
                        False)


def cross_entropy(input, target, weight=None, ignore_index=-100,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim followed by nll_loss (or class-probability targets)."""
    return _C._nll_loss(input, target, weight, ignore_index, _reduction(reduction),
                        label_smoothing, True)


def binary_cross_entropy_with_logits(input, target, weight=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of sigmoid(input) against target, computed stably from logits."""
    return _C._bce_with_logits(input, target, weight, pos_weight, _reduction(reduction))


# ---- Tensor methods ----

def _sum_method(self, dim=None, keepdim=False, *, dtype=None):
    """Sum over dim (an int, a tuple of ints, or None for all)."""
    return _C._reduce(_SUM, self, dim, keepdim, dtype)


def _mean_method(self, dim=None, keepdim=False, *, dtype=None):
    """Mean over dim (an int, a tuple of ints, or None for all)."""
    return _C._reduce(_MEAN, self, dim, keepdim, dtype)


def _max_method(self, dim=None, keepdim=False, *, other=None):
    """The largest element, (values, indices) of the largest along dim, or the elementwise
    maximum with other."""
    return max(self, dim, keepdim, other=other)


def _argmax_method(self, dim=None, keepdim=False):
    """Index of the largest element (of the flattened tensor when dim is None)."""
    return _C._argmax(self, dim, keepdim)


def _softmax_method(self, dim, dtype=None):
    """Softmax along dim."""
    return _C._softmax(self, dim, False, dtype)


def _log_softmax_method(self, dim, dtype=None):
    """Log-softmax along dim."""
    return _C._softmax(self, dim, True, dtype)


for _name, _fn in (("sum", _sum_method), ("mean", _mean_method), ("max", _max_method),
                   ("argmax", _argmax_method), ("softmax", _softmax_method),
                   ("log_softmax", _log_softmax_method)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["sum", "mean", "max", "argmax", "softmax", "log_softmax", "layer_norm", "mse_loss",
           "l1_loss", "nll_loss", "cross_entropy", "binary_cross_entropy_with_logits"]
