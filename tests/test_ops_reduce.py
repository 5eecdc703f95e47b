"""sum, mean, max, argmax, softmax, log_softmax and layer_norm: forward and backward against
NumPy references for float32/float16/bfloat16. Inputs are rounded to the dtype first and the
references are computed from the rounded values (float64 accumulation, so the reference's own
rounding never decides a test), then rounded to the dtype and compared with torch.testing's
tolerances. Where mpamp (like torch) rounds an intermediate to the dtype - the saved softmax
output used by its backward - the reference rounds it too."""
import threading

import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]


def mk(arr, dtype="float32", requires_grad=False):
    t = mpamp.tensor(np.asarray(arr, dtype=np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def rnd(arr, dtype):
    """arr rounded to dtype, as a float32 array."""
    return to_numpy(mk(arr, dtype))


def check(actual, expected, dtype, rtol=None, atol=None):
    exp = np.asarray(expected, dtype=np.float64).astype(np.float32)
    exp = rnd(exp, dtype) if exp.ndim else rnd(exp.reshape(1), dtype).reshape(())
    r, a = TOL[dtype]
    assert tuple(actual.shape) == exp.shape, (tuple(actual.shape), exp.shape)
    assert actual.dtype == getattr(mpamp, dtype)
    np.testing.assert_allclose(to_numpy(actual), exp, rtol=rtol or r, atol=atol or a)


def grads(y, inputs, g):
    return mpamp.autograd.grad(y, inputs, g)


def data(rng, shape, scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- sum / mean ----

REDUCE_CASES = [
    ((7,), None, False), ((7,), 0, True), ((3, 5), 1, False), ((3, 5), -2, True),
    ((2, 3, 5), (0, 2), False), ((2, 3, 5), (-1, 0), True), ((4, 1, 3), [1], False),
    ((2, 3, 5), (), False), ((), None, False), ((), 0, True), ((1,), -1, False),
    ((13, 11), None, True),
]


def _np_reduce(x, dim, keepdim, mean):
    axis = None if dim is None or dim == () or x.ndim == 0 else dim
    if isinstance(axis, list):
        axis = tuple(axis)
    f = np.mean if mean else np.sum
    return f(x.astype(np.float64), axis=axis, keepdims=keepdim)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mean", [False, True], ids=["sum", "mean"])
@pytest.mark.parametrize("shape,dim,keepdim", REDUCE_CASES)
def test_sum_mean_forward_backward(rng, dtype, mean, shape, dim, keepdim):
    x = mk(data(rng, shape), dtype, requires_grad=True)
    xr = to_numpy(x)
    fn = mpamp.mean if mean else mpamp.sum
    y = fn(x, dim, keepdim) if dim is not None or keepdim else fn(x)
    check(y, _np_reduce(xr, dim, keepdim, mean), dtype)
    # backward: g broadcast back over the reduced dims (divided by the count for mean)
    g = mk(data(rng, tuple(y.shape)), dtype)
    (gx,) = grads(y, [x], g)
    gr = to_numpy(g).astype(np.float64)
    nd = len(shape)
    axes = () if dim in (None, ()) else (dim if isinstance(dim, (tuple, list)) else (dim,))
    axes = tuple(range(nd)) if dim in (None, ()) else tuple(a % max(nd, 1) for a in axes)
    if not keepdim and nd:
        gr = np.expand_dims(gr, tuple(a for a in sorted(axes)))
    expect = np.broadcast_to(gr, shape)
    if mean:
        expect = expect / max(int(np.prod([shape[a] for a in axes if nd])), 1)
    check(gx, expect, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_mean_methods_and_noncontiguous(rng, dtype):
    base = data(rng, (5, 7))
    x = mk(base, dtype).t()                       # transposed view, (7, 5)
    assert not x.is_contiguous()
    xr = to_numpy(x)
    check(x.sum(0), _np_reduce(xr, 0, False, False), dtype)
    check(x.mean(dim=-1, keepdim=True), _np_reduce(xr, -1, True, True), dtype)
    check(x.sum((0, 1)), _np_reduce(xr, None, False, False), dtype)
    check(x[:, ::2].mean(1), _np_reduce(xr[:, ::2], 1, False, True), dtype)


def test_sum_mean_dtypes():
    big = np.array([2**40 + 1, 3, -5, 2**24 + 1], dtype=np.int64)
    s = mpamp.tensor(big).sum()
    assert s.dtype == mpamp.int64 and s.item() == int(big.sum())          # exact, not via fp32
    assert mpamp.tensor([True, True, False]).sum().dtype == mpamp.int64
    assert mpamp.tensor([True, True, False]).sum().item() == 2
    assert mpamp.tensor([[1, 2], [3, 4]]).sum(1).tolist() == [3, 7]
    h = mk([1.0, 2.0, 3.0], "float16")
    assert h.sum(dtype=mpamp.float32).dtype == mpamp.float32
    assert h.mean(dtype=mpamp.float32).item() == 2.0
    assert mpamp.tensor([1, 2]).mean(dtype=mpamp.float32).item() == 1.5
    assert mpamp.tensor([1.7, 2.6]).sum(dtype=mpamp.int64).item() == 3   # cast first, as torch
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input "
                                           r"dtype must be either a floating point or complex "
                                           r"dtype. Got: Long"):
        mpamp.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point"):
        mpamp.tensor([1.0]).mean(dtype=mpamp.int64)


def test_sum_with_dtype_keeps_autograd():
    x = mk([1.0, 2.0, 3.0], "float16", requires_grad=True)
    y = x.sum(dtype=mpamp.float32)
    y.backward()
    assert x.grad.dtype == mpamp.float16 and x.grad.tolist() == [1.0, 1.0, 1.0]
    x = mk([1.0, 2.0, 3.0], "float32", requires_grad=True)
    x.mean(dtype=mpamp.bfloat16).backward()
    assert x.grad.dtype == mpamp.float32
    np.testing.assert_allclose(to_numpy(x.grad), [1 / 3] * 3, rtol=1e-2)


def test_sum_mean_nan_and_empty():
    x = mk([[1.0, np.nan, 2.0], [3.0, 4.0, 5.0]])
    assert to_numpy(x.sum(1)).tolist()[1] == 12.0 and np.isnan(to_numpy(x.sum(1))[0])
    assert np.isnan(x.mean().item())
    e = mpamp.zeros(0, 3)
    assert e.sum().item() == 0.0 and e.sum(0).tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(e.mean().item())
    assert tuple(e.sum(1).shape) == (0,)


def test_reduce_dim_errors():
    x = mpamp.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -2))
    with pytest.raises(TypeError, match="must be int or tuple of ints, not float"):
        x.sum(1.0)
    with pytest.raises(TypeError, match="not str"):
        x.mean(("a",))
    with pytest.raises(TypeError, match="argument 'input' .* must be Tensor, not list"):
        mpamp.sum([1, 2])
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        x.sum(dtype="int8")


# ---- max / argmax ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim,keepdim", [
    ((7,), 0, False), ((3, 5), 1, True), ((3, 5), -2, False), ((2, 3, 5), 1, False),
    ((), 0, False), ((), -1, True), ((1,), 0, True), ((4, 9, 3), -1, True)])
