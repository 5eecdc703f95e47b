"""nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.RMSNorm and
F.rms_norm: torch's parameter names and state_dict layout, outputs and gradients equal to
torch's with identical weights (copied via state_dict) in eval mode and in train mode without
dropout, a NumPy reference for rms_norm in every float dtype, misuse errors, and learning tests
that need no torch."""
import numpy as np
import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F
from conftest import TOL, to_numpy


def torch_or_skip():
    return pytest.importorskip("torch")


def copy_weights(mp_module, torch_module):
    """Load torch's state_dict into the mpamp module (keys must match exactly)."""
    state = {k: mpamp.tensor(v.detach().cpu().numpy()) for k, v in torch_module.state_dict().items()}
    assert list(state) == list(mp_module.state_dict())
    mp_module.load_state_dict(state)


def both(rng, shape, torch):
    a = rng.normal(size=shape).astype(np.float32)
    return mpamp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(m, t, rtol=1e-5, atol=2e-5):
    np.testing.assert_allclose(to_numpy(m.detach()), t.detach().cpu().numpy(), rtol=rtol, atol=atol)


def grads_close(mp_module, torch_module, rtol=1e-4, atol=2e-5):
    tp = dict(torch_module.named_parameters())
    for name, p in mp_module.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp[name].grad.cpu().numpy(), rtol=rtol,
                                   atol=atol, err_msg=name)


# ---- layouts ----

def test_state_dict_layout_matches_torch():
    torch = torch_or_skip()
    pairs = [(nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)),
             (nn.MultiheadAttention(8, 2, kdim=5, vdim=3),
              torch.nn.MultiheadAttention(8, 2, kdim=5, vdim=3)),
             (nn.MultiheadAttention(8, 4, bias=False), torch.nn.MultiheadAttention(8, 4,
                                                                                 bias=False)),
             (nn.TransformerEncoderLayer(8, 2, 16), torch.nn.TransformerEncoderLayer(8, 2, 16)),
             (nn.TransformerEncoderLayer(8, 2, 16, bias=False),
              torch.nn.TransformerEncoderLayer(8, 2, 16, bias=False)),
             (nn.RMSNorm([3, 4]), torch.nn.RMSNorm([3, 4])),
             (nn.RMSNorm(4, elementwise_affine=False),
              torch.nn.RMSNorm(4, elementwise_affine=False))]
    for m, t in pairs:
        assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
        assert repr(m) == repr(t).replace("torch.", "mpamp.")
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3, norm=nn.LayerNorm(8),
                                enable_nested_tensor=False)
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 3,
                                       norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    assert list(enc.state_dict()) == list(tenc.state_dict())


def test_encoder_layers_are_deep_copies():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 2)
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1 and w0 is not layer.linear1.weight
    np.testing.assert_array_equal(w0.detach().cpu().numpy(), w1.detach().cpu().numpy())
    assert len(list(enc.parameters())) == 2 * len(list(layer.parameters()))


def test_mha_init():
    m = nn.MultiheadAttention(12, 3)
    w = m.in_proj_weight.detach().cpu().numpy()
    bound = np.sqrt(6.0 / (12 + 36))                    # xavier_uniform_ of (36, 12)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert m.in_proj_bias.abs().sum().item() == 0 and m.out_proj.bias.abs().sum().item() == 0
    assert m.head_dim == 4 and m.bias_k is None and m.bias_v is None


# ---- MultiheadAttention against torch ----

MHA_CASES = {
    "self": dict(kw={}, call="self"),
    "self_batch_first": dict(kw={"batch_first": True}, call="self"),
    "cross": dict(kw={}, call="cross"),
    "separate": dict(kw={}, call="qkv"),
    "kdim_vdim": dict(kw={"kdim": 5, "vdim": 3}, call="qkv"),
    "no_bias": dict(kw={"bias": False}, call="self"),
    "unbatched": dict(kw={}, call="unbatched"),
}


