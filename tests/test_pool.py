"""max/avg/adaptive-avg pooling in 1-d and 2-d, functions and modules: forward (values and
indices) and backward against NumPy window loops in fp32/fp16/bf16, ceil_mode edge cases,
count_include_pad, divisor_override, None output sizes, unbatched and non-contiguous inputs;
against torch where installed; torch's errors."""
import numpy as np
import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F
from conftest import TOL, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]


def rounded(a, dtype):
    return to_numpy(mpamp.tensor(np.asarray(a, np.float32)).to(dtype)).astype(np.float64)


def out_size(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def max_ref(x, k, s, p, d, ceil, gy=None):
    """x (P, H, W): values, flat indices, and (with gy) the input gradient."""
    _, h, w = x.shape
    oh, ow = out_size(h, k[0], s[0], p[0], d[0], ceil), out_size(w, k[1], s[1], p[1], d[1], ceil)
    y, idx = np.zeros(x.shape[:1] + (oh, ow)), np.zeros(x.shape[:1] + (oh, ow), np.int64)
    gx = np.zeros_like(x)
    for i in range(oh):
        rows = [i * s[0] - p[0] + t * d[0] for t in range(k[0])]
        rows = [r for r in rows if 0 <= r < h]
        for j in range(ow):
            cols = [j * s[1] - p[1] + t * d[1] for t in range(k[1])]
            cols = [c for c in cols if 0 <= c < w]
            win = x[:, rows][:, :, cols].reshape(x.shape[0], -1)
            a = win.argmax(1)
            y[:, i, j] = win.max(1)
            idx[:, i, j] = np.array(rows)[a // len(cols)] * w + np.array(cols)[a % len(cols)]
            if gy is not None:
                np.add.at(gx.reshape(x.shape[0], -1), (np.arange(x.shape[0]), idx[:, i, j]),
                          gy[:, i, j])
    return y, idx, gx


def avg_ref(x, k, s, p, ceil, include_pad, divisor, gy=None):
    _, h, w = x.shape
    oh, ow = out_size(h, k[0], s[0], p[0], 1, ceil), out_size(w, k[1], s[1], p[1], 1, ceil)
    y, gx = np.zeros(x.shape[:1] + (oh, ow)), np.zeros_like(x)
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * s[0] - p[0], j * s[1] - p[1]
            he, we = min(hs + k[0], h + p[0]), min(ws + k[1], w + p[1])
            pool = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            div = divisor or (pool if include_pad else (he - hs) * (we - ws))
            y[:, i, j] = x[:, hs:he, ws:we].sum((1, 2)) / div
            if gy is not None:
                gx[:, hs:he, ws:we] += gy[:, i, j][:, None, None] / div
    return y, gx


def adaptive_ref(x, oh, ow, gy=None):
    _, h, w = x.shape
    y, gx = np.zeros(x.shape[:1] + (oh, ow)), np.zeros_like(x)
    for i in range(oh):
        hs, he = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            ws, we = (j * w) // ow, -((-(j + 1) * w) // ow)
            n = (he - hs) * (we - ws)
            y[:, i, j] = x[:, hs:he, ws:we].sum((1, 2)) / n
            if gy is not None:
                gx[:, hs:he, ws:we] += gy[:, i, j][:, None, None] / n
    return y, gx


def planes(a, nsp):
    """(P, H, W) view of an (..., H, W) or (..., L) array."""
    return a.reshape(-1, *a.shape[-2:]) if nsp == 2 else a.reshape(-1, 1, a.shape[-1])




MAX_CFGS = [  # (shape, kernel, stride, padding, dilation, ceil)
    ((2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 3, 9, 8), (3, 2), (2, 3), (1, 0), (1, 1), True),
    ((1, 2, 10, 7), (3, 2), (1, 2), (1, 1), (2, 3), False),
    ((3, 6, 5), (2, 2), (2, 2), (0, 0), (1, 1), True),          # unbatched, ceil adds one
    ((2, 2, 5, 5), (2, 2), (2, 2), (1, 1), (1, 1), True),       # last window in the padding
    ((2, 1, 4, 4), (4, 4), (4, 4), (0, 0), (1, 1), False),      # one window
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", MAX_CFGS, ids=str)
def test_max_pool2d(cfg, dtype, rng):
    shape, k, s, p, d, ceil = cfg
    x = rounded(rng.permutation(np.prod(shape)).reshape(shape) / 7.0, dtype)   # no ties
    t = mpamp.tensor(x.astype(np.float32)).to(dtype).requires_grad_()
    y, idx = F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)
    assert y.grad_fn.name() == "MaxPool2DWithIndicesBackward0" and idx.dtype is mpamp.int64
    gy = rounded(rng.standard_normal(tuple(y.shape)), dtype)
    yr, ir, gr = max_ref(planes(x, 2), k, s, p, d, ceil, planes(gy, 2))
    assert to_numpy(y).tolist() == yr.reshape(y.shape).tolist()
    assert to_numpy(idx).tolist() == ir.reshape(y.shape).tolist()
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(t.grad), gr.reshape(shape), rtol=rtol, atol=atol)
    assert t.grad.dtype is getattr(mpamp, dtype)
    plain = F.max_pool2d(t, k, s, p, d, ceil)
    assert to_numpy(plain).tolist() == to_numpy(y).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", [((2, 3, 11), 3, 2, 1, 1, True), ((4, 9), 2, 1, 0, 3, False),
                                 ((2, 2, 6), 4, 3, 2, 1, True)], ids=str)
