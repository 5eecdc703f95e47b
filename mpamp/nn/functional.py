"""mpamp.nn.functional: torch.nn.functional's signatures over mpamp's ops.

Each function parses torch's arguments (legacy size_average/reduce, implicit softmax dims,
unsupported options) and calls the op of the same name on the mpamp package; where the
signatures already agree (linear) the op itself is exported.
"""
import warnings

import mpamp as _mp
from ._functional_extra import *  # noqa: F401,F403 - losses, pad, one_hot, normalize, ...
from ._functional_extra import __all__ as _extra_all

from ._functional_cnn import *  # noqa: F401,F403 - conv, pooling, batch/group norm
from ._functional_cnn import __all__ as _cnn_all

__all__ = ["relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "linear", "dropout", "layer_norm", "embedding", "mse_loss", "l1_loss",
           "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits"] + _cnn_all


from ._functional_attention import *  # noqa: E402,F401,F403 - sdpa, rms_norm
from ._functional_attention import __all__ as _attention_all  # noqa: E402

__all__ += _attention_all
__all__ += _extra_all


# ---- activations ----

def relu(input, inplace=False):  # noqa: A002 - torch's parameter names
    """max(input, 0)."""
    return input.relu_() if inplace else _mp.relu(input)


def relu_(input):  # noqa: A002
    """In-place relu."""
    return input.relu_()


def gelu(input, approximate="none"):  # noqa: A002
    """Gaussian error linear unit (approximate='none' or 'tanh')."""
    return _mp.gelu(input, approximate=approximate)


def silu(input, inplace=False):  # noqa: A002
    """input * sigmoid(input)."""
    return input.silu_() if inplace else _mp.silu(input)


def sigmoid(input):  # noqa: A002
    """1 / (1 + exp(-input))."""
    return _mp.sigmoid(input)


def tanh(input):  # noqa: A002
    """Hyperbolic tangent."""
    return _mp.tanh(input)


def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """exp(input) normalised to sum to 1 along dim (computed in dtype when given)."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return _mp.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """log(softmax(input)) along dim, computed stably."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return _mp.log_softmax(input, dim)


# ---- layers ----

from .._ops_matmul import linear  # noqa: E402 - no wrapper: it sits on every layer's hot path


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero elements with probability p and scale the rest by 1/(1-p) (training only)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _mp.dropout(input, p, training, inplace)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise over the last len(normalized_shape) dims, then scale and shift."""
    return _mp.layer_norm(input, normalized_shape, weight, bias, eps)


def _embedding_padding_idx(padding_idx, num_embeddings):
    if padding_idx is None:
        return None
    if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight selected by the int64 indices in input."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported by mpamp")
    return _mp.embedding(input, weight, _embedding_padding_idx(padding_idx, weight.size(0)))


# ---- losses ----

def _legacy_reduction(size_average, reduce, reduction):
    """torch's _Reduction.legacy_get_string: the old size_average/reduce flags win."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _weighted(errors, weight, reduction):
    """torch's weighted mse/l1 loss: weight * errors, reduced (mean divides by sum(weight))."""
    if weight.size() != errors.size():
        raise ValueError("Weights and input must have the same size.")
    weighted = errors * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return _mp.sum(weighted)
    if reduction == "mean":
        return _mp.sum(weighted) / _mp.sum(weight)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
             weight=None):
    """Mean squared error."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target) ** 2, weight, reduction)
    return _mp.mse_loss(input, target, reduction=reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
            weight=None):
    """Mean absolute error."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target).abs(), weight, reduction)
    return _mp.l1_loss(input, target, reduction=reduction)


def cross_entropy(input, target, weight=None, size_average=None,  # noqa: A002
                  ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits and class indices (log_softmax + nll_loss)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _mp.cross_entropy(input, target, weight=weight, ignore_index=ignore_index,
                             reduction=reduction, label_smoothing=label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
             reduce=None, reduction="mean"):
    """Negative log likelihood of class indices given log-probabilities."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _mp.nll_loss(input, target, weight=weight, ignore_index=ignore_index,
                        reduction=reduction)


def binary_cross_entropy_with_logits(input, target, weight=None,  # noqa: A002
                                     size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross entropy of sigmoid(input), computed stably from the logits."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _mp.binary_cross_entropy_with_logits(input, target, weight=weight,
                                                reduction=reduction, pos_weight=pos_weight)
