"""Shape ops: split/chunk/unbind/tensor_split/narrow (views, one node per split), repeat,
repeat_interleave, roll, flip(lr/ud), movedim, swapaxes, the function forms of the view methods,
linspace, eye, Tensor.int(), Tensor.new_*, masked_select, nonzero/argwhere/where(condition):
values against NumPy in every dtype, non-contiguous inputs, backward against NumPy, torch's
errors, and torch's results where torch is installed."""
import numpy as np
import pytest

import mpamp
from conftest import to_numpy

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


# ---- split and friends ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_split_chunk_unbind_values(dtype, rng):
    t, a = make(dtype, (5, 7), rng)
    for pieces, ref in ((t.split(3, 1), np.split(a, [3, 6], 1)),
                        (mpamp.split(t, [2, 0, 5], dim=1), np.split(a, [2, 2], 1)),
                        (t.split((4, 1)), np.split(a, [4], 0)),
                        (t.chunk(3, 1), np.split(a, [3, 6], 1)),
                        (mpamp.chunk(t, 2), np.split(a, [3], 0)),
                        (t.unbind(1), [a[:, i] for i in range(7)]),
                        (mpamp.unbind(t), list(a)),
                        (t.t().split(2), np.split(a.T, [2, 4, 6], 0)),
                        (t[:, ::2].chunk(2, -1), np.split(a[:, ::2], [2], 1))):
        assert isinstance(pieces, tuple) and len(pieces) == len(ref)
        for p, r in zip(pieces, ref):
            np.testing.assert_array_equal(to_numpy(p), r)
    with mpamp.no_grad():
        t.split(3, 1)[1].fill_(0)        # the pieces are views of t
    assert not to_numpy(t)[:, 3:6].any()


def test_split_edge_cases():
    assert [p.shape for p in mpamp.zeros(0, 3).split(2)] == [(0, 3)]
    assert [p.shape for p in mpamp.zeros(0, 3).split(0)] == [(0, 3)]
    assert [p.shape for p in mpamp.zeros(5).chunk(4)] == [(2,), (2,), (1,)]
    assert [p.shape for p in mpamp.zeros(0).chunk(3)] == [(0,), (0,), (0,)]
    assert mpamp.zeros(0, 2).unbind() == ()
    assert [p.shape for p in mpamp.zeros(3, 4).tensor_split(3, 1)] == [(3, 2), (3, 1), (3, 1)]
    assert [p.shape for p in mpamp.zeros(3, 4).tensor_split([1, 5], 1)] == [(3, 1), (3, 3),
                                                                           (3, 0)]
    assert [p.shape for p in mpamp.zeros(3, 4).tensor_split([3, 1], 1)] == [(3, 3), (3, 0),
                                                                           (3, 3)]
    assert [p.shape for p in mpamp.tensor_split(mpamp.zeros(4), mpamp.tensor(2))] == [(2,),
                                                                                     (2,)]


def test_split_backward_is_one_node_and_fills_unused_pieces(rng):
    a = rng.standard_normal((4, 9)).astype(np.float32)
    x = mpamp.tensor(a, requires_grad=True)
    q, k, v = x.split(3, dim=1)
    assert q.grad_fn == k.grad_fn == v.grad_fn and q.grad_fn.name() == "SplitBackward0"
    assert x.split([4, 5], 1)[0].grad_fn.name() == "SplitWithSizesBackward0"
    (q * 2 + v).sum().backward()                 # k unused: its part of the gradient is zero
    ref = np.zeros_like(a)
    ref[:, :3], ref[:, 6:] = 2, 1
    np.testing.assert_array_equal(x.grad.cpu().numpy(), ref)
    x.grad = None
    rows = x.unbind(0)
    assert rows[0].grad_fn.name() == "UnbindBackward0"
    (rows[1] * 3).sum().backward()
    ref = np.zeros_like(a)
    ref[1] = 3
    np.testing.assert_array_equal(x.grad.cpu().numpy(), ref)
    h = mpamp.tensor(a).half().requires_grad_(True)
    h.chunk(2, 1)[1].float().sum().backward()
    assert h.grad.dtype == mpamp.float16 and h.grad.float().sum().item() == 4 * 4