def test_max_pool1d(cfg, dtype, rng):
    shape, k, s, p, d, ceil = cfg
    x = rounded(rng.permutation(np.prod(shape)).reshape(shape) / 5.0, dtype)
    t = mpamp.tensor(x.astype(np.float32)).to(dtype).requires_grad_()
    y, idx = F.max_pool1d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)
    gy = rounded(rng.standard_normal(tuple(y.shape)), dtype)
    yr, ir, gr = max_ref(planes(x, 1), (1, k), (1, s), (0, p), (1, d), ceil, planes(gy, 1))
    assert to_numpy(y).tolist() == yr.reshape(y.shape).tolist()
    assert to_numpy(idx).tolist() == ir.reshape(y.shape).tolist()
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    np.testing.assert_allclose(to_numpy(t.grad), gr.reshape(shape), *TOL[dtype])
    y2, i2 = F.max_pool1d_with_indices(t, k, s, p, d, ceil)
    assert to_numpy(i2).tolist() == to_numpy(idx).tolist()


def test_max_pool_ties_nan_and_inf():
    x = mpamp.tensor([[[[1.0, 1.0], [0.5, 1.0]]]], requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.tolist() == [[[[0]]]]                   # first of the ties
    y.backward(mpamp.ones(1, 1, 1, 1))
    assert x.grad.tolist() == [[[[1.0, 0.0], [0.0, 0.0]]]]
    nan = float("nan")
    y, idx = F.max_pool2d(mpamp.tensor([[[[1.0, nan], [nan, 2.0]]]]), 2, return_indices=True)
    assert np.isnan(y.item()) and idx.item() == 2      # NaN wins (the last one, as torch)
    y, idx = F.max_pool2d(mpamp.full((1, 1, 2, 2), -float("inf")), 2, return_indices=True)
    assert y.item() == -float("inf") and idx.item() == 0


AVG_CFGS = [  # (shape, kernel, stride, padding, ceil, count_include_pad, divisor)
    ((2, 3, 9, 8), (3, 3), (2, 2), (1, 1), False, True, None),
    ((2, 3, 9, 8), (3, 3), (2, 2), (1, 1), True, False, None),
    ((2, 3, 8, 7), (2, 4), (3, 2), (1, 2), True, True, None),
    ((3, 7, 6), (3, 2), (2, 2), (1, 1), False, True, 5),
    ((2, 2, 5, 5), (2, 2), (2, 2), (1, 1), True, False, None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", AVG_CFGS, ids=str)
def test_avg_pool2d(cfg, dtype, rng):
    shape, k, s, p, ceil, cip, div = cfg
    x = rounded(rng.standard_normal(shape), dtype)
    t = mpamp.tensor(x.astype(np.float32)).to(dtype).requires_grad_()
    y = F.avg_pool2d(t, k, s, p, ceil, cip, div)
    assert y.grad_fn.name() == "AvgPool2DBackward0" and y.dtype is getattr(mpamp, dtype)
    gy = rounded(rng.standard_normal(tuple(y.shape)), dtype)
    yr, gr = avg_ref(planes(x, 2), k, s, p, ceil, cip, div, planes(gy, 2))
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(y), yr.reshape(y.shape), rtol=rtol, atol=atol * 4)
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    np.testing.assert_allclose(to_numpy(t.grad), gr.reshape(shape), rtol=rtol, atol=atol * 4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool1d(dtype, rng):
    x = rounded(rng.standard_normal((2, 3, 11)), dtype)
    t = mpamp.tensor(x.astype(np.float32)).to(dtype).requires_grad_()
    for args in [(3, 2, 1, True, False), (4, None, 2, False, True), ((2,), (1,), (0,))]:
        y = F.avg_pool1d(t, *args)
        k, s = args[0], args[1] if args[1] is not None else args[0]
        k, s, p = [a[0] if isinstance(a, tuple) else a for a in (k, s, args[2])]
        ceil, cip = (args[3], args[4]) if len(args) > 3 else (False, True)
        gy = rounded(rng.standard_normal(tuple(y.shape)), dtype)
        yr, gr = avg_ref(planes(x, 1), (1, k), (1, s), (0, p), ceil, cip, None, planes(gy, 1))
        np.testing.assert_allclose(to_numpy(y), yr.reshape(y.shape), *TOL[dtype])
        t.grad = None
        y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
        np.testing.assert_allclose(to_numpy(t.grad), gr.reshape(x.shape), *TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,osize,expect", [
    ((2, 3, 9, 8), 3, (3, 3)), ((2, 3, 9, 8), (4, 5), (4, 5)), ((2, 3, 9, 8), (None, 3), (9, 3)),
    ((3, 7, 5), (7, 2), (7, 2)), ((2, 3, 5, 4), (1, 1), (1, 1)), ((1, 2, 3, 3), (5, 4), (5, 4)),
    ((2, 3, 5, 5), None, (5, 5)), ((2, 3, 4, 4), (0, 2), (0, 2))], ids=str)
def test_adaptive_avg_pool2d(shape, osize, expect, dtype, rng):
    x = rounded(rng.standard_normal(shape), dtype)
    t = mpamp.tensor(x.astype(np.float32)).to(dtype).requires_grad_()
    y = F.adaptive_avg_pool2d(t, osize)
    assert tuple(y.shape) == shape[:-2] + expect
    gy = rounded(rng.standard_normal(tuple(y.shape)), dtype)
    yr, gr = adaptive_ref(planes(x, 2), *expect, gy=planes(gy, 2) if gy.size else None)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(y), yr.reshape(y.shape), rtol=rtol, atol=atol * 4)
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    np.testing.assert_allclose(to_numpy(t.grad), gr.reshape(shape), rtol=rtol, atol=atol * 4)


@pytest.mark.parametrize("osize", [4, (3,), None])
def test_adaptive_avg_pool1d(osize, rng):
    x = rng.standard_normal((2, 3, 10))
    t = mpamp.tensor(x.astype(np.float32), requires_grad=True)
    y = F.adaptive_avg_pool1d(t, osize)
    o = 10 if osize is None else osize if isinstance(osize, int) else osize[0]
    yr, gr = adaptive_ref(planes(x, 1), 1, o, gy=np.ones((6, 1, o)))
    np.testing.assert_allclose(to_numpy(y), yr.reshape(2, 3, o), rtol=1e-6, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(t.grad), gr.reshape(x.shape), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["max", "avg", "adaptive"])
def test_non_contiguous_and_empty_batch(op, rng):
    base = rng.standard_normal((2, 7, 8, 3)).astype(np.float32)
    x = mpamp.tensor(base).permute(0, 3, 1, 2)            # NHWC storage
    xc = mpamp.tensor(np.ascontiguousarray(base.transpose(0, 3, 1, 2)))
    f = {"max": lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True),
         "avg": lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False),
         "adaptive": lambda t: F.adaptive_avg_pool2d(t, (3, 5))}[op]
    assert not x.is_contiguous()
    assert to_numpy(f(x)).tolist() == to_numpy(f(xc)).tolist()
    sliced = mpamp.tensor(base)[:, ::2, :, :].permute(0, 3, 1, 2)
    np.testing.assert_array_equal(to_numpy(f(sliced)), to_numpy(f(sliced.contiguous())))
    e = mpamp.randn(0, 3, 8, 8, requires_grad=True)
    out = f(e)
    assert out.shape[0] == 0
    out.sum().backward()
    assert tuple(e.grad.shape) == (0, 3, 8, 8)


