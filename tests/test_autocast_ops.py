"""Ops under autocast: output dtype per policy, numerics against NumPy on rounded inputs,
fp32 parameters receiving fp32 gradients, the weight-cast cache, promote rules."""
import numpy as np
import pytest

import mpamp
import mpamp.nn.functional as F
from conftest import TOL, to_numpy

LOW = ["float16", "bfloat16"]


def rounded(arr, dtype):
    return to_numpy(mpamp.tensor(arr.astype(np.float32)).to(dtype)).astype(np.float32)


def grad_bits(t):
    return to_numpy(t.grad).view(np.uint32)


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("xshape", [(64, 100), (4, 16, 100)])
def test_weight_gradient_straight_to_fp32_has_the_cast_path_bits(low, xshape, rng):
    """A 16-bit weight that is a cast of an fp32 leaf (autocast's, or an explicit .to) used
    once: its gradient is written into fp32 directly, rounded as the 16-bit product - the bits
    of the path through a 16-bit gradient and the cast's widening, which a hook on the cast
    (it must see a 16-bit gradient), a second use of the cast (the two gradients are summed in
    16 bits first, as torch) or autograd.grad keep taking. 2-D inputs take the GEMM's
    rounded store, 3-D ones (products summed over the batch) a 16-bit result widened."""
    dt = getattr(mpamp, low)
    x = mpamp.tensor(rng.standard_normal(xshape).astype(np.float32))
    w0 = rng.standard_normal((30, 100)).astype(np.float32)
    g = mpamp.tensor(rng.standard_normal(xshape[:-1] + (30,)).astype(np.float32)).to(dt)
    got = {}
    for mode in ("once", "hook", "autocast"):
        w = mpamp.tensor(w0, requires_grad=True)
        seen = []
        if mode == "autocast":
            with mpamp.autocast(dtype=low):
                y = F.linear(x, w)
        else:
            w16 = w.to(dt)
            if mode == "hook":
                w16.register_hook(lambda t: seen.append(t.dtype))
            y = F.linear(x.to(dt), w16)
        y.backward(g)
        assert w.grad.dtype is mpamp.float32
        got[mode] = grad_bits(w)
        if mode == "hook":
            assert seen == [dt]
    np.testing.assert_array_equal(got["once"], got["hook"])
    np.testing.assert_array_equal(got["once"], got["autocast"])
    # the reference: the 16-bit product of the rounded operands, widened
    x16 = x.to(dt)
    gw = g.reshape(-1, 30).t() @ x16.reshape(-1, 100)
    np.testing.assert_array_equal(got["once"], to_numpy(gw.float()).view(np.uint32))
    # two uses of one cast: both 16-bit gradients summed in 16 bits, then widened
    w = mpamp.tensor(w0, requires_grad=True)
    w16 = w.to(dt)
    x2 = mpamp.tensor(rng.standard_normal(xshape).astype(np.float32)).to(dt)
    (F.linear(x16, w16) + F.linear(x2, w16)).backward(g)
    g2 = g.reshape(-1, 30).t() @ x2.reshape(-1, 100)
    np.testing.assert_array_equal(grad_bits(w), to_numpy((gw + g2).float()).view(np.uint32))
    # autograd.grad of the fp32 weight: the same values
    w = mpamp.tensor(w0, requires_grad=True)
    (gr,) = mpamp.autograd.grad(F.linear(x16, w.to(dt)), [w], g)
    np.testing.assert_array_equal(to_numpy(gr).view(np.uint32), got["once"])


