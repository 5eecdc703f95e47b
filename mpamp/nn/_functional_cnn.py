"""The CNN part of mpamp.nn.functional: conv1d/conv2d, max/avg/adaptive-avg pooling in 1-d and
2-d, batch_norm and group_norm, with torch.nn.functional's signatures and defaults.

Arguments go to the C ops (mpamp._C._conv, _max_pool, ...) as given: the bindings expand ints
and tuples, apply the autocast policy (conv1d/conv2d lower precision, group_norm fp32 on CUDA)
and raise torch's errors; what torch checks in Python (batch sizes for the norms) is here.
"""
import math

from .. import _C

__all__ = ["conv1d", "conv2d", "max_pool1d", "max_pool2d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "batch_norm", "group_norm"]

# nn.Conv*d's padding_mode, as the C op numbers them (csrc/cpu/im2col.h)
PADDING_MODES = {"zeros": 0, "reflect": 1, "replicate": 2, "circular": 3}


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-d convolution over (N, C, L) or (C, L); padding may be an int, a tuple, 'valid' or
    'same' (stride 1 only)."""
    return _C._conv(input, weight, bias, stride, padding, dilation, groups, 1, 0)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-d convolution over (N, C, H, W) or (C, H, W); padding may be an int, a tuple, 'valid'
    or 'same' (stride 1 only)."""
    return _C._conv(input, weight, bias, stride, padding, dilation, groups, 2, 0)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0,  # noqa: A002
                            dilation=1, ceil_mode=False, return_indices=False):
    """1-d max pooling returning (values, int64 indices along L)."""
    return _C._max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0,  # noqa: A002
                            dilation=1, ceil_mode=False, return_indices=False):
    """2-d max pooling returning (values, int64 indices into each flattened H*W plane)."""
    return _C._max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """1-d max pooling (stride defaults to kernel_size)."""
    return _C._max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """2-d max pooling (stride defaults to kernel_size)."""
    return _C._max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):
    """1-d average pooling."""
    return _C._avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """2-d average pooling (divisor_override replaces the window size)."""
    return _C._avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Average pooling to a given length (torch's bins)."""
    return _C._adaptive_avg_pool(input, 1, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Average pooling to a given (H, W); an int means square, None keeps that input size."""
    return _C._adaptive_avg_pool(input, 2, output_size)


def _verify_batch_size(size):
    if math.prod([size[0]] + list(size[2:])) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input "
                         f"size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel of (N, C, *) by batch statistics (training; running stats
    updated in place) or by running_mean/running_var (eval)."""
    if training:
        _verify_batch_size(input.size())
    return _C._batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                          eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise (N, C, *) over groups of C / num_groups channels, then a per-channel affine
    map."""
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups]
                       + list(input.size()[2:]))
    return _C._group_norm(input, num_groups, weight, bias, eps)