def test_large_input_runs_planes_in_parallel(rng):
    x = rng.standard_normal((8, 32, 33, 31)).astype(np.float32)
    t = mpamp.tensor(x)
    old = mpamp.get_num_threads()
    try:
        mpamp.set_num_threads(1)
        one = [to_numpy(f(t)) for f in (lambda a: F.max_pool2d(a, 3, 2),
                                         lambda a: F.avg_pool2d(a, 2),
                                         lambda a: F.adaptive_avg_pool2d(a, 5))]
        mpamp.set_num_threads(2)
        two = [to_numpy(f(t)) for f in (lambda a: F.max_pool2d(a, 3, 2),
                                         lambda a: F.avg_pool2d(a, 2),
                                         lambda a: F.adaptive_avg_pool2d(a, 5))]
    finally:
        mpamp.set_num_threads(old)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
    yr, _, _ = max_ref(x.reshape(-1, 33, 31).astype(np.float64)[:4], (3, 3), (2, 2), (0, 0),
                       (1, 1), False)
    np.testing.assert_array_equal(one[0].reshape(-1, 16, 15)[:4], yr)


CEIL_EDGES = [(5, 2, 2, 1), (6, 3, 2, 1), (7, 3, 3, 1), (4, 3, 2, 0), (8, 4, 3, 2), (5, 5, 3, 2)]