def _mha_inputs(call, rng, torch, batch_first, kdim=8, vdim=8):
    L, S, N, E = 5, 7, 3, 8
    shape = (lambda s, e: (N, s, e)) if batch_first else (lambda s, e: (s, N, e))
    if call == "unbatched":
        q = both(rng, (L, E), torch)
        return q, q, q
    if call == "self":
        q = both(rng, shape(L, E), torch)
        return q, q, q
    q = both(rng, shape(L, E), torch)
    k = both(rng, shape(S, kdim), torch)
    return (q, k, k) if call == "cross" else (q, k, both(rng, shape(S, vdim), torch))


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_mha_matches_torch(case, need_weights, rng):
    torch = torch_or_skip()
    spec = MHA_CASES[case]
    kw = {"num_heads": 2, **spec["kw"]}
    tm, mm = torch.nn.MultiheadAttention(8, **kw), nn.MultiheadAttention(8, **kw)
    copy_weights(mm, tm)
    (qm, qt), (km, kt), (vm, vt) = _mha_inputs(spec["call"], rng, torch,
                                               kw.get("batch_first", False),
                                               kw.get("kdim", 8), kw.get("vdim", 8))
    for train in (False, True):                        # dropout 0: train mode is the same
        mm.train(train), tm.train(train)
        om, wm = mm(qm, km, vm, need_weights=need_weights)
        ot, wt = tm(qt, kt, vt, need_weights=need_weights)
        close(om, ot)
        assert (wm is None) == (wt is None)
        if wt is not None:
            close(wm, wt)
    om.sum().backward()
    ot.sum().backward()
    grads_close(mm, tm)
    for m, t in {id(x[0]): x for x in ((qm, qt), (km, kt), (vm, vt))}.values():
        np.testing.assert_allclose(m.grad.cpu().numpy(), t.grad.cpu().numpy(), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_masks_match_torch(batch_first, rng):
    torch = torch_or_skip()
    L, N, E, H = 6, 2, 8, 2
    tm = torch.nn.MultiheadAttention(E, H, batch_first=batch_first).eval()
    mm = nn.MultiheadAttention(E, H, batch_first=batch_first).eval()
    copy_weights(mm, tm)
    x = rng.normal(size=(N, L, E) if batch_first else (L, N, E)).astype(np.float32)
    causal_bool = np.triu(np.ones((L, L), bool), 1)
    causal_float = np.where(causal_bool, -np.inf, 0).astype(np.float32)
    pad = np.zeros((N, L), bool)
    pad[1, -2:] = True
    per_head = rng.normal(size=(N * H, L, L)).astype(np.float32)
    cases = [dict(attn_mask=causal_bool), dict(attn_mask=causal_float),
             dict(attn_mask=per_head), dict(key_padding_mask=pad),
             dict(key_padding_mask=np.where(pad, -np.inf, 0).astype(np.float32)),
             dict(attn_mask=causal_float, key_padding_mask=np.where(pad, -1e9, 0)
                  .astype(np.float32)),
             dict(attn_mask=causal_bool, is_causal=True),
             dict(attn_mask=causal_bool, is_causal=True, key_padding_mask=pad)]
    for c in cases:
        for need_weights in (True, False):
            for average in (True, False):
                tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                      for k, v in c.items()}
                mk = {k: mpamp.tensor(v) if isinstance(v, np.ndarray) else v
                      for k, v in c.items()}
                xt, xm = torch.tensor(x), mpamp.tensor(x)
                ot, wt = tm(xt, xt, xt, need_weights=need_weights,
                            average_attn_weights=average, **tk)
                om, wm = mm(xm, xm, xm, need_weights=need_weights,
                            average_attn_weights=average, **mk)
                close(om, ot)
                if wt is not None:
                    close(wm, wt)


def test_mha_unbatched_masks_match_torch(rng):
    torch = torch_or_skip()
    tm, mm = torch.nn.MultiheadAttention(8, 2).eval(), nn.MultiheadAttention(8, 2).eval()
    copy_weights(mm, tm)
    x = rng.normal(size=(5, 8)).astype(np.float32)
    pad = np.array([False, False, False, True, True])
    per_head = rng.normal(size=(2, 5, 5)).astype(np.float32)
    for kw in (dict(key_padding_mask=pad), dict(attn_mask=per_head)):
        ot, wt = tm(torch.tensor(x), torch.tensor(x), torch.tensor(x),
                    **{k: torch.tensor(v) for k, v in kw.items()})
        om, wm = mm(mpamp.tensor(x), mpamp.tensor(x), mpamp.tensor(x),
                    **{k: mpamp.tensor(v) for k, v in kw.items()})
        close(om, ot)
        close(wm, wt)


