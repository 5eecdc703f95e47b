"""smooth_l1_loss, huber_loss, binary_cross_entropy and kl_div (functional and module forms):
forward and backward (input and target) against NumPy float64 references computed from the
inputs rounded to the dtype, for float32/float16/bfloat16 and every reduction; broadcasting,
non-contiguous inputs, empty tensors, torch's clamps and NaN rules, legacy arguments,
warnings and error messages, the autocast rows, and (when installed) torch itself."""
import warnings

import numpy as np
import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F
from conftest import TOL, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]
REDUCTIONS = ["none", "mean", "sum"]
SHAPES = [(7,), (3, 5), (), (2, 3, 4)]


def mk(arr, dtype="float32", requires_grad=False):
    t = mpamp.tensor(np.asarray(arr, dtype=np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def f64(t):
    return to_numpy(t).astype(np.float64)


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


def out_grad(rng, y, dtype):
    return mk(rng.standard_normal(tuple(y.shape)).astype(np.float32) + 0.5, dtype)


def upstream(g, reduction, denom):
    gr = f64(g)
    return gr / denom if reduction == "mean" else gr


# ---- smooth_l1_loss / huber_loss ----

def np_smooth(d, kind, b):
    z = np.abs(d)
    if kind == "smooth_l1":
        return np.where(z < b, 0.5 * d * d / b, z - 0.5 * b), np.clip(d / b, -1, 1)
    return np.where(z < b, 0.5 * d * d, b * (z - 0.5 * b)), np.clip(d, -b, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kind,b", [("smooth_l1", 1.0), ("smooth_l1", 0.3), ("huber", 1.0),
                                    ("huber", 2.5)])
@pytest.mark.parametrize("shape", SHAPES)
def test_smooth_losses(rng, dtype, reduction, kind, b, shape):
    x = mk(rng.standard_normal(shape) * 2, dtype, requires_grad=True)
    t = mk(rng.standard_normal(shape), dtype, requires_grad=True)
    if kind == "smooth_l1":
        y = F.smooth_l1_loss(x, t, reduction=reduction, beta=b)
    else:
        y = F.huber_loss(x, t, reduction=reduction, delta=b)
    d = f64(x) - f64(t)
    loss, deriv = np_smooth(d, kind, b)
    check(y, reduce_np(loss, reduction), dtype)
    g = out_grad(rng, y, dtype)
    gx, gt = mpamp.autograd.grad(y, [x, t], g)
    check(gx, deriv * upstream(g, reduction, max(d.size, 1)), dtype)
    check(gt, -deriv * upstream(g, reduction, max(d.size, 1)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_smooth_losses_broadcast_noncontiguous_and_names(rng, dtype):
    x = mk(rng.standard_normal((5, 4)) * 2, dtype, requires_grad=True)
    t = mk(rng.standard_normal((4,)), dtype, requires_grad=True)
    with pytest.warns(UserWarning, match="that is different to the input size"):
        y = F.smooth_l1_loss(x.t(), t.unsqueeze(1), reduction="sum", beta=0.5)
    assert y.grad_fn.name() == "SmoothL1LossBackward0"
    d = f64(x).T - f64(t)[:, None]
    loss, deriv = np_smooth(d, "smooth_l1", 0.5)
    check(y, loss.sum(), dtype)
    gx, gt = mpamp.autograd.grad(y, [x, t])
    check(gx, deriv.T, dtype)
    check(gt, -deriv.sum(1), dtype)
    with pytest.warns(UserWarning, match="different to the input size"):
        y = F.huber_loss(x[::2, 1:], t[1:], delta=0.7)           # sliced with steps
    assert y.grad_fn.name() == "HuberLossBackward0"
    d = f64(x)[::2, 1:] - f64(t)[1:]
    check(y, np_smooth(d, "huber", 0.7)[0].mean(), dtype)


def test_smooth_losses_special_cases():
    x, t = mk([0.5, -3.0, 2.0], requires_grad=True), mk([0.0, 0.0, 0.0])
    y = F.smooth_l1_loss(x, t, beta=0.0, reduction="none")         # beta 0 is l1_loss
    assert y.tolist() == [0.5, 3.0, 2.0] and y.grad_fn.name() == "L1LossBackward0"
    h = mk([1.0, 2.0], "float16")
    assert F.smooth_l1_loss(h, mk([0.0, 0.0])).dtype == mpamp.float32     # promoted
    assert F.huber_loss(h, h).dtype == mpamp.float16
    assert np.isnan(F.smooth_l1_loss(mpamp.zeros(0), mpamp.zeros(0)).item())
    assert F.huber_loss(mpamp.zeros(0), mpamp.zeros(0), reduction="sum").item() == 0.0
    n = mk([np.nan, 1.0])
    assert np.isnan(F.huber_loss(n, mk([0.0, 0.0])).item())
    i = mpamp.tensor([1, 2])
    assert F.smooth_l1_loss(mk([1.0, 2.0]), i).item() == 0.0          # float with int: ok
    with pytest.raises(NotImplementedError, match="\"smooth_l1_cpu\" not implemented for "
                                                  "'Long'"):
        F.smooth_l1_loss(i, i)
    with pytest.raises(NotImplementedError, match="\"huber_cpu\" not implemented for 'Bool'"):
        F.huber_loss(mpamp.tensor([True]), mpamp.tensor([False]))
    with pytest.raises(RuntimeError, match="expected floating point input and target"):
        mpamp._C._smooth_loss(mpamp._C.op_ids["smooth_l1_loss"], i, i, 1, 1.0)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values "
                                           "for beta."):
        F.smooth_l1_loss(x, t, beta=-1)
    for delta in (0.0, -1.0, float("nan")):
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive "
                                               "values for delta."):
            F.huber_loss(x, t, delta=delta)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.smooth_l1_loss(x, t, reduction="foo")
    with pytest.raises(TypeError, match="argument 'target' .* must be Tensor, not float"):
        mpamp._C._smooth_loss(mpamp._C.op_ids["huber_loss"], x, 3.0, 1, 1.0)


def test_huber_weight_and_legacy_arguments(rng):
    x = mk(rng.standard_normal((3, 4)) * 2, requires_grad=True)
    t = mk(rng.standard_normal((3, 4)))
    w = mk(rng.random((3, 4)))
    loss = np_smooth(f64(x) - f64(t), "huber", 1.0)[0] * f64(w)
    check(F.huber_loss(x, t, weight=w, reduction="none"), loss, "float32")
    check(F.huber_loss(x, t, weight=w, reduction="sum"), loss.sum(), "float32")
    check(F.huber_loss(x, t, weight=w), loss.mean(), "float32")       # plain mean, as torch
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.huber_loss(x, t, weight=w[0])
    with pytest.raises(ValueError, match="Invalid reduction mode: foo"):
        F.huber_loss(x, t, weight=w, reduction="foo")
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        y = F.smooth_l1_loss(x, t, size_average=False)
    check(y, np_smooth(f64(x) - f64(t), "smooth_l1", 1.0)[0].sum(), "float32")


# ---- binary_cross_entropy ----

def np_bce(x, t, w):
    lx = np.maximum(np.log(np.where(x > 0, x, 1.0)), -100.0)
    lx = np.where(x > 0, lx, -100.0)
    l1x = np.maximum(np.log1p(-np.minimum(x, 1.0 - 1e-300)), -100.0)
    l1x = np.where(x < 1, l1x, -100.0)
    loss = -(t * lx + (1 - t) * l1x) * w
    gx = w * (x - t) / np.maximum((1 - x) * x, 1e-12)
    with np.errstate(divide="ignore"):
        gt = w * (np.log1p(-x) - np.log(x))
    return loss, gx, gt


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_binary_cross_entropy(rng, dtype, reduction, weighted, shape):
    x = mk(rng.uniform(0.02, 0.98, shape), dtype, requires_grad=True)
    t = mk(rng.uniform(0, 1, shape), dtype, requires_grad=True)
    w = mk(rng.uniform(0.5, 2, shape), dtype) if weighted else None
    y = F.binary_cross_entropy(x, t, w, reduction=reduction)
    loss, gx, gt = np_bce(f64(x), f64(t), f64(w) if weighted else 1.0)
    check(y, reduce_np(loss, reduction), dtype)
    g = out_grad(rng, y, dtype)
    rx, rt = mpamp.autograd.grad(y, [x, t], g)
    up = upstream(g, reduction, max(loss.size, 1))
    check(rx, gx * up, dtype)
    check(rt, gt * up, dtype)


def test_binary_cross_entropy_clamps_broadcast_weight_and_module():
    x = mk([0.0, 1.0, 1e-30, 0.5, 1.0], requires_grad=True)
    t = mk([0.5, 0.5, 0.0, 1.0, 1.0], requires_grad=True)
    y = F.binary_cross_entropy(x, t, reduction="none")
    np.testing.assert_allclose(to_numpy(y), [50.0, 50.0, 1e-30, 0.6931472, 0.0], rtol=1e-6,
                               atol=1e-30)
    assert y.grad_fn.name() == "BinaryCrossEntropyBackward0"
    gx, gt = mpamp.autograd.grad(y.sum(), [x, t])
    assert to_numpy(gx)[0] == pytest.approx(-0.5e12, rel=1e-6)       # max(x(1-x), 1e-12)
    assert to_numpy(gx)[4] == 0.0
    assert to_numpy(gt)[0] == np.inf and to_numpy(gt)[4] == -np.inf   # unclamped logs
    a, b = mk(np.full((2, 3), 0.3)), mk(np.full((2, 3), 0.6))
    w = mk([1.0, 2.0, 0.0])
    ref = np_bce(np.full((2, 3), f64(a)[0, 0]), f64(b)[0, 0], f64(w))[0]
    check(F.binary_cross_entropy(a, b, w, reduction="none"), ref, "float32")
    crit = nn.BCELoss(weight=w, reduction="sum")
    assert "weight" in dict(crit.named_buffers()) and repr(crit) == "BCELoss()"
    check(crit(a, b), ref.sum(), "float32")
    check(F.binary_cross_entropy(a, b, mk(2.0)), np_bce(f64(a), f64(b), 2.0)[0].mean(),
          "float32")
    check(F.binary_cross_entropy(a.t(), b.t(), reduction="sum"), np_bce(f64(a), f64(b),
                                                                         1.0)[0].sum(),
          "float32")
    assert np.isnan(F.binary_cross_entropy(mpamp.zeros(0), mpamp.zeros(0)).item())
    with pytest.warns(UserWarning, match="size_average and reduce args"):
        assert F.binary_cross_entropy(a, b, reduce=False).shape == (2, 3)


def test_binary_cross_entropy_errors():
    x, t = mk([0.5, 0.2]), mk([0.5, 0.1])
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(mk([1.5, 0.5]), t)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(mk([np.nan, 0.5]), t)
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(x, mk([0.5, -0.5]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(mk([0.5, 1.5]), mk([1.5, 0.5]))     # element order: target 0
    with pytest.raises(ValueError, match=r"Using a target size \(mpamp.Size\(\[1\]\)\) that is "
                                         r"different to the input size \(mpamp.Size\(\[2\]\)\) "
                                         r"is deprecated"):
        F.binary_cross_entropy(x, mk([0.5]))
    with pytest.raises(RuntimeError, match=r"Attempting to broadcast a dimension of length 3 "
                                           r"at -1! Mismatching argument at index 1 had "
                                           r"torch.Size\(\[3\]\); but expected shape should be "
                                           r"broadcastable to \[2\]"):
        F.binary_cross_entropy(x, t, weight=mk([1.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match="Found dtype Half but expected Float"):
        F.binary_cross_entropy(x, t.half())
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Long"):
        F.binary_cross_entropy(mpamp.tensor([1, 0]), t)
    with pytest.raises(NotImplementedError, match="\"binary_cross_entropy\" not implemented "
                                                  "for 'Long'"):
        F.binary_cross_entropy(mpamp.tensor([1, 0]), mpamp.tensor([1, 0]))
    with pytest.raises(TypeError, match="\"binary_cross_entropy\" not implemented for 'Bool'"):
        mpamp._C._binary_cross_entropy(mpamp.tensor([True]), mpamp.tensor([True]), None, 1)
    with pytest.raises(ValueError, match=r"target size \[1\] must be the same as input size "
                                         r"\[2\]"):
        mpamp._C._binary_cross_entropy(x, mk([0.5]), None, 1)
    with pytest.raises(ValueError, match=r"weight size \[3\] must be the same as input size"):
        mpamp._C._binary_cross_entropy(x, t, mk([1.0, 1.0, 1.0]), 1)
    with pytest.raises(RuntimeError, match="The function 'binary_cross_entropy' is not "
                                           "differentiable with respect to argument 'weight'"):
        F.binary_cross_entropy(x, t, weight=mk([1.0, 2.0], requires_grad=True))
    with mpamp.no_grad():
        F.binary_cross_entropy(x, t, weight=mk([1.0, 2.0], requires_grad=True))
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.binary_cross_entropy(x, t, reduction="foo")


# ---- kl_div ----

def np_kl(x, t, log_target):
    if log_target:
        et = np.exp(t)
        return et * (t - x), -et, et * (t - x + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogy = np.where(t == 0, 0.0, t * np.log(np.where(t == 0, 1.0, t)))
        gt = np.where(t != 0, np.log(np.where(t == 0, 1.0, t)), 0.0) + t / t - x
    return xlogy - t * x, -t, gt


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_kl_div(rng, dtype, reduction, log_target, shape):
    x = mk(np.log(rng.uniform(0.05, 1, shape)), dtype, requires_grad=True)
    tv = rng.normal(-1, 0.5, shape) if log_target else rng.uniform(0.05, 1, shape)
    t = mk(tv, dtype, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = F.kl_div(x, t, reduction=reduction, log_target=log_target)
    loss, gx, gt = np_kl(f64(x), f64(t), log_target)
    denom = (shape[0] if shape else 1) if reduction == "batchmean" else max(loss.size, 1)
    check(y, reduce_np(loss, "mean" if reduction == "batchmean" else reduction, denom), dtype)
    g = out_grad(rng, y, dtype)
    rx, rt = mpamp.autograd.grad(y, [x, t], g)
    up = upstream(g, "mean" if reduction == "batchmean" else reduction, denom)
    check(rx, gx * up, dtype)
    check(rt, gt * up, dtype)


def test_kl_div_rules_warning_and_module(rng):
    x = mk([0.1, -0.5, 0.5, 2.0], requires_grad=True)
    t = mk([0.3, 0.0, 0.7, -1.0], requires_grad=True)
    y = F.kl_div(x, t, reduction="none")
    assert y.grad_fn.name() == "KlDivBackward0"
    v = to_numpy(y)
    assert v[1] == 0.0 and np.isnan(v[3])                          # xlogy: 0 at t == 0
    _, gt = mpamp.autograd.grad(y.sum(), [x, t])
    assert np.isnan(to_numpy(gt)[1]) and np.isnan(to_numpy(gt)[3])   # torch's t / t at 0
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both "
                                         "the batch size and the support size"):
        F.kl_div(x, t.detach().abs())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(x, t, reduction="batchmean")
    a = mk(rng.standard_normal((2, 3)), requires_grad=True)        # broadcast target
    b = mk(rng.uniform(0.1, 1, (3,)))
    y = F.kl_div(a, b, reduction="batchmean")
    loss = np_kl(f64(a), f64(b)[None], False)[0]
    check(y, loss.sum() / 2, "float32")
    (ga,) = mpamp.autograd.grad(y, [a])
    check(ga, np.broadcast_to(-f64(b) / 2, (2, 3)), "float32")
    b2 = mk(rng.uniform(0.1, 1, (2, 3)), requires_grad=True)
    (gb,) = mpamp.autograd.grad(F.kl_div(a[0], b2, reduction="sum"), [a])  # input broadcast
    check(gb[0], -f64(b2).sum(0), "float32")
    s = F.kl_div(mk(0.3), mk(0.5), reduction="batchmean")          # 0-d: the sum
    check(s, np_kl(np.float64(f64(mk(0.3))), f64(mk(0.5)), False)[0], "float32")
    crit = nn.KLDivLoss(reduction="batchmean", log_target=True)
    assert repr(crit) == "KLDivLoss()" and crit.log_target
    check(crit(a, a), np.zeros(()), "float32")
    assert F.kl_div(a.half(), b, reduction="sum").dtype == mpamp.float32
    with pytest.warns(UserWarning, match="size_average and reduce args"):
        assert F.kl_div(a, b, reduce=False).shape == (2, 3)
    assert np.isnan(F.kl_div(mpamp.zeros(0, 3), mpamp.zeros(0, 3), reduction="batchmean")
                    .item())
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
        F.kl_div(mpamp.tensor([1.0, 2.0]), mpamp.tensor([1, 2]), reduction="sum")
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.kl_div(a, b, reduction="foo")
    with pytest.raises(ValueError, match="3 is not a valid value for reduction"):
        mpamp._C._smooth_loss(mpamp._C.op_ids["smooth_l1_loss"], a, a, 3, 1.0)


# ---- modules, autocast, backward twice ----

def test_loss_modules(rng):
    x = mk(rng.standard_normal((3, 4)), requires_grad=True)
    t = mk(rng.standard_normal((3, 4)))
    m = nn.SmoothL1Loss(reduction="sum", beta=0.5)
    assert m.beta == 0.5 and repr(m) == "SmoothL1Loss()"
    check(m(x, t), np_smooth(f64(x) - f64(t), "smooth_l1", 0.5)[0].sum(), "float32")
    h = nn.HuberLoss(delta=2.0)
    assert h.delta == 2.0 and h.reduction == "mean"
    check(h(x, t), np_smooth(f64(x) - f64(t), "huber", 2.0)[0].mean(), "float32")
    with pytest.warns(UserWarning, match="size_average and reduce args"):
        assert nn.SmoothL1Loss(reduce=False).reduction == "none"


def test_autocast_rows():
    pol = mpamp._C._autocast_policy
    for op in ("smooth_l1_loss", "huber_loss", "kl_div"):
        assert pol(op, "cpu") == "fp32" and pol(op, "cuda") == "fp32"
    assert pol("binary_cross_entropy", "cpu") == "fp32"
    assert pol("binary_cross_entropy", "cuda") == "banned"
    x, t = mk([0.3, 0.6], "bfloat16"), mk([0.5, 0.5], "bfloat16")
    with mpamp.autocast("cpu", dtype=mpamp.bfloat16):
        assert F.binary_cross_entropy(x, t).dtype == mpamp.float32
        assert F.smooth_l1_loss(x, t).dtype == mpamp.float32
        assert F.huber_loss(x, t).dtype == mpamp.float32
        assert F.kl_div(x, t, reduction="batchmean").dtype == mpamp.float32
    assert F.smooth_l1_loss(x, t).dtype == mpamp.bfloat16


@pytest.mark.cuda
def test_binary_cross_entropy_refused_under_cuda_autocast():
    x = mpamp.tensor([0.3, 0.6], device="cuda")
    with mpamp.autocast("cuda"):
        with pytest.raises(RuntimeError, match="torch.nn.functional.binary_cross_entropy and "
                                               "torch.nn.BCELoss are unsafe to autocast."):
            F.binary_cross_entropy(x, x)


def test_backward_twice_needs_retain_graph():
    x = mk([0.3, 0.6], requires_grad=True)
    for y in (F.binary_cross_entropy(x, x.detach()), F.kl_div(x, x.detach(), reduction="sum"),
              F.huber_loss(x, x.detach() * 0)):
        y.backward(retain_graph=True)
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            y.backward()


# ---- against torch ----

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    x = rng.uniform(0.05, 0.95, (4, 6)).astype(np.float32)
    t = rng.uniform(0, 1, (4, 6)).astype(np.float32)
    w = rng.uniform(0.5, 2, (6,)).astype(np.float32)
    cases = [
        ("smooth_l1_loss", dict(beta=0.3)), ("smooth_l1_loss", dict(beta=0.0)),
        ("huber_loss", dict(delta=0.2)), ("binary_cross_entropy", dict()),
        ("kl_div", dict(reduction="batchmean")), ("kl_div", dict(log_target=True)),
    ]
    for name, kw in cases:
        for red in ("none", "mean", "sum"):
            kwr = dict(kw, reduction=kw.get("reduction", red))
            tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
            mx, mt = mk(x, requires_grad=True), mk(t, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ty, my = getattr(TF, name)(tx, tt, **kwr), getattr(F, name)(mx, mt, **kwr)
            np.testing.assert_allclose(to_numpy(my), ty.detach().cpu().numpy(), rtol=2e-6, atol=1e-6)
            g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
            ty.backward(torch.tensor(g))
            my.backward(mk(g))
            np.testing.assert_allclose(to_numpy(mx.grad), tx.grad.cpu().numpy(), rtol=2e-6, atol=1e-6)
            np.testing.assert_allclose(to_numpy(mt.grad), tt.grad.cpu().numpy(), rtol=2e-6, atol=1e-6)
    ty = TF.binary_cross_entropy(torch.tensor(x), torch.tensor(t), torch.tensor(w))
    my = F.binary_cross_entropy(mk(x), mk(t), mk(w))
    np.testing.assert_allclose(my.item(), ty.item(), rtol=2e-6)