def test_max_dim_forward_backward(rng, dtype, shape, dim, keepdim):
    x = mk(data(rng, shape), dtype, requires_grad=True)
    xr = to_numpy(x)
    v, i = mpamp.max(x, dim, keepdim)
    assert isinstance(v, mpamp.Tensor)
    res = x.max(dim, keepdim=keepdim)
    assert res.indices.dtype == mpamp.int64 and tuple(res) == (res.values, res.indices)
    if xr.ndim == 0:
        ev, ei = xr, np.array(0)
    else:
        ev = xr.max(axis=dim, keepdims=keepdim)
        ei = xr.argmax(axis=dim)
        ei = np.expand_dims(ei, dim) if keepdim else ei
    check(v, ev, dtype)
    assert to_numpy(i).tolist() == ei.tolist()
    assert to_numpy(mpamp.argmax(x, dim, keepdim)).tolist() == ei.tolist()
    g = mk(data(rng, tuple(v.shape)), dtype)
    (gx,) = grads(v, [x], g)
    expect = np.zeros(xr.shape, np.float32)
    if xr.ndim == 0:
        expect = to_numpy(g)
    else:
        gi = to_numpy(g) if keepdim else np.expand_dims(to_numpy(g), dim)
        np.put_along_axis(expect, np.expand_dims(ei, dim) if not keepdim else ei, gi, axis=dim)
    check(gx, expect, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_all_and_argmax(rng, dtype):
    arr = data(rng, (6, 7))
    x = mk(arr, dtype).t()                                 # non-contiguous
    xr = to_numpy(x)
    check(x.max(), xr.max(), dtype)
    assert x.argmax().item() == int(xr.argmax())
    assert tuple(x.argmax(keepdim=True).shape) == (1, 1)
    assert to_numpy(x.argmax(0)).tolist() == xr.argmax(0).tolist()
    assert to_numpy(mpamp.argmax(x, dim=-1, keepdim=True)).tolist() == \
        xr.argmax(-1)[:, None].tolist()


def test_max_ties_nan_and_integers():
    x = mpamp.tensor([[1.0, 5.0, 5.0], [2.0, 2.0, 0.0]])
    assert x.max(1).indices.tolist() == [1, 0]                    # first occurrence
    n = mpamp.tensor([1.0, np.nan, 3.0, np.nan])
    v, i = n.max(0)
    assert np.isnan(v.item()) and i.item() == 1                   # the first NaN wins
    assert np.isnan(n.max().item()) and n.argmax().item() == 1
    big = mpamp.tensor([2**53 - 1, 2**53 - 2, -3])
    assert big.max().item() == 2**53 - 1 and big.argmax().item() == 0
    assert big.max(0).values.dtype == mpamp.int64
    assert mpamp.tensor([False, True]).max().item() is True
    assert mpamp.tensor([[3, 9], [7, 1]]).max(0).values.tolist() == [7, 9]


def test_max_all_backward_distributes_ties_and_nan():
    x = mk([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]               # torch: evenly among ties
    x = mk([1.0, np.nan, 3.0, np.nan], requires_grad=True)
    x.max().backward(mk(4.0))
    assert x.grad.tolist() == [0.0, 2.0, 0.0, 2.0]
    x = mk([[1.0, 7.0], [7.0, 2.0]], "bfloat16", requires_grad=True)
    x.max().backward()
    assert x.grad.dtype == mpamp.bfloat16 and x.grad.tolist() == [[0.0, 0.5], [0.5, 0.0]]


def test_max_argmax_errors():
    e = mpamp.zeros(0, 3)
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified "
                                           r"for input.numel\(\) == 0"):
        e.max()
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero "
                                         r"size"):
        e.max(0)
    assert tuple(e.max(1).values.shape) == (0,)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be "
                                         r"specified for input.numel\(\) == 0"):
        e.argmax()
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim 0 to have"):
        e.argmax(0)
    x = mpamp.zeros(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.max(2)
    with pytest.raises(TypeError, match="must be int"):
        x.max(1.5)
    # max(input, other) is the elementwise maximum (tests/test_ops_minmax.py covers it)
    assert mpamp.max(x, mpamp.ones(3)).tolist() == [[1.0] * 3] * 2
    with pytest.raises(TypeError, match=r"max\(input, other\) takes no dim or keepdim"):
        mpamp.max(x, x, True)
    with pytest.raises(TypeError, match="keepdim"):
        x.max(keepdim=True)


# ---- softmax / log_softmax ----

def np_softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_softmax_grad(y, g, axis, log):
    """Backward at the (rounded) output y, as mpamp and torch compute it."""
    y, g = y.astype(np.float64), g.astype(np.float64)
    if log:
        return g - np.exp(y) * g.sum(axis=axis, keepdims=True)
    return y * (g - (g * y).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), -2), ((2, 3, 5), 1),
                                       ((2, 9, 3), -1), ((), 0), ((1,), -1), ((4, 1), 1)])
