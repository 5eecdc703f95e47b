"""scaled_dot_product_attention and rms_norm for mpamp.nn.functional (torch's signatures).

Both are C ops (csrc/core/ops/ops_attention.c with its fused kernel in csrc/cpu/attention*.c, and
csrc/core/ops/ops_rmsnorm.c); here only torch's keywords, the dropout stream (drawn from the
default generator, so manual_seed reproduces it) and torch's NotImplementedError for integer
rms_norm inputs.
"""
from .. import _C
from .._random import default_generator

__all__ = ["scaled_dot_product_attention", "rms_norm", "multi_head_attention_forward"]

_INT_NAMES = {_C.int64: "Long", _C.bool: "Bool", _C.uint8: "Byte"}


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + attn_mask) @ value in one fused kernel.

    attn_mask: bool (True takes part) or float (added), broadcast to (..., L, S); is_causal
    masks key j > query i (top-left aligned); scale defaults to 1/sqrt(E); enable_gqa repeats
    key/value heads for groups of query heads; dropout_p > 0 drops attention weights with a
    mask from mpamp's Philox stream (regenerated in backward, never stored).
    """
    if dropout_p > 0.0:
        return default_generator._draw(_C._sdpa, query, key, value, attn_mask, dropout_p,
                                       is_causal, scale, enable_gqa)
    return _C._sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                    0, 0)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """input / sqrt(mean(input^2) + eps) * weight over the last len(normalized_shape) dims;
    eps=None uses float32's machine epsilon, as torch does for every float input."""
    name = _INT_NAMES.get(getattr(input, "dtype", None))
    if name is not None:
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{name}'")
    return _C._rms_norm(input, normalized_shape, weight, eps)


from ._functional_mha import multi_head_attention_forward  # noqa: E402 - it uses sdpa above