def test_narrow(rng):
    t, a = make("float32", (3, 6), rng)
    np.testing.assert_array_equal(t.narrow(1, 2, 3).cpu().numpy(), a[:, 2:5])
    np.testing.assert_array_equal(mpamp.narrow(t, -1, -2, 2).cpu().numpy(), a[:, 4:6])
    np.testing.assert_array_equal(t.narrow(0, mpamp.tensor(1), 2).cpu().numpy(), a[1:3])
    x = mpamp.tensor(a, requires_grad=True)
    y = x.narrow(1, 1, 2)
    assert y.grad_fn.name() == "SliceBackward0"
    y.sum().backward()
    assert x.grad.cpu().numpy()[:, 1:3].all() and x.grad.sum().item() == 6


# ---- copies ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_and_repeat_interleave_values(dtype, rng):
    t, a = make(dtype, (2, 3), rng)
    np.testing.assert_array_equal(to_numpy(t.repeat(2, 1, 3)), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(to_numpy(t.repeat((1, 1))), a)
    np.testing.assert_array_equal(to_numpy(t.t().repeat(2, 2)), np.tile(a.T, (2, 2)))
    assert t.repeat(0, 2).shape == (0, 6)
    np.testing.assert_array_equal(to_numpy(t.repeat_interleave(2)), np.repeat(a, 2))
    np.testing.assert_array_equal(to_numpy(mpamp.repeat_interleave(t, 3, dim=1)),
                                  np.repeat(a, 3, 1))
    r = np.array([1, 0, 2])
    np.testing.assert_array_equal(to_numpy(t.repeat_interleave(mpamp.tensor(r), dim=1)),
                                  np.repeat(a, r, 1))
    np.testing.assert_array_equal(to_numpy(t.repeat_interleave(mpamp.tensor([2]), dim=0)),
                                  np.repeat(a, 2, 0))
    np.testing.assert_array_equal(to_numpy(t.repeat_interleave(mpamp.tensor(2), dim=-1,
                                                               output_size=6)),
                                  np.repeat(a, 2, 1))


def test_repeat_interleave_index_form_and_backward(rng):
    assert mpamp.repeat_interleave(mpamp.tensor([1, 2, 3])).tolist() == [0, 1, 1, 2, 2, 2]
    assert mpamp.tensor([2, 0, 1]).repeat_interleave().tolist() == [0, 0, 2]
    assert mpamp.repeat_interleave(mpamp.tensor([], dtype=mpamp.int64)).shape == (0,)
    a = rng.standard_normal((3, 2)).astype(np.float32)
    x = mpamp.tensor(a, requires_grad=True)
    x.repeat_interleave(mpamp.tensor([3, 0, 1]), dim=0).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.array([[3, 3], [0, 0], [1, 1]]))
    x.grad = None
    (x.repeat(2, 3) * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full((3, 2), 12.0))
    x.grad = None
    x.repeat_interleave(2, dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full((3, 2), 2.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_roll_and_flip_values(dtype, rng):
    t, a = make(dtype, (3, 4, 5), rng)
    for args in ((1, 1), (-2, 2), ((1, -1), (0, 2)), (7, 1), (0, 0)):
        np.testing.assert_array_equal(to_numpy(t.roll(*args)), np.roll(a, *args))
    np.testing.assert_array_equal(to_numpy(mpamp.roll(t, 3)), np.roll(a, 3))
    for dims in ([0], [2], [0, 2], [0, 1, 2], [-1], []):
        np.testing.assert_array_equal(to_numpy(mpamp.flip(t, dims)), np.flip(a, dims))
        np.testing.assert_array_equal(to_numpy(t.transpose(0, 2).flip(dims)),
                                      np.flip(a.transpose(2, 1, 0), dims))
        np.testing.assert_array_equal(to_numpy(t[:, ::2].flip(dims)), np.flip(a[:, ::2], dims))
    np.testing.assert_array_equal(to_numpy(t.flip(0, 1)), np.flip(a, (0, 1)))
    np.testing.assert_array_equal(to_numpy(t[0].fliplr()), np.fliplr(a[0]))
    np.testing.assert_array_equal(to_numpy(mpamp.flipud(t)), np.flipud(a))
    f = t.flip([1])
    assert f.is_contiguous() and all(s > 0 for s in f.stride())   # a copy, no negative strides
    assert mpamp.zeros(0, 3).flip([0, 1]).shape == (0, 3)
    assert mpamp.zeros(0, 3).roll(1, 0).shape == (0, 3)
    assert mpamp.tensor(2.0).flip([0]).item() == 2.0


def test_roll_and_flip_backward(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    g = rng.standard_normal((3, 4)).astype(np.float32)
    x = mpamp.tensor(a, requires_grad=True)
    y = x.flip([1])
    assert y.grad_fn.name() == "FlipBackward0"
    y.backward(mpamp.tensor(g))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.flip(g, 1))
    x.grad = None
    x.roll((1, 2), (0, 1)).backward(mpamp.tensor(g))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.roll(g, (-1, -2), (0, 1)))


def test_movedim_swapaxes_and_function_forms(rng):
    t, a = make("float32", (2, 3, 4), rng)
    np.testing.assert_array_equal(t.movedim(0, 2).cpu().numpy(), np.moveaxis(a, 0, 2))
    np.testing.assert_array_equal(mpamp.movedim(t, (0, 1), (2, 0)).cpu().numpy(),
                                  np.moveaxis(a, (0, 1), (2, 0)))
    np.testing.assert_array_equal(mpamp.moveaxis(t, -1, 0).cpu().numpy(), np.moveaxis(a, -1, 0))
    np.testing.assert_array_equal(t.swapaxes(0, 2).cpu().numpy(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(mpamp.swapdims(t, 1, 2).cpu().numpy(), a.swapaxes(1, 2))
    np.testing.assert_array_equal(mpamp.flatten(t, 1).cpu().numpy(), a.reshape(2, 12))
    np.testing.assert_array_equal(mpamp.reshape(t, (4, -1)).cpu().numpy(), a.reshape(4, 6))
    np.testing.assert_array_equal(mpamp.transpose(t, 0, 1).cpu().numpy(), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(mpamp.permute(t, (2, 0, 1)).cpu().numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(mpamp.unsqueeze(t, 1).cpu().numpy(), a[:, None])
    s = mpamp.zeros(1, 3, 1)
    assert mpamp.squeeze(s).shape == (3,) and mpamp.squeeze(s, 0).shape == (3, 1)
    assert mpamp.squeeze(s, (0, 2)).shape == (3,) and mpamp.squeeze(s, (-1,)).shape == (1, 3)
    c = mpamp.clone(t, memory_format=None)
    c.fill_(0)
    assert to_numpy(t).tolist() == a.tolist()
    np.testing.assert_array_equal(mpamp.t(t[0]).cpu().numpy(), a[0].T)


# ---- factories and new_* ----

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_linspace(dtype):
    for start, end, steps in ((0, 1, 5), (-3.5, 10, 7), (3, 10, 1), (3, 10, 0), (0, 10, 4),
                              (1, -1, 6)):
        out = mpamp.linspace(start, end, steps, dtype=getattr(mpamp, dtype))
        assert out.dtype == getattr(mpamp, dtype) and out.shape == (steps,)
        ref = np.linspace(start, end, steps)
        if dtype == "int64":        # the ends are converted to int64 first, as torch
            ref = np.linspace(np.trunc(start), np.trunc(end), steps)
            np.testing.assert_array_equal(out.cpu().numpy(), ref.astype(np.int64))
        else:
            np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-2 if dtype != "float32"
                                       else 1e-6, atol=1e-6)
    assert mpamp.linspace(mpamp.tensor(0.0), mpamp.tensor(1.0), 3).tolist() == [0, 0.5, 1]
    assert mpamp.linspace(0, 1, 3, requires_grad=True).requires_grad


def test_linspace_matches_torch_bits():
    torch = pytest.importorskip("torch")
    for start, end, steps in ((0, 1, 7), (-3.3, 10.1, 11), (0, 10, 5), (1e-3, 7, 100),
                              (1, -1, 6), (-2.7, 0.3, 33), (5, 5, 3), (2, 9, 1)):
        for dt in ("float32", "float16", "bfloat16", "int64"):
            ref = torch.linspace(start, end, steps, dtype=getattr(torch, dt))
            ref = (ref.float() if dt == "bfloat16" else ref).cpu().numpy()
            got = mpamp.linspace(start, end, steps, dtype=getattr(mpamp, dt))
            np.testing.assert_array_equal(to_numpy(got), ref.astype(to_numpy(got).dtype))


def test_eye_int_and_new_factories():
    np.testing.assert_array_equal(mpamp.eye(3).cpu().numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(mpamp.eye(2, 4, dtype=mpamp.bool).cpu().numpy(), np.eye(2, 4) > 0)
    assert mpamp.eye(0).shape == (0, 0) and mpamp.eye(3, 0).shape == (3, 0)
    x = mpamp.ones(2, dtype=mpamp.float16)
    assert x.int().dtype == mpamp.int64 and x.int().tolist() == [1, 1]   # no int32 in mpamp
    z = x.new_zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == mpamp.float16 and z.sum().item() == 0
    assert x.new_zeros((4,)).shape == (4,)
    assert x.new_ones(2, dtype=mpamp.int64).tolist() == [1, 1]
    f = x.new_full((2,), 3)
    assert f.dtype == mpamp.float16 and f.tolist() == [3.0, 3.0]
    assert x.new_empty(3).shape == (3,) and x.new_empty(3).dtype == mpamp.float16
    nt = x.new_tensor([1, 2])
    assert nt.dtype == mpamp.float16 and nt.tolist() == [1.0, 2.0]
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        assert x.new_tensor(mpamp.tensor([5])).dtype == mpamp.float16
    assert x.new_zeros(2, requires_grad=True).requires_grad


# ---- selection ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select_nonzero_where(dtype, rng):
    t, a = make(dtype, (3, 4), rng)
    m = rng.random((3, 4)) > 0.4
    np.testing.assert_array_equal(to_numpy(mpamp.masked_select(t, mpamp.tensor(m))), a[m])
    row = np.array([True, False, True, True])
    np.testing.assert_array_equal(to_numpy(t.masked_select(mpamp.tensor(row))),
                                  a[np.broadcast_to(row, (3, 4))])
    np.testing.assert_array_equal(mpamp.nonzero(t).cpu().numpy(), np.argwhere(a))
    np.testing.assert_array_equal(t.t().nonzero().cpu().numpy(), np.argwhere(a.T))
    np.testing.assert_array_equal(mpamp.argwhere(t).cpu().numpy(), np.argwhere(a))
    for got, ref in zip(mpamp.nonzero(t, as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.cpu().numpy(), ref)
    for got, ref in zip(mpamp.where(mpamp.tensor(m)), np.nonzero(m)):
        np.testing.assert_array_equal(got.cpu().numpy(), ref)


def test_nonzero_special_values_and_0d():
    x = mpamp.tensor([0.0, -0.0, float("nan"), 1e-45, -2.0])
    assert mpamp.nonzero(x).tolist() == [[2], [3], [4]]
    assert mpamp.nonzero(x.half()).tolist() == [[2], [4]]      # 1e-45 underflows in fp16
    assert mpamp.nonzero(mpamp.tensor(1.0)).shape == (1, 0)
    assert [t.tolist() for t in mpamp.tensor(3).nonzero(as_tuple=True)] == [[0]]
    assert [t.shape for t in mpamp.nonzero(mpamp.tensor(0.0), as_tuple=True)] == [(0,)]
    assert mpamp.nonzero(mpamp.zeros(0, 3)).shape == (0, 2)


def test_masked_select_backward(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    m = np.array([True, False, False, True])
    x = mpamp.tensor(a, requires_grad=True)
    y = mpamp.masked_select(x, mpamp.tensor(m))
    g = rng.standard_normal(y.shape[0]).astype(np.float32)
    y.backward(mpamp.tensor(g))
    ref = np.zeros_like(a)
    ref[np.broadcast_to(m, (3, 4))] = g
    np.testing.assert_array_equal(x.grad.cpu().numpy(), ref)
    v = mpamp.tensor(a[0], requires_grad=True)      # broadcast input: gradients sum up
    mpamp.masked_select(v, mpamp.ones(3, 4, dtype=mpamp.bool)).sum().backward()
    np.testing.assert_array_equal(v.grad.cpu().numpy(), np.full(4, 3.0))


def test_results_match_torch():
    torch = pytest.importorskip("torch")
    a = np.arange(24).reshape(2, 3, 4)
    x, tx = mpamp.tensor(a), torch.tensor(a)
    pairs = [
        (lambda m: m.split(2, 2), None), (lambda m: m.split([1, 2], 1), None),
        (lambda m: m.chunk(3, 2), None), (lambda m: m.unbind(1), None),
        (lambda m: m.tensor_split(3, 2), None), (lambda m: m.tensor_split([1, 3], 2), None),
        (lambda m: m.narrow(2, 1, 2), None), (lambda m: m.repeat(2, 1, 1, 2), None),
        (lambda m: m.repeat_interleave(2, dim=1), None), (lambda m: m.roll((1, -5), (0, 2)), None),
        (lambda m: m.roll(5), None), (lambda m: m.flip([0, 2]), None),
        (lambda m: m.movedim((0, 2), (1, 0)), None), (lambda m: m.swapaxes(0, 2), None),
        (lambda m: m.nonzero(), None), (lambda m: m.fliplr(), None),
    ]
    for fn, _ in pairs:
        got, ref = fn(x), fn(tx)
        got, ref = (got if isinstance(got, tuple) else (got,)), (ref if isinstance(ref, tuple)
                                                                else (ref,))
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g.cpu().numpy(), r.cpu().numpy())


# ---- errors ----

def test_shape_op_errors():
    x = mpamp.zeros(3, 4)
    cases = [
        (lambda: x.split(0, 1), RuntimeError, "split_size can only be 0 if dimension size is 0, "
         "but got dimension size of 4"),
        (lambda: x.split(-1, 1), RuntimeError, "split expects split_size be non-negative, but "
         "got split_size=-1"),
        (lambda: x.split([1, 2], 1), RuntimeError, r"split_with_sizes expects split_sizes to "
         r"sum exactly to 4 \(input tensor's size at dimension 1\), but got "
         r"split_sizes=\[1, 2\]"),
        (lambda: x.split([5, -1], 1), RuntimeError, r"split_with_sizes expects split_sizes have "
         r"only non-negative entries, but got split_sizes=\[5, -1\]"),
        (lambda: mpamp.tensor(1.0).split(1), RuntimeError,
         "split expects at least a 1-dimensional tensor"),
        (lambda: mpamp.split(mpamp.tensor(1.0), [1]), RuntimeError,
         "split expects at least a 1-dimensional tensor"),
        (lambda: x.split(1, 2), IndexError, "Dimension out of range"),
        (lambda: x.split("a"), TypeError, "must be int"),
        (lambda: x.chunk(0, 1), RuntimeError, "chunk expects `chunks` to be greater than 0, "
         "got: 0"),
        (lambda: mpamp.tensor(1.0).unbind(), IndexError, "Dimension specified as 0 but tensor "
         "has no dimensions"),
        (lambda: x.tensor_split(0, 1), RuntimeError, "number of sections must be larger than 0, "
         "got 0"),
        (lambda: x.narrow(1, 3, 2), RuntimeError, r"start \(3\) \+ length \(2\) exceeds "
         r"dimension size \(4\)."),
        (lambda: x.narrow(1, 5, 0), IndexError, r"start out of range \(expected to be in range "
         r"of \[-4, 4\], but got 5\)"),
        (lambda: x.narrow(1, 0, -1), RuntimeError, "narrow\\(\\): length must be non-negative."),
        (lambda: mpamp.tensor(1.0).narrow(0, 0, 1), RuntimeError, "narrow\\(\\) cannot be "
         "applied to a 0-dim tensor."),
        (lambda: x.repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be "
         "smaller than number of dimensions of tensor"),
        (lambda: x.repeat(2, -1), RuntimeError, r"Trying to create tensor with negative "
         r"dimension -4: \[6, -4\]"),
        (lambda: x.repeat_interleave(mpamp.tensor([1, 0]), dim=0), RuntimeError,
         r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2 "
         r"and input.size\(0\) = 3"),
        (lambda: x.repeat_interleave(mpamp.tensor([1, -1, 1]), dim=0), RuntimeError,
         "repeats can not be negative"),
        (lambda: x.repeat_interleave(-1), RuntimeError, "Repeats must be non-negative"),
        (lambda: x.repeat_interleave(mpamp.tensor([1, 0, 2]), dim=0, output_size=4),
         RuntimeError, "allocated size does not match required size"),
        (lambda: x.repeat_interleave(2, dim=0, output_size=4), RuntimeError,
         "allocated size does not match required size"),
        (lambda: mpamp.repeat_interleave(mpamp.tensor([[1, 2]])), RuntimeError,
         "repeat_interleave only accept 1D vector as repeat"),
        (lambda: x.repeat_interleave(mpamp.tensor([1.0, 0, 2]), dim=0), TypeError,
         "\"repeat_interleave_cpu\" not implemented for 'Float'"),
        (lambda: mpamp.repeat_interleave(mpamp.tensor([2 ** 62, 2 ** 62])), RuntimeError,
         "the total size overflows int64"),
        (lambda: x.roll((1, -1), (0,)), RuntimeError, "shifts and dimensions must align. "
         "shifts: 2, dims:1"),
        (lambda: x.roll((1, 2)), RuntimeError, "shifts and dimensions must align. shifts: 2, "
         "dims:0"),
        (lambda: x.flip([0, 0]), RuntimeError, "dim 0 appears multiple times in the list of "
         "dims"),
        (lambda: mpamp.flip(x, 0), TypeError, "flip\\(\\): argument 'dims' \\(position 2\\) must "
         "be tuple of ints, not int"),
        (lambda: x.flip(2), IndexError, "Dimension out of range"),
        (lambda: mpamp.zeros(3).fliplr(), RuntimeError, "Input must be >= 2-d."),
        (lambda: mpamp.tensor(1.0).flipud(), RuntimeError, "Input must be >= 1-d."),
        (lambda: x.movedim((0, 1), (1,)), RuntimeError, r"movedim: Invalid source or "
         r"destination dims: source \(\[0, 1\] dims\) should contain the same number of dims as "
         r"destination \(\[1\] dims\)"),
        (lambda: x.movedim((0, 0), (1, 0)), RuntimeError, r"movedim: repeated dim in `source` "
         r"\(\[0, 0\]\)"),
        (lambda: mpamp.linspace(0, 1, -1), RuntimeError, "number of steps must be "
         "non-negative"),
        (lambda: mpamp.linspace("a", 1, 2), TypeError, "must be Number"),
        (lambda: mpamp.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
        (lambda: mpamp.eye(2, -1), RuntimeError, "m must be greater or equal to 0, got -1"),
        (lambda: mpamp.masked_select(x, mpamp.tensor([True, False, True])), RuntimeError,
         r"The size of tensor a \(4\) must match the size of tensor b \(3\) at non-singleton "
         r"dimension 1"),
        (lambda: mpamp.masked_select(x, mpamp.tensor([1, 0, 1, 1])), RuntimeError,
         "masked_select: expected BoolTensor for mask"),
        (lambda: mpamp.nonzero([1]), TypeError, "must be Tensor"),
        (lambda: mpamp.split([1], 1), TypeError, "must be Tensor"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "bool", "uint8"])
@pytest.mark.parametrize("inner", [1, 3, 5, 16, 17, 64, 130])
def test_contiguous_of_head_transposes_matches_numpy(dtype, inner):
    # the copy kernel's short-row path (inner runs up to 512 bytes, unit stride on both
    # sides) and the general walk beyond it: every dtype size, odd row lengths, 4-D views
    rng = np.random.default_rng(inner)
    a = (rng.standard_normal((3, 4, 5, inner)) * 50).astype(np.float32)
    x = mpamp.tensor(a).to(getattr(mpamp, dtype))
    ref = to_numpy(x)
    for perm in ((0, 2, 1, 3), (2, 0, 1, 3), (1, 0, 2, 3)):
        y = x.permute(*perm).contiguous()
        assert y.is_contiguous()
        np.testing.assert_array_equal(to_numpy(y), np.ascontiguousarray(ref.transpose(perm)))
    s = x[:, 1:3, ::2, :].contiguous()          # a slice: outer strides that skip
    np.testing.assert_array_equal(to_numpy(s), ref[:, 1:3, ::2, :])
