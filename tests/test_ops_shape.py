"""cat, stack, embedding, dropout, clamp and where: forward and backward against NumPy per
dtype, torch's promotion and error messages, dropout statistics and reproducibility."""
import struct

import numpy as np
import pytest

import mpamp
from conftest import TOL, assert_close, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]


def make(rng, shape, dtype="float32", requires_grad=False):
    t = mpamp.tensor(rng.standard_normal(shape).astype(np.float32)).to(getattr(mpamp, dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t, to_numpy(t)


# ---- cat / stack ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cat_forward_backward(rng, dtype, dim):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if d != dim % 3 else s + i for d, s in enumerate(sh))
              for i, sh in enumerate(shapes)]
    pairs = [make(rng, s, dtype, True) for s in shapes]
    out = mpamp.cat([t for t, _ in pairs], dim)
    ref = np.concatenate([a for _, a in pairs], dim)
    assert out.dtype == getattr(mpamp, dtype) and out.grad_fn.name() == "CatBackward0"
    np.testing.assert_array_equal(to_numpy(out), ref)
    g, gn = make(rng, ref.shape, dtype)
    out.backward(g)
    splits = np.cumsum([a.shape[dim] for _, a in pairs])[:-1]
    for (t, _), gpart in zip(pairs, np.split(gn, splits, dim)):
        np.testing.assert_array_equal(to_numpy(t.grad), gpart)


def test_cat_promotes_and_sends_grads_back_in_each_dtype(rng):
    a, an = make(rng, (2, 3), "float16", True)
    b, bn = make(rng, (1, 3), "float32", True)
    c, cn = make(rng, (2, 3), "bfloat16", True)
    out = mpamp.concat((a, b, c))
    assert out.dtype == mpamp.float32
    np.testing.assert_array_equal(to_numpy(out), np.concatenate([an, bn, cn]))
    out.backward(mpamp.ones(5, 3))
    assert a.grad.dtype == mpamp.float16 and c.grad.dtype == mpamp.bfloat16
    assert to_numpy(a.grad).tolist() == np.ones((2, 3)).tolist()
    cases = [((mpamp.float16, mpamp.bfloat16), mpamp.float32),
             ((mpamp.int64, mpamp.float16), mpamp.float16),
             ((mpamp.bool, mpamp.int64), mpamp.int64),
             ((mpamp.int64, mpamp.int64), mpamp.int64)]
    for (d1, d2), want in cases:
        assert mpamp.cat([mpamp.ones(2, dtype=d1), mpamp.ones(3, dtype=d2)]).dtype == want
    ints = mpamp.cat([mpamp.tensor([1, 2]), mpamp.tensor([True, False])])
    assert ints.tolist() == [1, 2, 1, 0]


def test_cat_legacy_empty_and_views(rng):
    a, an = make(rng, (4, 6), "float32", True)
    empty = mpamp.zeros(0, requires_grad=True)
    out = mpamp.cat([empty, a[:, ::2], a.T[:3, :3]], 0)     # strided, transposed inputs
    ref = np.concatenate([an[:, ::2], an.T[:3, :3]], 0)
    np.testing.assert_array_equal(to_numpy(out), ref)
    out.backward(mpamp.ones(7, 3))
    assert empty.grad.shape == (0,)
    expected = np.zeros((4, 6))
    expected[:, ::2] += 1
    expected.T[:3, :3] += 1
    np.testing.assert_array_equal(to_numpy(a.grad), expected)
    assert mpamp.cat([mpamp.zeros(0), mpamp.zeros(0).half()]).shape == (0,)
    assert mpamp.cat([mpamp.zeros(0), mpamp.ones(2, 3).half()], 1).dtype == mpamp.float32
    assert mpamp.cat([mpamp.zeros(0, 3), mpamp.ones(2, 3)]).shape == (2, 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_forward_backward(rng, dtype, dim):
    pairs = [make(rng, (2, 3), dtype, True) for _ in range(4)]
    out = mpamp.stack([t for t, _ in pairs], dim=dim)
    ref = np.stack([a for _, a in pairs], dim)
    assert out.grad_fn.name() == "StackBackward0"
    np.testing.assert_array_equal(to_numpy(out), ref)
    g, gn = make(rng, ref.shape, dtype)
    out.backward(g)
    for i, (t, _) in enumerate(pairs):
        np.testing.assert_array_equal(to_numpy(t.grad), np.take(gn, i, axis=dim))
    assert mpamp.stack([mpamp.ones(2), mpamp.ones(2).half()], -1).dtype == mpamp.float32
    assert mpamp.stack([mpamp.tensor(1.0), mpamp.tensor(2.0)]).tolist() == [1.0, 2.0]


def test_cat_stack_errors():
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        mpamp.cat([])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        mpamp.stack([])
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension "
                                           r"0. Expected size 3 but got size 4 for tensor "
                                           r"number 1 in the list."):
        mpamp.cat([mpamp.ones(2, 3), mpamp.ones(2, 4)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got "
                                           "2 and 3"):
        mpamp.cat([mpamp.ones(2, 3), mpamp.ones(2, 3, 1)], 1)
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 1\) cannot "
                                           r"be concatenated"):
        mpamp.cat([mpamp.ones(2), mpamp.tensor(1.0)])
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        mpamp.cat([mpamp.ones(2, 3), mpamp.ones(2, 3)], 2)
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        mpamp.stack([mpamp.ones(2, 3), mpamp.ones(2, 3)], 3)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but "
                                           r"got \[2, 3\] at entry 0 and \[2, 4\] at entry 1"):
        mpamp.stack([mpamp.ones(2, 3), mpamp.ones(2, 4)])
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        mpamp.cat([mpamp.ones(2), 3])
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        mpamp.cat(mpamp.ones(2))


