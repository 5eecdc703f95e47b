"""More of torch.nn.functional: smooth_l1_loss, huber_loss, binary_cross_entropy, kl_div,
one_hot, pad, normalize, cosine_similarity, leaky_relu, softplus.

Each function checks torch's arguments (legacy size_average/reduce, the dtype errors torch
raises as NotImplementedError, pad's mode rules) and calls one C op (_C._smooth_loss,
_C._binary_cross_entropy, _C._kl_div, _C._pad, ...), which applies the op's autocast row;
cosine_similarity is composed from normalize, a product and a sum.
"""
import warnings

import numpy as _np

import mpamp as _mp
from .. import _C
from .._tensor import _TORCH_NAMES
from .._ops_reduce import _reduction

__all__ = ["smooth_l1_loss", "huber_loss", "binary_cross_entropy", "kl_div", "one_hot", "pad",
           "normalize", "cosine_similarity", "leaky_relu", "leaky_relu_", "softplus"]

_SMOOTH_L1, _HUBER = _C.op_ids["smooth_l1_loss"], _C.op_ids["huber_loss"]   # op table ids


def _tname(dtype):
    return _TORCH_NAMES.get(str(dtype).replace("mpamp.", ""), str(dtype))


def _legacy(size_average, reduce, reduction):
    from .functional import _legacy_reduction
    return _legacy_reduction(size_average, reduce, reduction)


def _int_name(a, b):
    """torch's name of the promoted dtype of two integral (or bool) dtypes."""
    return "Long" if _mp.int64 in (a, b) else "Byte" if _mp.uint8 in (a, b) else "Bool"


def _warn_size(input, target):  # noqa: A002 - torch's parameter names
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


def _check_float_pair(kernel, input, target):  # noqa: A002
    if not (input.is_floating_point() or target.is_floating_point()):
        name = _int_name(input.dtype, target.dtype)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')


# ---- losses ----