def test_softmax_forward_backward(rng, dtype, log, shape, dim):
    x = mk(data(rng, shape, 3.0), dtype, requires_grad=True)
    xr = to_numpy(x)
    y = (mpamp.log_softmax if log else mpamp.softmax)(x, dim)
    axis = dim if xr.ndim else None
    ref = (np_log_softmax if log else np_softmax)(xr, axis)
    check(y, ref, dtype)
    g = mk(data(rng, shape), dtype)
    (gx,) = grads(y, [x], g)
    check(gx, np_softmax_grad(to_numpy(y), to_numpy(g), axis, log), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_methods_noncontiguous_and_stable(rng, dtype):
    x = mk(data(rng, (6, 5)) * 40.0, dtype).t()            # large logits, (5, 6) view
    xr = to_numpy(x)
    check(x.softmax(0), np_softmax(xr, 0), dtype)
    check(x.log_softmax(1), np_log_softmax(xr, 1), dtype)
    y = x.softmax(-1)
    assert np.isfinite(to_numpy(y)).all()
    big = mk([[1000.0, 0.0, -1000.0]], dtype)
    assert to_numpy(big.log_softmax(1))[0, 0] == 0.0 and to_numpy(big.softmax(1))[0, 0] == 1.0


def test_softmax_nan_dtype_and_errors():
    x = mpamp.tensor([[np.nan, 1.0, 2.0], [0.0, 1.0, 2.0]])
    y = x.softmax(1)
    assert np.isnan(to_numpy(y)[0]).all() and np.isfinite(to_numpy(y)[1]).all()
    assert np.isnan(to_numpy(mpamp.log_softmax(x, 1))[0]).all()
    h = mk([1.0, 2.0, 3.0], "float16")
    assert mpamp.softmax(h, 0, dtype=mpamp.float32).dtype == mpamp.float32
    assert mpamp.softmax(mpamp.tensor([1, 2]), 0, dtype=mpamp.float32).dtype == mpamp.float32
    hr = mk([1.0, 2.0, 3.0], "float16", requires_grad=True)
    mpamp.log_softmax(hr, 0, dtype=mpamp.float32).sum().backward()
    assert hr.grad.dtype == mpamp.float16
    with pytest.raises(RuntimeError, match="\"softmax_lastdim_kernel_impl\" not implemented "
                                           "for 'Long'"):
        mpamp.softmax(mpamp.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        mpamp.zeros(2, 3).softmax(2)
    with pytest.raises(TypeError):
        mpamp.softmax(mpamp.zeros(3), None)
    e = mpamp.zeros(0, 3)
    assert tuple(e.softmax(1).shape) == (0, 3) and tuple(e.log_softmax(0).shape) == (0, 3)


# ---- layer_norm ----

def np_layer_norm(x, n, w, b, eps):
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - n, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mu) * rstd
    y = xhat * (1.0 if w is None else w) + (0.0 if b is None else b)
    return y, xhat, rstd, axes


def np_layer_norm_grad(x, n, w, g, eps):
    _, xhat, rstd, axes = np_layer_norm(x, n, None, None, eps)
    g = g.astype(np.float64)
    dy = g * (1.0 if w is None else w)
    m = int(np.prod([x.shape[a] for a in axes]))
    dx = rstd * (dy - dy.sum(axis=axes, keepdims=True) / m -
                 xhat * (dy * xhat).sum(axis=axes, keepdims=True) / m)
    lead = tuple(range(x.ndim - n))
    return dx, (g * xhat).sum(axis=lead), g.sum(axis=lead)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,n,affine", [((3, 7), 1, True), ((2, 3, 5), 2, True),
                                            ((4, 13), 1, False), ((1, 1), 1, True),
                                            ((5,), 1, True), ((2, 3, 4), 3, False)])
