"""mse_loss, l1_loss, nll_loss, cross_entropy and binary_cross_entropy_with_logits: forward
and backward against NumPy references for float32/float16/bfloat16, every reduction, torch's
weight / ignore_index / label_smoothing / pos_weight semantics, and the error paths. Inputs
are rounded to the dtype first; references use float64 from the rounded values. cross_entropy
rounds its log_softmax to the input dtype before the nll step (as torch), so its reference
does too."""
import warnings

import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]
REDUCTIONS = ["none", "mean", "sum"]


def mk(arr, dtype="float32", requires_grad=False):
    t = mpamp.tensor(np.asarray(arr, dtype=np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def rnd(arr, dtype):
    arr = np.asarray(arr, dtype=np.float64).astype(np.float32)
    return to_numpy(mk(arr.reshape(-1), dtype)).reshape(arr.shape)


def check(actual, expected, dtype, rtol=None, atol=None):
    exp = rnd(expected, dtype)
    r, a = TOL[dtype]
    assert tuple(actual.shape) == exp.shape, (tuple(actual.shape), exp.shape)
    assert actual.dtype == getattr(mpamp, dtype)
    np.testing.assert_allclose(to_numpy(actual), exp, rtol=rtol or r, atol=atol or a)


def reduce_np(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    s = loss.sum()
    return s if reduction == "sum" else s / (loss.size if denom is None else denom)


def grad_of_output(rng, y, dtype):
    """The gradient fed to backward: random for 'none', a number for reduced losses."""
    return mk(rng.standard_normal(tuple(y.shape)).astype(np.float32) + 0.5, dtype)


def upstream(g, reduction, denom):
    """d(loss)/d(element loss) as an array (scalar for reductions)."""
    gr = to_numpy(g).astype(np.float64)
    return gr if reduction != "mean" else gr / denom


# ---- mse_loss / l1_loss ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kind", ["mse", "l1"])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (), (1,), (2, 3, 5)])
def test_pointwise_losses(rng, dtype, reduction, kind, shape):
    x = mk(rng.standard_normal(shape) * 2, dtype, requires_grad=True)
    t = mk(rng.standard_normal(shape), dtype, requires_grad=True)
    fn = mpamp.mse_loss if kind == "mse" else mpamp.l1_loss
    y = fn(x, t, reduction=reduction)
    d = to_numpy(x).astype(np.float64) - to_numpy(t)
    check(y, reduce_np(d * d if kind == "mse" else np.abs(d), reduction), dtype)
    g = grad_of_output(rng, y, dtype)
    gx, gt = mpamp.autograd.grad(y, [x, t], g)
    dd = 2 * d if kind == "mse" else np.sign(d)
    expect = dd * upstream(g, reduction, max(d.size, 1))
    check(gx, expect, dtype)
    check(gt, -expect, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pointwise_losses_broadcast_noncontiguous_nan(rng, dtype):
    x = mk(rng.standard_normal((5, 4)), dtype, requires_grad=True)
    t = mk(rng.standard_normal((4,)), dtype, requires_grad=True)
    with pytest.warns(UserWarning, match=r"Using a target size \(mpamp.Size\(\[4, 1\]\)\) that is "
                                         r"different to the input size"):
        y = mpamp.mse_loss(x.t(), t.unsqueeze(1), reduction="sum")
    d = to_numpy(x).T.astype(np.float64) - to_numpy(t)[:, None]
    check(y, (d * d).sum(), dtype)
    gx, gt = mpamp.autograd.grad(y, [x, t])
    check(gx, (2 * d).T, dtype)
    check(gt, -(2 * d).sum(1), dtype)
    n = mk([1.0, np.nan, 3.0], dtype, requires_grad=True)
    z = mk([0.0, 0.0, 0.0], dtype)
    assert np.isnan(mpamp.l1_loss(n, z).item()) and np.isnan(mpamp.mse_loss(n, z).item())
    mpamp.l1_loss(n, z, reduction="sum").backward()
    assert n.grad.tolist() == [1.0, 0.0, 1.0]                 # torch: sgn(nan) is 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mpamp.mse_loss(x, x.detach())                         # same shapes: no warning


def test_pointwise_loss_dtypes_and_errors():
    h, f = mk([1.0, 2.0], "float16"), mk([0.0, 0.0])
    assert mpamp.mse_loss(h, f).dtype == mpamp.float32            # promoted, as torch
    assert mpamp.mse_loss(h, h).dtype == mpamp.float16
    assert mpamp.l1_loss(mpamp.zeros(0), mpamp.zeros(0)).item() != 0.0   # nan: empty mean
    assert mpamp.mse_loss(mpamp.zeros(0), mpamp.zeros(0), reduction="sum").item() == 0.0
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        mpamp.mse_loss(f, f, reduction="foo")
    with pytest.raises(ValueError, match="None is not a valid value for reduction"):
        mpamp.l1_loss(f, f, reduction=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size "
                                               r"of tensor b \(4\)"):
            mpamp.mse_loss(mpamp.zeros(2, 3), mpamp.zeros(4))
    with pytest.raises(RuntimeError, match="expected floating point"):
        mpamp.mse_loss(mpamp.tensor([1, 2]), mpamp.tensor([1, 2]))
    with pytest.raises(TypeError, match="argument 'target' .* must be Tensor, not float"):
        mpamp.mse_loss(f, 3.0)


# ---- nll_loss / cross_entropy with class indices ----

def np_nll(logp, target, weight, ignore, reduction, ls=0.0):
    cd = 0 if logp.ndim == 1 else 1
    lp = np.moveaxis(logp.astype(np.float64), cd, -1)
    C = lp.shape[-1]
    t = np.asarray(target)
    w = np.ones(C) if weight is None else np.asarray(weight, np.float64)
    valid = t != ignore
    tt = np.where(valid, t, 0)
    picked = np.take_along_axis(lp, tt[..., None], -1)[..., 0]
    wt = np.where(valid, w[tt], 0.0)
    loss = -(1 - ls) * wt * picked
    if ls:
        loss = loss - ls / C * np.where(valid, (lp * w).sum(-1), 0.0)
    return reduce_np(loss, reduction, wt.sum()), wt.sum()


def np_nll_grad(logp, target, weight, ignore, reduction, ls, g, wsum):
    cd = 0 if logp.ndim == 1 else 1
    lp = np.moveaxis(logp.astype(np.float64), cd, -1)
    C = lp.shape[-1]
    t = np.asarray(target)
    w = np.ones(C) if weight is None else np.asarray(weight, np.float64)
    valid = t != ignore
    tt = np.where(valid, t, 0)
    gr = np.broadcast_to(upstream(g, reduction, wsum), t.shape) * valid
    grad = np.zeros(lp.shape)
    np.put_along_axis(grad, tt[..., None], (-(1 - ls) * w[tt] * gr)[..., None], -1)
    grad += -ls / C * w * gr[..., None]
    return np.moveaxis(grad, -1, cd)


def np_log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def make_targets(rng, shape, C, ignore, frac=0.25):
    t = rng.integers(0, C, size=shape)
    t = np.where(rng.random(shape) < frac, ignore, t)
    return mpamp.tensor(np.asarray(t, dtype=np.int64))


NLL_SHAPES = [((6, 5), (6,)), ((7,), ()), ((3, 4, 2, 5), (3, 2, 5)), ((1, 3), (1,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape,tshape", NLL_SHAPES)
def test_nll_loss(rng, dtype, reduction, weighted, shape, tshape):
    C = shape[0] if len(shape) == 1 else shape[1]
    x = mk(rng.standard_normal(shape) - 1.0, dtype, requires_grad=True)
    t = make_targets(rng, tshape, C, ignore=2, frac=0.3)
    w = mk(rng.random(C) + 0.5, dtype) if weighted else None
    wr = to_numpy(w) if weighted else None
    y = mpamp.nll_loss(x, t, weight=w, ignore_index=2, reduction=reduction)
    ref, wsum = np_nll(to_numpy(x), to_numpy(t), wr, 2, reduction)
    check(y, ref, dtype)
    g = grad_of_output(rng, y, dtype)
    (gx,) = mpamp.autograd.grad(y, [x], g)
    check(gx, np_nll_grad(to_numpy(x), to_numpy(t), wr, 2, reduction, 0.0, g, wsum), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ls,weighted", [(0.0, False), (0.1, False), (0.25, True), (1.0, True)])
@pytest.mark.parametrize("shape,tshape", NLL_SHAPES)
def test_cross_entropy(rng, dtype, reduction, ls, weighted, shape, tshape):
    C = shape[0] if len(shape) == 1 else shape[1]
    cd = 0 if len(shape) == 1 else 1
    x = mk(rng.standard_normal(shape) * 2, dtype, requires_grad=True)
    t = make_targets(rng, tshape, C, ignore=-100)
    w = mk(rng.random(C) + 0.5, dtype) if weighted else None
    wr = to_numpy(w) if weighted else None
    y = mpamp.cross_entropy(x, t, weight=w, reduction=reduction, label_smoothing=ls)
    logp = rnd(np_log_softmax(to_numpy(x), cd), dtype)          # rounded, as torch
    ref, wsum = np_nll(logp, to_numpy(t), wr, -100, reduction, ls)
    check(y, ref, dtype)
    g = grad_of_output(rng, y, dtype)
    (gx,) = mpamp.autograd.grad(y, [x], g)
    glogp = rnd(np_nll_grad(logp, to_numpy(t), wr, -100, reduction, ls, g, wsum), dtype)
    expect = glogp - np.exp(logp.astype(np.float64)) * glogp.sum(axis=cd, keepdims=True)
    # the log_softmax backward subtracts nearly equal terms (|dx| << |g|): at half precision
    # the rounding of its inputs moves dx by a few ulps of the larger term
    loose = {"float32": None, "float16": 4e-3, "bfloat16": 3e-2}[dtype]
    check(gx, expect, dtype, rtol=loose, atol=loose and loose / 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 5), (6,), (2, 3, 4)])
def test_cross_entropy_probability_targets(rng, dtype, reduction, shape):
    cd = 0 if len(shape) == 1 else 1
    C = shape[cd]
    x = mk(rng.standard_normal(shape), dtype, requires_grad=True)
    p = mk(np.exp(np_log_softmax(rng.standard_normal(shape), cd)), dtype, requires_grad=True)
    w = mk(rng.random(C) + 0.5, dtype)
    shp = [1] * len(shape)
    shp[cd] = C
    wr = to_numpy(w).reshape(shp).astype(np.float64)
    ls = 0.2
    y = mpamp.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=ls)
    logp = rnd(np_log_softmax(to_numpy(x), cd), dtype)
    pp = (1 - ls) * to_numpy(p).astype(np.float64) + ls / C
    loss = -(wr * pp * logp).sum(axis=cd)
    rows = max(int(np.prod(shape)) // C, 1)
    check(y, reduce_np(loss, reduction, rows), dtype)
    g = grad_of_output(rng, y, dtype)
    gx, gp = mpamp.autograd.grad(y, [x, p], g)
    gr = np.expand_dims(upstream(g, reduction, rows), cd) if reduction == "none" else \
        upstream(g, reduction, rows)
    glogp = rnd(-gr * wr * pp, dtype)
    expect = glogp - np.exp(logp.astype(np.float64)) * glogp.sum(axis=cd, keepdims=True)
    loose = {"float32": None, "float16": 4e-3, "bfloat16": 3e-2}[dtype]
    check(gx, expect, dtype, rtol=loose, atol=loose and loose / 10)
    check(gp, -gr * wr * (1 - ls) * logp, dtype)


def test_nll_cross_entropy_semantics():
    x = mk(np.log(np.full((3, 4), 0.25)), requires_grad=True)
    t = mpamp.tensor([-100, -100, -100])
    assert np.isnan(mpamp.nll_loss(x, t).item())                    # 0/0, as torch
    assert mpamp.nll_loss(x, t, reduction="sum").item() == 0.0
    assert mpamp.cross_entropy(x, t, reduction="none").tolist() == [0.0, 0.0, 0.0]
    mpamp.nll_loss(x, t, reduction="sum").backward()
    assert (to_numpy(x.grad) == 0).all()
    # ignore_index may be a valid class; a weighted mean divides by the summed weights
    x = mk([[0.0, -1.0, -2.0], [-3.0, -4.0, -5.0]])
    w = mk([1.0, 2.0, 3.0])
    y = mpamp.nll_loss(x, mpamp.tensor([1, 2]), weight=w, ignore_index=0)
    assert y.item() == pytest.approx((2 * 1.0 + 3 * 5.0) / 5.0)
    assert mpamp.nll_loss(x, mpamp.tensor([0, 2]), ignore_index=0).item() == 5.0
    # fp16 logits give an fp16 loss; non-contiguous input
    h = mk(np.arange(12).reshape(4, 3), "float16").t()            # (3, 4) view, C = 4
    assert mpamp.cross_entropy(h, mpamp.tensor([0, 3, 1])).dtype == mpamp.float16
    big = mk([[1000.0, -1000.0]], "bfloat16")
    assert mpamp.cross_entropy(big, mpamp.tensor([0])).item() == 0.0   # stable
    assert mpamp.cross_entropy(big, mpamp.tensor([1])).item() == 2000.0


def test_nll_cross_entropy_errors():
    x = mpamp.zeros(3, 4)
    for fn in (mpamp.nll_loss, mpamp.cross_entropy):
        with pytest.raises(IndexError, match="Target 5 is out of bounds."):
            fn(x, mpamp.tensor([0, 5, 1]))
        with pytest.raises(IndexError, match="Target -5 is out of bounds."):
            fn(x, mpamp.tensor([0, -5, 1]))
        with pytest.raises(IndexError, match="Target 4 is out of bounds."):
            fn(x, mpamp.tensor([4, -100, -100]), reduction="none")
        with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                             r"batch_size \(2\)."):
            fn(x, mpamp.tensor([0, 1]))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target "
                                               "not supported"):
            fn(x, mpamp.zeros(3, 1).long())
        with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 5\]"):
            fn(mpamp.zeros(2, 3, 4), mpamp.zeros(2, 5).long())
        with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target "
                                             r"batch_size \(3\)"):
            fn(mpamp.zeros(2, 3, 4), mpamp.zeros(3, 4).long())
        with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all "
                                               r"4 classes or no classes but got weight tensor "
                                               r"of shape: \[3\]"):
            fn(x, mpamp.tensor([0, 1, 2]), weight=mpamp.ones(3))
        with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                               "'weight'"):
            fn(x, mpamp.tensor([0, 1, 2]), weight=mpamp.ones(4).requires_grad_())
        with pytest.raises(ValueError, match="bar is not a valid value for reduction"):
            fn(x, mpamp.tensor([0, 1, 2]), reduction="bar")
        with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
            fn(mpamp.tensor(1.0), mpamp.tensor(0))
        with pytest.raises(TypeError, match="must be Tensor, not list"):
            fn(x, [0, 1, 2])
    with pytest.raises(RuntimeError, match="expected target dtype to be Long, but got Float"):
        mpamp.nll_loss(x, mpamp.zeros(3))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long, but got Bool"):
        mpamp.nll_loss(mpamp.zeros(2, 3), mpamp.tensor([True, False]))
    with pytest.raises(RuntimeError, match="\"nll_loss_out_frame\" not implemented for 'Long'"):
        mpamp.nll_loss(mpamp.zeros(2, 3).long(), mpamp.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"label_smoothing must be between 0.0 and 1.0. "
                                           r"Got: 1.5"):
        mpamp.cross_entropy(x, mpamp.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point "
                                           "target"):
        mpamp.cross_entropy(x, mpamp.zeros(3, 4), ignore_index=1)
    with mpamp.no_grad():                        # weights that require grad are fine here
        mpamp.nll_loss(x, mpamp.tensor([0, 1, 2]), weight=mpamp.ones(4).requires_grad_())


