"""min/max (all, along a dim, two-tensor), argmin, amax/amin, aminmax and the elementwise
maximum/minimum/fmax/fmin: forward and backward against NumPy references in float32/float16/
bfloat16/int64/bool, non-contiguous inputs, negative dims, keepdim, empty tensors, NaN, ties,
torch's errors; and against torch where it is installed."""
import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

FLOATS = ["float32", "float16", "bfloat16"]
NAN = float("nan")


def mk(arr, dtype="float32", requires_grad=False):
    a = np.asarray(arr)
    if dtype in ("int64", "bool"):
        t = mpamp.tensor(a.astype(np.int64 if dtype == "int64" else bool))
    else:
        t = mpamp.tensor(a.astype(np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def data(rng, shape, dtype="float32"):
    if dtype == "int64":
        return rng.integers(-5, 6, size=shape)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(shape).astype(np.float32) * 3


def grad_of(y, x, g):
    (gx,) = mpamp.autograd.grad(y, [x], g)
    return to_numpy(gx)


def close(actual, expected, dtype="float32"):
    rtol, atol = TOL.get(dtype, (0, 0))
    got = actual if isinstance(actual, np.ndarray) else to_numpy(actual)
    np.testing.assert_allclose(got, np.asarray(expected, np.float32), rtol=rtol, atol=atol)


# ---- min / argmin along a dim and over everything ----

@pytest.mark.parametrize("dtype", FLOATS + ["int64", "bool"])
@pytest.mark.parametrize("shape,dim,keepdim", [
    ((7,), 0, False), ((3, 5), 1, True), ((3, 5), -2, False), ((2, 3, 5), 1, False),
    ((), 0, False), ((), -1, True), ((4, 9, 3), -1, True)])
def test_min_dim(rng, dtype, shape, dim, keepdim):
    x = mk(data(rng, shape, dtype), dtype, requires_grad=dtype in FLOATS)
    xr = to_numpy(x)
    v, i = mpamp.min(x, dim, keepdim)
    res = x.min(dim=dim, keepdim=keepdim)
    assert isinstance(res, mpamp.return_types.min) and res.values.dtype == x.dtype
    assert res.indices.dtype == mpamp.int64
    if xr.ndim == 0:
        ev, ei = xr, np.array(0)
    else:
        ev, ei = xr.min(axis=dim, keepdims=keepdim), xr.argmin(axis=dim)
        ei = np.expand_dims(ei, dim) if keepdim else ei
    assert to_numpy(v).tolist() == ev.tolist() and to_numpy(i).tolist() == ei.tolist()
    assert to_numpy(mpamp.argmin(x, dim, keepdim)).tolist() == ei.tolist()
    assert to_numpy(x.argmin(dim, keepdim=keepdim)).tolist() == ei.tolist()
    if dtype in FLOATS:
        g = mk(data(rng, tuple(v.shape)), dtype)
        expect = np.zeros(xr.shape, np.float32)
        if xr.ndim == 0:
            expect = to_numpy(g)
        else:
            idx = ei if keepdim else np.expand_dims(ei, dim)
            gi = to_numpy(g) if keepdim else np.expand_dims(to_numpy(g), dim)
            np.put_along_axis(expect, idx, gi, axis=dim)
        close(grad_of(v, x, g), expect, dtype)
        assert v.grad_fn.name() == "MinBackward0"


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "bool"])
def test_min_all_argmin_noncontiguous(rng, dtype):
    x = mk(data(rng, (6, 7), dtype), dtype).t()[::2]            # transposed and stepped
    xr = to_numpy(x)
    assert to_numpy(x.min()).tolist() == xr.min().tolist()
    assert to_numpy(mpamp.min(x)).tolist() == xr.min().tolist()
    assert x.argmin().item() == int(xr.argmin())
    assert tuple(x.argmin(keepdim=True).shape) == (1, 1)
    assert to_numpy(x.argmin(0)).tolist() == xr.argmin(0).tolist()
    assert to_numpy(x.min(-1).values).tolist() == xr.min(-1).tolist()