@pytest.mark.parametrize("n,k,s,p", CEIL_EDGES, ids=str)
def test_pools_match_torch_on_ceil_mode_edges(n, k, s, p, rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, n, n + 1)).astype(np.float32)
    tx, mx = torch.tensor(x, requires_grad=True), mpamp.tensor(x, requires_grad=True)
    for ceil in (False, True):
        for cip in (False, True):
            ty = torch.nn.functional.avg_pool2d(tx, k, s, p, ceil, cip)
            my = F.avg_pool2d(mx, k, s, p, ceil, cip)
            np.testing.assert_allclose(to_numpy(my), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
        ty, ti = torch.nn.functional.max_pool2d(tx, k, s, p, 1, ceil, True)
        my, mi = F.max_pool2d(mx, k, s, p, 1, ceil, True)
        assert to_numpy(my).tolist() == ty.detach().numpy().tolist()
        assert to_numpy(mi).tolist() == ti.numpy().tolist()
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        tx.grad = None
        mx.grad = None
        ty.backward(torch.tensor(g))
        my.backward(mpamp.tensor(g))
        np.testing.assert_allclose(to_numpy(mx.grad), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    for o in [(n - 1, 3), (2 * n, n // 2 + 1)]:
        ty = torch.nn.functional.adaptive_avg_pool2d(tx, o)
        my = F.adaptive_avg_pool2d(mx, o)
        np.testing.assert_allclose(to_numpy(my), ty.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_modules_repr_and_forward(rng):
    torch = pytest.importorskip("torch")
    mods = [("MaxPool2d", (3, 2, 1, 2, True, True)), ("MaxPool2d", (2,)),
            ("AvgPool2d", (3, 2, 1, True, False, 2)), ("AvgPool2d", (2,)),
            ("AdaptiveAvgPool2d", ((None, 3),)), ("MaxPool1d", (3, 2, 1)),
            ("AvgPool1d", (3, None, 1, True)), ("AdaptiveAvgPool1d", (3,))]
    for name, args in mods:
        tm, mm = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
        assert repr(mm) == repr(tm)
        assert list(mm.state_dict()) == []
        shape = (2, 3, 11, 9) if name.endswith("2d") else (2, 3, 11)
        x = rng.standard_normal(shape).astype(np.float32)
        ty, my = tm(torch.tensor(x)), mm(mpamp.tensor(x))
        if isinstance(ty, tuple):
            assert to_numpy(my[1]).tolist() == ty[1].numpy().tolist()
            ty, my = ty[0], my[0]
        np.testing.assert_allclose(to_numpy(my), ty.numpy(), rtol=1e-6, atol=1e-6)


def test_module_defaults():
    assert nn.MaxPool2d(3).stride == 3 and nn.AvgPool2d((2, 3)).stride == (2, 3)
    assert nn.AvgPool1d(2).kernel_size == (2,) and nn.AvgPool1d(2).stride == (2,)


# ---- errors ----

X4 = mpamp.randn(2, 3, 5, 5)
ERRORS = [
    (lambda: F.max_pool2d(X4, 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     "dilation=1"),
    (lambda: F.max_pool2d(X4, 2, stride=0), RuntimeError, "stride should not be zero"),
    (lambda: F.max_pool2d(X4, 0), RuntimeError, "stride should not be zero"),
    (lambda: F.max_pool2d(X4, 2, stride=-1), RuntimeError,
     "stride should be greater than zero, but got dH: -1 dW: -1"),
    (lambda: F.max_pool2d(X4, 0, stride=1), RuntimeError,
     "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    (lambda: F.max_pool2d(X4, 2, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    (lambda: F.max_pool2d(X4, 2, padding=-1), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    (lambda: F.max_pool2d(X4, 6), RuntimeError,
     r"Given input size: \(3x5x5\). Calculated output size: \(3x0x0\). Output size is too "
     "small"),
    (lambda: F.max_pool2d(mpamp.randn(5, 5), 2), RuntimeError,
     r"non-empty 3D or 4D \(batch mode\) tensor expected for input"),
    (lambda: F.max_pool2d(mpamp.randn(2, 0, 5, 5), 2), RuntimeError,
     r"Expected 3D or 4D \(batch mode\) tensor with optional 0 dim batch size for input, but "
     r"got:\[2, 0, 5, 5\]"),
    (lambda: F.max_pool2d(X4, (2, 2, 2)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(X4, 2, (2, 2, 2)), RuntimeError,
     "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(X4, 2, 2, (2, 2, 2)), RuntimeError,
     "max_pool2d: padding must either be a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(X4, 2, 2, 0, (2, 2, 2)), RuntimeError,
     "max_pool2d: dilation must be either a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(X4, 2, 2.0), TypeError,
     r"max_pool2d\(\): argument 'stride' must be an int or a tuple of ints, not float"),
    (lambda: F.max_pool2d(X4.long(), 2), NotImplementedError,
     "\"max_pool2d\" not implemented for 'Long'"),
    (lambda: F.max_pool1d(mpamp.randn(2, 3, 5, 5), 2), RuntimeError,
     r"max_pool1d: Expected 2D or 3D \(batch mode\) tensor with optional 0 dim batch size for "
     r"input, but got:\[2, 3, 5, 5\]"),
    (lambda: F.max_pool1d(mpamp.randn(2, 3, 5), (3, 3)), RuntimeError,
     r"max_pool1d\(\) kernel_size must be an int, list of ints or tuple of ints of size 1 but "
     "got size 2"),
    (lambda: F.max_pool1d(mpamp.randn(2, 3, 5), 6), RuntimeError,
     r"Given input size: \(3x1x5\). Calculated output size: \(3x1x0\)"),
    (lambda: F.avg_pool2d(X4, 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size"),
    (lambda: F.avg_pool2d(X4, 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda: F.avg_pool2d(X4, (2, 2, 2)), RuntimeError,
     "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda: F.avg_pool2d(mpamp.randn(2, 2, 0, 5), 2), RuntimeError,
     r"got:\[2, 2, 0, 5\]"),
    (lambda: F.avg_pool2d(mpamp.ones(1, 1, 2, 2, dtype=mpamp.bool), 2), NotImplementedError,
     "\"avg_pool2d\" not implemented for 'Bool'"),
    (lambda: F.avg_pool1d(mpamp.randn(2, 3, 5, 5), 2), RuntimeError,
     r"Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' "
     r"\(while checking arguments for avg_pool1d\)"),
    (lambda: F.avg_pool1d(mpamp.randn(2, 0, 5), 2), RuntimeError,
     r"avg_pool1d: Expected 2D or 3D \(batch mode\) tensor"),
    (lambda: F.avg_pool1d(mpamp.randn(2, 3, 5), (3, 3)), RuntimeError,
     r"avg_pool1d\(\) argument 'kernel_size' should contain one int \(got 2\)"),
    (lambda: F.adaptive_avg_pool2d(X4, (2, 2, 2)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    (lambda: F.adaptive_avg_pool2d(X4, (2,)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    (lambda: F.adaptive_avg_pool2d(X4, -1), RuntimeError,
     r"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
     r"received \{-1, -1\}"),
    (lambda: F.adaptive_avg_pool1d(mpamp.randn(2, 3, 5), -2), RuntimeError,
     r"adaptive_avg_pool1d: elements of output_size must be greater than or equal to 0 but "
     r"received \{-2\}"),
    (lambda: F.adaptive_avg_pool2d(mpamp.randn(5, 5), 2), RuntimeError,
     r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[5, 5\]"),
    (lambda: F.adaptive_avg_pool2d(mpamp.randn(2, 2, 0, 5), 2), RuntimeError,
     r"adaptive_avg_pool2d\(\): Expected input to have non-zero size for non-batch "
     r"dimensions, but input has sizes \[2, 2, 0, 5\] with dimension 2 being empty"),
    (lambda: F.adaptive_avg_pool2d(X4.long(), 2), NotImplementedError,
     "\"adaptive_avg_pool2d\" not implemented for 'Long'"),
    (lambda: F.adaptive_avg_pool1d(mpamp.randn(2, 3, 5, 5), 2), RuntimeError,
     r"Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' "
     r"\(while checking arguments for adaptive_avg_pool1d\)"),
    (lambda: F.adaptive_avg_pool1d(mpamp.randn(2, 3, 5), (2, 3)), RuntimeError,
     r"adaptive_avg_pool1d\(\) argument 'output_size' should contain one int \(got 2\)"),
    (lambda: F.max_pool2d("x", 2), TypeError,
     r"max_pool2d\(\): argument 'input' \(position 1\) must be Tensor, not str"),
    (lambda: mpamp._C._max_pool(X4, 3, 2, 2, 0, 1, False, False), ValueError,
     "_max_pool: nsp must be 1 or 2"),
    (lambda: mpamp._C._avg_pool(X4), TypeError, r"_avg_pool\(\) takes 8 positional arguments"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("op", ["max", "avg", "adaptive"])
def test_second_backward(op):
    x = mpamp.randn(1, 2, 4, 4, requires_grad=True)
    y = {"max": lambda: F.max_pool2d(x, 2), "avg": lambda: F.avg_pool2d(x, 2),
         "adaptive": lambda: F.adaptive_avg_pool2d(x, 2)}[op]().sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.sum().item() == pytest.approx(16.0)       # 8 outputs, twice
    if op == "max":                 # the indices are saved; average pooling saves nothing
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()