def test_layer_norm_forward_backward(rng, dtype, shape, n, affine):
    x = mk(data(rng, shape) + 1.5, dtype, requires_grad=True)
    ns = shape[len(shape) - n:]
    w = mk(data(rng, ns, 1.0), dtype, requires_grad=True) if affine else None
    b = mk(data(rng, ns, 1.0), dtype, requires_grad=True) if affine else None
    y = mpamp.layer_norm(x, ns, w, b, eps=1e-5)
    xr = to_numpy(x)
    wr = to_numpy(w) if affine else None
    br = to_numpy(b) if affine else None
    check(y, np_layer_norm(xr, n, wr, br, 1e-5)[0], dtype)
    g = mk(data(rng, shape), dtype)
    ins = [x, w, b] if affine else [x]
    got = grads(y, ins, g)
    dx, dw, db = np_layer_norm_grad(xr, n, wr, to_numpy(g), 1e-5)
    # dx sums rows of products and cancels (its size is ~1e-2 of its terms): at half
    # precision the rounding of dy = g * w in the kernel's fp32 reaches a few ulps of dx
    loose = {"float32": None, "float16": 5e-3, "bfloat16": 4e-2}[dtype]
    check(got[0], dx, dtype, rtol=loose, atol=loose and loose / 10)
    if affine:
        check(got[1], dw, dtype)
        check(got[2], db, dtype)