@pytest.mark.parametrize("low", LOW)
def test_linear_runs_in_low_precision_and_grads_stay_fp32(low, rng):
    x = mpamp.tensor(rng.normal(size=(5, 7)).astype(np.float32))
    w = mpamp.tensor(rng.normal(size=(3, 7)).astype(np.float32), requires_grad=True)
    b = mpamp.tensor(rng.normal(size=3).astype(np.float32), requires_grad=True)
    with mpamp.autocast(dtype=low):
        y = F.linear(x, w, b)
    assert y.dtype is getattr(mpamp, low)
    ref = rounded(x.cpu().numpy(), low) @ rounded(w.detach().cpu().numpy(), low).T + \
        rounded(b.detach().cpu().numpy(), low)
    rtol, atol = TOL[low]
    np.testing.assert_allclose(to_numpy(y), rounded(ref, low), rtol=rtol * 2, atol=atol * 8)
    y.float().sum().backward()
    assert w.grad.dtype is mpamp.float32 and b.grad.dtype is mpamp.float32
    np.testing.assert_allclose(to_numpy(w.grad), np.tile(rounded(x.cpu().numpy(), low).sum(0),
                                                         (3, 1)), rtol=2e-2, atol=1e-2)


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("op", ["mm", "matmul", "bmm", "addmm", "baddbmm", "matmul_op"])
def test_matrix_products_are_lower_precision(op, low):
    a, b = mpamp.randn(2, 3, 4), mpamp.randn(2, 4, 5)
    with mpamp.autocast(dtype=low):
        out = {"mm": lambda: mpamp.mm(a[0], b[0]), "matmul": lambda: mpamp.matmul(a, b),
               "bmm": lambda: mpamp.bmm(a, b), "matmul_op": lambda: a @ b,
               "addmm": lambda: mpamp.addmm(mpamp.zeros(5), a[0], b[0]),
               "baddbmm": lambda: mpamp.baddbmm(mpamp.zeros(3, 5), a, b)}[op]()
    assert out.dtype is getattr(mpamp, low)
    assert (a[0] @ b[0]).dtype is mpamp.float32          # outside: untouched


@pytest.mark.parametrize("low", LOW)
def test_losses_run_in_fp32(low):
    x = mpamp.randn(4, 3, dtype=low)
    t = mpamp.randn(4, 3, dtype=low)
    cls = mpamp.tensor([0, 2, 1, 1])
    with mpamp.autocast(dtype=low):
        assert F.mse_loss(x, t).dtype is mpamp.float32
        assert F.l1_loss(x, t).dtype is mpamp.float32
        assert F.cross_entropy(x, cls).dtype is mpamp.float32
        assert F.nll_loss(F.log_softmax(x, 1), cls).dtype is mpamp.float32
        assert F.binary_cross_entropy_with_logits(x, t).dtype is mpamp.float32
        # CPU autocast leaves these alone (torch's CPU lists)
        assert F.softmax(x, 1).dtype is getattr(mpamp, low)
        assert mpamp.exp(x).dtype is getattr(mpamp, low)
        assert x.sum().dtype is getattr(mpamp, low)
        assert F.layer_norm(x, (3,)).dtype is getattr(mpamp, low)
        assert F.relu(x).dtype is getattr(mpamp, low)     # not listed: input dtype


@pytest.mark.parametrize("low", LOW)
def test_promote_ops(low):
    lo, hi = mpamp.ones(2, dtype=low), mpamp.ones(2)
    with mpamp.autocast(dtype=low):
        assert mpamp.cat([lo, hi]).dtype is mpamp.float32
        assert mpamp.stack([lo, lo]).dtype is getattr(mpamp, low)
        assert mpamp.cat([lo, mpamp.ones(2, dtype=mpamp.int64).float()]).dtype is mpamp.float32
        other = "bfloat16" if low == "float16" else "float16"
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType in "
                                               "at::autocast::prioritize"):
            mpamp.cat([lo, mpamp.ones(2, dtype=other)])
    assert mpamp.cat([lo, hi]).dtype is mpamp.float32    # plain type promotion outside


def test_integer_and_explicit_dtype_calls_are_untouched():
    idx = mpamp.tensor([[1, 2]])
    with mpamp.autocast(dtype="bf16"):
        assert (idx @ idx.t()).dtype is mpamp.int64
        assert F.softmax(mpamp.ones(2, dtype="bf16"), 0, dtype=mpamp.float32).dtype is \
            mpamp.float32