def test_mha_dropout_in_training_only(rng):
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = mpamp.tensor(rng.normal(size=(6, 2, 8)).astype(np.float32))
    m.eval()
    e1, e2 = m(x, x, x)[0].detach().cpu().numpy(), m(x, x, x)[0].detach().cpu().numpy()
    np.testing.assert_array_equal(e1, e2)
    m.train()
    mpamp.manual_seed(0)
    t1 = m(x, x, x, need_weights=False)[0].detach().cpu().numpy()
    mpamp.manual_seed(0)
    t2 = m(x, x, x, need_weights=False)[0].detach().cpu().numpy()
    np.testing.assert_array_equal(t1, t2)
    assert not np.allclose(t1, e1)
    w = m(x, x, x)[1].detach().cpu().numpy()                  # dropped weights are returned
    assert (w == 0).any()


def test_mha_errors():
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got "
                                         "embed_dim=0 and num_heads=2 instead"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(NotImplementedError, match="add_bias_kv=True"):
        nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(NotImplementedError, match="add_zero_attn=True"):
        nn.MultiheadAttention(8, 2, add_zero_attn=True)
    m = nn.MultiheadAttention(8, 2)
    x = mpamp.randn(5, 3, 8)
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D "
                                             "tensor but received 4-D query tensor"):
        m(x[None], x[None], x[None])
    with pytest.raises(AssertionError, match="For batched \\(3-D\\) `query`, expected `key` "
                                             "and `value` to be 3-D but found 2-D and 3-D"):
        m(x, x[0], x)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got "
                                             "6"):
        m(mpamp.randn(5, 3, 6), mpamp.randn(5, 3, 6), mpamp.randn(5, 3, 6))
    with pytest.raises(AssertionError, match="key shape .* does not match value shape"):
        m(x, x, mpamp.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is mpamp.Size\(\[4, "
                                           r"4\]\), but should be \(5, 5\)."):
        m(x, x, x, attn_mask=mpamp.zeros(4, 4))
    with pytest.raises(RuntimeError, match="The shape of the 3D attn_mask is"):
        m(x, x, x, attn_mask=mpamp.zeros(2, 5, 5))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are "
                                             "supported"):
        m(x, x, x, attn_mask=mpamp.zeros(5, 5, dtype=mpamp.int64))
    with pytest.raises(AssertionError, match="expected `key_padding_mask` to be `None` or 2-D"):
        m(x, x, x, key_padding_mask=mpamp.zeros(3, dtype=mpamp.bool))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[0\\] to be 3, "
                                             "but got 2"):
        m(x, x, x, key_padding_mask=mpamp.zeros(2, 5, dtype=mpamp.bool))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[1\\] to be 5"):
        m(x, x, x, key_padding_mask=mpamp.zeros(3, 4, dtype=mpamp.bool))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and "
                                         "attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=mpamp.zeros(3, 5, dtype=mpamp.bool),
          attn_mask=mpamp.zeros(5, 5))
    with pytest.raises(NotImplementedError, match="bias_k/bias_v"):
        F.multi_head_attention_forward(x, x, x, 8, 2, m.in_proj_weight, m.in_proj_bias,
                                       mpamp.zeros(1, 1, 8), mpamp.zeros(1, 1, 8), False, 0.0,
                                       m.out_proj.weight, m.out_proj.bias)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_mha_under_autocast_matches_torchs_dtypes(rng):
    x = mpamp.tensor(rng.normal(size=(2, 9, 16)).astype(np.float32))
    m = nn.MultiheadAttention(16, 4)
    pad = mpamp.zeros(9, 2, dtype=mpamp.bool)
    with mpamp.autocast("cpu", dtype=mpamp.bfloat16):
        out, w = m(x, x, x, key_padding_mask=pad)
        fused, none = m(x, x, x, key_padding_mask=pad, need_weights=False)
    assert out.dtype is w.dtype is fused.dtype is mpamp.bfloat16 and none is None
    np.testing.assert_allclose(to_numpy(fused), to_numpy(out), rtol=3e-2, atol=3e-2)
    fused.float().sum().backward()
    assert m.in_proj_weight.grad.dtype is mpamp.float32


# ---- TransformerEncoderLayer / TransformerEncoder against torch ----

