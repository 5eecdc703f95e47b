"""sort, argsort, msort and topk: values and indices against NumPy's stable sort in float32/
float16/bfloat16/int64/bool, NaN and -0.0 ordering, ties (stable, lower index first),
non-contiguous inputs, negative dims, 0-d and empty tensors, backward (the gradient scattered
to the chosen positions), torch's errors, nanoGPT's sampler call; and against torch where it is
installed (values always; indices where the order is unique or stable)."""
import numpy as np
import pytest

import mpamp
from conftest import to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]
NAN = float("nan")


def mk(arr, dtype="float32", requires_grad=False):
    a = np.asarray(arr)
    if dtype in ("int64", "bool"):
        t = mpamp.tensor(a.astype(np.int64 if dtype == "int64" else bool))
    else:
        t = mpamp.tensor(a.astype(np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def data(rng, shape, dtype):
    if dtype == "int64":
        return rng.integers(-4, 5, size=shape)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    a = np.round(rng.standard_normal(shape) * 4) / 2           # many ties
    if a.size > 4:
        a.flat[2] = NAN
        a.flat[4] = -0.0
    return a.astype(np.float32)


def np_sort_idx(x, axis, descending):
    """NumPy's stable order with torch's rules: NaN is the largest, -0.0 equals 0.0 (NumPy's
    comparisons already say so); descending keeps equal elements in their original order."""
    key = np.where(np.isnan(x), np.inf, x).astype(np.float64) if x.dtype.kind == "f" else \
        x.astype(np.float64)
    return np.argsort(-key if descending else key, axis=axis, kind="stable")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((9,), 0), ((4, 7), 1), ((4, 7), -2), ((3, 4, 5), 1),
                                       ((3, 4, 5), -1), ((), 0), ((1, 6), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(rng, dtype, shape, dim, descending):
    x = mk(data(rng, shape, dtype), dtype)
    xr = to_numpy(x)
    res = mpamp.sort(x, dim, descending)
    assert isinstance(res, mpamp.return_types.sort) and res.values.dtype == x.dtype
    if xr.ndim == 0:
        assert res.values.tolist() == xr.tolist() and res.indices.item() == 0
        return
    idx = np_sort_idx(xr, dim, descending)
    assert to_numpy(res.indices).tolist() == idx.tolist()
    np.testing.assert_array_equal(to_numpy(res.values), np.take_along_axis(xr, idx, dim))
    assert to_numpy(x.argsort(dim, descending)).tolist() == idx.tolist()
    assert to_numpy(mpamp.argsort(x, dim=dim, descending=descending, stable=True)).tolist() \
        == idx.tolist()
    r2 = x.sort(dim=dim, descending=descending, stable=True)
    assert to_numpy(r2.indices).tolist() == idx.tolist()


def test_sort_nan_and_signed_zero_order():
    x = mpamp.tensor([1.0, NAN, 3.0, 3.0, -0.0, 0.0, 0.0, -0.0])
    v, i = x.sort(stable=True)
    assert i.tolist() == [4, 5, 6, 7, 0, 2, 3, 1]                  # as torch
    assert np.signbit(v.tolist()[0]) and np.isnan(v.tolist()[-1])
    v, i = x.sort(descending=True)
    assert i.tolist() == [1, 2, 3, 0, 4, 5, 6, 7]
    inf = mpamp.tensor([float("inf"), NAN, -float("inf")])
    assert inf.sort().indices.tolist() == [2, 0, 1]
    big = mpamp.tensor([2**62 + 1, -2**62, 2**62])
    assert big.sort().values.tolist() == [-2**62, 2**62, 2**62 + 1]
    assert mpamp.tensor([True, False, True]).sort().indices.tolist() == [1, 0, 2]


def test_msort_and_noncontiguous(rng):
    base = data(rng, (5, 6), "float32")
    x = mk(base).t()[::2]                                           # (3, 5), strided
    ref = base.T[::2]
    idx = np_sort_idx(ref, 0, False)
    np.testing.assert_array_equal(to_numpy(mpamp.msort(x)), np.take_along_axis(ref, idx, 0))
    np.testing.assert_array_equal(to_numpy(x.msort()), np.take_along_axis(ref, idx, 0))
    assert to_numpy(x.sort(1).indices).tolist() == np_sort_idx(ref, 1, False).tolist()
    ex = mk(np.arange(4.0)).expand(3, 4)
    assert ex.sort(descending=True).values.tolist() == [[3.0, 2.0, 1.0, 0.0]] * 3
    assert mpamp.msort(mpamp.tensor(2.0)).item() == 2.0


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
@pytest.mark.parametrize("shape,k,dim", [((9,), 3, 0), ((4, 7), 7, 1), ((4, 7), 2, -2),
                                         ((3, 4, 5), 1, 1), ((3, 4, 5), 0, -1), ((), 1, 0),
                                         ((), 0, -1)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(rng, dtype, shape, k, dim, largest):
    x = mk(data(rng, shape, dtype), dtype)
    xr = to_numpy(x)
    res = mpamp.topk(x, k, dim, largest)
    assert isinstance(res, mpamp.return_types.topk)
    if xr.ndim == 0:
        assert tuple(res.values.shape) == () and res.indices.tolist() == 0
        assert res.values.tolist() == xr.tolist()
        return
    idx = np.take(np_sort_idx(xr, dim, largest), np.arange(k), axis=dim)
    assert to_numpy(res.indices).tolist() == idx.tolist()
    np.testing.assert_array_equal(to_numpy(res.values), np.take_along_axis(xr, idx, dim))
    r2 = x.topk(k, dim=dim, largest=largest, sorted=False)          # sorted order regardless
    assert to_numpy(r2.indices).tolist() == idx.tolist()


def test_topk_nan_ties_and_sampler_call():
    x = mpamp.tensor([1.0, NAN, 3.0, 3.0, 2.0])
    assert x.topk(3).indices.tolist() == [1, 2, 3]                  # NaN is the largest
    assert x.topk(3, largest=False).indices.tolist() == [0, 4, 2]
    assert x.topk(5, largest=False).indices.tolist() == [0, 4, 2, 3, 1]
    logits = mpamp.randn(2, 65)
    top_k = 200
    v, _ = mpamp.topk(logits, min(top_k, logits.size(-1)))           # nanoGPT's sample.py
    assert tuple(v.shape) == (2, 65)
    v, _ = mpamp.topk(logits, min(10, logits.size(-1)))
    assert tuple(v.shape) == (2, 10)
    assert bool((to_numpy(v)[:, :-1] >= to_numpy(v)[:, 1:]).all())
    assert logits.topk(5)[0].shape == mpamp.Size([2, 5])
    e = mpamp.zeros(0, 3)
    assert tuple(e.topk(2).values.shape) == (0, 2)
    assert tuple(e.sort().indices.shape) == (0, 3)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("op", ["sort", "topk"])
def test_sort_topk_backward(rng, dtype, op):
    arr = rng.standard_normal((3, 6)).astype(np.float32)
    x = mk(arr, dtype, requires_grad=True)
    if op == "sort":
        v, i = x.sort(0, descending=True)
    else:
        v, i = x.topk(3, 1)
    assert v.grad_fn.name() == ("SortBackward0" if op == "sort" else "TopkBackward0")
    assert i.grad_fn is None and not i.requires_grad
    g = mk(rng.standard_normal(tuple(v.shape)), dtype)
    (gx,) = mpamp.autograd.grad(v, [x], g)
    exp = np.zeros(arr.shape, np.float32)
    np.put_along_axis(exp, to_numpy(i), to_numpy(g), 0 if op == "sort" else 1)
    assert gx.dtype == x.dtype
    np.testing.assert_array_equal(to_numpy(gx), exp)
    y = x.sort(1).values.sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        y.backward()


def test_sort_topk_errors():
    x = mpamp.zeros(3, 4)
    for k in (5, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            x.topk(k)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        mpamp.topk(mpamp.tensor(3.0), 2)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        mpamp.zeros(0, 3).topk(1, dim=0)
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes on CPU"):
        mpamp.tensor([True, False]).topk(1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        x.topk(2, dim=2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sort(dim=-3)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        mpamp.topk(mpamp.tensor(2.0), 1, 1)
    with pytest.raises(TypeError, match=r"topk\(\): argument 'k' must be int, not float"):
        x.topk(2.0)
    with pytest.raises(TypeError, match=r"topk\(\): argument 'k' must be int, not bool"):
        x.topk(True)
    with pytest.raises(TypeError, match=r"sort\(\): argument 'dim' must be int, not float"):
        x.sort(1.0)
    with pytest.raises(TypeError, match=r"argument 'stable' must be bool, not int"):
        x.sort(stable=1)
    with pytest.raises(TypeError):
        mpamp.sort(x, 0, True, True)                  # stable is keyword-only, as torch
    with pytest.raises(TypeError, match=r"sort\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not list"):
        mpamp.sort([3, 1])
    assert x.topk(mpamp.tensor(2)).values.shape == mpamp.Size([3, 2])   # 0-d int k


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    for dtype, tdt in (("float32", torch.float32), ("bfloat16", torch.bfloat16),
                       ("int64", torch.int64), ("bool", torch.bool)):
        arr = data(rng, (4, 9), dtype)
        x = mk(arr, dtype)
        tx = torch.tensor(np.asarray(arr)).to(tdt)
        for dim in (0, 1, -1):
            for desc in (False, True):
                v, i = x.sort(dim, desc)
                tv, ti = tx.sort(dim=dim, descending=desc, stable=True)
                np.testing.assert_array_equal(to_numpy(v), tv.float().cpu().numpy()
                                              if dtype not in ("int64", "bool") else tv.cpu().numpy())
                assert to_numpy(i).tolist() == ti.tolist()            # stable: the same
        if dtype != "bool":
            for k in (1, 4):
                v, _ = x.topk(k, 1)
                tv, _ = tx.topk(k, 1)                                 # tie indices may differ
                np.testing.assert_array_equal(to_numpy(v), tv.float().cpu().numpy()
                                              if dtype != "int64" else tv.cpu().numpy())