def smooth_l1_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                   reduction="mean", beta=1.0):
    """Squared error below beta, absolute error above (beta=0 is l1_loss)."""
    _warn_size(input, target)
    reduction = _legacy(size_average, reduce, reduction)
    red = _reduction(reduction)
    _check_float_pair("smooth_l1_cpu", input, target)
    return _C._smooth_loss(_SMOOTH_L1, input, target, red, float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    """Squared error below delta, delta-scaled absolute error above."""
    _warn_size(input, target)
    _check_float_pair("huber_cpu", input, target)
    if weight is None:
        return _C._smooth_loss(_HUBER, input, target, _reduction(reduction), float(delta))
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    loss = _C._smooth_loss(_HUBER, input, target, 0, float(delta)) * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _mp.sum(loss)
    if reduction == "mean":        # torch: the plain mean of the weighted losses
        return _mp.mean(loss)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def _broadcast_error(shape, target):
    """torch.broadcast_shapes' message for a weight that does not broadcast to target."""
    n = max(len(shape), len(target))
    a = (1,) * (n - len(shape)) + tuple(shape)
    b = (1,) * (n - len(target)) + tuple(target)
    for i in range(n - 1, -1, -1):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            return RuntimeError(f"Attempting to broadcast a dimension of length {a[i]} at "
                                f"{i - n}! Mismatching argument at index 1 had "
                                f"torch.Size({list(shape)}); but expected shape should be "
                                f"broadcastable to {list(target)}")
    return None


def binary_cross_entropy(input, target, weight=None, size_average=None,  # noqa: A002
                         reduce=None, reduction="mean"):
    """Binary cross entropy of probabilities (each log clamped to >= -100, as torch)."""
    reduction = _legacy(size_average, reduce, reduction)
    red = _reduction(reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the "
                         f"input size ({input.size()}) is deprecated. Please ensure they have "
                         "the same size.")
    if weight is not None:
        err = _broadcast_error(tuple(weight.shape), tuple(target.shape))
        if err is not None:
            raise err
        weight = weight.expand(*_np.broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    if target.dtype == input.dtype and not input.is_floating_point():
        raise NotImplementedError('"binary_cross_entropy" not implemented for '
                                  f"'{_tname(input.dtype)}'")
    return _C._binary_cross_entropy(input, target, weight, red)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
           log_target=False):
    """Kullback-Leibler divergence of target from input (input holds log-probabilities)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns "
                      "with the KL div math definition.'mean' will be changed to behave the "
                      "same as 'batchmean' in the next major release.", stacklevel=2)
    red = 3 if reduction == "batchmean" else _reduction(reduction)
    return _C._kl_div(input, target, red, bool(log_target))


# ---- one_hot, pad ----

def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding along a new last dim (num_classes=-1: max + 1)."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int):
        if isinstance(num_classes, _mp.Tensor) and num_classes.numel() == 1 and \
                not num_classes.is_floating_point():
            num_classes = int(num_classes.item())
        else:
            raise TypeError("one_hot(): argument 'num_classes' (position 2) must be int, not "
                            f"{type(num_classes).__name__}")
    return _C._one_hot(tensor, num_classes)


_PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}
_PAD_HELP = ("Supported combinations for non-constant padding:\n"
             "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
             "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
             "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _pad_ints(pad):
    if isinstance(pad, _mp.Tensor) or not isinstance(pad, (tuple, list)):
        raise TypeError("pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    for i, v in enumerate(pad):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {i}")
    return tuple(pad)


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """Pad (or, with negative pads, crop) the last len(pad) // 2 dims."""
    pad = _pad_ints(pad)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    n, nd = len(pad), input.dim()
    k = n // 2          # torch's length checks (in C) come first, then these combinations
    if mode != "constant" and n % 2 == 0 and k <= nd and not (1 <= k <= 3 and
                                                              nd in (k + 1, k + 2)):
        raise NotImplementedError(f"Padding size {n} is not supported for {nd}D input "
                                  f"tensor.\n{_PAD_HELP}")
    return _C._pad(input, pad, _PAD_MODES[mode], 0 if value is None else value)


# ---- normalize, cosine_similarity ----

def _normalize_dims(input, p, dims, eps):  # noqa: A002
    """normalize over several dims: those dims moved last and flattened into one."""
    nd = input.dim()
    dims = sorted({d % nd if nd else 0 for d in dims})
    rest = [d for d in range(nd) if d not in dims]
    perm = rest + dims
    moved = input.permute(*perm) if nd else input
    shape = tuple(moved.shape)
    flat = moved.reshape(*shape[:len(rest)], -1)
    out = _C._normalize(flat, p, -1, eps).reshape(*shape)
    inverse = [perm.index(d) for d in range(nd)]
    return out.permute(*inverse) if nd else out


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    """input / max(||input||_p, eps) along dim."""
    if p == "fro":
        p = 2.0
    if isinstance(dim, (tuple, list)):
        res = _normalize_dims(input, float(p), dim, float(eps))
    else:
        res = _C._normalize(input, float(p), dim, float(eps))
    if out is None:
        return res
    with _mp.no_grad():
        out.copy_(res)
    return out


def _broadcast_pair(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    for i in range(n):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor "
                               f"b ({pb[i]}) at non-singleton dimension {i}")
    shape = tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(pa, pb))
    return (a if tuple(a.shape) == shape else a.expand(*shape),
            b if tuple(b.shape) == shape else b.expand(*shape))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 along dim (broadcast), each normalised first."""
    if not (x1.is_floating_point() or x2.is_floating_point()):
        name = _int_name(x1.dtype, x2.dtype)
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{name}")
    x1, x2 = _C._autocast_cast("cosine_similarity", x1, x2)
    x1, x2 = _broadcast_pair(x1, x2)
    if not x1.is_floating_point():
        x1 = x1.to(x2.dtype)
    if not x2.is_floating_point():
        x2 = x2.to(x1.dtype)
    return _mp.sum(normalize(x1, 2.0, dim, eps) * normalize(x2, 2.0, dim, eps), dim)


# ---- activations with a parameter ----

def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """x where x > 0, else negative_slope * x."""
    _check_float_act("leaky_relu_cpu", input)
    return _C._leaky_relu(input, float(negative_slope), bool(inplace))


def leaky_relu_(input, negative_slope=0.01):  # noqa: A002
    """In-place leaky_relu."""
    _check_float_act("leaky_relu_cpu", input)
    return _C._leaky_relu(input, float(negative_slope), True)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""
    _check_float_act("softplus_cpu", input)
    return _C._softplus(input, float(beta), float(threshold))


def _check_float_act(kernel, input):  # noqa: A002
    if isinstance(input, _mp.Tensor) and not input.is_floating_point():
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_tname(input.dtype)}\'')
