"""gather, scatter (src, value, reduce), scatter_add, index_select, index_add, index_copy,
index_fill, take_along_dim (functions, methods, in-place forms): values against NumPy in every
dtype, non-contiguous inputs, duplicates, empty indices, every backward against np.add.at,
torch's errors and messages, and the autocast rows torch gives these ops."""
import numpy as np
import pytest

import mpamp
from conftest import assert_close, to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]


def make(dtype, shape, rng):
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif dtype == "int64":
        a = rng.integers(-50, 50, shape).astype(np.int64)
    else:
        a = rng.standard_normal(shape).astype(np.float32)
    t = mpamp.tensor(a).to(dtype) if dtype in ("float16", "bfloat16") else mpamp.tensor(a)
    return t, to_numpy(t)


def np_gather(a, dim, idx):
    """out[p] = a[p with p[dim] = idx[p]] (idx may be smaller than a in every dim)."""
    grids = list(np.indices(idx.shape, sparse=True))
    grids[dim % a.ndim] = idx
    return a[tuple(grids)]


def np_scatter(a, dim, idx, src, op="set"):
    out = a.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[dim] = idx[p]
        v = src[p] if isinstance(src, np.ndarray) else src
        if op == "set":
            out[tuple(q)] = v
        elif op == "add":
            out[tuple(q)] = out[tuple(q)] + v if out.dtype != bool else out[tuple(q)] | v
        else:
            out[tuple(q)] = out[tuple(q)] * v if out.dtype != bool else out[tuple(q)] & v
    return out


def low(dtype, arr):
    """arr rounded to dtype, as float32 (the reference for sums done in that dtype)."""
    return to_numpy(mpamp.tensor(np.asarray(arr, np.float32)).to(dtype))


# ---- gather ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_values(dtype, dim, rng):
    t, a = make(dtype, (4, 5), rng)
    idx = rng.integers(0, a.shape[dim], (3, 4) if dim == 0 else (4, 7))
    out = mpamp.gather(t, dim, mpamp.tensor(idx))
    assert out.dtype == t.dtype
    np.testing.assert_array_equal(to_numpy(out), np_gather(a, dim, idx))
    np.testing.assert_array_equal(to_numpy(t.gather(dim, mpamp.tensor(idx))),
                                  np_gather(a, dim, idx))


def test_gather_non_contiguous_and_small_index(rng):
    t, a = make("float32", (6, 5), rng)
    for src, ref in ((t.t(), a.T), (t[::2], a[::2]), (t[:1].expand(6, 5),
                                                     np.broadcast_to(a[:1], (6, 5)))):
        idx = rng.integers(0, ref.shape[0], (ref.shape[1], ref.shape[0])).T   # transposed
        out = mpamp.gather(src, 0, mpamp.tensor(idx.T.copy()).t())
        np.testing.assert_array_equal(out.numpy(), np_gather(ref, 0, idx))
    small = np.array([[4], [0]])          # smaller than the input in the other dim
    np.testing.assert_array_equal(t.gather(1, mpamp.tensor(small)).numpy(),
                                  np_gather(a, 1, small))
    assert mpamp.gather(mpamp.tensor(5.0), 0, mpamp.tensor([0, 0])).tolist() == [5.0, 5.0]
    assert mpamp.gather(t, 1, mpamp.zeros(0, 9, dtype=mpamp.int64)).shape == (0, 9)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gather_backward_scatter_adds(dtype, rng):
    t, a = make(dtype, (3, 4), rng)
    x = t.requires_grad_(True)
    idx = np.array([[0, 0, 3], [1, 1, 1], [2, 0, 2]])
    y = mpamp.gather(x, 1, mpamp.tensor(idx))
    assert y.grad_fn.name() == "GatherBackward0"
    g = low(dtype, rng.standard_normal((3, 3)))
    y.backward(mpamp.tensor(g).to(dtype))
    ref = np.zeros((3, 4), np.float32)
    np.add.at(ref, (np.arange(3)[:, None], idx), g)
    assert x.grad.dtype == x.dtype
    assert_close(x.grad, ref, dtype)