def test_layer_norm_noncontiguous_mixed_params_and_nan(rng):
    x = mk(data(rng, (6, 4)), "bfloat16").t()             # (4, 6) view
    w = mk(data(rng, (6,)), "float32")
    y = mpamp.layer_norm(x, (6,), w, None)
    assert y.dtype == mpamp.bfloat16
    check(y, np_layer_norm(to_numpy(x), 1, to_numpy(w), None, 1e-5)[0], "bfloat16")
    y = mpamp.layer_norm(mk(data(rng, (3, 5))), 5, eps=0.5)           # an int shape, eps
    z = mpamp.tensor([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]])
    out = to_numpy(mpamp.layer_norm(z, [3]))
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()
    const = to_numpy(mpamp.layer_norm(mpamp.ones(2, 4), (4,)))
    assert (const == 0).all()                                # var 0: eps keeps it finite


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("needs", ["all", "params only"])
def test_layer_norm_parameter_gradients_on_threads(rng, dtype, needs):
    """Wide rows (past the kernel's 256-column segments) and enough of them that the weight
    and bias sums split across threads by columns: the float64 reference's values, the same
    bits on 1 and 2 threads, and the input gradient only when the input asks for one."""
    shape, m = (3, 32, 600), 600
    x = mk(data(rng, shape) + 0.5, dtype, requires_grad=needs == "all")
    w = mk(data(rng, (m,), 1.0), dtype, requires_grad=True)
    b = mk(data(rng, (m,), 1.0), dtype, requires_grad=True)
    g = mk(data(rng, shape), dtype)
    runs, before = [], mpamp.get_num_threads()
    try:
        for threads in (1, 2):
            mpamp.set_num_threads(threads)
            for t in (x, w, b):
                t.grad = None
            mpamp.layer_norm(x, (m,), w, b).backward(g)
            runs.append([to_numpy(t.grad) for t in (w, b)] +
                        ([to_numpy(x.grad)] if needs == "all" else []))
    finally:
        mpamp.set_num_threads(before)
    for a, c in zip(*runs):
        np.testing.assert_array_equal(a, c)
    assert (x.grad is None) == (needs != "all")
    dx, dw, db = np_layer_norm_grad(to_numpy(x), 1, to_numpy(w), to_numpy(g), 1e-5)
    check(w.grad, dw, dtype)
    check(b.grad, db, dtype)
    if needs == "all":
        loose = {"float32": None, "float16": 5e-3, "bfloat16": 4e-2}[dtype]
        check(x.grad, dx, dtype, rtol=loose, atol=loose and loose / 10)


