"""Advanced indexing: t[key] and t[key] = v with int lists, int64 tensors, bool masks (tensors
and lists), mixed with ints, slices, None and ...; index_put(_) with accumulate. Values against
a NumPy oracle that follows torch's rule (ints and slices are views applied first, then the
index arrays: NumPy's own rule for arrays and slices), result shapes and values against torch
when it is installed, every backward against np.add.at, and torch's errors."""
import warnings

import numpy as np
import pytest

import mpamp
from conftest import TOL, assert_close, to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]


def np_torch_index(arr, key):
    """arr[key] with torch's semantics, computed with NumPy: ints, slices and None first, as
    views; then the index arrays (NumPy's rule for arrays and slices is torch's)."""
    key = key if isinstance(key, tuple) else (key,)
    view, entries, dim = arr, [], 0
    for k in key:
        assert k is not Ellipsis and not isinstance(k, bool), "not in the oracle"
        if k is None:
            view = np.expand_dims(view, dim)
            entries.append(slice(None))
            dim += 1
        elif isinstance(k, slice):
            view = view[(slice(None),) * dim + (k,)]
            entries.append(slice(None))
            dim += 1
        elif isinstance(k, int) or (isinstance(k, np.ndarray) and k.ndim == 0):
            view = view[(slice(None),) * dim + (int(k),)]
        else:
            a = np.asarray(k) if len(k) else np.zeros(0, np.int64)
            entries.append(a)
            dim += a.ndim if a.dtype == bool else 1
    return view[tuple(entries)] if any(not isinstance(e, slice) for e in entries) else view


def mp_key(key):
    """The same key with NumPy arrays as mpamp tensors."""
    conv = (lambda k: mpamp.tensor(k) if isinstance(k, np.ndarray) else k)
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


def make(dtype, shape, rng):
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif dtype == "int64":
        a = rng.integers(-50, 50, shape).astype(np.int64)
    else:
        a = rng.standard_normal(shape).astype(np.float32)
    t = mpamp.tensor(a).to(dtype) if dtype in ("float16", "bfloat16") else mpamp.tensor(a)
    return t, to_numpy(t)


B = np.array([True, False, True])
M2 = np.array([[True, False, True, True], [False, False, True, False], [True, True, True, False]])
KEYS = [
    [0, 2],
    [-1],
    [2, 0, 2, 1],
    (slice(None), [-1], slice(None)),
    (slice(None), [3, 0]),
    (slice(None), slice(None), [4, -5, 0]),
    ([0, 2], [1, 3]),
    ([0, 2], slice(None), [1, 3]),            # separated: the index dims go first
    (slice(None), [1, 2], [3, 4]),            # adjacent: in place
    (0, slice(None), [1, 2]),                 # the int is a view (torch), not an index
    ([[0], [2]], [1, 3]),                     # broadcast (2, 1) with (2,)
    (slice(1, None), [[0, 1], [2, 3]]),
    (np.array([[0, 1], [2, 0]]),),
    (np.array(1), slice(None), [1]),         # a 0-dim int64 tensor acts as an int
    B,
    (B, [0, 3]),
    (slice(None), np.array([True, False, False, True])),
    M2,
    (M2, [1, 2, 0, 4, 3, 1, 0]),
    (slice(None, None, 2), [1], None),
    (None, [0, 1]),
    ([0, 1], None, [0, 1]),                   # None separates them
    (slice(None), [0], slice(None, None, 2)),
    ([], slice(None)),
    (np.zeros((2, 0), np.int64),),
]


def ids(key):
    return repr(key).replace("array", "a").replace(" ", "")[:40]


@pytest.mark.parametrize("key", KEYS, ids=ids)
@pytest.mark.parametrize("dtype", DTYPES)
def test_getitem_matches_numpy_oracle(key, dtype, rng):
    t, a = make(dtype, (3, 4, 5), rng)
    out = t[mp_key(key)]
    ref = np_torch_index(a, key)
    assert out.dtype == t.dtype and tuple(out.shape) == ref.shape
    np.testing.assert_array_equal(to_numpy(out), ref)