# ---- scatter / scatter_add ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_src_value_and_add(dtype, rng):
    t, a = make(dtype, (4, 5), rng)
    s, sn = make(dtype, (3, 6), rng)
    idx = np.array([[0, 1, 2], [4, 3, 2]])         # (2, 3): unique per row along dim 1
    ti = mpamp.tensor(idx)
    np.testing.assert_array_equal(to_numpy(mpamp.scatter(t, 1, ti, s)),
                                  np_scatter(a, 1, idx, sn))
    np.testing.assert_array_equal(to_numpy(t.scatter(1, ti, 1)), np_scatter(a, 1, idx,
                                                                            a.dtype.type(1)))
    dup = np.array([[0, 0, 2], [4, 4, 4]])
    out = mpamp.scatter_add(t, 1, mpamp.tensor(dup), s)
    ref = np_scatter(a, 1, dup, sn, "add")
    if dtype in ("float16", "bfloat16"):
        assert_close(out, ref, dtype)
    else:
        np.testing.assert_array_equal(to_numpy(out), ref)
    np.testing.assert_array_equal(to_numpy(t), a)          # out of place
    u = t.clone()
    assert u.scatter_(1, ti, s) is u
    np.testing.assert_array_equal(to_numpy(u), np_scatter(a, 1, idx, sn))
    v = t.clone()
    assert v.scatter_add_(1, mpamp.tensor(dup), s) is v
    np.testing.assert_array_equal(to_numpy(v), to_numpy(out))


def test_scatter_reduce_and_scalar_casts():
    z = mpamp.zeros(3)
    assert z.scatter(0, mpamp.tensor([0, 0]), 5.0, reduce="add").tolist() == [10.0, 0, 0]
    assert mpamp.ones(3).scatter_(0, mpamp.tensor([0, 0]), 5.0, reduce="multiply").tolist() == \
        [25.0, 1.0, 1.0]
    assert mpamp.ones(3).scatter(0, mpamp.tensor([1]), mpamp.tensor([4.0]),
                                 reduce="multiply").tolist() == [1.0, 4.0, 1.0]
    b = mpamp.zeros(3, dtype=mpamp.bool)
    assert b.scatter(0, mpamp.tensor([0, 1]), mpamp.tensor([True, False]),
                     reduce="add").tolist() == [True, False, False]
    assert mpamp.zeros(3, dtype=mpamp.int64).scatter(0, mpamp.tensor([0]), 5.7).tolist() == \
        [5, 0, 0]
    assert mpamp.scatter(mpamp.zeros(2), 0, mpamp.tensor([1]), value=2).tolist() == [0.0, 2.0]
    y = mpamp.zeros(3, requires_grad=True).scatter(0, mpamp.tensor([0]), 1.0, reduce="add")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