def test_min_ties_nan_integers_and_all_backward():
    x = mpamp.tensor([[5.0, 1.0, 1.0], [0.0, 2.0, 0.0]])
    assert x.min(1).indices.tolist() == [1, 0]                    # first occurrence
    n = mpamp.tensor([1.0, NAN, -3.0, NAN])
    v, i = n.min(0)
    assert np.isnan(v.item()) and i.item() == 1                   # the first NaN wins
    assert np.isnan(n.min().item()) and n.argmin().item() == 1
    big = mpamp.tensor([-2**62 + 1, -2**62, 3])
    assert big.min().item() == -2**62 and big.argmin().item() == 1
    assert mpamp.tensor([True, False]).min().item() is False
    w = mk([1.0, 0.5, 0.5, 2.0], requires_grad=True)
    w.min().backward()
    assert w.grad.tolist() == [0.0, 0.5, 0.5, 0.0]               # shared evenly among ties
    assert w.min().grad_fn.name() == "MinBackward1"
    w = mk([1.0, NAN, 3.0, NAN], "bfloat16", requires_grad=True)
    w.min().backward(mk(4.0, "bfloat16"))
    assert w.grad.dtype == mpamp.bfloat16 and w.grad.tolist() == [0.0, 2.0, 0.0, 2.0]


def test_min_argmin_errors():
    e = mpamp.zeros(0, 3)
    with pytest.raises(RuntimeError, match=r"min\(\): Expected reduction dim to be specified "
                                           r"for input.numel\(\) == 0. Specify the reduction "
                                           r"dim with the 'dim' argument."):
        e.min()
    with pytest.raises(IndexError, match=r"min\(\): Expected reduction dim 0 to have non-zero "
                                         r"size."):
        e.min(0)
    assert tuple(e.min(1).values.shape) == (0,)
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim to be specified "
                                         r"for input.numel\(\) == 0."):
        e.argmin()
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have"):
        e.argmin(0)
    x = mpamp.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        x.min(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.argmin(-3)
    with pytest.raises(TypeError, match="must be int, not float"):
        x.min(1.5)
    with pytest.raises(TypeError, match="must be int, not float"):
        mpamp.argmin(x, 1.5)
    with pytest.raises(TypeError, match="keepdim=True needs a dim"):
        x.min(keepdim=True)
    with pytest.raises(TypeError, match=r"min\(input, other\) takes no dim or keepdim"):
        mpamp.min(x, 0, other=x)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor, not "
                                        r"list"):
        mpamp.min([1.0])
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor"):
        mpamp.argmin([1.0])


# ---- the two-tensor forms ----

def _np_extreme(which, a, b):
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    return {"maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax,
            "fmin": np.fmin}[which](a64, b64)


def _np_extreme_grads(which, a, b, g):
    a, b, g = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64), g)
    if which in ("maximum", "minimum"):
        a_lose = a < b if which == "maximum" else a > b
        b_lose = b < a if which == "maximum" else b > a
        ga = np.where(a == b, g / 2, np.where(a_lose, 0, g))
        gb = np.where(a == b, g / 2, np.where(b_lose, 0, g))
    else:
        a_wins = ((a >= b) if which == "fmax" else (a <= b)) | np.isnan(b)
        ga, gb = np.where(a_wins, g, 0), np.where(a_wins, 0, g)
    return ga, gb