# ---- embedding ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_forward_backward_padding_and_repeats(rng, dtype):
    w, wn = make(rng, (6, 5), dtype, True)
    idx = np.array([[0, 2, 2], [5, 1, 2]])
    out = mpamp.embedding(mpamp.tensor(idx), w, padding_idx=1)
    assert out.grad_fn.name() == "EmbeddingBackward0" and out.dtype == w.dtype
    np.testing.assert_array_equal(to_numpy(out), wn[idx])      # padding row still read
    g, gn = make(rng, (2, 3, 5), dtype)
    out.backward(g)
    ref = np.zeros((6, 5), np.float32)
    for pos, row in np.ndenumerate(idx):
        if row != 1:
            ref[row] += gn[pos]
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(w.grad), ref, rtol=rtol, atol=atol)
    assert not to_numpy(w.grad)[1].any()                      # padding_idx: no gradient
    assert w.grad.dtype == w.dtype


def test_embedding_index_shapes_and_negative_padding(rng):
    w, wn = make(rng, (4, 3), "float32", True)
    assert mpamp.embedding(mpamp.tensor(2), w).shape == (3,)
    np.testing.assert_array_equal(to_numpy(mpamp.embedding(mpamp.tensor(2), w)), wn[2])
    idx = mpamp.tensor([[0, 1, 2, 3], [3, 2, 1, 0]]).T        # non-contiguous indices
    out = mpamp.embedding(idx, w, padding_idx=-1)             # row 3
    np.testing.assert_array_equal(to_numpy(out), wn[np.array(idx.tolist())])
    out.backward(mpamp.ones(4, 2, 3))
    np.testing.assert_array_equal(to_numpy(w.grad), [[2] * 3, [2] * 3, [2] * 3, [0] * 3])
    assert mpamp.embedding(mpamp.zeros(0, 2).long(), w).shape == (0, 2, 3)


def test_embedding_errors():
    w = mpamp.ones(4, 3, requires_grad=True)
    for bad in ([4], [-1], [0, 7]):
        with pytest.raises(IndexError, match="index out of range in self"):
            mpamp.embedding(mpamp.tensor(bad), w)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar "
                                           "types: int64; but got float32"):
        mpamp.embedding(mpamp.tensor([0.0, 1.0]), w)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        mpamp.embedding(mpamp.tensor([0]), mpamp.ones(4))
    for pad in (4, -5):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            mpamp.embedding(mpamp.tensor([0]), w, padding_idx=pad)
    idx = mpamp.tensor([0, 1])
    out = mpamp.embedding(idx, w)
    idx[1] = 100                          # a saved tensor modified: the version check refuses
    with pytest.raises(RuntimeError, match="modified by an inplace operation: "
                       r"\[mpamp.LongTensor \[2\]\] is at version 1; expected version 0"):
        out.backward(mpamp.ones(2, 3), retain_graph=True)
    idx = mpamp.tensor([0, 1])
    out = mpamp.embedding(idx, w)
    idx.data[1] = 100                     # behind autograd's back (.data): no stray write
    with pytest.raises(IndexError, match="index out of range in self"):
        out.backward(mpamp.ones(2, 3))