@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
def test_encoder_layer_matches_torch(norm_first, batch_first, activation, rng):
    torch = torch_or_skip()
    act_t = torch.nn.functional.silu if activation == "callable" else activation
    act_m = F.silu if activation == "callable" else activation
    kw = dict(dim_feedforward=32, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    tl = torch.nn.TransformerEncoderLayer(16, 4, activation=act_t, **kw)
    ml = nn.TransformerEncoderLayer(16, 4, activation=act_m, **kw)
    copy_weights(ml, tl)
    shape = (3, 7, 16) if batch_first else (7, 3, 16)
    xm, xt = both(rng, shape, torch)
    pad = np.zeros((3, 7), bool)
    pad[0, -3:] = True
    mask = np.triu(np.ones((7, 7), bool), 1)
    for train, kwargs in ((False, {}), (True, {}),
                          (True, dict(src_key_padding_mask=pad)),
                          (False, dict(src_mask=mask, is_causal=True))):
        ml.train(train), tl.train(train)
        ot = tl(xt, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                       for k, v in kwargs.items()})
        om = ml(xm, **{k: mpamp.tensor(v) if isinstance(v, np.ndarray) else v
                       for k, v in kwargs.items()})
        close(om, ot, atol=5e-5)
    ot.sum().backward()
    om.sum().backward()
    grads_close(ml, tl, atol=5e-5)
    np.testing.assert_allclose(xm.grad.cpu().numpy(), xt.grad.cpu().numpy(), rtol=1e-4, atol=5e-5)


def test_encoder_layer_no_bias_and_unbatched(rng):
    torch = torch_or_skip()
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, bias=False).eval()
    ml = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, bias=False).eval()
    copy_weights(ml, tl)
    x = rng.normal(size=(5, 8)).astype(np.float32)
    close(ml(mpamp.tensor(x)), tl(torch.tensor(x)), atol=5e-5)


@pytest.mark.filterwarnings("ignore:Support for mismatched src_key_padding_mask")
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_matches_torch(batch_first, rng):
    torch = torch_or_skip()
    kw = dict(dim_feedforward=32, dropout=0.0, batch_first=batch_first)
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 2, **kw), 2,
                                       norm=torch.nn.LayerNorm(16), enable_nested_tensor=False)
    menc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, **kw), 2,
                                 norm=nn.LayerNorm(16))
    copy_weights(menc, tenc)
    T = 9
    shape = (2, T, 16) if batch_first else (T, 2, 16)
    xm, xt = both(rng, shape, torch)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T)
    pad = np.zeros((2, T), bool)
    pad[1, -4:] = True
    for kwargs in ({}, {"mask": causal.cpu().numpy()}, {"src_key_padding_mask": pad},
                   {"mask": causal.cpu().numpy(), "src_key_padding_mask": pad}):
        tenc.eval(), menc.eval()
        ot = tenc(xt, **{k: torch.tensor(v) for k, v in kwargs.items()})
        om = menc(xm, **{k: mpamp.tensor(v) for k, v in kwargs.items()})
        close(om, ot, atol=5e-5)
    tenc.train(), menc.train()
    ot = tenc(xt, mask=causal)
    om = menc(xm, mask=mpamp.tensor(causal.cpu().numpy()))
    close(om, ot, atol=5e-5)
    ot.sum().backward()
    om.sum().backward()
    grads_close(menc, tenc, atol=5e-5)


def test_causal_mask_detection():
    from mpamp.nn.modules.transformer import _detect_is_causal_mask
    causal = mpamp.tensor(np.triu(np.full((4, 4), -np.inf, np.float32), 1))
    assert _detect_is_causal_mask(causal) is True
    assert _detect_is_causal_mask(causal, is_causal=False) is False
    assert _detect_is_causal_mask(mpamp.zeros(4, 4)) is False
    assert _detect_is_causal_mask(causal, size=5) is False
    assert _detect_is_causal_mask(None) is False


# ---- RMSNorm / F.rms_norm ----

