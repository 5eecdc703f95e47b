"""multi_head_attention_forward for mpamp.nn.functional, torch's algorithm over mpamp ops.

Inputs are (L, N, E) (or unbatched (L, E)). The in-projection is one linear for
self-attention (query is key is value); heads are strided views (N, H, L, head_dim) of the
projections, which the fused attention kernel reads in place. need_weights=False runs
F.scaled_dot_product_attention; need_weights=True computes the weights explicitly (they are
returned), as torch does. bias_k/bias_v, add_zero_attn and static_k/static_v are not
supported (NotImplementedError).
"""
import math
import warnings

from .. import _C
from .._factories import zeros_like
from .._ops_matmul import baddbmm, bmm, dropout, linear
from .._ops_reduce import softmax
from ._functional_attention import scaled_dot_product_attention

__all__ = ["multi_head_attention_forward"]

_FLOATS = (_C.float32, _C.float16, _C.bfloat16)


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True: not allowed) as a float mask of target_type (-inf where True)."""
    if mask is None:
        return None
    if mask.dtype is not _C.bool and mask.dtype not in _FLOATS:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=3)
    if mask.dtype is _C.bool:
        mask = zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(t):
    return None if t is None else t.dtype


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """True for batched (3-D) input, False for unbatched (2-D); torch's AssertionErrors."""
    qd = query.dim()
    if qd not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{qd}-D query tensor")
    kind = "batched (3-D)" if qd == 3 else "unbatched (2-D)"
    if key.dim() != qd or value.dim() != qd:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {qd}-D but "
                             f"found {key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != qd - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{qd - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D "
                                 f"or 3-D but found {attn_mask.dim()}-D tensor instead")
        if qd == 2 and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
    return qd == 3


def _in_projection(query, key, value, w, b, separate):
    """q, k, v projections; w is in_proj_weight, or (q_w, k_w, v_w) when separate."""
    if separate:
        wq, wk, wv = w
        bq = bk = bv = None
        if b is not None:
            e = wq.shape[0]
            bq, bk, bv = b[:e], b[e:2 * e], b[2 * e:]
        return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    e = query.shape[-1]
    bias = (lambda i, j: None) if b is None else (lambda i, j: b[i * e:j * e])
    if query is key and key is value:                     # self-attention: one product
        proj = linear(query, w, b)
        return proj[..., :e], proj[..., e:2 * e], proj[..., 2 * e:]
    q = linear(query, w[:e], bias(0, 1))
    if key is value:
        kv = linear(key, w[e:], bias(1, 3))
        return q, kv[..., :e], kv[..., e:]
    return q, linear(key, w[e:2 * e], bias(1, 2)), linear(value, w[2 * e:], bias(2, 3))


def _check_key_padding_mask(key_padding_mask, src_len, bsz):
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                             f"{key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")


def _merged_mask(attn_mask, key_padding_mask, tgt_len, src_len, bsz, num_heads):
    """attn_mask (L, S) or (N*H, L, S) and key_padding_mask (N, S), both float, as one mask
    that broadcasts to (N, H, L, S)."""
    mask = None
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            mask = attn_mask
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
            mask = attn_mask.view(bsz, num_heads, tgt_len, src_len)
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        pad = key_padding_mask.view(bsz, 1, 1, src_len)
        mask = pad if mask is None else mask + pad
    return mask


def _heads(x, length, bsz, num_heads, head_dim):
    """(length, N, E) -> (N, H, length, head_dim), a strided view when possible."""
    return x.reshape(length, bsz, num_heads, head_dim).permute(1, 2, 0, 3)


def _check_unsupported(bias_k, bias_v, add_zero_attn, static_k, static_v):
    if bias_k is not None or bias_v is not None:
        raise NotImplementedError("multi_head_attention_forward: bias_k/bias_v (add_bias_kv="
                                  "True) are not supported by mpamp")
    if add_zero_attn or static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: add_zero_attn and "
                                  "static_k/static_v are not supported by mpamp")


def _masks(query, attn_mask, key_padding_mask, need_weights, is_causal):
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        return None, None, True                       # the kernel's own causal rule
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                check_other=False)
    return attn_mask, key_padding_mask, is_causal and key_padding_mask is None


def _attend(q, k, v, mask, dropout_p, need_weights, is_causal):
    """(N, H, L, D) heads -> (output heads, weights or None)."""
    if not need_weights:
        return scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal), None
    # torch's explicit path: baddbmm / bmm over N*H (so autocast treats the mask as torch
    # does), softmax, dropout of the weights, bmm
    n, h, tgt, d = q.shape
    src = k.shape[-2]
    q3 = (q * math.sqrt(1.0 / float(d))).reshape(n * h, tgt, d)
    kt = k.reshape(n * h, src, d).transpose(1, 2)
    if mask is not None:
        weights = baddbmm(mask.expand(n, h, tgt, src).reshape(n * h, tgt, src), q3, kt)
    else:
        weights = bmm(q3, kt)
    weights = softmax(weights, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = bmm(weights, v.reshape(n * h, src, v.shape[-1]))
    return out.view(n, h, tgt, -1), weights.view(n, h, tgt, src)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention over (L, N, E) inputs; returns (output, weights or None)."""
    _check_unsupported(bias_k, bias_v, add_zero_attn, static_k, static_v)
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        same_kv, same_qk = key is value, query is key
        query = query.unsqueeze(1)
        key = query if same_qk else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    attn_mask, key_padding_mask, is_causal = _masks(query, attn_mask, key_padding_mask,
                                                    need_weights, is_causal)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        w = (q_proj_weight, k_proj_weight, v_proj_weight)
        if any(t is None for t in w):
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w = in_proj_weight
    q, k, v = _in_projection(query, key, value, w, in_proj_bias, use_separate_proj_weight)
    mask = _merged_mask(attn_mask, key_padding_mask, tgt_len, src_len, bsz, num_heads)
    out, weights = _attend(_heads(q, tgt_len, bsz, num_heads, head_dim),
                           _heads(k, src_len, bsz, num_heads, head_dim),
                           _heads(v, src_len, bsz, num_heads, head_dim), mask,
                           dropout_p if training else 0.0, need_weights, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if weights is not None and average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