TORCH_KEYS = KEYS + [
    (Ellipsis, [0, 1]), ([0, 1], Ellipsis, [0, 1]), (Ellipsis, [1], slice(None)),
    True, False, (True, 0), (slice(None), True), ([0, 1], True, [0, 1]), (False, [0]),
    ([True, False, True],), ([[True, False, True, False]] * 3,), ([0, 1.5],), ([0, True],),
    (slice(None), [1, 2], 1), (1, [1, 2], slice(None)), ([1], [1, 2], [[0], [1]]),
    (None, None, [0]), (slice(None), None, [0]), ((0, 1),), ([[0, 1]],),
]


@pytest.mark.parametrize("key", TORCH_KEYS, ids=ids)
def test_result_shapes_and_values_match_torch(key):
    torch = pytest.importorskip("torch")
    tx = torch.arange(60).reshape(3, 4, 5)
    conv = (lambda k: torch.tensor(k) if isinstance(k, np.ndarray) else k)
    tkey = tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)
    ref = tx[tkey]
    out = mpamp.arange(60).reshape(3, 4, 5)[mp_key(key)]
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_non_tuple_sequence_keys_follow_torch():
    torch = pytest.importorskip("torch")
    tx, x = torch.arange(60).reshape(3, 4, 5), mpamp.arange(60).reshape(3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in ([[0, 1], [1, 2]], [0, slice(None)], [[0]] * 2, [[0]] * 32, [None, 0]):
            np.testing.assert_array_equal(x[key].numpy(), tx[key].numpy())
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        x[[[0, 1], [1, 2]]]
    with pytest.warns(UserWarning), pytest.raises(IndexError, match="too many indices for "
                                                                     "tensor of dimension 3"):
        x[[[0]] * 31]            # read as a tuple of 31 indices, as torch does


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_sources_and_indices(dtype, rng):
    t, a = make(dtype, (6, 5), rng)
    idx = mpamp.tensor([[4, 0, 1], [2, 2, 3]])
    cases = [
        (t.t(), a.T),                                 # transposed
        (t[::2], a[::2]),                             # stepped slice
        (t[1:, 1::2], a[1:, 1::2]),
        (t[:1].expand(4, 5), np.broadcast_to(a[:1], (4, 5))),   # expanded (stride 0)
    ]
    for src, ref in cases:
        for key in ([1, 0, -1], (slice(None), [0, -1]), (slice(None), np.array([1, 0]))):
            np.testing.assert_array_equal(to_numpy(src[mp_key(key)]), ref[key])
    it = idx.t()                                       # a non-contiguous index tensor
    np.testing.assert_array_equal(to_numpy(t[it]), a[idx.numpy().T])
    np.testing.assert_array_equal(to_numpy(t[:, idx[:, ::2]]), a[:, idx.numpy()[:, ::2]])


def test_embedding_style_lookup_and_empty_cases():
    w = mpamp.randn(10, 4)
    idx = mpamp.tensor([[1, 9, 1], [0, 0, 3]])
    np.testing.assert_array_equal(w[idx].numpy(), w.numpy()[idx.numpy()])
    assert w[idx].shape == (2, 3, 4)
    assert w[mpamp.tensor([], dtype=mpamp.int64)].shape == (0, 4)
    assert w[[]].shape == (0, 4)
    e = mpamp.zeros(0, 3)
    assert e[[]].shape == (0, 3) and e[:, [2, 0]].shape == (0, 2)
    assert e[:, [7]].shape == (0, 1)          # empty result: no range check, as torch
    assert e[mpamp.zeros(0, 3, dtype=mpamp.bool)].shape == (0,)
    assert mpamp.tensor(5.0)[True].shape == (1,)
    assert mpamp.tensor(5.0)[None].shape == (1,)


def test_getitem_backward_accumulates_duplicates(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    rows = np.array([[True] * 5, [False] * 5, [True] * 5, [False] * 5])
    for key in ([1, 1, 3, 1], (slice(None), [[0, 4], [4, 4]]), ([0, 2, 2], [1, 1, 1]), rows):
        x = mpamp.tensor(a, requires_grad=True)
        y = x[mp_key(key)]
        assert y.grad_fn.name() == "IndexBackward0"
        g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        y.backward(mpamp.tensor(g))
        ref = np.zeros_like(a)
        if isinstance(key, np.ndarray):
            ref[key] += g
        else:
            np.add.at(ref, key if isinstance(key, tuple) else (key,), g)
        np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_getitem_backward_through_views_and_low_precision(dtype, rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x = mpamp.tensor(a).to(dtype).requires_grad_(True)
    y = x[1:, [0, 0, 3], ::2]        # slice view, then the index, then a strided slice
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(mpamp.tensor(g).to(dtype))
    ref = np.zeros((3, 4, 5), np.float32)
    gr = to_numpy(mpamp.tensor(g).to(dtype))
    np.add.at(ref[1:, :, ::2], (slice(None), [0, 0, 3]), gr)
    assert x.grad.dtype == x.dtype
    assert_close(x.grad, ref, dtype)


# ---- assignment ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_number_and_tensor_values(dtype, rng):
    t, a = make(dtype, (3, 4, 5), rng)
    cases = [([0, 2], 1), ((slice(None), [-1], slice(None)), 0),
             ((M2,), 1), ((B, [0, 3]), 1), ((slice(None), [3, 0], 2), 1)]
    for key, val in cases:
        t[mp_key(key)] = val
        if isinstance(key, tuple) and len(key) == 3 and isinstance(key[2], int):
            a[:, [3, 0], 2] = val          # torch: the int is a view
        else:
            a[key] = val
    np.testing.assert_array_equal(to_numpy(t), a.astype(to_numpy(t).dtype))
    v, vn = make(dtype, (2, 5), rng)
    t[:, [1, 3]] = v                       # broadcasts over the first dim
    a[:, [1, 3]] = vn
    np.testing.assert_array_equal(to_numpy(t), a)


def test_setitem_casts_values_and_strips_leading_ones():
    x = mpamp.zeros(3, 4)
    x[[0, 1]] = mpamp.ones(1, 1, 2, 4, dtype=mpamp.int64)   # int64 -> float32, (1, 1) dropped
    assert x.sum().item() == 8
    xi = mpamp.zeros(3, dtype=mpamp.int64)
    xi[[0]] = 1.7
    assert xi.tolist() == [1, 0, 0]
    xb = mpamp.zeros(3, dtype=mpamp.bool)
    xb[[0, 2]] = 2
    assert xb.tolist() == [True, False, True]
    h = mpamp.zeros(2, 3, dtype=mpamp.float16)
    h[[1]] = mpamp.tensor([[0.1, 0.2, 0.3]])                 # float32 value into float16
    np.testing.assert_array_equal(h.numpy()[1], np.float16([0.1, 0.2, 0.3]))


def test_nanogpt_style_assignments(rng):
    logits = mpamp.tensor(rng.standard_normal((2, 7)).astype(np.float32))
    v = mpamp.tensor(np.sort(logits.numpy(), axis=1)[:, -3:])   # top-3 values, ascending
    kth = v[:, [0]]
    assert kth.shape == (2, 1)
    mask = mpamp.tensor(logits.numpy() < kth.numpy())           # `<` comes from `compare`
    logits[mask] = -float("Inf")
    assert (np.isinf(logits.numpy()).sum(axis=1) == 4).all()
    x = mpamp.tensor(rng.standard_normal((3, 4, 5)).astype(np.float32))
    last = x[:, [-1], :]
    np.testing.assert_array_equal(last.numpy(), x.numpy()[:, [-1], :])
    y = mpamp.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    z = mpamp.zeros(3, 4)
    m = mpamp.tensor(M2)
    z[m] = y[m]
    np.testing.assert_array_equal(z.numpy(), np.where(M2, y.numpy(), 0))
    z[[0, 2]] = 0
    assert not z.numpy()[[0, 2]].any()


def test_setitem_writes_through_views_and_into_non_contiguous_tensors(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    x = mpamp.tensor(a)
    xt = x.t()                                   # non-contiguous target
    xt[[1, 5]] = -1.0
    a.T[[1, 5]] = -1.0
    x[::2, [0, 2]] = mpamp.tensor([7.0, 8.0])    # through a stepped slice of x
    a[::2, [0, 2]] = [7.0, 8.0]
    np.testing.assert_array_equal(x.numpy(), a)


def test_index_put_accumulate_sums_duplicates(rng):
    for dtype in ("float32", "int64"):
        x, a = make(dtype, (5, 3), rng)
        idx = np.array([0, 4, 0, 0, 2])
        v, vn = make(dtype, (5, 3), rng)
        x.index_put_((mpamp.tensor(idx),), v, accumulate=True)
        np.add.at(a, idx, vn)
        np.testing.assert_array_equal(to_numpy(x), a)
    h = mpamp.zeros(3, dtype=mpamp.float16)
    h.index_put_((mpamp.tensor([0, 0]),), mpamp.tensor([1.0, 2.0]).half(), accumulate=True)
    assert h.tolist() == [3.0, 0.0, 0.0]
    b = mpamp.zeros(3, dtype=mpamp.bool).index_put((mpamp.tensor([1, 1]),),
                                                    mpamp.tensor([True, False]), True)
    assert b.tolist() == [False, True, False]
    # unique indices without accumulate: plain writes (duplicates are unspecified in torch)
    y = mpamp.zeros(4).index_put([mpamp.tensor([3, 1])], mpamp.tensor([5.0, 6.0]))
    assert y.tolist() == [0.0, 6.0, 0.0, 5.0]
    assert mpamp.zeros(2, 3).index_put((None, mpamp.tensor([2])), mpamp.tensor(1.0)).tolist() \
        == [[0, 0, 1], [0, 0, 1]]
    assert mpamp.zeros(3).index_put_((mpamp.tensor(True),), mpamp.tensor(1.0)).tolist() == \
        [1.0, 1.0, 1.0]
    assert mpamp.zeros(3).index_put((mpamp.tensor(False),), mpamp.tensor(1.0)).tolist() == \
        [0.0, 0.0, 0.0]


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_backward(accumulate, rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    vals = rng.standard_normal((1, 3)).astype(np.float32)
    idx = np.array([2, 0, 2]) if accumulate else np.array([2, 0])
    x = mpamp.tensor(a, requires_grad=True)
    v = mpamp.tensor(vals, requires_grad=True)
    y = x.index_put((mpamp.tensor(idx),), v, accumulate=accumulate)
    assert y.grad_fn.name() == "IndexPutBackward0"
    ref = a.copy()
    if accumulate:
        np.add.at(ref, idx, np.broadcast_to(vals, (3, 3)))
    else:
        ref[idx] = vals
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-6)
    g = rng.standard_normal((4, 3)).astype(np.float32)
    y.backward(mpamp.tensor(g))
    gx = g.copy()
    if not accumulate:
        gx[idx] = 0
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), g[idx].sum(axis=0, keepdims=True), rtol=1e-5)


def test_setitem_under_no_grad_on_a_leaf_and_refused_with_grad():
    w = mpamp.ones(3, requires_grad=True)
    with mpamp.no_grad():
        w[[0, 2]] = 0.0
    assert w.tolist() == [0.0, 1.0, 0.0] and w.grad_fn is None
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        w[[1]] = 5.0


def test_index_put_promotes_under_cuda_autocast_only():
    pol = mpamp._C._autocast_policy
    assert pol("index_put", "cuda") == "promote" and pol("index_put", "cpu") is None
    h = mpamp.zeros(3, dtype=mpamp.bfloat16)
    with mpamp.autocast(device_type="cpu", dtype=mpamp.bfloat16):
        assert h.index_put((mpamp.tensor([0]),), mpamp.ones(1, dtype="bf16")).dtype == \
            mpamp.bfloat16


# ---- errors ----

def test_out_of_range_messages():
    x = mpamp.arange(60).reshape(3, 4, 5)
    cases = [(([5],), "index 5 is out of bounds for dimension 0 with size 3"),
             ((slice(None), [7]), "index 7 is out of bounds for dimension 0 with size 4"),
             (([0], [7]), "index 7 is out of bounds for dimension 1 with size 4"),
             ((slice(None), slice(None), [-6]), "index -6 is out of bounds for dimension 0 "
                                                "with size 5"),
             (([0], 9), "index 9 is out of bounds for dimension 1 with size 4")]
    for key, msg in cases:
        with pytest.raises(IndexError, match=msg):
            x[mp_key(key)]
        with pytest.raises(IndexError, match=msg):
            x[mp_key(key)] = 0
    with pytest.raises(IndexError, match="index is out of bounds for dimension with size 0"):
        mpamp.zeros(0, 3)[[0]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        mpamp.zeros(3).index_put_((mpamp.tensor([3]),), mpamp.tensor(1.0), accumulate=True)


def test_index_type_and_shape_errors():
    x = mpamp.zeros(3, 4, 5)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        x[mpamp.tensor([1.0])]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x.index_put_((mpamp.tensor([0.5]),), mpamp.tensor(1.0))
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match "
                                         r"the shape of the indexed tensor \[3, 4, 5\] at index 0"):
        x[mpamp.tensor([True, False])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3, 5\] at index 1 does not "
                                         r"match the shape of the indexed tensor \[3, 4, 5\] at "
                                         r"index 1"):
        x[mpamp.ones(3, 5, dtype=mpamp.bool)]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be "
                                         r"broadcast together with shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        x[[0], [0], [0], [0]]
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        mpamp.zeros(3, 4).index_put_((mpamp.tensor([0]),) * 3, mpamp.tensor(1.0))
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 5\] "
                                           r"cannot be broadcast to indexing result of shape "
                                           r"\[2, 4, 5\]"):
        x[[0, 1]] = mpamp.ones(3, 5)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Float for the destination and "
                                           "Long for the source."):
        x.index_put_((mpamp.tensor([0]),), mpamp.tensor(1))
    with pytest.raises(IndexError, match=r"only integers, slices .* valid indices \(got float\)"):
        x[1.5]
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        x[["a"]]
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):
        x[[[0, 1], [2]], ]
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        x.index_put_(mpamp.tensor([0]), mpamp.tensor(1.0))
    with pytest.raises(TypeError, match="expected Tensor as element 0"):
        x.index_put_(([0],), mpamp.tensor(1.0))
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1, [0]]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., [0], ...]