@pytest.mark.parametrize("which", ["maximum", "minimum", "fmax", "fmin"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_elementwise_extremes_forward_backward(rng, which, dtype):
    av = data(rng, (4, 5))
    av[0, :3] = NAN
    bv = data(rng, (5,))
    bv[1] = NAN
    bv[3] = av[2, 3]                                               # a tie
    av[1, 4] = bv[4]
    a = mk(av, dtype, requires_grad=True)
    b = mk(bv, dtype, requires_grad=True)
    ar, br = to_numpy(a), to_numpy(b)
    y = getattr(mpamp, which)(a, b)
    assert y.dtype == a.dtype and y.grad_fn.name() == which.capitalize() + "Backward0"
    np.testing.assert_array_equal(to_numpy(y), _np_extreme(which, ar, br).astype(np.float32))
    np.testing.assert_array_equal(to_numpy(getattr(a, which)(b)), to_numpy(y))
    g = mk(data(rng, (4, 5)), dtype)
    ga, gb = mpamp.autograd.grad(y, [a, b], g)
    ea, eb = _np_extreme_grads(which, ar, br, to_numpy(g).astype(np.float64))
    close(ga, ea, dtype)
    close(gb, eb.sum(0), dtype)                                    # b was broadcast


def test_max_min_two_tensor_forms_and_promotion():
    a = mpamp.tensor([[1.0, 5.0], [3.0, -1.0]])
    b = mpamp.tensor([2.0, 2.0])
    assert mpamp.max(a, b).tolist() == [[2.0, 5.0], [3.0, 2.0]]
    assert mpamp.max(a, other=b).tolist() == a.max(b).tolist() == a.max(other=b).tolist()
    assert mpamp.min(a, b).tolist() == [[1.0, 2.0], [2.0, -1.0]] == a.min(b).tolist()
    assert mpamp.max(a, b).grad_fn is None
    ta = mk([1.0, 2.0], requires_grad=True)
    assert mpamp.max(ta, b).grad_fn.name() == "MaximumBackward0"
    i = mpamp.tensor([3, 1, 2])
    r = mpamp.maximum(i, mpamp.tensor([1.5]))
    assert r.dtype == mpamp.float32 and r.tolist() == [3.0, 1.5, 2.0]
    h = mpamp.maximum(mk([1.0], "float16"), mk([2.0], "bfloat16"))
    assert h.dtype == mpamp.float32
    big = mpamp.tensor([2**62 + 1, -5])
    assert mpamp.maximum(big, mpamp.tensor([2**62, 0])).tolist() == [2**62 + 1, 0]
    assert mpamp.minimum(big, mpamp.tensor(2**62)).tolist() == [2**62, -5]
    bt, bf = mpamp.tensor([True, False]), mpamp.tensor([False, False])
    assert mpamp.maximum(bt, bf).dtype == mpamp.bool
    assert mpamp.maximum(bt, bf).tolist() == [True, False]
    assert mpamp.fmin(bt, mpamp.tensor([True, True])).tolist() == [True, False]
    assert mpamp.maximum(bt, mpamp.tensor([0, 7])).tolist() == [1, 7]
    nc = mpamp.arange(12.0).reshape(3, 4).t()                      # non-contiguous
    assert mpamp.maximum(nc, mpamp.full((4, 1), 5.0)).tolist() == \
        np.maximum(np.arange(12.0).reshape(3, 4).T, 5.0).tolist()
    z, z2 = mpamp.tensor([-0.0, 0.0]), mpamp.tensor([0.0, -0.0])
    for name in ("maximum", "minimum", "fmax", "fmin"):    # equal: the first operand, as torch
        r = getattr(mpamp, name)(z, z2)
        assert np.signbit(to_numpy(r)).tolist() == [True, False]
    e = mpamp.maximum(mpamp.zeros(0, 3), mpamp.zeros(3))
    assert tuple(e.shape) == (0, 3)


def test_elementwise_extremes_errors():
    x = mpamp.zeros(2, 3)
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not float"):
        mpamp.maximum(x, 1.0)
    with pytest.raises(TypeError, match=r"fmax\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not int"):
        mpamp.fmax(x, 2)
    with pytest.raises(TypeError, match=r"minimum\(\): argument 'input' \(position 1\)"):
        mpamp.minimum(1.0, x)
    with pytest.raises(RuntimeError, match=r"fmin: The size of tensor a \(3\) must match the "
                                           r"size of tensor b \(2\) at non-singleton "
                                           r"dimension 1"):
        mpamp.fmin(x, mpamp.zeros(2))
    ids = mpamp._C.op_ids
    for bad in (ids["add"], ids["eq"], -1, 10**6):        # not an extremum op id
        with pytest.raises(ValueError, match=r"_maximum: .* is not an op id of this function"):
            mpamp._C._maximum(bad, x, x)


# ---- amax / amin / aminmax ----

AMAX_CASES = [((7,), (), False), ((3, 5), 1, True), ((3, 5), -2, False),
              ((2, 3, 5), (0, 2), False), ((2, 3, 5), (-1, 0), True), ((4, 1, 3), [1], False),
              ((), (), False), ((), 0, True), ((2, 3, 4), None, True)]


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "bool"])
@pytest.mark.parametrize("shape,dim,keepdim", AMAX_CASES)
@pytest.mark.parametrize("is_min", [False, True], ids=["amax", "amin"])
def test_amax_amin(rng, dtype, shape, dim, keepdim, is_min):
    arr = data(rng, shape, dtype)
    if dtype in FLOATS and arr.size > 4:
        arr.flat[3] = arr.flat[1]                                  # ties
    x = mk(arr, dtype, requires_grad=dtype in FLOATS)
    xr = to_numpy(x)
    fn = mpamp.amin if is_min else mpamp.amax
    y = fn(x) if dim == () and not keepdim else fn(x, dim, keepdim)
    axis = None if dim in ((), None) else (tuple(dim) if isinstance(dim, list) else dim)
    if xr.ndim == 0:
        axis = None
    ref = (np.min if is_min else np.max)(xr, axis=axis, keepdims=keepdim and xr.ndim > 0)
    assert y.dtype == x.dtype and to_numpy(y).tolist() == ref.tolist()
    meth = getattr(x, "amin" if is_min else "amax")
    assert to_numpy(meth(dim=() if dim is None else dim, keepdim=keepdim)).tolist() == \
        ref.tolist()
    if dtype in FLOATS:
        g = mk(data(rng, tuple(y.shape)), dtype)
        refk = (np.min if is_min else np.max)(xr, axis=axis, keepdims=True) if xr.ndim else ref
        mask = (xr == refk).astype(np.float64)
        count = mask.sum(axis=axis, keepdims=True) if xr.ndim else mask
        gk = to_numpy(g).reshape(refk.shape).astype(np.float64)
        close(grad_of(y, x, g), gk / count * mask, dtype)
        assert y.grad_fn.name() == ("AminBackward0" if is_min else "AmaxBackward0")