def test_scatter_backward(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    sv = rng.standard_normal((3, 5)).astype(np.float32)      # src larger than index
    idx = np.array([[0, 1], [2, 3], [1, 0]])
    g = rng.standard_normal((3, 4)).astype(np.float32)
    rows = np.arange(3)[:, None]
    for kind in ("src", "value", "add"):
        x = mpamp.tensor(a, requires_grad=True)
        s = mpamp.tensor(sv, requires_grad=True)
        if kind == "src":
            y = mpamp.scatter(x, 1, mpamp.tensor(idx), s)
        elif kind == "value":
            y = mpamp.scatter(x, 1, mpamp.tensor(idx), 2.0)
        else:
            y = mpamp.scatter_add(x, 1, mpamp.tensor(idx), s)
        assert y.grad_fn.name() == {"src": "ScatterBackward0", "value": "ScatterBackward1",
                                    "add": "ScatterAddBackward0"}[kind]
        y.backward(mpamp.tensor(g))
        gx = g.copy()
        if kind != "add":
            gx[rows, idx] = 0
        np.testing.assert_array_equal(x.grad.numpy(), gx)
        if kind == "value":
            assert s.grad is None
            continue
        gs = np.zeros_like(sv)
        gs[:, :2] = g[rows, idx]
        np.testing.assert_array_equal(s.grad.numpy(), gs)


# ---- index_select / index_add / index_copy / index_fill ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_select_values(dtype, dim, rng):
    t, a = make(dtype, (3, 4, 5), rng)
    idx = np.array([a.shape[dim] - 1, 0, 0, 1])
    out = mpamp.index_select(t, dim, mpamp.tensor(idx))
    np.testing.assert_array_equal(to_numpy(out), np.take(a, idx, dim))
    np.testing.assert_array_equal(to_numpy(t.transpose(0, 2).index_select(dim, mpamp.tensor(
        idx % a.transpose(2, 1, 0).shape[dim]))), np.take(a.transpose(2, 1, 0),
                                                            idx % a.transpose(2, 1, 0).shape[dim],
                                                            dim))
    assert t.index_select(dim, mpamp.tensor([], dtype=mpamp.int64)).shape[dim] == 0
    assert t.index_select(dim, mpamp.tensor(0)).shape[dim] == 1
    assert mpamp.index_select(mpamp.tensor(3.0), 0, mpamp.tensor([0])).shape == ()


def test_index_select_backward(rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    x = mpamp.tensor(a, requires_grad=True)
    idx = np.array([3, 3, 0])
    y = x.index_select(0, mpamp.tensor(idx))
    assert y.grad_fn.name() == "IndexSelectBackward0"
    g = rng.standard_normal((3, 3)).astype(np.float32)
    y.backward(mpamp.tensor(g))
    ref = np.zeros_like(a)
    np.add.at(ref, idx, g)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_add_copy_fill(dtype, rng):
    t, a = make(dtype, (4, 5), rng)
    s, sn = make(dtype, (4, 3), rng)
    idx = np.array([4, 0, 4])
    ti = mpamp.tensor(idx)
    out = mpamp.index_add(t, 1, ti, s)
    ref = a.copy()
    if dtype == "bool":
        for j, i in enumerate(idx):
            ref[:, i] |= sn[:, j]
    else:
        np.add.at(ref, (slice(None), idx), sn)
    if dtype in ("float16", "bfloat16"):
        assert_close(out, ref, dtype)
    else:
        np.testing.assert_array_equal(to_numpy(out), ref)
    u = t.clone()
    assert u.index_add_(1, ti, s) is u
    np.testing.assert_array_equal(to_numpy(u), to_numpy(out))
    uniq = mpamp.tensor([3, 0, 1])
    ref = a.copy()
    ref[:, [3, 0, 1]] = sn
    np.testing.assert_array_equal(to_numpy(mpamp.index_copy(t, 1, uniq, s)), ref)
    v = t.clone()
    assert v.index_copy_(1, uniq, s) is v
    np.testing.assert_array_equal(to_numpy(v), ref)
    ref = a.copy()
    ref[:, [4, 0]] = a.dtype.type(1)
    np.testing.assert_array_equal(to_numpy(t.index_fill(1, mpamp.tensor([-1, 0]), 1)), ref)
    w = t.clone()
    assert w.index_fill_(1, mpamp.tensor([4, 0]), mpamp.tensor(1)) is w
    np.testing.assert_array_equal(to_numpy(w), ref)


def test_index_add_alpha_and_0d():
    x = mpamp.zeros(3, 2)
    out = mpamp.index_add(x, 0, mpamp.tensor([2, 2]), mpamp.ones(2, 2), alpha=2)
    assert out.tolist() == [[0, 0], [0, 0], [4, 4]]
    assert mpamp.zeros(3, dtype=mpamp.int64).index_add(
        0, mpamp.tensor([0]), mpamp.ones(1, dtype=mpamp.int64), alpha=2).tolist() == [2, 0, 0]
    assert mpamp.tensor(1.0).index_add(0, mpamp.tensor([0]), mpamp.tensor(2.0)).item() == 3.0
    assert mpamp.zeros(3, 4).index_add(1, mpamp.tensor(0), mpamp.ones(3, 1)).sum().item() == 3


def test_index_add_copy_fill_backward(rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    sv = rng.standard_normal((2, 3)).astype(np.float32)
    g = rng.standard_normal((4, 3)).astype(np.float32)
    idx = np.array([3, 1])
    for op in ("add", "copy", "fill"):
        x = mpamp.tensor(a, requires_grad=True)
        s = mpamp.tensor(sv, requires_grad=True)
        if op == "add":
            y = x.index_add(0, mpamp.tensor(idx), s, alpha=-2.0)
        elif op == "copy":
            y = x.index_copy(0, mpamp.tensor(idx), s)
        else:
            y = x.index_fill(0, mpamp.tensor(idx), 0.5)
        assert y.grad_fn.name() == {"add": "IndexAddBackward0", "copy": "IndexCopyBackward0",
                                    "fill": "IndexFillBackward0"}[op]
        y.backward(mpamp.tensor(g))
        gx = g.copy()
        if op != "add":
            gx[idx] = 0
        np.testing.assert_array_equal(x.grad.numpy(), gx)
        if op == "fill":
            assert s.grad is None
        else:
            np.testing.assert_allclose(s.grad.numpy(), g[idx] * (-2.0 if op == "add" else 1.0),
                                       rtol=1e-6)


# ---- take_along_dim ----

def test_take_along_dim(rng):
    t, a = make("float32", (3, 4), rng)
    idx = rng.integers(0, 4, (3, 2))
    np.testing.assert_array_equal(mpamp.take_along_dim(t, mpamp.tensor(idx), 1).numpy(),
                                  np.take_along_axis(a, idx, 1))
    np.testing.assert_array_equal(t.take_along_dim(mpamp.tensor([[0], [-1], [2]]), 1).numpy(),
                                  np.take_along_axis(a, np.array([[0], [3], [2]]), 1))
    col = mpamp.tensor([[1], [0], [3]])                   # broadcasts against (3, 4)
    np.testing.assert_array_equal(mpamp.take_along_dim(t, mpamp.tensor([[2, 0]]), 1).numpy(),
                                  a[:, [2, 0]])
    np.testing.assert_array_equal(mpamp.take_along_dim(t, col, 1).numpy(),
                                  np.take_along_axis(a, col.numpy(), 1))
    flat = mpamp.take_along_dim(t, mpamp.tensor([[0, 11]]))
    np.testing.assert_array_equal(flat.numpy(), a.reshape(-1)[[0, 11]])
    x = mpamp.tensor(a, requires_grad=True)
    mpamp.take_along_dim(x, mpamp.tensor([[2, 0]]), 1).sum().backward()
    ref = np.zeros_like(a)
    ref[:, [2, 0]] = 1
    np.testing.assert_array_equal(x.grad.numpy(), ref)


# ---- autocast ----

def test_autocast_rows():
    pol = mpamp._C._autocast_policy
    assert pol("scatter_add", "cuda") == "promote" and pol("scatter_add", "cpu") is None
    assert pol("index_copy", "cpu") == "promote" and pol("index_copy", "cuda") is None
    for op in ("gather", "scatter", "index_select", "index_add"):
        with pytest.raises(ValueError):
            mpamp._C._autocast_cast(op, mpamp.ones(1))      # in no list, as torch
    x, s = mpamp.zeros(3), mpamp.ones(1, dtype="bf16")
    with pytest.raises(RuntimeError, match="index_copy_\\(\\): self and source expected to "
                                           "have the same dtype"):
        mpamp.index_copy(x, 0, mpamp.tensor([1]), s)
    with mpamp.autocast(device_type="cpu", dtype=mpamp.bfloat16):
        out = mpamp.index_copy(x, 0, mpamp.tensor([1]), s)    # promoted to float32
        assert out.dtype == mpamp.float32 and out.tolist() == [0.0, 1.0, 0.0]
        with pytest.raises(RuntimeError, match="same dtype"):
            x.index_copy_(0, mpamp.tensor([1]), s)          # in-place forms are not autocast


# ---- errors ----

def test_gather_scatter_errors():
    x = mpamp.zeros(3, 4)
    L = mpamp.int64
    cases = [
        (lambda: mpamp.gather(x, 1, mpamp.tensor([[0, 7]])), RuntimeError,
         "index 7 is out of bounds for dimension 1 with size 4"),
        (lambda: mpamp.gather(x, 1, mpamp.tensor([[0, -1]])), RuntimeError,
         "index -1 is out of bounds for dimension 1 with size 4"),
        (lambda: mpamp.gather(x, 1, mpamp.tensor([[0.0]])), RuntimeError,
         r"gather\(\): Expected dtype int32/int64 for index"),
        (lambda: mpamp.gather(x, 1, mpamp.tensor([0])), RuntimeError,
         "Index tensor must have the same number of dimensions as input tensor"),
        (lambda: mpamp.gather(x, 1, mpamp.zeros(4, 2, dtype=L)), RuntimeError,
         r"Size does not match at dimension 0 expected index \[4, 2\] to be no larger than "
         r"self \[3, 4\] apart from dimension 1"),
        (lambda: mpamp.gather(x, 2, mpamp.zeros(3, 2, dtype=L)), IndexError,
         r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
        (lambda: mpamp.scatter(x, 1, mpamp.tensor([[0, 7]]), mpamp.ones(1, 2)), RuntimeError,
         "index 7 is out of bounds for dimension 1 with size 4"),
        (lambda: mpamp.scatter(x, 1, mpamp.zeros(2, 2, dtype=L), mpamp.ones(1, 2)),
         RuntimeError, r"Expected index \[2, 2\] to be no larger than self \[3, 4\] apart from "
         r"dimension 1 and to be no larger size than src \[1, 2\]"),
        (lambda: mpamp.scatter(x, 1, mpamp.zeros(4, 2, dtype=L), 1.0), RuntimeError,
         r"Expected index \[4, 2\] to be no larger than self \[3, 4\] apart from dimension 1$"),
        (lambda: mpamp.scatter(x, 1, mpamp.zeros(3, 2, dtype=L), mpamp.ones(3, 2, dtype=L)),
         RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
        (lambda: mpamp.scatter_add(x, 1, mpamp.zeros(3, 2), mpamp.ones(3, 2)), RuntimeError,
         r"scatter\(\): Expected dtype int32/int64 for index"),
        (lambda: mpamp.scatter(x, 1, mpamp.zeros(3, dtype=L), mpamp.ones(3, 2)), RuntimeError,
         "Index tensor must have the same number of dimensions as self tensor"),
        (lambda: mpamp.scatter(x, 1, mpamp.zeros(3, 2, dtype=L), mpamp.ones(6)), RuntimeError,
         "Index tensor must have the same number of dimensions as src tensor"),
        (lambda: x.scatter(1, mpamp.zeros(2, 2, dtype=L), mpamp.ones(2, 2), reduce="max"),
         RuntimeError, "reduce argument must be either add or multiply."),
        (lambda: mpamp.scatter(x, 1, mpamp.zeros(1, 1, dtype=L)), TypeError,
         "missing 1 required argument"),
        (lambda: mpamp.take_along_dim(x, mpamp.tensor([[1.0]]), 1), RuntimeError,
         "dtype of indices should be Long but got Float"),
        (lambda: mpamp.take_along_dim(x, mpamp.tensor([1]), 1), RuntimeError,
         "input and indices should have the same number of dimensions, but got 2 dimensions "
         "for input, and 1 dimensions for indices"),
        (lambda: mpamp.take_along_dim(x, mpamp.tensor([[7]]), 1), RuntimeError,
         "index 7 is out of bounds for dimension 1 with size 4"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_index_dim_errors():
    x = mpamp.zeros(3, 4)
    L = mpamp.int64
    cases = [
        (lambda: mpamp.index_select(x, 1, mpamp.tensor([0, 7])), IndexError,
         "index out of range in self"),
        (lambda: mpamp.index_select(x, 1, mpamp.tensor([-1])), IndexError,
         "index out of range in self"),
        (lambda: mpamp.index_select(x, 1, mpamp.tensor([[0]])), IndexError,
         r"index_select\(\): Index is supposed to be a vector"),
        (lambda: mpamp.index_select(x, 1, mpamp.tensor([0.0])), RuntimeError,
         r"index_select\(\): Expected dtype int32 or int64 for index"),
        (lambda: mpamp.index_select(mpamp.tensor(3.0), 0, mpamp.tensor([0, 0])), RuntimeError,
         r"Index to scalar can have only 1 value, got 2 value\(s\)"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([0, 7]), mpamp.ones(3, 2)), RuntimeError,
         "index 7 is out of bounds for dimension 1 with size 4"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([0, 1]), mpamp.ones(3, 3)), RuntimeError,
         r"index_add_\(\): Number of indices \(2\) should be equal to source.size\(dim\): "
         r"\(3\), for dim: 1"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([0, 1]), mpamp.ones(2, 2)), RuntimeError,
         r"source tensor shape must match self tensor shape, excluding the specified "
         r"dimension. Got self.shape = \[3, 4\] source.shape = \[2, 2\]"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([0, 1]), mpamp.ones(6)), RuntimeError,
         r"index_add_\(\): Indexing dim 1 is out of bounds of the source tensor with dim 1"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([0]), mpamp.ones(3, 1, dtype="fp16")),
         RuntimeError, r"index_add_\(\): self \(Float\) and source \(Half\) must have the same "
         r"scalar type"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([[0, 1]]), mpamp.ones(3, 2)), IndexError,
         r"Index is supposed to be a vector, but got dim: 2 with type: Long and size: \[1, 2\]"),
        (lambda: mpamp.index_add(x, 1, mpamp.tensor([0.0]), mpamp.ones(3, 1)), RuntimeError,
         r"index_add_\(\): Expected dtype int32/int64 for index but got: Float"),
        (lambda: mpamp.index_copy(x, 1, mpamp.tensor([0, 7]), mpamp.ones(3, 2)), IndexError,
         r"index_copy_\(\): index 7 is out of bounds for dimension 1 with size 4"),
        (lambda: mpamp.index_copy(x, 1, mpamp.tensor([0.0]), mpamp.ones(3, 1)), RuntimeError,
         r"index_copy_\(\): Expected a long tensor for index, but got Float"),
        (lambda: mpamp.index_copy(x, 1, mpamp.tensor([[0]]), mpamp.ones(3, 1)), IndexError,
         r"index_copy_\(\): Index should have dimension 1 or 0 \(got 2\)"),
        (lambda: mpamp.index_copy(x, 1, mpamp.tensor([0, 1]), mpamp.ones(3, 1)), IndexError,
         r"index_copy_\(\): Number of indices \(2\) should be equal to source.size\(dim\) "
         r"\(1\)$"),
        (lambda: mpamp.index_fill(x, 1, mpamp.tensor([0, 7]), 1.0), IndexError,
         "index 7 is out of bounds for dimension 1 with size 4"),
        (lambda: mpamp.index_fill(x, 1, mpamp.tensor([0.0]), 1.0), IndexError,
         r"index_fill_\(\): Expected dtype int64 for index."),
        (lambda: mpamp.index_fill(x, 1, mpamp.tensor([[0]]), 1.0), RuntimeError,
         "Index has to be a vector/scalar"),
        (lambda: mpamp.index_fill(x, 1, mpamp.tensor([0]), mpamp.ones(1)), RuntimeError,
         r"index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
         r"dimension\(s\)."),
        (lambda: mpamp.index_fill(x, 1, mpamp.tensor([0]), "a"), TypeError, "number"),
        (lambda: mpamp.index_select(x, 1, [0]), TypeError, "argument 'index' must be Tensor"),
        (lambda: mpamp.zeros(2, dtype=L).index_add_(0, mpamp.tensor([0]),
                                                    mpamp.ones(1, dtype=L), alpha="a"),
         TypeError, "must be real number"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_in_place_forms_refuse_tensors_that_require_grad():
    w = mpamp.zeros(3, requires_grad=True)
    for fn, name in ((lambda: w.scatter_(0, mpamp.tensor([0]), 1.0), "scatter_"),
                     (lambda: w.scatter_add_(0, mpamp.tensor([0]), mpamp.ones(1)),
                      "scatter_add_"),
                     (lambda: w.index_add_(0, mpamp.tensor([0]), mpamp.ones(1)), "index_add_"),
                     (lambda: w.index_fill_(0, mpamp.tensor([0]), 1.0), "index_fill_")):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
            fn()
    with mpamp.no_grad():
        w.index_fill_(0, mpamp.tensor([1]), 2.0)
    assert w.tolist() == [0.0, 2.0, 0.0]


def test_backward_rechecks_indices_changed_in_place():
    x = mpamp.ones(4, requires_grad=True)
    for make_y in (lambda i: mpamp.gather(x, 0, i), lambda i: mpamp.index_select(x, 0, i),
                   lambda i: mpamp.scatter(x, 0, i, 1.0)):
        idx = mpamp.tensor([0, 2])
        y = make_y(idx)
        idx.fill_(9)                      # the version counter sees this write
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        idx = mpamp.tensor([0, 2])
        y = make_y(idx)
        idx.data.fill_(9)                 # .data bumps no version: backward checks the values
        with pytest.raises((RuntimeError, IndexError), match="out of"):
            y.sum().backward()
