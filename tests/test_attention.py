"""F.scaled_dot_product_attention: the fused kernel forward and backward against a NumPy
float64 reference (causal, bool/float masks, GQA, L != S, Ev != E, batch broadcasting,
non-contiguous inputs, fully masked rows, several query/key blocks), fp16/bf16, dropout from
the Philox stream (reproducible, equal to the unfused composition with the same mask, backward
consistent), thread-count independence, errors with torch's messages, autocast, peak memory
below the unfused composition, and torch itself when installed."""
import numpy as np
import pytest

import mpamp
import mpamp.nn.functional as F
from conftest import TOL, to_numpy

SDPA = F.scaled_dot_product_attention


# ---- the reference (float64) ----

def _repeat_heads(x, heads):
    return np.repeat(x, heads // x.shape[-3], axis=-3)


def ref_forward(q, k, v, mask=None, causal=False, scale=None, gqa=False, drop=None):
    """(output, probabilities P, dropped P) in float64; rows nothing takes part in give 0."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    if gqa:
        k, v = _repeat_heads(k, q.shape[-3]), _repeat_heads(v, q.shape[-3])
    sc = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * sc
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    with np.errstate(invalid="ignore"):
        mx = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isneginf(mx), 0, mx))
        den = e.sum(-1, keepdims=True)
        p = np.where(den > 0, e / np.where(den > 0, den, 1), 0)
        p = np.where(np.isnan(den), np.nan, p)
    pd = p if drop is None else p * drop
    return pd @ v, p, pd


def _reduce(x, shape, group=1):
    if group > 1:
        x = x.reshape(x.shape[:-3] + (x.shape[-3] // group, group) + x.shape[-2:]).sum(-3)
    while x.ndim > len(shape):
        x = x.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and x.shape[d] != 1:
            x = x.sum(d, keepdims=True)
    return x


def ref_grads(q, k, v, do, mask=None, causal=False, scale=None, gqa=False, drop=None):
    """(dq, dk, dv, dmask or None) in float64."""
    q64, k64, v64, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    gk = q64.shape[-3] // k64.shape[-3] if gqa else 1
    gv = q64.shape[-3] // v64.shape[-3] if gqa else 1
    kk = _repeat_heads(k64, q64.shape[-3]) if gqa else k64
    vv = _repeat_heads(v64, q64.shape[-3]) if gqa else v64
    _, p, pd = ref_forward(q64, kk, vv, mask, causal, scale, drop=drop)
    sc = 1 / np.sqrt(q64.shape[-1]) if scale is None else scale
    dv = np.swapaxes(pd, -1, -2) @ do
    dp = do @ np.swapaxes(vv, -1, -2)
    if drop is not None:
        dp = dp * drop
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq, dk = sc * ds @ kk, sc * np.swapaxes(ds, -1, -2) @ q64
    dm = None if mask is None or mask.dtype == bool else _reduce(ds, mask.shape)
    return _reduce(dq, q64.shape), _reduce(dk, k64.shape, gk), _reduce(dv, v64.shape, gv), dm


# ---- helpers ----

def leaf(a, dtype="float32"):
    return mpamp.tensor(a.astype(np.float32)).to(dtype).detach().requires_grad_()


def run(qn, kn, vn, dtype="float32", mask=None, mask_grad=False, **kw):
    """mpamp forward + backward with a random output gradient; returns everything needed."""
    q, k, v = leaf(qn, dtype), leaf(kn, dtype), leaf(vn, dtype)
    mt = None
    if mask is not None:
        mt = mpamp.tensor(mask)
        if mask.dtype != bool:
            mt = mt.to(dtype if kw.pop("mask_in_dtype", False) else "float32")
            mt.requires_grad_(mask_grad)
    kw.pop("mask_in_dtype", None)
    out = SDPA(q, k, v, attn_mask=mt, **kw)
    do = np.random.default_rng(7).normal(size=tuple(out.shape)).astype(np.float32)
    dot = mpamp.tensor(do).to(dtype)
    out.backward(dot)
    rounded = [to_numpy(t.detach()) for t in (q, k, v)]
    mref = None if mt is None else (mask if mask.dtype == bool else to_numpy(mt.detach()))
    return out, (q, k, v, mt), rounded, mref, to_numpy(dot)


def check(qs, ks, vs, dtype="float32", mask=None, mask_grad=False, rng=None, **kw):
    rng = rng or np.random.default_rng(0)
    qn, kn, vn = (rng.normal(size=s) for s in (qs, ks, vs))
    out, ts, (qr, kr, vr), mref, do = run(qn, kn, vn, dtype, mask, mask_grad, **kw)
    opts = dict(causal=kw.get("is_causal", False), scale=kw.get("scale"),
                gqa=kw.get("enable_gqa", False))
    ref = ref_forward(qr, kr, vr, mref, **opts)[0]
    grads = ref_grads(qr, kr, vr, do, mref, **opts)
    rtol, atol = TOL[dtype]
    assert out.dtype is getattr(mpamp, dtype)
    np.testing.assert_allclose(to_numpy(out.detach()), ref, rtol=rtol, atol=atol)
    for t, g in zip(ts, grads):
        if g is None or t is None or not t.requires_grad:
            continue
        assert t.grad is not None and tuple(t.grad.shape) == g.shape
        if dtype == "float32":
            np.testing.assert_allclose(to_numpy(t.grad), g, rtol=rtol, atol=atol)
        else:
            # The backward's rowsum(dO * O) uses the output as stored (rounded to fp16/bf16,
            # as torch and FlashAttention do) and the gradient is rounded once more: errors
            # scale with each gradient's magnitude, not each element's.
            scale_tol = rtol * max(1.0, float(np.abs(g).max()))
            np.testing.assert_allclose(to_numpy(t.grad), g, rtol=rtol, atol=scale_tol)
    return out, ts


# ---- forward and backward, float32 ----

CASES = {
    "plain": ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8), {}),
    "causal": ((2, 2, 9, 16), (2, 2, 9, 16), (2, 2, 9, 16), {"is_causal": True}),
    "causal_l_gt_s": ((1, 2, 11, 8), (1, 2, 4, 8), (1, 2, 4, 8), {"is_causal": True}),
    "causal_l_lt_s": ((1, 2, 4, 8), (1, 2, 11, 8), (1, 2, 11, 8), {"is_causal": True}),
    "ev_ne_e": ((2, 2, 7, 16), (2, 2, 13, 16), (2, 2, 13, 5), {}),
    "scale": ((2, 7, 8), (2, 9, 8), (2, 9, 8), {"scale": 0.3}),
    "two_dim": ((7, 8), (9, 8), (9, 3), {}),
    "batch_broadcast": ((1, 3, 6, 8), (2, 1, 7, 8), (2, 3, 7, 4), {}),
    "gqa": ((2, 8, 9, 8), (2, 2, 9, 8), (2, 4, 9, 6), {"enable_gqa": True}),
    "gqa_causal": ((1, 6, 12, 8), (1, 3, 12, 8), (1, 3, 12, 8),
                   {"enable_gqa": True, "is_causal": True}),
    "blocks": ((1, 2, 130, 16), (1, 2, 261, 16), (1, 2, 261, 24), {}),
    "blocks_causal": ((1, 1, 200, 16), (1, 1, 200, 16), (1, 1, 200, 8), {"is_causal": True}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_reference_fp32(case):
    qs, ks, vs, kw = CASES[case]
    check(qs, ks, vs, **kw)


def test_bool_mask_broadcast_and_key_padding(rng):
    mask = rng.random((7, 9)) > 0.4
    mask[:, 0] = True
    check((2, 3, 7, 8), (2, 3, 9, 8), (2, 3, 9, 8), mask=mask, rng=rng)
    pad = np.ones((2, 1, 1, 9), bool)
    pad[0, ..., 6:] = False                          # key padding, nn.MultiheadAttention style
    check((2, 3, 7, 8), (2, 3, 9, 8), (2, 3, 9, 8), mask=pad, rng=rng)
    causal = np.tril(np.ones((140, 140), bool))[None, None]   # a (1, 1, T, T) mask
    check((2, 2, 140, 8), (2, 2, 140, 8), (2, 2, 140, 8), mask=causal, rng=rng)


def test_strided_masks_and_one_tensor_for_q_k_v(rng):
    xn = rng.normal(size=(2, 9, 8)).astype(np.float32)
    bmask = rng.random((9, 9)) > 0.4
    bmask[:, 0] = True
    fmask = rng.normal(size=(9, 9)).astype(np.float32)
    for mask in (bmask, fmask):
        x = mpamp.tensor(xn, requires_grad=True)
        mt = mpamp.tensor(np.ascontiguousarray(mask.T)).t()          # column stride 9
        assert not mt.is_contiguous()
        out = SDPA(x, x, x, attn_mask=mt)
        np.testing.assert_allclose(out.detach().numpy(), ref_forward(xn, xn, xn, mask)[0],
                                   rtol=1.3e-6, atol=1e-5)
        do = rng.normal(size=(2, 9, 8)).astype(np.float32)
        out.backward(mpamp.tensor(do))
        np.testing.assert_allclose(x.grad.numpy(), sum(ref_grads(xn, xn, xn, do, mask)[:3]),
                                   rtol=1.3e-6, atol=1e-5)


def test_float_mask_and_its_gradient(rng):
    mask = rng.normal(size=(3, 1, 9)).astype(np.float32)
    _, ts = check((2, 3, 7, 8), (2, 3, 9, 8), (2, 3, 9, 8), mask=mask, mask_grad=True,
                  rng=rng)
    assert tuple(ts[3].grad.shape) == (3, 1, 9)
    full = rng.normal(size=(2, 3, 130, 150)).astype(np.float32)
    check((2, 3, 130, 8), (2, 3, 150, 8), (2, 3, 150, 8), mask=full, mask_grad=True, rng=rng)
    minus_inf = np.where(rng.random((7, 9)) > 0.5, 0.0, -np.inf).astype(np.float32)
    minus_inf[:, 1] = 0.0
    check((2, 7, 8), (2, 9, 8), (2, 9, 8), mask=minus_inf, rng=rng)


def test_mask_may_add_batch_dims(rng):
    mask = rng.random((4, 7, 9)) > 0.3
    mask[..., 0] = True
    out, _ = check((7, 8), (9, 8), (9, 3), mask=mask, rng=rng)
    assert tuple(out.shape) == (4, 7, 3)


def test_non_contiguous_inputs_nanogpt_layout(rng):
    """q, k, v as nanoGPT makes them: x.view(B, T, nh, hs).transpose(1, 2) of one qkv."""
    B, T, nh, hs = 2, 70, 4, 16
    x = rng.normal(size=(B, T, 3 * nh * hs)).astype(np.float32)
    qkv = mpamp.tensor(x, requires_grad=True)
    q, k, v = (qkv[:, :, i * nh * hs:(i + 1) * nh * hs].view(B, T, nh, hs).transpose(1, 2)
               for i in range(3))
    assert not q.is_contiguous()
    y = SDPA(q, k, v, is_causal=True)
    do = rng.normal(size=(B, nh, T, hs)).astype(np.float32)
    y.backward(mpamp.tensor(do))
    qn, kn, vn = (x[:, :, i * nh * hs:(i + 1) * nh * hs].reshape(B, T, nh, hs)
                  .transpose(0, 2, 1, 3) for i in range(3))
    ref = ref_forward(qn, kn, vn, causal=True)[0]
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1.3e-6, atol=1e-5)
    dq, dk, dv, _ = ref_grads(qn, kn, vn, do, causal=True)
    want = np.concatenate([g.transpose(0, 2, 1, 3).reshape(B, T, nh * hs)
                           for g in (dq, dk, dv)], axis=-1)
    np.testing.assert_allclose(qkv.grad.numpy(), want, rtol=1.3e-6, atol=1e-5)


def test_transposed_last_dim_and_expanded_inputs(rng):
    qn = rng.normal(size=(2, 8, 6)).astype(np.float32)     # (B, E, L): q = .transpose(-1, -2)
    kn = rng.normal(size=(1, 9, 8)).astype(np.float32)
    vn = rng.normal(size=(2, 9, 5)).astype(np.float32)
    q = mpamp.tensor(qn, requires_grad=True)
    k = mpamp.tensor(kn, requires_grad=True)
    qt, ke = q.transpose(1, 2), k.expand(2, 9, 8)
    v = mpamp.tensor(vn[:, ::1, :])
    out = SDPA(qt, ke, v)
    ref = ref_forward(qn.transpose(0, 2, 1), np.broadcast_to(kn, (2, 9, 8)), vn)[0]
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1.3e-6, atol=1e-5)
    out.sum().backward()
    dq, dk, _, _ = ref_grads(qn.transpose(0, 2, 1), np.broadcast_to(kn, (2, 9, 8)), vn,
                             np.ones((2, 6, 5)))
    np.testing.assert_allclose(q.grad.numpy(), dq.transpose(0, 2, 1), rtol=1.3e-6, atol=1e-5)
    np.testing.assert_allclose(k.grad.numpy(), dk.sum(0, keepdims=True), rtol=1.3e-6,
                               atol=1e-5)
    sliced = mpamp.tensor(rng.normal(size=(2, 18, 8)).astype(np.float32))[:, ::2]
    out = SDPA(sliced, sliced, sliced)
    sn = sliced.numpy()
    np.testing.assert_allclose(out.numpy(), ref_forward(sn, sn, sn)[0], rtol=1.3e-6,
                               atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", ["plain", "causal", "gqa", "blocks", "ev_ne_e"])
def test_low_precision(dtype, case):
    qs, ks, vs, kw = CASES[case]
    check(qs, ks, vs, dtype=dtype, **kw)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_masks(dtype, rng):
    mask = rng.normal(size=(7, 9)).astype(np.float32)
    check((2, 7, 8), (2, 9, 8), (2, 9, 8), dtype=dtype, mask=mask, mask_grad=True, rng=rng)
    check((2, 7, 8), (2, 9, 8), (2, 9, 8), dtype=dtype, mask=mask, mask_in_dtype=True,
          rng=rng)
    check((2, 7, 8), (2, 9, 8), (2, 9, 8), dtype=dtype, mask=rng.random((7, 9)) > 0.2,
          rng=rng)


def test_fully_masked_rows_give_zero_and_zero_gradients(rng):
    mask = np.ones((6, 8), bool)
    mask[2] = False
    fmask = np.where(mask, 0.0, -np.inf).astype(np.float32)
    for m in (mask, fmask):
        out, (q, k, v, _), *_ = run(*(rng.normal(size=(2, s, 4)) for s in (6, 8, 8)), mask=m)
        assert np.all(out.detach().numpy()[:, 2] == 0)
        assert np.all(q.grad.numpy()[:, 2] == 0)
        assert np.isfinite(k.grad.numpy()).all() and np.isfinite(v.grad.numpy()).all()
    nothing = mpamp.zeros(6, 8, dtype=mpamp.bool)
    q = mpamp.randn(6, 4, requires_grad=True)
    out = SDPA(q, mpamp.randn(8, 4), mpamp.randn(8, 4), attn_mask=nothing)
    out.sum().backward()
    assert out.abs().sum().item() == 0 and q.grad.abs().sum().item() == 0


def test_nan_in_a_float_mask_propagates():
    mask = mpamp.zeros(3, 4)
    mask[1, 2] = float("nan")
    out = SDPA(mpamp.randn(3, 2), mpamp.randn(4, 2), mpamp.randn(4, 2), attn_mask=mask)
    res = out.numpy()
    assert np.isnan(res[1]).all() and np.isfinite(res[[0, 2]]).all()
    all_nan = SDPA(mpamp.randn(3, 2), mpamp.randn(4, 2), mpamp.randn(4, 2),
                   attn_mask=mpamp.full((3, 4), float("nan")))
    assert np.isnan(all_nan.numpy()).all()


def test_empty_shapes():
    assert tuple(SDPA(mpamp.randn(0, 5, 8), mpamp.randn(0, 6, 8),
                      mpamp.randn(0, 6, 3)).shape) == (0, 5, 3)
    q = mpamp.randn(2, 0, 8, requires_grad=True)
    out = SDPA(q, mpamp.randn(2, 6, 8), mpamp.randn(2, 6, 3))
    assert tuple(out.shape) == (2, 0, 3)
    out.sum().backward()
    assert tuple(q.grad.shape) == (2, 0, 8)
    q = mpamp.randn(5, 8, requires_grad=True)
    out = SDPA(q, mpamp.randn(0, 8), mpamp.randn(0, 3))          # no keys: zeros, as torch
    assert out.abs().sum().item() == 0 and tuple(out.shape) == (5, 3)
    out.sum().backward()
    assert q.grad.abs().sum().item() == 0
    v = mpamp.randn(6, 3)
    out = SDPA(mpamp.randn(5, 0), mpamp.randn(6, 0), v)           # E == 0: uniform weights
    np.testing.assert_allclose(out.numpy(), np.tile(v.numpy().mean(0), (5, 1)), rtol=1e-6)


def test_grad_fn_and_saved_graph():
    q = mpamp.randn(2, 3, 4, requires_grad=True)
    out = SDPA(q, q, q)
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    out.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        out.sum().backward()
    with mpamp.no_grad():
        assert SDPA(q, q, q).grad_fn is None


# ---- dropout ----

def test_dropout_is_the_unfused_composition_with_the_same_mask(rng):
    """The mask of element (b, i, j) is drawn as F.dropout's element (b, i, j) of a
    (batch, L, S) tensor: the same seed gives the composition softmax(...) * mask @ v."""
    qn, kn, vn = (rng.normal(size=s).astype(np.float32) for s in
                  ((2, 3, 37, 16), (2, 3, 45, 16), (2, 3, 45, 8)))
    q, k, v = (mpamp.tensor(x, requires_grad=True) for x in (qn, kn, vn))
    mpamp.manual_seed(5)
    out = SDPA(q, k, v, dropout_p=0.3)
    after_sdpa = mpamp.get_rng_state()
    mpamp.manual_seed(5)
    z = F.dropout(mpamp.ones(2, 3, 37, 45), 0.3).numpy()
    assert mpamp.equal(mpamp.get_rng_state(), after_sdpa)   # advanced by the same blocks
    assert 0.6 < (z != 0).mean() < 0.8
    np.testing.assert_allclose(out.detach().numpy(), ref_forward(qn, kn, vn, drop=z)[0],
                               rtol=1.3e-6, atol=1e-5)
    do = rng.normal(size=(2, 3, 37, 8)).astype(np.float32)
    out.backward(mpamp.tensor(do))                    # mask regenerated, not stored
    for t, g in zip((q, k, v), ref_grads(qn, kn, vn, do, drop=z)):
        np.testing.assert_allclose(t.grad.numpy(), g, rtol=1.3e-6, atol=1e-5)


def test_dropout_reproducible_and_advancing(rng):
    q = mpamp.tensor(rng.normal(size=(2, 2, 20, 8)).astype(np.float32))
    mpamp.manual_seed(11)
    a = SDPA(q, q, q, dropout_p=0.5, is_causal=True).numpy()
    b = SDPA(q, q, q, dropout_p=0.5, is_causal=True).numpy()
    mpamp.manual_seed(11)
    a2 = SDPA(q, q, q, dropout_p=0.5, is_causal=True).numpy()
    np.testing.assert_array_equal(a, a2)
    assert not np.array_equal(a, b)
    state = mpamp.get_rng_state()
    np.testing.assert_array_equal(SDPA(q, q, q, dropout_p=0.0).numpy(), SDPA(q, q, q).numpy())
    assert mpamp.equal(mpamp.get_rng_state(), state)  # no dropout: no numbers drawn
    assert np.all(SDPA(q, q, q, dropout_p=1.0).numpy() == 0)
    assert mpamp.equal(mpamp.get_rng_state(), state)  # as F.dropout(p=1): nothing drawn
    np.testing.assert_array_equal(SDPA(q, q, q, dropout_p=-0.5).numpy(), SDPA(q, q, q).numpy())


def test_dropout_backward_with_gqa_and_mask(rng):
    qn, kn, vn = (rng.normal(size=s).astype(np.float32) for s in
                  ((1, 4, 9, 8), (1, 2, 11, 8), (1, 2, 11, 8)))
    mask = rng.normal(size=(9, 11)).astype(np.float32)
    q, k, v = (mpamp.tensor(x, requires_grad=True) for x in (qn, kn, vn))
    m = mpamp.tensor(mask, requires_grad=True)
    mpamp.manual_seed(3)
    out = SDPA(q, k, v, attn_mask=m, dropout_p=0.25, enable_gqa=True)
    mpamp.manual_seed(3)
    z = F.dropout(mpamp.ones(1, 4, 9, 11), 0.25).numpy()
    do = rng.normal(size=(1, 4, 9, 8)).astype(np.float32)
    out.backward(mpamp.tensor(do))
    want = ref_grads(qn, kn, vn, do, mask=mask, gqa=True, drop=z)
    for t, g in zip((q, k, v, m), want):
        np.testing.assert_allclose(t.grad.numpy(), g, rtol=1.3e-6, atol=1e-5)


# ---- threads: the same bits for any count (the backward's split mode included) ----

@pytest.mark.parametrize("shape", [(1, 1, 150, 16), (3, 2, 70, 8)])
def test_results_do_not_depend_on_the_thread_count(shape, rng):
    qn, kn, vn = (rng.normal(size=shape).astype(np.float32) for _ in range(3))
    do = mpamp.tensor(rng.normal(size=shape).astype(np.float32))
    before, results = mpamp.get_num_threads(), []
    try:
        for n in (1, 2, 3):
            mpamp.set_num_threads(n)
            q, k, v = (mpamp.tensor(x, requires_grad=True) for x in (qn, kn, vn))
            mpamp.manual_seed(1)
            out = SDPA(q, k, v, is_causal=True, dropout_p=0.1)
            out.backward(do)
            results.append([t.numpy() for t in (out.detach(), q.grad, k.grad, v.grad)])
    finally:
        mpamp.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


# ---- errors (torch's types and messages) ----

def test_errors():
    q, k, v = mpamp.randn(2, 4, 5, 8), mpamp.randn(2, 4, 6, 8), mpamp.randn(2, 4, 6, 3)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        SDPA(q, k, v, attn_mask=mpamp.ones(5, 6, dtype=mpamp.bool), is_causal=True)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[8, 6\] but got: \[8, 7\]"):
        SDPA(q, k, mpamp.randn(2, 4, 7, 3))
    with pytest.raises(RuntimeError, match=r"to be: \[8, 8\] but got: \[8, 9\]"):
        SDPA(q, mpamp.randn(2, 4, 6, 9), v)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same "
                                           "dtype, but got query.dtype: float key.dtype: "
                                           "c10::Half and value.dtype: float instead."):
        SDPA(q, k.half(), v)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
        SDPA(q.long(), k.long(), v.long())
    with pytest.raises(RuntimeError, match="Expected query, key, and value to all be  at least "
                                           "2 dimensional, but got query.dim: 1 key.dim: 2 "
                                           "and value.dim: 2 instead."):
        SDPA(q[0, 0, 0], k[0, 0], v[0, 0])
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float or to "
                                           "match query dtype, but got attn_mask.dtype: long "
                                           "int and  query.dtype: float instead."):
        SDPA(q, k, v, attn_mask=mpamp.ones(5, 6, dtype=mpamp.int64))
    with pytest.raises(RuntimeError, match="attn_mask.dtype: c10::Half and  query.dtype: "
                                           "c10::BFloat16"):
        SDPA(q.bfloat16(), k.bfloat16(), v.bfloat16(), attn_mask=mpamp.zeros(5, 6).half())
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        SDPA(q, k, v, attn_mask=mpamp.ones(5, 7))
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        SDPA(mpamp.randn(3, 4, 5, 8), k, v)
    with pytest.raises(RuntimeError, match=r"attn_mask of shape \[3, 1\] does not broadcast to "
                                           r"the attention weights' \[..., 1, 6\]"):
        SDPA(mpamp.randn(1, 8), mpamp.randn(6, 8), mpamp.randn(6, 3),
             attn_mask=mpamp.zeros(3, 1))
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, "
                                           "but got 1.5"):
        SDPA(q, k, v, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide the "
                                           "number of heads in"):
        SDPA(mpamp.randn(2, 6, 5, 8), k, v, enable_gqa=True)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide"):
        SDPA(mpamp.randn(2, 8, 5, 8), k, mpamp.randn(2, 3, 6, 3), enable_gqa=True)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        SDPA(mpamp.randn(2, 8, 5, 8), k, v)                     # without enable_gqa
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got -3\)"):
        SDPA(mpamp.randn(5, 8), mpamp.randn(6, 8), mpamp.randn(6, 3), enable_gqa=True)
    with pytest.raises(TypeError, match="argument 'attn_mask' must be Tensor, not int"):
        SDPA(q, k, v, attn_mask=3)
    with pytest.raises(TypeError, match=r"argument 'query' \(position 1\) must be Tensor, not "
                                        r"int"):
        SDPA(1, k, v)
    with pytest.raises(TypeError, match=r"argument 'value' \(position 3\) must be Tensor"):
        SDPA(q, k, [1.0])


# ---- autocast ----

def test_autocast_row_and_lower_precision(rng):
    pol = mpamp._C._autocast_policy
    assert pol("scaled_dot_product_attention", "cpu") == "lower"
    assert pol("scaled_dot_product_attention", "cuda") == "lower"
    qn = rng.normal(size=(2, 5, 8)).astype(np.float32)
    q = mpamp.tensor(qn, requires_grad=True)
    mask = mpamp.tensor(rng.normal(size=(5, 5)).astype(np.float32))
    with mpamp.autocast("cpu", dtype=mpamp.bfloat16):
        out = SDPA(q, q, q, attn_mask=mask)
        bmask = SDPA(q, q, q, attn_mask=mpamp.ones(5, 5, dtype=mpamp.bool))
    assert out.dtype is mpamp.bfloat16 and bmask.dtype is mpamp.bfloat16
    qr = to_numpy(q.detach().bfloat16())
    mr = to_numpy(mask.bfloat16())                    # float masks are cast too, as torch
    np.testing.assert_allclose(to_numpy(out.detach()), ref_forward(qr, qr, qr, mr)[0],
                               rtol=1.6e-2, atol=1e-5)
    out.float().sum().backward()
    assert q.grad.dtype is mpamp.float32
    assert SDPA(q, q, q).dtype is mpamp.float32


# ---- peak memory: fused below the unfused composition ----

def _peak_of(step):
    import gc
    gc.collect()
    mpamp.backends.cpu.reset_peak_stats()
    base = mpamp.backends.cpu.allocator_stats()["in_use_bytes"]
    step()
    gc.collect()
    stats = mpamp.backends.cpu.allocator_stats()
    return stats["peak_in_use_bytes"] - base, stats["in_use_bytes"] - base


def test_peak_memory_below_the_unfused_composition_and_no_leak():
    B, H, T, D = 2, 2, 256, 16
    rng = np.random.default_rng(0)
    qkv = [mpamp.tensor(rng.normal(size=(B, H, T, D)).astype(np.float32), requires_grad=True)
           for _ in range(3)]
    above = mpamp.tensor(~np.tril(np.ones((T, T), bool)))   # True where j > i

    def fused():
        SDPA(*qkv, is_causal=True).sum().backward()

    def unfused():
        q, k, v = qkv
        att = (q @ k.transpose(-2, -1)) * (1.0 / np.sqrt(D))
        att = att.masked_fill(above, float("-inf"))
        F.softmax(att, dim=-1).matmul(v).sum().backward()

    for t in qkv:
        t.grad = None
    fused()                                           # warm up lazily created state
    for t in qkv:
        t.grad = None
    peak_fused, left = _peak_of(fused)
    assert left == 3 * B * H * T * D * 4              # only the three .grad tensors remain
    for t in qkv:
        t.grad = None
    peak_unfused, _ = _peak_of(unfused)
    scores = B * H * T * T * 4
    assert peak_fused < scores < peak_unfused


# ---- against torch ----

@pytest.mark.parametrize("case", sorted(CASES))
def test_against_torch(case, rng):
    torch = pytest.importorskip("torch")
    qs, ks, vs, kw = CASES[case]
    arrs = [rng.normal(size=s).astype(np.float32) for s in (qs, ks, vs)]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    ms = [mpamp.tensor(a, requires_grad=True) for a in arrs]
    want = torch.nn.functional.scaled_dot_product_attention(*ts, **kw)
    got = SDPA(*ms, **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    do = rng.normal(size=tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(do))
    got.backward(mpamp.tensor(do))
    for m, t in zip(ms, ts):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_against_torch_masks(rng):
    torch = pytest.importorskip("torch")
    arrs = [rng.normal(size=s).astype(np.float32) for s in ((2, 3, 7, 8), (2, 3, 9, 8),
                                                            (2, 3, 9, 4))]
    bmask = rng.random((2, 1, 7, 9)) > 0.5
    bmask[:, :, 3] = False                            # a fully masked row: torch gives 0
    fmask = rng.normal(size=(3, 7, 9)).astype(np.float32)
    for mask in (bmask, fmask):
        ts = [torch.tensor(a, requires_grad=True) for a in arrs]
        ms = [mpamp.tensor(a, requires_grad=True) for a in arrs]
        tm = torch.tensor(mask, requires_grad=mask.dtype != bool)
        mm = mpamp.tensor(mask, requires_grad=mask.dtype != bool)
        want = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=tm)
        got = SDPA(*ms, attn_mask=mm)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
        want.sum().backward()
        got.sum().backward()
        for m, t in zip(ms + [mm], ts + [tm]):
            if t.grad is not None:
                np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-4,
                                           atol=1e-5)


def test_no_allocator_growth_over_repeats_and_errors():
    import gc
    q = mpamp.randn(2, 2, 70, 8, requires_grad=True)
    m = mpamp.zeros(70, 70, requires_grad=True)

    def work():
        SDPA(q, q, q, attn_mask=m, dropout_p=0.2).sum().backward()
        for bad in (dict(attn_mask=m, is_causal=True), dict(dropout_p=2.0),
                    dict(attn_mask=mpamp.zeros(3, 70, 69))):
            with pytest.raises(RuntimeError):
                SDPA(q, q, q, **bad)
        q.grad = m.grad = None

    work()
    gc.collect()
    before = mpamp.backends.cpu.allocator_stats()["in_use_bytes"]
    for _ in range(5):
        work()
    gc.collect()
    assert mpamp.backends.cpu.allocator_stats()["in_use_bytes"] == before