# ---- dropout ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics_scaling_and_backward(rng, dtype, p):
    n = 40000
    x, xn = make(rng, (200, n // 200), dtype, True)
    mpamp.manual_seed(123)
    start = _rng_state()[1]
    out = mpamp.dropout(x, p)
    assert _rng_state()[1] == start + n // 4
    on = to_numpy(out)
    zero = on == 0
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(zero.mean() - p) < 5 * sigma
    rtol, atol = TOL[dtype]
    kept = ~zero
    np.testing.assert_allclose(on[kept], xn[kept] / (1 - p), rtol=2 * rtol, atol=atol)
    g, gn = make(rng, x.shape, dtype)
    out.backward(g)
    gm = to_numpy(x.grad)
    assert not gm[zero].any()
    np.testing.assert_allclose(gm[kept], gn[kept] / (1 - p), rtol=2 * rtol, atol=atol)


def _rng_state():
    """(seed, offset) of the default generator, decoded from its uint8 state tensor."""
    return struct.unpack("<QQ", bytes(mpamp.default_generator.get_state().cpu().numpy()))


def test_dropout_reproducible_and_stream_advances():
    x = mpamp.ones(1001)
    mpamp.manual_seed(7)
    a = to_numpy(mpamp.dropout(x, 0.5))
    b = to_numpy(mpamp.dropout(x, 0.5))
    mpamp.manual_seed(7)
    np.testing.assert_array_equal(to_numpy(mpamp.dropout(x, 0.5)), a)
    np.testing.assert_array_equal(to_numpy(mpamp.dropout(x, 0.5)), b)
    assert not np.array_equal(a, b)
    assert _rng_state() == (7, 2 * 251)
    # the mask follows the element's row-major position, whatever the layout of the input
    mpamp.manual_seed(7)
    t = mpamp.ones(7, 11).T                                   # (11, 7), non-contiguous
    d = to_numpy(mpamp.dropout(t, 0.5))
    mpamp.manual_seed(7)
    np.testing.assert_array_equal(d, to_numpy(mpamp.dropout(mpamp.ones(11, 7), 0.5)))


def test_dropout_backward_after_other_draws_uses_the_same_mask():
    x = mpamp.ones(500, requires_grad=True)
    out = mpamp.dropout(x, 0.3)
    mpamp.rand(1000)                                          # moves the stream on
    out.backward(mpamp.ones(500))
    np.testing.assert_array_equal(to_numpy(x.grad), to_numpy(out))


def test_dropout_edge_probabilities_eval_and_inplace():
    x = mpamp.tensor([1.0, -2.0, float("nan")], requires_grad=True)
    assert mpamp.dropout(x, 0.5, training=False) is x
    before = _rng_state()
    assert mpamp.dropout(x, 0.0) is x                         # torch: the input itself
    assert mpamp.dropout(x, 0.0, inplace=True) is x
    assert mpamp.nn.Dropout(0.0)(x) is x
    empty = mpamp.ones(0, 3)
    assert mpamp.dropout(empty, 0.5) is empty
    zeros = mpamp.dropout(x, 1.0)
    np.testing.assert_array_equal(to_numpy(zeros)[:2], [0.0, 0.0])
    assert np.isnan(to_numpy(zeros)[2])                      # NaN * 0, as torch
    assert _rng_state() == before
    zeros.backward(mpamp.ones(3))
    assert not to_numpy(x.grad).any()
    y = mpamp.ones(100)
    r = mpamp.dropout(y, 0.5, inplace=True)
    assert r is y and set(to_numpy(y).tolist()) <= {0.0, 2.0}


def test_dropout_errors():
    for p in (1.5, -0.1):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, "
                                             f"but got {p}"):
            mpamp.dropout(mpamp.ones(3), p)
    with pytest.raises(ValueError, match="between 0 and 1"):
        mpamp._C._dropout(mpamp.ones(3), 2.0, 0, 0)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        mpamp.dropout(mpamp.tensor([1, 2]), 0.5)


# ---- clamp ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (None, 0.25), (-0.25, None), (0.5, -0.5)])
def test_clamp_forward_backward(rng, dtype, lo, hi):
    x, xn = make(rng, (7, 9), dtype, True)
    xr = x.detach()
    if lo is not None:
        xr[0, :3] = lo                                        # exactly at the bounds
    if hi is not None:
        xr[1, :3] = hi
    xn = to_numpy(xr)
    out = mpamp.clamp(x, min=lo, max=hi)
    ref = xn.copy()
    if lo is not None:
        ref = np.maximum(ref, np.float32(lo))
    if hi is not None:
        ref = np.minimum(ref, np.float32(hi))
    assert out.dtype == x.dtype and out.grad_fn.name() == "ClampBackward1"
    assert_close(out, ref, dtype)
    g, gn = make(rng, (7, 9), dtype)
    out.backward(g)
    lo_c = -np.inf if lo is None else to_numpy(mpamp.tensor(lo).to(x.dtype))
    hi_c = np.inf if hi is None else to_numpy(mpamp.tensor(hi).to(x.dtype))
    mask = (xn >= lo_c) & (xn <= hi_c)
    np.testing.assert_array_equal(to_numpy(x.grad), np.where(mask, gn, 0))


def test_clamp_types_nan_methods_and_inplace():
    i = mpamp.tensor([-3, 0, 5])
    assert mpamp.clamp(i, -1, 2).tolist() == [-1, 0, 2] and i.clamp(-1, 2).dtype == mpamp.int64
    f = mpamp.clamp(i, min=0.5)
    assert f.dtype == mpamp.float32 and f.tolist() == [0.5, 0.5, 5.0]
    nan = mpamp.tensor([1.0, float("nan")]).clamp(0, 0.5)
    assert nan.tolist()[0] == 0.5 and np.isnan(nan.tolist()[1])
    assert mpamp.clip(mpamp.tensor([2.0]), max=1).tolist() == [1.0]
    t = mpamp.tensor([-2.0, 0.0, 2.0])
    assert t.clamp_(min=-1, max=1) is t and t.tolist() == [-1.0, 0.0, 1.0]
    assert t.clip_(max=0.5).tolist() == [-1.0, 0.0, 0.5]
    j = mpamp.tensor([-3, 7])
    j.clamp_(0, 5)
    assert j.tolist() == [0, 5]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        j.clamp_(0.5)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        mpamp.ones(2, requires_grad=True).clamp_(0, 1)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        mpamp.clamp(t)
    with pytest.raises(TypeError, match="tensor bounds are not supported"):
        mpamp.clamp(t, mpamp.tensor(0.0))
    with pytest.raises(TypeError, match="unexpected keyword argument 'low'"):
        t.clamp(low=0)


# ---- where ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_where_forward_backward_broadcasting(rng, dtype):
    cond_n = rng.standard_normal((4, 1, 5)) > 0
    a, an = make(rng, (3, 1), dtype, True)
    b, bn = make(rng, (4, 3, 5), dtype, True)
    out = mpamp.where(mpamp.tensor(cond_n), a, b)
    ref = np.where(cond_n, an, bn)
    assert out.dtype == a.dtype and out.grad_fn.name() == "WhereBackward0"
    np.testing.assert_array_equal(to_numpy(out), ref)
    g, gn = make(rng, ref.shape, dtype)
    out.backward(g)
    ga = np.where(cond_n, gn, 0).sum(axis=(0, 2)).reshape(3, 1)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(a.grad), ga, rtol=rtol, atol=atol * 10)
    np.testing.assert_array_equal(to_numpy(b.grad), np.where(cond_n, 0, gn))