def test_index_backward_rechecks_indices_changed_in_place():
    x = mpamp.ones(3, requires_grad=True)
    idx = mpamp.tensor([0, 2])
    y = x[idx]
    with mpamp.no_grad():
        idx.fill_(7)                      # no_grad writes still bump the version, as torch
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    idx = mpamp.tensor([0, 2])
    y = x[idx]
    idx.data.fill_(7)                     # .data does not: backward checks the values
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z = x[mpamp.tensor([1])].sum()
        z.backward()
        z.backward()


def test_rank_limits():
    x = mpamp.zeros([1] * 16)
    assert x[mpamp.tensor([0])].shape == (1,) * 16
    with pytest.raises(IndexError, match="indexing: the result would have 17 dimensions "
                                         r"\(at most 16 are supported\)"):
        x[mpamp.tensor([[0]])]
    with pytest.raises(IndexError, match="indexing: at most 16 dimensions, counting one for "
                                         "each 0-dim bool index"):
        x[True]


def test_no_leaks_in_indexing_churn():
    import gc
    import tracemalloc
    stats = mpamp.backends.cpu.allocator_stats

    def churn():
        for _ in range(60):
            x = mpamp.randn(6, 5, requires_grad=True)
            m = mpamp.tensor(np.arange(30).reshape(6, 5) % 3 == 0)
            y = x[[0, 2, 2]].sum() + x[:, [-1]].sum() + x[m].sum() + x[1:, None, [1, 0]].sum()
            y = y + x.gather(1, mpamp.tensor([[0, 4]] * 6)).sum() + x.index_select(
                0, mpamp.tensor([5, 0])).sum() + x.scatter(1, mpamp.tensor([[1]] * 6), 2.0).sum()
            y = y + sum(p.sum() for p in x.split(2, 1)) + sum(r.sum() for r in x.unbind())
            y = y + x.flip([0]).sum() + x.index_put((mpamp.tensor([1]),), mpamp.ones(5)).sum()
            y = y + x.index_add(0, mpamp.tensor([1]), mpamp.ones(1, 5)).sum()
            y.backward()
            z = x.detach().clone()
            z[m] = -1.0
            z[[0, 1], 1:] = mpamp.ones(4)
            z.index_put_((mpamp.tensor([0, 0]),), mpamp.ones(5), accumulate=True)
            mpamp.nonzero(z, as_tuple=True)
            for bad in (lambda: z[[9]], lambda: z[mpamp.tensor([True])],
                        lambda: z.gather(1, mpamp.tensor([[7]])),
                        lambda: z.split([1, 1]), lambda: z[[0, 1], [0, 1, 2]]):
                try:
                    bad()
                except (IndexError, RuntimeError):
                    pass
    churn()
    gc.collect()
    tracemalloc.start()
    snap1 = tracemalloc.take_snapshot()
    base = stats()["in_use_bytes"]
    churn()
    gc.collect()
    snap2 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in snap2.compare_to(snap1, "filename"))
    assert growth < 20_000, growth
    assert stats()["in_use_bytes"] == base