def test_layer_norm_errors():
    x = mpamp.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                                           r"shape \[\*, 5\], but got input of size\[3, 4\]"):
        mpamp.layer_norm(x, (5,))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3, 4, 5\]"):
        mpamp.layer_norm(x, (3, 4, 5))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as "
                                           r"normalized_shape, but got weight of shape \[5\] "
                                           r"and normalized_shape = \[4\]"):
        mpamp.layer_norm(x, (4,), mpamp.ones(5))
    with pytest.raises(RuntimeError, match=r"bias of shape \[3\]"):
        mpamp.layer_norm(x, (4,), None, mpamp.ones(3))
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        mpamp.layer_norm(x, ())
    with pytest.raises(RuntimeError, match="\"LayerNormKernelImpl\" not implemented for 'Long'"):
        mpamp.layer_norm(mpamp.tensor([[1, 2]]), (2,))
    with pytest.raises(TypeError, match="must be Tensor or None"):
        mpamp.layer_norm(x, (4,), [1.0] * 4)


# ---- large inputs (the GIL is released) and threads ----

@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 7), (2000, 33), (1024, 192), (300, 300),
                                       (3, 1000), (256, 10), (3, 5000)])
def test_sums_over_rows_keep_the_serial_order_on_threads(rng, rows, cols):
    """Column sums (the bias gradient) run on the thread pool, a range of columns per thread:
    every column still adds its rows in order in double, so the result is numpy's float64
    sum over axis 0 (sequential over the rows) rounded once, bit for bit, on 1 and 2 threads
    - for contiguous rows and for rows of a wider matrix. Sums split along other kept dims
    (row sums, fp16 column sums, a 3-D sum over two dims) give the same bits on 1 and 2
    threads."""
    x = (rng.standard_normal((rows, cols + 5)) *
         10.0 ** rng.uniform(-3, 3, (rows, cols + 5))).astype(np.float32)
    ref = x[:, :cols].astype(np.float64).sum(0).astype(np.float32)
    runs, before = [], mpamp.get_num_threads()
    try:
        for threads in (1, 2):
            mpamp.set_num_threads(threads)
            t = mpamp.tensor(x)
            narrow = t[:, :cols]
            np.testing.assert_array_equal(to_numpy(narrow.contiguous().sum(0)), ref)
            np.testing.assert_array_equal(to_numpy(narrow.sum(0)), ref)
            runs.append([to_numpy(narrow.sum(1)), to_numpy(narrow.half().sum(0)),
                         to_numpy(t.view(rows, 1, cols + 5).expand(rows, 3, cols + 5)
                                  .sum((0, 1)))])
    finally:
        mpamp.set_num_threads(before)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(runs[0][0], x[:, :cols].astype(np.float64).sum(1), rtol=1e-5,
                               atol=1e-5 * np.abs(x).sum(1).max())
    # fp16/bf16 column sums (the bias gradient of an autocast linear) widen blocks of rows
    # for the column kernel: still the float64 sum in row order, rounded once
    small = (x / 1e3).astype(np.float32)
    for dt in ("float16", "bfloat16"):
        t = mpamp.tensor(small).to(getattr(mpamp, dt))
        vals = to_numpy(t.float()).astype(np.float64)
        for got, src in ((t[:, :cols].contiguous().sum(0), vals[:, :cols]),
                         (t[:, :cols].sum(0), vals[:, :cols]), (t.sum(0), vals)):
            want = mpamp.tensor(src.sum(0).astype(np.float32)).to(getattr(mpamp, dt))
            np.testing.assert_array_equal(to_numpy(got.float()), to_numpy(want.float()))


def test_large_inputs_from_threads(rng):
    arr = data(rng, (300, 257))                  # > MP_NOGIL_NUMEL elements
    x = mk(arr)
    results = {}

    def work(k):
        # max runs on the host only so far: on a device suite run it reads a host copy
        results[k] = (x.sum(1), x.softmax(1), mpamp.layer_norm(x, (257,)), x.cpu().max(0))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        s, sm, ln, mx = results[k]
        check(s, arr.astype(np.float64).sum(1), "float32")
        check(sm, np_softmax(arr, 1), "float32")
        check(ln, np_layer_norm(arr, 1, None, None, 1e-5)[0], "float32", rtol=1e-5)
        assert to_numpy(mx.indices).tolist() == arr.argmax(0).tolist()