def test_where_promotion_scalars_and_method():
    c = mpamp.tensor([True, False, True])
    h = mpamp.tensor([1.0, 2.0, 3.0]).half()
    assert mpamp.where(c, h, 2.5).dtype == mpamp.float16
    assert mpamp.where(c, h, mpamp.zeros(3)).dtype == mpamp.float32
    assert mpamp.where(c, h, mpamp.zeros(3).bfloat16()).dtype == mpamp.float32
    assert mpamp.where(c, mpamp.tensor([1, 2, 3]), 2.5).dtype == mpamp.float32
    assert mpamp.where(c, 1, 2.5).tolist() == [1.0, 2.5, 1.0]
    ints = mpamp.where(c, 1, 2)
    assert ints.dtype == mpamp.int64 and ints.tolist() == [1, 2, 1]
    big = mpamp.where(c, mpamp.tensor([2 ** 40 + 1] * 3), 0)
    assert big.tolist() == [2 ** 40 + 1, 0, 2 ** 40 + 1]
    x = mpamp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.where(c, -1.0)
    assert y.tolist() == [1.0, -1.0, 3.0]
    y.backward(mpamp.ones(3))
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


def test_where_errors():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, "
                                           "but got a tensor with dtype float32"):
        mpamp.where(mpamp.ones(3), mpamp.ones(3), mpamp.ones(3))
    with pytest.raises(RuntimeError, match="where: The size of tensor a"):
        mpamp.where(mpamp.ones(3).bool(), mpamp.ones(2), 0)
    with pytest.raises(TypeError, match="where\\(\\) takes either 1 argument"):
        mpamp.where(mpamp.ones(3).bool(), mpamp.ones(3))   # where(cond): test_shape_ops.py
    with pytest.raises(TypeError, match="argument 'other' must be Tensor or a number"):
        mpamp.where(mpamp.ones(3).bool(), mpamp.ones(3), "x")
    with pytest.raises(TypeError, match="argument 'condition'"):
        mpamp.where([True], mpamp.ones(1), 0)