def rms_ref(x, w, eps):
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - w.ndim, x.ndim)) if w is not None else (-1,)
    r = 1 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return x * r * (1 if w is None else w), r


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rms_norm_forward_backward(dtype, rng):
    xn = rng.normal(size=(3, 4, 6)).astype(np.float32)
    wn = rng.normal(size=(4, 6)).astype(np.float32)
    x = mpamp.tensor(xn).to(dtype).requires_grad_()
    w = mpamp.tensor(wn, requires_grad=True)
    y = F.rms_norm(x, (4, 6), w, eps=1e-4)
    assert y.dtype is x.dtype and y.grad_fn.name() == "FusedRmsNormBackward0"
    xr = to_numpy(x.detach()).astype(np.float64)
    ref, r = rms_ref(xr, wn.astype(np.float64), 1e-4)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(y.detach()), ref, rtol=rtol, atol=atol)
    g = rng.normal(size=(3, 4, 6)).astype(np.float32)
    y.backward(mpamp.tensor(g).to(dtype))
    gr = to_numpy(mpamp.tensor(g).to(dtype)).astype(np.float64)
    xhat = xr * r
    dy = gr * wn
    dx = r * (dy - xhat * (dy * xhat).mean(axis=(1, 2), keepdims=True))
    dw = (gr * xhat).sum(0)
    # fp32 rows (24 elements) are summed in double: fp32 tolerance; fp16/bf16 gradients are
    # rounded once from fp32 (x's), the weight gradient stays fp32 (a sum of 3 rows)
    np.testing.assert_allclose(to_numpy(x.grad), dx, rtol=rtol, atol=max(atol, rtol * 4))
    np.testing.assert_allclose(w.grad.cpu().numpy(), dw, rtol=1e-5, atol=1e-5)
    assert w.grad.dtype is mpamp.float32


def test_rms_norm_defaults_and_layouts(rng):
    xn = rng.normal(size=(5, 8)).astype(np.float32)
    y = F.rms_norm(mpamp.tensor(xn), [8])
    np.testing.assert_allclose(y.cpu().numpy(), rms_ref(xn, None, np.finfo(np.float32).eps)[0],
                               rtol=1.3e-6, atol=1e-5)
    xt = mpamp.tensor(np.ascontiguousarray(xn.T)).t()                # non-contiguous
    np.testing.assert_allclose(F.rms_norm(xt, 8).cpu().numpy(), y.cpu().numpy(), rtol=1e-6)
    bf = mpamp.tensor([[1e-3, 1e-3]]).bfloat16()                     # eps is fp32's, as torch
    assert abs(F.rms_norm(bf, (2,)).float().tolist()[0][0] - 0.9453) < 5e-3
    assert tuple(F.rms_norm(mpamp.zeros(0, 8), (8,)).shape) == (0, 8)
    m = nn.RMSNorm(8)
    np.testing.assert_allclose(m(mpamp.tensor(xn)).detach().cpu().numpy(), y.cpu().numpy(), rtol=1e-6)
    m = nn.RMSNorm([8], eps=1e-2, elementwise_affine=False)
    assert m.weight is None and not list(m.parameters())
    np.testing.assert_allclose(m(mpamp.tensor(xn)).cpu().numpy(), rms_ref(xn, None, 1e-2)[0],
                               rtol=1.3e-6, atol=1e-5)