def test_saved_target_changed_in_place_is_caught():
    x = mk(np.zeros((2, 3)), requires_grad=True)
    t = mpamp.tensor([0, 1])
    y = mpamp.nll_loss(x, t)
    t[1] = 7                                     # after forward: the version check refuses
    with pytest.raises(RuntimeError, match=r"\[mpamp.LongTensor \[2\]\] is at version 1; "
                                           "expected version 0 instead"):
        y.backward(retain_graph=True)
    t = mpamp.tensor([0, 1])
    y = mpamp.nll_loss(x, t)
    t.data[1] = 7                                # behind autograd's back: never written out of
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):   # bounds
        y.backward()


# ---- binary_cross_entropy_with_logits ----

def np_log_sigmoid(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def np_bce(x, t, w, pw):
    x, t = x.astype(np.float64), t.astype(np.float64)
    pw = 1.0 if pw is None else pw.astype(np.float64)
    w = 1.0 if w is None else w.astype(np.float64)
    lw = 1 + (pw - 1) * t
    loss = w * ((1 - t) * x - lw * np_log_sigmoid(x))
    gx = w * ((1 - t) - lw / (1 + np.exp(x)))
    gt = w * (np_log_sigmoid(-x) - pw * np_log_sigmoid(x))
    return loss, gx, gt


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
@pytest.mark.parametrize("shape", [(4, 5), (7,), ()])
def test_bce_with_logits(rng, dtype, reduction, weights, shape):
    x = mk(rng.standard_normal(shape) * 3, dtype, requires_grad=True)
    t = mk(rng.random(shape), dtype, requires_grad=True)
    last = shape[-1:] if shape else ()
    w = mk(rng.random(last) + 0.5, dtype) if weights in ("weight", "both") else None
    pw = mk(rng.random(last) * 3, dtype) if weights in ("pos_weight", "both") else None
    y = mpamp.binary_cross_entropy_with_logits(x, t, weight=w, reduction=reduction,
                                               pos_weight=pw)
    loss, dx, dt = np_bce(to_numpy(x), to_numpy(t), None if w is None else to_numpy(w),
                          None if pw is None else to_numpy(pw))
    check(y, reduce_np(loss, reduction), dtype)
    g = grad_of_output(rng, y, dtype)
    gx, gt = mpamp.autograd.grad(y, [x, t], g)
    up = upstream(g, reduction, max(int(np.prod(shape)), 1))
    check(gx, dx * up, dtype)
    check(gt, dt * up, dtype)


def test_bce_with_logits_stable_and_errors():
    x = mk([100.0, -100.0, 0.0, np.nan], requires_grad=True)
    t = mk([1.0, 0.0, 0.5, 1.0])
    y = mpamp.binary_cross_entropy_with_logits(x, t, reduction="none")
    out = to_numpy(y)
    assert 0 <= out[0] < 1e-30 and 0 <= out[1] < 1e-30 and out[2] == pytest.approx(np.log(2))
    assert np.isnan(out[3])
    y[:3].sum().backward()
    assert np.isfinite(to_numpy(x.grad)[:3]).all()
    h = mk([1.0], "float16")
    assert mpamp.binary_cross_entropy_with_logits(h, mk([1.0])).dtype == mpamp.float32
    assert mpamp.binary_cross_entropy_with_logits(h, h, weight=mk([2.0])).dtype == \
        mpamp.float16
    a = mpamp.zeros(3, 4)
    with pytest.raises(ValueError, match=r"Target size \(\[4\]\) must be the same as input "
                                         r"size \(\[3, 4\]\)"):
        mpamp.binary_cross_entropy_with_logits(a, mpamp.zeros(4))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of "
                                           r"tensor b \(5\)"):
        mpamp.binary_cross_entropy_with_logits(a, a, weight=mpamp.ones(5))
    with pytest.raises(RuntimeError, match=r"pos_weight of shape \[2, 3, 4\] cannot be "
                                           r"broadcast"):
        mpamp.binary_cross_entropy_with_logits(a, a, pos_weight=mpamp.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'weight'"):
        mpamp.binary_cross_entropy_with_logits(a, a, weight=mpamp.ones(4).requires_grad_())
    with pytest.raises(ValueError, match="mean2 is not a valid value for reduction"):
        mpamp.binary_cross_entropy_with_logits(a, a, reduction="mean2")
    with pytest.raises(RuntimeError, match="expected floating point"):
        mpamp.binary_cross_entropy_with_logits(a.long(), a.long())


def test_large_losses_release_the_gil(rng):
    x = mk(rng.standard_normal((400, 100)))               # > MP_NOGIL_NUMEL elements
    t = mpamp.tensor(rng.integers(0, 100, 400).astype(np.int64))
    logp = np_log_softmax(to_numpy(x), 1)
    check(mpamp.cross_entropy(x, t), np_nll(logp, to_numpy(t), None, -100, "mean")[0],
          "float32")
    check(mpamp.mse_loss(x, x * 0.5), (0.25 * to_numpy(x).astype(np.float64) ** 2).mean(),
          "float32")


# ---- cross-checks against torch ----

def test_losses_against_torch(rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for dtype, tdt in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        rtol, atol = TOL[dtype]
        xs = rng.standard_normal((5, 4, 3)).astype(np.float32)
        x = mk(xs, dtype, requires_grad=True)
        tx = torch.tensor(to_numpy(x)).to(tdt).requires_grad_()
        tgt = rng.integers(0, 4, (5, 3))
        tgt[0, 0] = 1
        w = rng.random(4).astype(np.float32) + 0.5
        cases = [
            (lambda a: mpamp.cross_entropy(a, mpamp.tensor(tgt), weight=mk(w, dtype),
                                           ignore_index=1, label_smoothing=0.2),
             lambda a: F.cross_entropy(a, torch.tensor(tgt), weight=torch.tensor(w).to(tdt),
                                       ignore_index=1, label_smoothing=0.2)),
            (lambda a: mpamp.nll_loss(a, mpamp.tensor(tgt), reduction="sum"),
             lambda a: F.nll_loss(a, torch.tensor(tgt), reduction="sum")),
            (lambda a: mpamp.mse_loss(a, a.detach() * 0.5),
             lambda a: F.mse_loss(a, a.detach() * 0.5)),
            (lambda a: mpamp.l1_loss(a, a.detach() * 0.5, reduction="none"),
             lambda a: F.l1_loss(a, a.detach() * 0.5, reduction="none")),
            (lambda a: mpamp.binary_cross_entropy_with_logits(
                a, mk(np.full((5, 4, 3), 0.3), dtype), pos_weight=mk([2.0, 0.5, 1.0], dtype)),
             lambda a: F.binary_cross_entropy_with_logits(
                a, torch.full((5, 4, 3), 0.3).to(tdt), pos_weight=torch.tensor(
                    [2.0, 0.5, 1.0]).to(tdt))),
        ]
        for f, tf in cases:
            y, ty = f(x), tf(tx)
            np.testing.assert_allclose(to_numpy(y), ty.detach().float().cpu().numpy(),
                                       rtol=rtol * 2, atol=atol)
            g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
            (gx,) = mpamp.autograd.grad(y, [x], mk(g, dtype))
            (tgx,) = torch.autograd.grad(ty, [tx], torch.tensor(g).to(tdt))
            # torch rounds intermediates (elementwise losses, smoothing terms) to bf16 where
            # mpamp keeps fp32: a few ulps apart at half precision
            scale = 1 if dtype == "float32" else 4
            np.testing.assert_allclose(to_numpy(gx), tgx.float().cpu().numpy(), rtol=rtol * scale,
                                       atol=atol * scale * 10)


# ---- finite differences: an independent cross-check of the analytic gradients ----

def test_gradients_match_finite_differences(rng):
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    t = mpamp.tensor(np.array([1, 3, -100]))
    probs = mk(np.exp(np_log_softmax(rng.standard_normal((3, 4)), 1)))
    w, pw = mk(rng.random(4) + 0.5), mk(rng.random(4) * 2)
    fns = [
        lambda a: mpamp.cross_entropy(a, t, weight=w, label_smoothing=0.3),
        lambda a: mpamp.cross_entropy(a, probs, reduction="sum", label_smoothing=0.1),
        lambda a: mpamp.binary_cross_entropy_with_logits(a, probs, weight=w, pos_weight=pw),
        lambda a: mpamp.layer_norm(a, (4,), w, pw).pow(2).sum(),
        lambda a: (a.softmax(0) * probs).sum() + a.log_softmax(1).mean(),
        lambda a: mpamp.mse_loss(a, probs) + mpamp.l1_loss(a, probs, reduction="sum"),
    ]
    eps = 1e-2
    for f in fns:
        x = mk(xs, requires_grad=True)
        (g,) = mpamp.autograd.grad(f(x), [x])
        num = np.zeros_like(xs)
        for idx in np.ndindex(xs.shape):
            hi, lo = xs.copy(), xs.copy()
            hi[idx] += eps
            lo[idx] -= eps
            with mpamp.no_grad():
                num[idx] = (f(mk(hi)).item() - f(mk(lo)).item()) / (2 * eps)
        np.testing.assert_allclose(to_numpy(g), num, rtol=2e-2, atol=2e-3)