def test_weight_cast_cache_hits_and_is_emptied():
    w = mpamp.randn(4, 4, requires_grad=True)
    x = mpamp.randn(2, 4)
    mpamp.clear_autocast_cache()
    before = mpamp.amp._cast_cache_stats()
    with mpamp.autocast(dtype="bf16"):
        y1 = F.linear(x, w)
        y2 = F.linear(x, w)                      # the same weight again: a cache hit
        with mpamp.autocast(dtype="bf16"):       # nested: the cache survives inner exits
            F.linear(x, w)
        mid = mpamp.amp._cast_cache_stats()
        assert mid["entries"] == 1
        assert mid["misses"] - before["misses"] == 1 and mid["hits"] - before["hits"] == 2
        (y1.float().sum() + y2.float().sum()).backward()
    assert mpamp.amp._cast_cache_stats()["entries"] == 0          # nothing held afterwards
    xr = rounded(x.cpu().numpy(), "bfloat16")      # both uses of the cached cast reach w.grad
    np.testing.assert_allclose(to_numpy(w.grad), np.tile(2 * xr.sum(0), (4, 1)), rtol=2e-2,
                               atol=1e-2)
    assert w.grad.dtype is mpamp.float32
    a = mpamp.amp._cast_cache_stats()
    with mpamp.autocast(dtype="bf16", cache_enabled=False):
        F.linear(x, w)
        F.linear(x, w)
        assert mpamp.amp._cast_cache_stats()["entries"] == 0
    assert mpamp.amp._cast_cache_stats()["hits"] == a["hits"]
    with mpamp.autocast(dtype="bf16"):                 # only leaves that require grad
        F.linear(x, w.detach())
        F.linear(x, w * 1)
        assert mpamp.amp._cast_cache_stats()["entries"] == 0


def test_enabled_false_region_runs_in_input_dtypes():
    w = mpamp.randn(3, 3)
    with mpamp.autocast(dtype="fp16"):
        h = w @ w
        with mpamp.autocast(enabled=False):
            assert (w @ w).dtype is mpamp.float32
            with pytest.raises(RuntimeError, match="same dtype"):
                h @ w                                  # mixed dtypes outside autocast
            assert (h.float() @ w).dtype is mpamp.float32
        assert (h @ w).dtype is mpamp.float16


def test_small_mlp_under_autocast_matches_fp32_closely(rng):
    mpamp.manual_seed(0)
    model = mpamp.nn.Sequential(mpamp.nn.Linear(8, 16), mpamp.nn.ReLU(),
                                mpamp.nn.Linear(16, 1))
    x = mpamp.tensor(rng.normal(size=(32, 8)).astype(np.float32))
    t = mpamp.tensor(rng.normal(size=(32, 1)).astype(np.float32))
    ref = F.mse_loss(model(x), t).item()
    with mpamp.autocast(dtype="bf16"):
        out = model(x)
        loss = F.mse_loss(out, t)
    assert out.dtype is mpamp.bfloat16 and loss.dtype is mpamp.float32
    assert abs(loss.item() - ref) < 0.05 * abs(ref) + 1e-3
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype is mpamp.float32
               for p in model.parameters())


def test_autocast_cast_applies_an_ops_policy_for_python_composed_ops():
    x = mpamp.randn(2, 3)
    h = x.half()
    assert mpamp._C._autocast_cast("linear", x, None) == (x, None)   # outside autocast
    with mpamp.autocast("cpu", dtype="bf16"):
        lx, none, li = mpamp._C._autocast_cast("linear", x, None, mpamp.arange(3))
        (fh,) = mpamp._C._autocast_cast("mse_loss", h)
    assert lx.dtype is mpamp.bfloat16 and none is None and li.dtype is mpamp.int64
    assert fh.dtype is mpamp.float32
    with pytest.raises(ValueError, match="no autocast policy for op 'nope'"):
        mpamp._C._autocast_cast("nope", x)
    with pytest.raises(TypeError, match="argument 1 must be a Tensor or None, not int"):
        mpamp._C._autocast_cast("linear", 3)
    with pytest.raises(TypeError, match=r"_autocast_cast\(op_name, \*tensors\)"):
        mpamp._C._autocast_cast(3)