def test_rms_norm_errors():
    x = mpamp.randn(3, 4, 8)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[7\], expected input with "
                                           r"shape \[\*7\], but got input of size\[3, 4, 8\]"):
        F.rms_norm(x, (7,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as "
                                           r"normalized_shape, but got weight of shape \[7\] "
                                           r"and normalized_shape = \[8\]"):
        F.rms_norm(x, (8,), weight=mpamp.ones(7))
    with pytest.raises(RuntimeError, match="Expected normalized_shape to be at least "
                                           "1-dimensional"):
        F.rms_norm(x, ())
    with pytest.raises(RuntimeError, match="Input tensor must have at least 4 dimensions, but "
                                           "got 3"):
        F.rms_norm(x, (2, 3, 4, 8))
    with pytest.raises(NotImplementedError, match="\"rms_norm\" not implemented for 'Long'"):
        F.rms_norm(x.long(), (8,))
    with pytest.raises(RuntimeError, match="\"rms_norm\" not implemented for 'Bool'"):
        mpamp._C._rms_norm(x.bool(), (8,), None, None)
    with pytest.raises(TypeError, match="rms_norm: weight must be a floating point tensor, got "
                                        "Long"):
        F.rms_norm(x, (8,), weight=mpamp.ones(8).long())
    with pytest.raises(TypeError, match="argument 'weight' must be Tensor"):
        F.rms_norm(x, (8,), weight=[1.0] * 8)
    y = F.rms_norm(mpamp.randn(2, 8, requires_grad=True), (8,), mpamp.ones(8,
                                                                        requires_grad=True))
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.sum().backward()


def test_rms_norm_against_torch_and_autocast(rng):
    pol = mpamp._C._autocast_policy
    assert pol("rms_norm", "cpu") is None and pol("rms_norm", "cuda") == "fp32"
    x = mpamp.randn(2, 8)
    with mpamp.autocast("cpu", dtype=mpamp.bfloat16):
        assert F.rms_norm(x, (8,)).dtype is mpamp.float32        # CPU: unchanged
        assert F.rms_norm(x.bfloat16(), (8,)).dtype is mpamp.bfloat16
    torch = torch_or_skip()
    xm, xt = both(rng, (4, 3, 8), torch)
    tm, mm = torch.nn.RMSNorm([3, 8], eps=1e-6), nn.RMSNorm([3, 8], eps=1e-6)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(rng.normal(size=(3, 8)).astype(np.float32)))
    copy_weights(mm, tm)
    ot, om = tm(xt), mm(xm)
    close(om, ot, rtol=1.3e-6, atol=1e-5)
    ot.sum().backward()
    om.sum().backward()
    grads_close(mm, tm)
    np.testing.assert_allclose(xm.grad.cpu().numpy(), xt.grad.cpu().numpy(), rtol=1e-5, atol=1e-5)
    for dt in (torch.float16, torch.bfloat16):
        a = rng.normal(size=(3, 8)).astype(np.float32)
        want = torch.nn.functional.rms_norm(torch.tensor(a).to(dt), (8,)).float().cpu().numpy()
        got = to_numpy(F.rms_norm(mpamp.tensor(a).to(str(dt).split(".")[1]), (8,)))
        np.testing.assert_allclose(got, want, rtol=TOL[str(dt).split(".")[1]][0] * 2,
                                   atol=1e-3)


# ---- learning, without torch ----

class TinyCausalLM(nn.Module):
    def __init__(self, vocab, d, heads, layers, norm_first):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(16, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True,
                                           norm_first=norm_first, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.RMSNorm(d))
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        mask = mpamp.tensor(np.triu(np.full((T, T), -np.inf, np.float32), 1))
        h = self.emb(idx) + self.pos(mpamp.arange(T))
        return self.head(self.enc(h, mask=mask))


@pytest.mark.parametrize("norm_first", [False, True])
def test_tiny_transformer_learns_to_copy_the_previous_token(norm_first):
    """Target t+1 = token t: only attention (to the previous position) can solve it."""
    mpamp.manual_seed(0)
    rng = np.random.default_rng(0)
    vocab, T = 8, 12
    model = TinyCausalLM(vocab, 32, 4, 1, norm_first)
    opt = mpamp.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(150):
        seq = rng.integers(0, vocab, size=(32, T + 1))
        x, y = mpamp.tensor(seq[:, 1:]), mpamp.tensor(seq[:, :-1])
        logits = model(x)
        loss = F.cross_entropy(logits[:, 1:].reshape(-1, vocab), y[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 1.8                              # ~ln(8) at the start
    assert np.mean(losses[-10:]) < 0.3, losses[-10:]


def test_mha_learns_to_attend_to_the_key_position(rng):
    """Query i must return value j(i) given by a key match: cross-attention."""
    mpamp.manual_seed(1)
    m = nn.MultiheadAttention(16, 2, batch_first=True)
    opt = mpamp.optim.Adam(m.parameters(), lr=1e-2)
    first = last = None
    for step in range(200):
        keys = rng.normal(size=(16, 6, 16)).astype(np.float32)
        vals = rng.normal(size=(16, 6, 16)).astype(np.float32)
        pick = rng.integers(0, 6, size=16)
        q = keys[np.arange(16), pick][:, None]            # the query is one of the keys
        target = vals[np.arange(16), pick][:, None]
        out, _ = m(mpamp.tensor(q), mpamp.tensor(keys), mpamp.tensor(vals),
                   need_weights=False)
        loss = F.mse_loss(out, mpamp.tensor(target))
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
    assert last < 0.35 * first, (first, last)