def test_long_fp16_sum_accumulates_in_higher_precision():
    arr = np.full(20000, 0.1, dtype=np.float32)
    s = mk(arr, "float16").sum()
    # a float16 accumulator would stall at 256; the double accumulator gives the exact sum of
    # the rounded values (0.1 in fp16 is 0.0999755859375), rounded once
    check(s, 20000 * 0.0999755859375, "float16")


# ---- cross-checks against torch ----

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    arr = data(rng, (4, 6, 5))
    for dtype, tdt in (("float32", torch.float32), ("bfloat16", torch.bfloat16),
                       ("float16", torch.float16)):
        x = mk(arr, dtype, requires_grad=True)
        tx = torch.tensor(to_numpy(x)).to(tdt).requires_grad_()
        cases = [
            (lambda a: a.sum((0, 2)), lambda a: a.sum((0, 2))),
            (lambda a: a.mean(-1, keepdim=True), lambda a: a.mean(-1, keepdim=True)),
            (lambda a: a.max(1).values, lambda a: a.max(1).values),
            (lambda a: a.max(), lambda a: a.max()),
            (lambda a: a.softmax(1), lambda a: a.softmax(1)),
            (lambda a: a.log_softmax(0), lambda a: a.log_softmax(0)),
            (lambda a: mpamp.layer_norm(a, (6, 5)),
             lambda a: torch.nn.functional.layer_norm(a, (6, 5))),
        ]
        for f, tf in cases:
            y, ty = f(x), tf(tx)
            g = data(rng, tuple(y.shape))
            (gx,) = grads(y, [x], mk(g, dtype))
            (tgx,) = torch.autograd.grad(ty, [tx], torch.tensor(g).to(tdt))
            rtol, atol = TOL[dtype]
            np.testing.assert_allclose(to_numpy(y), ty.detach().float().cpu().numpy(),
                                       rtol=rtol, atol=atol)
            # torch rounds some intermediates differently at half precision (e.g. the
            # normalised values in layer_norm backward): allow 4 ulps there
            scale = 1 if dtype == "float32" else 4
            np.testing.assert_allclose(to_numpy(gx), tgx.float().cpu().numpy(),
                                       rtol=rtol * scale, atol=atol * scale * 100)
        assert x.argmax().item() == tx.argmax().item()


# ---- no leaks, on success and on every error path ----

def test_no_leaked_storage_across_ops_and_errors(rng):
    import gc
    stats = mpamp.backends.cpu.allocator_stats

    def run():
        x = mk(data(rng, (4, 5)), "bfloat16", requires_grad=True)
        w = mk(data(rng, (5,)), requires_grad=True)
        t = mpamp.tensor(np.array([0, 4, 1, -100]))
        outs = [x.sum(0), x.mean(), x.max(1).values, x.max(), x.softmax(0), x.log_softmax(1),
                mpamp.layer_norm(x, (5,), w, w), mpamp.cross_entropy(x, t, label_smoothing=0.1),
                mpamp.nll_loss(x, t, reduction="none"), mpamp.mse_loss(x, x * 2),
                mpamp.l1_loss(x, w.expand(4, 5)),
                mpamp.binary_cross_entropy_with_logits(x, x.sigmoid()),
                mpamp.cross_entropy(x, x.softmax(1))]
        total = outs[0].sum()
        for o in outs[1:]:
            total = total + o.float().sum()
        total.backward()
        x.argmax(1)
        for bad in (lambda: mpamp.cross_entropy(x, mpamp.tensor([0, 9, 1, 2])),
                    lambda: mpamp.nll_loss(x, mpamp.tensor([0, 1])),
                    lambda: mpamp.layer_norm(x, (4,)), lambda: x.sum((0, 0)),
                    lambda: mpamp.zeros(0, 2).max(0), lambda: x.softmax(3),
                    lambda: mpamp.binary_cross_entropy_with_logits(x, x, weight=mpamp.ones(3))):
            with pytest.raises((IndexError, ValueError, RuntimeError)):
                bad()

    run()
    gc.collect()
    base = stats()["in_use_bytes"]
    for _ in range(20):
        run()
    gc.collect()
    assert stats()["in_use_bytes"] == base
