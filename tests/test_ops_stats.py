"""prod, var/std (+ var_mean/std_mean), logsumexp and cumsum/cumprod (norms: test_ops_norms.py):
forward and backward against NumPy float64 references on the rounded inputs,
per dtype (float32/float16/bfloat16, and int64/bool where torch allows), non-contiguous inputs,
negative dims, keepdim, empty tensors, zeros (prod/cumprod backward), inf and NaN, torch's
errors and warnings; autocast rows; and against torch where installed."""
import math
import warnings

import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

FLOATS = ["float32", "float16", "bfloat16"]
NAN, INF = float("nan"), float("inf")


def mk(arr, dtype="float32", requires_grad=False):
    a = np.asarray(arr)
    if dtype in ("int64", "bool"):
        t = mpamp.tensor(a.astype(np.int64 if dtype == "int64" else bool))
    else:
        t = mpamp.tensor(a.astype(np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def data(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def rnd(arr, dtype):
    """arr rounded to dtype, as float32 (how the reference sees a result of that dtype)."""
    a = np.asarray(arr, np.float64).astype(np.float32)
    return to_numpy(mk(a, dtype)) if a.ndim else to_numpy(mk(a.reshape(1), dtype)).reshape(())


def close(actual, expected, dtype="float32", factor=1.0):
    rtol, atol = TOL[dtype]
    got = actual if isinstance(actual, np.ndarray) else to_numpy(actual)
    exp = rnd(expected, dtype)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    np.testing.assert_allclose(got, exp, rtol=rtol * factor, atol=atol * factor)


def grad_of(y, x, g):
    (gx,) = mpamp.autograd.grad(y, [x], g)
    return to_numpy(gx)


def axes_of(dim, nd):
    if dim is None or dim == ():
        return tuple(range(nd))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(d % max(nd, 1) for d in dims) if nd else ()


# ---- prod ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim,keepdim", [((7,), None, False), ((3, 5), 1, True),
                                               ((3, 5), -2, False), ((2, 3, 4), 1, False),
                                               ((), None, False), ((), 0, True)])
def test_prod_forward_backward(rng, dtype, shape, dim, keepdim):
    arr = (rng.uniform(0.5, 1.5, shape) * np.sign(rng.standard_normal(shape))).astype(np.float32)
    x = mk(arr, dtype, requires_grad=True)
    xr = to_numpy(x).astype(np.float64)
    y = mpamp.prod(x) if dim is None else mpamp.prod(x, dim, keepdim)
    axis = None if dim is None or xr.ndim == 0 else dim
    ref = np.prod(xr, axis=axis, keepdims=keepdim and xr.ndim > 0)
    close(y, ref, dtype)
    assert y.grad_fn.name() == ("ProdBackward0" if dim is None else "ProdBackward1")
    g = mk(data(rng, tuple(y.shape)), dtype)
    gk = to_numpy(g).astype(np.float64)
    refk = np.prod(xr, axis=axis, keepdims=True) if xr.ndim else ref
    gk = gk.reshape(refk.shape)
    close(grad_of(y, x, g), gk * rnd(refk, dtype) / xr, dtype, factor=2)


def test_prod_zeros_inf_and_noncontiguous():
    x = mk([[2.0, 0.0, 3.0], [1.0, 2.0, 4.0], [0.0, 5.0, 0.0]], requires_grad=True)
    y = x.prod(1)
    assert y.tolist() == [0.0, 8.0, 0.0]
    y.backward(mk([1.0, 1.0, 1.0]))
    assert x.grad.tolist() == [[0.0, 6.0, 0.0], [8.0, 4.0, 2.0], [0.0, 0.0, 0.0]]
    z = mk([1.0, 0.0, 3.0], requires_grad=True)
    z.prod().backward()
    assert z.grad.tolist() == [0.0, 3.0, 0.0]
    w = mk([2.0, INF, 3.0], requires_grad=True)
    w.prod().backward()
    gw = w.grad.tolist()                       # torch's g * result / x: inf/inf is NaN
    assert gw[0] == INF and math.isnan(gw[1]) and gw[2] == INF
    t = mpamp.arange(1.0, 13.0).reshape(3, 4).t()[::2]             # (2, 3), strided
    ref = np.arange(1.0, 13.0).reshape(3, 4).T[::2]
    assert t.prod(1).tolist() == ref.prod(1).tolist()
    assert t.prod(0, keepdim=True).tolist() == ref.prod(0, keepdims=True).tolist()
    assert mpamp.zeros(0, 3).prod().item() == 1.0
    assert mpamp.zeros(0, 3).prod(0).tolist() == [1.0, 1.0, 1.0]


def test_prod_integers_and_dtype():
    i = mpamp.tensor([2**62, 3])
    assert i.prod().dtype == mpamp.int64
    assert i.prod().item() == (2**62 * 3 + 2**63) % 2**64 - 2**63     # wraps as torch
    assert mpamp.tensor([[5, 1], [2, 9]]).prod(0).tolist() == [10, 9]
    b = mpamp.tensor([True, True, False])
    assert b.prod().dtype == mpamp.int64 and b.prod().item() == 0
    assert mpamp.tensor([2, 3]).prod(dtype=mpamp.bool).item() is True
    h = mk([2.0, 3.0], "float16", requires_grad=True)
    y = h.prod(dtype=mpamp.float32)
    assert y.dtype == mpamp.float32 and y.item() == 6.0
    y.backward()
    assert h.grad.dtype == mpamp.float16 and h.grad.tolist() == [3.0, 2.0]
    assert mpamp.tensor([2, 3]).prod(0, True, dtype=mpamp.float32).tolist() == [6.0]
    with pytest.raises(TypeError, match="keepdim=True needs a dim"):
        mpamp.prod(i, keepdim=True)
    with pytest.raises(TypeError, match=r"prod\(\): argument 'dim' must be int, not tuple"):
        mpamp.prod(i, (0,))
    with pytest.raises(IndexError, match="Dimension out of range"):
        i.prod(1)
    with pytest.raises(TypeError, match=r"prod\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor"):
        mpamp.prod(3)


# ---- var / std ----

VAR_CASES = [((7,), None, False), ((3, 5), 1, True), ((3, 5), -2, False),
             ((2, 3, 5), (0, 2), False), ((2, 3, 5), [-1, 0], True), ((13, 11), None, True)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim,keepdim", VAR_CASES)
@pytest.mark.parametrize("correction", [1, 0, 2.5])
@pytest.mark.parametrize("kind", ["var", "std", "var_mean", "std_mean"])
def test_var_std_forward_backward(rng, dtype, shape, dim, keepdim, correction, kind):
    x = mk(data(rng, shape, 2.0) + 1.0, dtype, requires_grad=True)
    xr = to_numpy(x).astype(np.float64)
    axes = axes_of(dim, xr.ndim)
    out = getattr(mpamp, kind)(x, dim, keepdim=keepdim, correction=correction)
    ys = out if kind.endswith("mean") else (out,)
    n = np.prod([xr.shape[a] for a in axes])
    mean = xr.mean(axis=axes, keepdims=True)
    var = ((xr - mean) ** 2).sum(axis=axes, keepdims=True) / (n - correction)
    sd = np.sqrt(var)
    first = sd if kind.startswith("std") else var
    shape_out = tuple(ys[0].shape)
    close(ys[0], first.reshape(shape_out), dtype, factor=2)
    if len(ys) == 2:
        close(ys[1], mean.reshape(shape_out), dtype)
    gs = [mk(data(rng, shape_out), dtype) for _ in ys]
    gx = to_numpy(mpamp.autograd.grad(list(ys), [x], gs)[0])
    g0 = to_numpy(gs[0]).astype(np.float64).reshape(var.shape)
    if kind.startswith("std"):
        g0 = g0 / (2 * rnd(sd, dtype))
    ref = 2.0 * g0 * (xr - mean) / (n - correction)
    if len(ys) == 2:
        ref = ref + to_numpy(gs[1]).astype(np.float64).reshape(var.shape) / n
    close(gx, ref, dtype, factor=4)
    name = {"var": "VarBackward0", "std": "StdBackward0", "var_mean": "VarMeanBackward0",
            "std_mean": "StdMeanBackward0"}[kind]
    assert ys[0].grad_fn.name() == name


def test_var_overloads_and_methods(rng):
    arr = data(rng, (4, 6))
    x = mk(arr)
    a64 = arr.astype(np.float64)
    np.testing.assert_allclose(mpamp.var(x).item(), a64.var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(mpamp.var(x, False).item(), a64.var(), rtol=1e-5)  # unbiased
    np.testing.assert_allclose(to_numpy(mpamp.var(x, 1, True)), a64.var(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(mpamp.std(x, 1, False, True)),
                               a64.std(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(x.std(dim=0, unbiased=False)), a64.std(0), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(x.var(0, correction=0)), a64.var(0), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(x.var(dim=())), a64.var(ddof=1), rtol=1e-5)
    s, m = mpamp.std_mean(x, 1, keepdim=True)
    assert tuple(s.shape) == (4, 1) and tuple(m.shape) == (4, 1)
    assert type(mpamp.var_mean(x)) is tuple
    t = mk(arr).t()[::2]                                                  # non-contiguous
    np.testing.assert_allclose(to_numpy(t.var(1)), a64.T[::2].var(1, ddof=1), rtol=1e-5)
    with pytest.raises(TypeError, match="unbiased and correction cannot both be given"):
        x.var(1, unbiased=True, correction=1)
    with pytest.raises(TypeError, match=r"var\(\): unbiased was given twice"):
        mpamp.var(x, True, False)
    with pytest.raises(TypeError, match="argument 'correction' must be Number, not str"):
        x.std(correction="1")
    with pytest.raises(TypeError, match="must be int or tuple of ints, not float"):
        mpamp.var(x, 1.5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.std(2)


def test_var_dof_edge_cases_and_errors():
    one = mk([2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0. Correction "
                                         r"should be strictly less than the reduction factor"):
        v = one.var()
    assert math.isnan(v.item())
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
        e = mpamp.zeros(0).std()
    assert math.isnan(e.item())
    x = mk([[1.0, 2.0, 4.0, 8.0]] * 3)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert x.var(1, correction=5).tolist() == [INF] * 3            # divisor max(0, N - c)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.var(1)
    c = mk([2.0, 2.0, 2.0], requires_grad=True)
    c.std().backward()
    assert c.grad.tolist() == [0.0, 0.0, 0.0]                          # std 0: gradient 0
    n = mk([1.0, NAN], requires_grad=True)
    assert math.isnan(n.std().item())
    s, m = mpamp.var_mean(mk([1.0, 3.0], requires_grad=True), correction=0)
    leaf = s.grad_fn.next_functions[0][0].variable
    m.backward()                                                        # only the mean output
    assert leaf.grad.tolist() == [0.5, 0.5]
    for dt in ("int64", "bool"):
        with pytest.raises(RuntimeError, match="std and var only support floating point and "
                                               "complex dtypes"):
            mk([1, 0], dt).var()
    with pytest.raises(RuntimeError, match="std and var only support"):
        mpamp.std_mean(mpamp.tensor([1, 2]))


# ---- logsumexp ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim,keepdim", [((7,), 0, False), ((3, 5), 1, True),
                                               ((3, 5), -2, False), ((2, 3, 5), (0, 2), False),
                                               ((2, 3, 5), (), True), ((), 0, False)])
def test_logsumexp_forward_backward(rng, dtype, shape, dim, keepdim):
    x = mk(data(rng, shape, 3.0) + 40.0, dtype, requires_grad=True)    # exp would overflow
    xr = to_numpy(x).astype(np.float64)
    y = mpamp.logsumexp(x, dim, keepdim)
    axes = axes_of(dim, xr.ndim)
    m = xr.max(axis=axes, keepdims=True) if xr.ndim else xr
    ref = np.log(np.exp(xr - m).sum(axis=axes, keepdims=True)) + m
    close(y, ref.reshape(tuple(y.shape)), dtype)
    assert y.grad_fn.name() == "LogsumexpBackward0"
    g = mk(data(rng, tuple(y.shape)), dtype)
    gr = to_numpy(g).astype(np.float64).reshape(ref.shape)
    close(grad_of(y, x, g), gr * np.exp(xr - rnd(ref, dtype)), dtype, factor=2)
    np.testing.assert_array_equal(to_numpy(x.logsumexp(dim, keepdim=keepdim)), to_numpy(y))


def test_logsumexp_inf_nan_empty_integers():
    x = mk([[INF, 2.0], [-INF, -INF], [INF, -INF], [NAN, 1.0], [1.0, 2.0]], requires_grad=True)
    y = x.logsumexp(1)
    got = y.tolist()
    assert got[0] == INF and got[1] == -INF and got[2] == INF and math.isnan(got[3])
    assert abs(got[4] - np.log(np.exp(1) + np.exp(2))) < 1e-6
    y.backward(mk([1.0] * 5))
    gr = x.grad.tolist()                                   # torch's g * exp(x - result)
    assert math.isnan(gr[0][0]) and gr[0][1] == 0.0 and all(map(math.isnan, gr[1]))
    e = mpamp.zeros(2, 0)
    assert e.logsumexp(1).tolist() == [-INF, -INF]
    assert tuple(e.logsumexp(0).shape) == (0,)
    i = mpamp.tensor([1, 2, 3])
    r = mpamp.logsumexp(i, 0)
    assert r.dtype == mpamp.float32 and abs(r.item() - np.log(np.exp([1, 2, 3]).sum())) < 1e-6
    assert mpamp.logsumexp(mpamp.tensor([True, False]), 0).dtype == mpamp.float32
    with pytest.raises(TypeError):
        mpamp.logsumexp(x)                                  # dim is required
    with pytest.raises(TypeError, match="must be int or tuple of ints, not float"):
        x.logsumexp(1.5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.logsumexp(2)


# ---- cumsum / cumprod ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("prod", [False, True], ids=["cumsum", "cumprod"])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), -2), ((2, 3, 4), 1),
                                       ((), 0), ((), -1)])
def test_cumsum_cumprod_forward_backward(rng, dtype, prod, shape, dim):
    arr = rng.uniform(0.5, 1.5, shape).astype(np.float32) if prod else data(rng, shape)
    x = mk(arr, dtype, requires_grad=True)
    xr = to_numpy(x).astype(np.float64)
    y = (mpamp.cumprod if prod else mpamp.cumsum)(x, dim)
    ax = dim if xr.ndim else None
    ref = (np.cumprod if prod else np.cumsum)(xr, axis=ax).reshape(xr.shape)
    close(y, ref, dtype, factor=2)
    assert y.grad_fn.name() == ("CumprodBackward0" if prod else "CumsumBackward0")
    g = mk(data(rng, shape), dtype)
    gr = to_numpy(g).astype(np.float64)
    if prod:        # d y_j / d x_i = y_j / x_i for j >= i (no zeros here)
        yr = rnd(ref, dtype).astype(np.float64)
        t = np.flip(np.cumsum(np.flip(gr * yr, ax), ax), ax) if xr.ndim else gr * yr
        exp = t / xr
    else:
        exp = np.flip(np.cumsum(np.flip(gr, ax), ax), ax) if xr.ndim else gr
    close(grad_of(y, x, g), exp, dtype, factor=4)


def test_cumprod_backward_with_zeros():
    x = mk([2.0, 0.0, 3.0, 0.0, 5.0], requires_grad=True)
    x.cumprod(0).backward(mk([1.0] * 5))
    assert x.grad.tolist() == [1.0, 8.0, 0.0, 0.0, 0.0]
    y = mk([[0.0, 2.0, 3.0], [4.0, 0.5, 0.0]], requires_grad=True)
    g = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, 2.0]])
    y.cumprod(1).backward(mk(g))
    xv = np.array([[0.0, 2.0, 3.0], [4.0, 0.5, 0.0]])
    exp = np.zeros_like(xv)        # brute force: d/dx_i sum_j g_j prod_{k<=j} x_k
    for r in range(2):
        for i in range(3):
            for j in range(i, 3):
                exp[r, i] += g[r, j] * np.prod([xv[r, k] for k in range(j + 1) if k != i])
    np.testing.assert_allclose(to_numpy(y.grad), exp, rtol=1e-6)


def test_cumsum_integers_dtype_noncontiguous_and_errors():
    i = mpamp.tensor([2**62, 3, 2**62])
    assert i.cumsum(0).dtype == mpamp.int64
    assert i.cumsum(0).tolist() == [2**62, 2**62 + 3, (2**63 + 3 + 2**63) % 2**64 - 2**63]
    assert mpamp.tensor([[5, 1], [2, 9]]).cumprod(0).tolist() == [[5, 1], [10, 9]]
    assert mpamp.tensor([True, False, True]).cumsum(0).tolist() == [1, 1, 2]
    assert mpamp.tensor([True, False]).cumsum(0).dtype == mpamp.int64
    assert mpamp.cumsum(i, 0, dtype=mpamp.float32).dtype == mpamp.float32
    h = mk([1.0, 2.0], "float16", requires_grad=True)
    y = mpamp.cumsum(h, 0, dtype=mpamp.float32)
    assert y.dtype == mpamp.float32 and y.tolist() == [1.0, 3.0]
    y.sum().backward()
    assert h.grad.dtype == mpamp.float16 and h.grad.tolist() == [2.0, 1.0]
    base = np.arange(12.0).reshape(3, 4)
    t = mpamp.tensor(base).t()[::2]
    assert t.cumsum(1).tolist() == np.cumsum(base.T[::2], 1).tolist()
    assert t.cumprod(-1).tolist() == np.cumprod(base.T[::2], -1).tolist()
    e = mpamp.zeros(0, 3)
    assert tuple(e.cumsum(0).shape) == (0, 3) and tuple(e.cumprod(1).shape) == (0, 3)
    assert mpamp.tensor(3.0).cumsum(0).item() == 3.0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        e.cumsum(2)
    with pytest.raises(TypeError, match=r"cumprod\(\): argument 'dim' must be int, not float"):
        e.cumprod(1.0)
    with pytest.raises(TypeError):
        mpamp.cumsum(e)                                     # dim is required
    with pytest.raises(TypeError):
        mpamp.cumsum(e, 0, mpamp.float16)                   # dtype is keyword-only


def test_backward_twice_without_retain_graph_raises():
    ops = [lambda t: t.prod(), lambda t: t.var(), lambda t: t.logsumexp(0),
           lambda t: t.norm(), lambda t: t.cumprod(0).sum()]
    for op in ops:
        x = mk([1.0, 2.0, 3.0], requires_grad=True)
        y = op(x)
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            y.backward()


# ---- autocast ----

def test_autocast_policy_rows():
    pol = mpamp._C._autocast_policy
    assert pol("prod", "cpu") == "fp32" and pol("prod", "cuda") == "fp32"
    for op in ("cumsum", "cumprod", "linalg_vector_norm", "norm", "logsumexp", "dist"):
        assert pol(op, "cpu") is None and pol(op, "cuda") == "fp32", op
    assert pol("einsum", "cpu") is None and pol("einsum", "cuda") == "lower"
    for op in ("topk", "sort", "amax", "maximum", "var", "std", "outer"):
        assert pol(op, "cpu") is None and pol(op, "cuda") is None, op


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_autocast_cpu(low):
    lo = mk([[1.5, 2.0], [0.5, 3.0]], low, requires_grad=True)
    with mpamp.autocast("cpu", dtype=getattr(mpamp, low)):
        p = lo.prod()                                   # CPU fp32 list: any call
        p1 = lo.prod(1)
        pd = lo.prod(dtype=mpamp.float16)
        assert lo.cumsum(0).dtype == lo.dtype           # not on the CPU lists
        assert lo.logsumexp(1).dtype == lo.dtype
        assert lo.norm().dtype == lo.dtype and lo.std().dtype == lo.dtype
        assert mpamp.dist(lo, lo).dtype == lo.dtype
        assert mpamp.topk(lo, 1).values.dtype == lo.dtype
        assert mpamp.einsum("ij,jk->ik", mk(np.ones((2, 2))), mk(np.ones((2, 2)))).dtype == \
            getattr(mpamp, low)                         # its bmm is lower precision
        assert mpamp.einsum("ij->j", mk(np.ones((2, 2)))).dtype == mpamp.float32
    assert p.dtype == mpamp.float32 and p.item() == 4.5 and p1.dtype == mpamp.float32
    assert pd.dtype == mpamp.float16
    p.backward()
    assert lo.grad.dtype == lo.dtype
    np.testing.assert_allclose(to_numpy(lo.grad), [[3.0, 2.25], [9.0, 1.5]])


# ---- against torch ----

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    arr = rng.standard_normal((4, 5)).astype(np.float32)
    arr[1, 2] = 0.0
    arr[2, 1] = -arr[2, 3]
    cases = [
        ("prod1", lambda m, t: m.prod(1), lambda m, t: t.prod(1)),
        ("prod", lambda m, t: m.prod(), lambda m, t: t.prod()),
        ("var", lambda m, t: m.var(0, correction=0.5),
         lambda m, t: t.var(0, correction=0.5)),
        ("std", lambda m, t: m.std((0, 1), keepdim=True),
         lambda m, t: t.std((0, 1), keepdim=True)),
        ("std_mean", lambda m, t: sum(mpamp.std_mean(m, 1)),
         lambda m, t: sum(torch.std_mean(t, 1))),
        ("lse", lambda m, t: m.logsumexp((0, 1)), lambda m, t: t.logsumexp((0, 1))),
        ("cumsum", lambda m, t: m.cumsum(-1), lambda m, t: t.cumsum(-1)),
        ("cumprod", lambda m, t: m.cumprod(0), lambda m, t: t.cumprod(0)),
        ("dist", lambda m, t: mpamp.dist(m, m[0], 3), lambda m, t: torch.dist(t, t[0], 3)),
    ] + [(f"norm{o}", (lambda o: lambda m, t: mpamp.linalg.vector_norm(m, o, 1))(o),
          (lambda o: lambda m, t: torch.linalg.vector_norm(t, o, 1))(o))
         for o in (2, 1, INF, -INF, 3, 0.5, 1.5, -1)] + [
        (f"mnorm{o}", (lambda o: lambda m, t: mpamp.linalg.norm(m, o))(o),
         (lambda o: lambda m, t: torch.linalg.norm(t, o))(o))
        for o in ("fro", 1, -1, INF, -INF)]
    for name, fm, ft in cases:
        x = mk(arr, requires_grad=True)
        tx = torch.tensor(arr, requires_grad=True)
        y, ty = fm(x, tx), ft(x, tx)
        np.testing.assert_allclose(to_numpy(y), ty.detach().cpu().numpy(), rtol=2e-6, atol=1e-6,
                                   err_msg=name)
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        (gx,) = mpamp.autograd.grad(y, [x], mk(g))
        (tg,) = torch.autograd.grad(ty, [tx], torch.tensor(g))
        np.testing.assert_allclose(to_numpy(gx), tg.cpu().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
    ints = np.array([[3, -2, 5], [7, 0, 1]])
    for fm, ft in ((lambda t: t.prod(1), lambda t: t.prod(1)),
                   (lambda t: t.cumsum(0), lambda t: t.cumsum(0)),
                   (lambda t: t.cumprod(1), lambda t: t.cumprod(1))):
        assert fm(mpamp.tensor(ints)).tolist() == ft(torch.tensor(ints)).tolist()


def test_no_leaked_storage_across_ops_and_errors(rng):
    import gc
    stats = mpamp.backends.cpu.allocator_stats

    def run():
        x = mk(data(rng, (4, 5)), "bfloat16", requires_grad=True)
        w = mk(data(rng, (5,)), requires_grad=True)
        outs = [x.min(1).values, x.min(), x.amax((0, 1)), x.amin(0), mpamp.maximum(x, w),
                mpamp.fmin(x, w), x.prod(1), x.prod(), x.var(0), x.std(1, correction=0),
                *mpamp.std_mean(x, 0), *mpamp.var_mean(x), x.logsumexp(1), x.norm(),
                mpamp.linalg.vector_norm(x, INF, 1), mpamp.linalg.vector_norm(x, 3),
                mpamp.linalg.norm(x, 1), x.cumsum(0), x.cumprod(1), x.sort(1).values,
                x.topk(2).values, mpamp.einsum("ij,j->i", x, w.bfloat16()),
                mpamp.einsum("ii->i", x[:4, :4]),
                mpamp.outer(w, w), mpamp.dist(x, w)]
        total = outs[0].float().sum()
        for o in outs[1:]:
            total = total + o.float().sum()
        total.backward()
        x.argmin(1)
        x.argsort(0)
        mpamp.aminmax(x)
        for bad in (lambda: x.topk(9), lambda: mpamp.tensor([1, 2]).std(),
                    lambda: mpamp.zeros(0, 2).amax(0), lambda: x.cumsum(3),
                    lambda: mpamp.linalg.vector_norm(mpamp.zeros(0), INF),
                    lambda: mpamp.maximum(x, mpamp.zeros(3)), lambda: x.sort(5),
                    lambda: mpamp.einsum("ij,jk", x, x), lambda: mpamp.zeros(0).min(),
                    lambda: mpamp.linalg.vector_norm(x, dtype=mpamp.float16)):
            with pytest.raises((IndexError, ValueError, RuntimeError)):
                bad()

    run()
    gc.collect()
    base = stats()["in_use_bytes"]
    for _ in range(10):
        run()
    gc.collect()
    assert stats()["in_use_bytes"] == base


def test_int64_sum_is_exact_and_wraps_as_torch():
    assert mpamp.tensor([2**53 + 1, 1]).sum().item() == 2**53 + 2       # beyond a double
    assert mpamp.tensor([2**62, 2**62]).sum().item() == -2**63           # int64 wrap-around
    assert mpamp.tensor([[2**60 + 1, 3], [5, 2**60]]).sum(0).tolist() == [2**60 + 6, 2**60 + 3]
    assert mpamp.tensor([True, True, False]).sum().item() == 2
    assert mpamp.tensor([2**53 + 1, 1]).sum(dtype=mpamp.float32).dtype == mpamp.float32