def test_amax_nan_and_noncontiguous():
    x = mk([[1.0, 3.0, 3.0], [NAN, 1.0, NAN]], requires_grad=True)
    y = x.amax(1)
    assert y.tolist()[0] == 3.0 and np.isnan(y.tolist()[1])
    y.sum().backward()
    gr = x.grad.tolist()
    assert gr[0] == [0.0, 0.5, 0.5] and all(np.isnan(v) for v in gr[1])   # torch: NaN
    base = np.arange(24.0).reshape(2, 3, 4)
    t = mpamp.tensor(base).permute(2, 0, 1)[::2]                    # (2, 2, 3), strided
    ref = base.transpose(2, 0, 1)[::2]
    assert mpamp.amax(t, (0, 2)).tolist() == ref.max(axis=(0, 2)).tolist()
    assert mpamp.amin(t, -1, True).tolist() == ref.min(axis=-1, keepdims=True).tolist()
    big = mpamp.tensor([[2**62 + 3, 2**62 + 1]])
    assert big.amax().item() == 2**62 + 3 and big.amin(1).tolist() == [2**62 + 1]


def test_aminmax():
    x = mk([[4.0, -1.0, 2.0], [0.0, 7.0, 7.0]])
    r = mpamp.aminmax(x)
    assert isinstance(r, mpamp.return_types.aminmax)
    assert (r.min.item(), r.max.item()) == (-1.0, 7.0)
    r = x.aminmax(dim=1, keepdim=True)
    assert r.min.tolist() == [[-1.0], [0.0]] and r.max.tolist() == [[4.0], [7.0]]
    r = mpamp.aminmax(mpamp.tensor([3, 9, -2]), dim=0)
    assert (r.min.item(), r.max.item()) == (-2, 9)
    msg = (r"aminmax\(\): cannot compute aminmax over an empty dimension as the operation "
           r"has no identity.")
    with pytest.raises(RuntimeError, match=msg):
        mpamp.aminmax(mpamp.zeros(0, 3))
    with pytest.raises(RuntimeError, match=msg):
        mpamp.aminmax(mpamp.zeros(2, 0), dim=-1)
    assert tuple(mpamp.aminmax(mpamp.zeros(0, 3), dim=1).max.shape) == (0,)
    with pytest.raises(IndexError, match="Dimension out of range"):
        mpamp.aminmax(x, dim=5)
    with pytest.raises(TypeError):
        mpamp.aminmax(x, 1)                                        # dim is keyword-only