def test_numpy_keys_follow_torch():
    torch = pytest.importorskip("torch")
    a = np.arange(24).reshape(2, 3, 4)
    x, tx = mpamp.tensor(a), torch.tensor(a)
    for key in (np.array([1, 0]), ([0, 1], slice(None), np.array(1)), np.array(1),
                (np.int64(1), [2, 0]), np.array([True, False]), (slice(None), np.array([[0],
                                                                                      [2]]))):
        ref = tx[key]
        got = x[key]
        assert tuple(got.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
    y = mpamp.zeros(3)
    y[np.array([2, 0])] = 1.0
    assert y.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="expected a number, got list"):
        y[[0, 1]] = [1.0, 2.0]


def test_bool_scalar_keys_backward(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    x = mpamp.tensor(a, requires_grad=True)
    y = x[True]
    assert y.shape == (1, 2, 3)
    y.backward(mpamp.ones(1, 2, 3) * 2)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
    x.grad = None
    y = x[[0, 1, 1], True, [2, 0, 0]]
    assert y.shape == (3,)
    y.backward(mpamp.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 1], [5, 0, 0]])
    x.grad = None
    x[False].sum().backward()
    assert not x.grad.numpy().any()
    v = mpamp.tensor([4.0], requires_grad=True)
    z = mpamp.zeros(2, 3).index_put((mpamp.tensor([True, False]), mpamp.tensor(True)), v)
    assert z.tolist() == [[4, 4, 4], [0, 0, 0]]
    z.sum().backward()
    assert v.grad.tolist() == [3.0]