def test_amax_errors():
    e = mpamp.zeros(2, 0)
    with pytest.raises(RuntimeError, match=r"amax\(\): Expected reduction dim to be specified "
                                           r"for input.numel\(\) == 0. Specify the reduction "
                                           r"dim with the 'dim' argument."):
        e.amax()
    with pytest.raises(RuntimeError, match=r"amin\(\): Expected reduction dim to be specified"):
        mpamp.amin(e, ())
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 1 to have non-zero "
                                         r"size."):
        e.amax((0, 1))
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 1 to have"):
        e.amin(1)
    assert tuple(e.amax(0).shape) == (0,)
    x = mpamp.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        x.amax(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.amax((0, -2))
    with pytest.raises(TypeError, match=r"amax\(\): argument 'dim' must be int or tuple of "
                                        r"ints, not float"):
        x.amax(1.0)
    with pytest.raises(TypeError, match=r"amin\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor"):
        mpamp.amin("x")


def test_backward_twice_without_retain_graph_raises():
    for op in (lambda t: t.amax(0), lambda t: mpamp.maximum(t, t * 2)):
        x = mk([1.0, 2.0], requires_grad=True)
        y = op(x).sum()
        y.backward(retain_graph=False)
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                               "time"):
            y.backward()


# ---- against torch ----

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    arr = rng.standard_normal((5, 6)).astype(np.float32)
    arr[1, 2] = arr[1, 4]
    arr[3, :] = 0.5
    arr[4, 3] = NAN
    for dtype, tdt in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        x = mk(arr, dtype, requires_grad=True)
        tx = torch.tensor(arr).to(tdt).requires_grad_()
        for dim in (0, 1, -1):
            for name in ("max", "min"):
                v, i = getattr(x, name)(dim)
                tv, ti = getattr(tx, name)(dim)
                np.testing.assert_array_equal(to_numpy(v), tv.float().detach().cpu().numpy())
                assert to_numpy(i).tolist() == ti.tolist()
            assert to_numpy(x.argmin(dim)).tolist() == tx.argmin(dim).tolist()
        g = rng.standard_normal(6).astype(np.float32)
        for name in ("amax", "amin"):
            (gx,) = mpamp.autograd.grad(getattr(x, name)(0), [x], mk(g, dtype))
            (tg,) = torch.autograd.grad(getattr(tx, name)(0), [tx], torch.tensor(g).to(tdt))
            np.testing.assert_allclose(to_numpy(gx), tg.float().cpu().numpy(), rtol=1e-6, atol=0)
        other = rng.standard_normal(6).astype(np.float32)
        other[2] = arr[0, 2]
        other[5] = NAN
        for name in ("maximum", "minimum", "fmax", "fmin"):
            b = mk(other, dtype, requires_grad=True)
            tb = torch.tensor(other).to(tdt).requires_grad_()
            y, ty = getattr(mpamp, name)(x, b), getattr(torch, name)(tx, tb)
            np.testing.assert_array_equal(to_numpy(y), ty.float().detach().cpu().numpy())
            ga, gb = mpamp.autograd.grad(y.sum(), [x, b])
            tga, tgb = torch.autograd.grad(ty.sum(), [tx, tb])
            np.testing.assert_array_equal(to_numpy(ga), tga.float().cpu().numpy())
            np.testing.assert_array_equal(to_numpy(gb), tgb.float().cpu().numpy())
