"""masked_fill / masked_fill_ and tril / triu / tril_ / triu_: every dtype against NumPy,
broadcast (transformer-shaped) masks, non-contiguous inputs, empty tensors, forward and
backward (the value's gradient too), in-place forms, torch's error types and messages, and
torch itself when installed. Bool masks are built with NumPy (comparisons are another part)."""
import numpy as np
import pytest

import mpamp
from conftest import to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]


def make(rng, shape, dtype):
    if dtype == "bool":
        return mpamp.tensor(rng.random(shape) > 0.5)
    if dtype == "int64":
        return mpamp.tensor(rng.integers(-50, 50, size=shape))
    return mpamp.tensor(rng.normal(size=shape).astype(np.float32)).to(dtype)


def np_value(value, dtype):
    """value as NumPy stores it in `dtype` (through mpamp's own rounding for fp16/bf16)."""
    if dtype in ("float16", "bfloat16"):
        return to_numpy(mpamp.tensor([float(value)]).to(dtype))[0]
    return np.array(value).astype({"float32": np.float32, "int64": np.int64,
                                   "bool": np.bool_}[dtype])


# ---- masked_fill: values and dtypes ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [1.5, -3, True, 0, float("-inf")])
def test_masked_fill_every_dtype(dtype, value, rng):
    if dtype == "int64" and value == float("-inf"):
        pytest.skip("tested in test_masked_fill_overflow")
    x = make(rng, (4, 5), dtype)
    mask = rng.random((4, 5)) > 0.5
    out = x.masked_fill(mpamp.tensor(mask), value)
    assert out.dtype is x.dtype and tuple(out.shape) == (4, 5)
    want = np.where(mask, np_value(value, dtype), to_numpy(x))
    np.testing.assert_array_equal(to_numpy(out), want)
    np.testing.assert_array_equal(to_numpy(x), to_numpy(x))   # input untouched
    np.testing.assert_array_equal(to_numpy(mpamp.masked_fill(x, mpamp.tensor(mask), value)),
                                  want)


def test_masked_fill_value_conversions():
    m = mpamp.tensor([True, False, True])
    assert mpamp.zeros(3, dtype=mpamp.int64).masked_fill(m, 1.7).tolist() == [1, 0, 1]
    assert mpamp.zeros(3, dtype=mpamp.int64).masked_fill(m, -1.7).tolist() == [-1, 0, -1]
    assert mpamp.zeros(3, dtype=mpamp.int64).masked_fill(m, 2 ** 62).tolist()[0] == 2 ** 62
    assert mpamp.zeros(3, dtype=mpamp.bool).masked_fill(m, 0.5).tolist() == [True, False, True]
    assert mpamp.ones(3, dtype=mpamp.bool).masked_fill(m, 0).tolist() == [False, True, False]
    half = mpamp.zeros(3, dtype=mpamp.float16).masked_fill(m, float("-inf"))
    assert half.float().tolist()[0] == float("-inf")
    assert np.isnan(mpamp.zeros(3).masked_fill(m, float("nan")).cpu().numpy()[0])
    assert mpamp.zeros(3).masked_fill(m, np.float32(2.5)).tolist() == [2.5, 0.0, 2.5]
    out = mpamp.zeros(3, dtype=mpamp.int64).masked_fill(m, mpamp.tensor(2.5))
    assert out.tolist() == [2, 0, 2]
    out = mpamp.zeros(3).masked_fill(m, mpamp.tensor(True))
    assert out.tolist() == [1.0, 0.0, 1.0]
    out = mpamp.zeros(3, dtype=mpamp.bfloat16).masked_fill(m, mpamp.tensor(1.0))
    assert out.dtype is mpamp.bfloat16 and out.float().tolist() == [1.0, 0.0, 1.0]


# ---- broadcasting and layouts ----

def test_transformer_shaped_mask(rng):
    """A (1, 1, T, T) causal mask against (B, H, T, T) scores, as nanoGPT's fallback."""
    B, H, T = 3, 4, 67
    att = make(rng, (B, H, T, T), "float32")
    above = ~np.tril(np.ones((T, T), bool))
    out = att.masked_fill(mpamp.tensor(above[None, None]), float("-inf"))
    want = np.where(above, -np.inf, att.cpu().numpy())
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def test_mask_broadcasts_the_input_out_of_place(rng):
    x = make(rng, (2, 3), "float32")
    mask = rng.random((4, 2, 3)) > 0.5
    out = x.masked_fill(mpamp.tensor(mask), 7.0)
    assert tuple(out.shape) == (4, 2, 3)
    np.testing.assert_array_equal(out.cpu().numpy(), np.where(mask, 7.0, x.cpu().numpy()))
    s = mpamp.tensor(2.0).masked_fill(mpamp.tensor([True, False, True]), 1)
    assert s.tolist() == [1.0, 2.0, 1.0]
    assert mpamp.zeros(()).masked_fill(mpamp.tensor(True), 1).tolist() == 1.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_inputs_and_masks(dtype, rng):
    base = make(rng, (6, 8, 5), dtype)
    xs = [base.transpose(0, 2), base[::2, 1::3], make(rng, (1, 8, 1), dtype).expand(6, 8, 5)]
    for x in xs:
        mfull = rng.random((x.shape[1], x.shape[0])) > 0.5
        mask = mpamp.tensor(mfull).t()                       # a transposed mask
        want = np.where(mfull.T[..., None], np_value(-2, dtype), to_numpy(x)) \
            if x.ndim == 3 else None
        out = x.masked_fill(mask.unsqueeze(-1), -2)
        np.testing.assert_array_equal(to_numpy(out), want)


def test_empty(rng):
    x = mpamp.zeros(0, 3)
    out = x.masked_fill(mpamp.tensor(np.array([True, False, True])), 1)
    assert tuple(out.shape) == (0, 3)
    assert tuple(mpamp.zeros(2, 0).masked_fill(mpamp.zeros(2, 0, dtype=mpamp.bool), 1).shape) \
        == (2, 0)


def test_large_fill_is_split_over_threads_with_the_same_result(rng):
    x = make(rng, (8, 4, 64, 130), "float32")
    mask = mpamp.tensor(rng.random((1, 4, 64, 1)) > 0.5)
    before = mpamp.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            mpamp.set_num_threads(n)
            outs.append(x.masked_fill(mask, 3.0).cpu().numpy())
    finally:
        mpamp.set_num_threads(before)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], np.where(mask.cpu().numpy(), 3.0, x.cpu().numpy()))


# ---- autograd ----

def test_backward_zeroes_masked_positions_and_reduces_broadcast_input(rng):
    xn = rng.normal(size=(3,)).astype(np.float32)
    x = mpamp.tensor(xn, requires_grad=True)
    mask = rng.random((2, 3)) > 0.5
    y = x.masked_fill(mpamp.tensor(mask), 5.0)
    assert y.grad_fn.name() == "MaskedFillBackward0"
    g = rng.normal(size=(2, 3)).astype(np.float32)
    y.backward(mpamp.tensor(g))
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(mask, 0, g).sum(0), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_value_tensor_gets_the_masked_sum(dtype, rng):
    x = mpamp.tensor(rng.normal(size=(2, 3)).astype(np.float32)).to(dtype).requires_grad_()
    v = mpamp.tensor(2.0, requires_grad=True)
    mask = np.array([True, False, True])
    y = x.masked_fill(mpamp.tensor(mask), v)
    assert y.grad_fn.name() == "MaskedFillBackward1" and y.dtype is x.dtype
    g = rng.normal(size=(2, 3)).astype(np.float32)
    y.backward(mpamp.tensor(g).to(dtype))
    gr = to_numpy(mpamp.tensor(g).to(dtype))
    np.testing.assert_allclose(v.grad.item(), (gr * mask).sum(), rtol=1e-5)
    np.testing.assert_array_equal(to_numpy(x.grad), np.where(mask, 0, gr))
    w = mpamp.tensor(1.5, requires_grad=True)                # value only: still recorded
    z = mpamp.zeros(3).masked_fill(mpamp.tensor(np.ones((2, 3), bool)), w)
    z.sum().backward()
    assert z.requires_grad and w.grad.item() == 6.0


def test_backward_twice_is_refused():
    x = mpamp.randn(3, requires_grad=True)
    y = x.masked_fill(mpamp.tensor([True, False, True]), 0.0)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.sum().backward()


def test_no_grad_and_integer_outputs():
    x = mpamp.randn(3, requires_grad=True)
    with mpamp.no_grad():
        assert x.masked_fill(mpamp.tensor([True, False, True]), 0).grad_fn is None
    assert mpamp.zeros(3, dtype=mpamp.int64).masked_fill(mpamp.tensor([True] * 3),
                                                         1).grad_fn is None


# ---- in place ----

def test_masked_fill_in_place(rng):
    x = make(rng, (3, 4), "float32")
    ref = x.cpu().numpy().copy()
    mask = rng.random((1, 4)) > 0.5
    assert x.masked_fill_(mpamp.tensor(mask), value=-1.0) is x
    np.testing.assert_array_equal(x.cpu().numpy(), np.where(mask, -1.0, ref))
    base = mpamp.zeros(4, 6)
    base[:, ::2].masked_fill_(mpamp.tensor(np.array([True, False, True])), 9)   # a view
    assert base.cpu().numpy()[:, 0].tolist() == [9.0] * 4 and base.cpu().numpy()[:, 2].sum() == 0
    assert base.cpu().numpy()[:, 4].tolist() == [9.0] * 4
    ints = mpamp.zeros(3, dtype=mpamp.int64)
    ints.masked_fill_(mpamp.tensor([True, False, False]), 2.9)
    assert ints.tolist() == [2, 0, 0]


def test_in_place_refusals():
    leaf = mpamp.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        leaf.masked_fill_(mpamp.tensor([True, False, True]), 0)
    with mpamp.no_grad():
        leaf.masked_fill_(mpamp.tensor([True, False, True]), 0)
    assert leaf.tolist()[0] == 0.0
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 3\] doesn't match the "
                                           r"broadcast shape \[4, 2, 3\]"):
        mpamp.zeros(2, 3).masked_fill_(mpamp.ones(4, 2, 3, dtype=mpamp.bool), 1.5)


# ---- masked_fill errors ----

def test_masked_fill_errors():
    x, m = mpamp.zeros(2, 3), mpamp.tensor([True, False, True])
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype float"):
        x.masked_fill(m.float(), 1.5)
    with pytest.raises(RuntimeError, match="but got mask with dtype long int"):
        x.masked_fill(m.long(), 1.5)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports a 0-dimensional value "
                                           r"tensor, but got tensor with 1 dimension\(s\)."):
        x.masked_fill(m, mpamp.tensor([1.0]))
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        x.masked_fill(mpamp.ones(3, 3, dtype=mpamp.bool), 1.5)
    for bad in ("a", None, 1 + 2j, [1.0]):
        with pytest.raises(TypeError, match="argument 'value' must be Number or Tensor"):
            x.masked_fill(m, bad)
    with pytest.raises(TypeError, match="argument 'mask' must be Tensor, not list"):
        x.masked_fill([True, False, True], 1)
    with pytest.raises(TypeError, match="missing required argument 'value'"):
        x.masked_fill(m)
    with pytest.raises(TypeError, match="missing required argument 'mask'"):
        x.masked_fill(value=1)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'fill'"):
        x.masked_fill(m, fill=1)
    with pytest.raises(TypeError, match="got multiple values for argument 'mask'"):
        x.masked_fill(m, 1, mask=m)
    with pytest.raises(TypeError, match="takes at most 2 arguments"):
        x.masked_fill(m, 1, 2)
    with pytest.raises(TypeError, match="argument 'input' must be Tensor"):
        mpamp.masked_fill([0.0], m, 1)
    with pytest.raises(TypeError, match=r"_masked_fill\(input, mask, value\) takes 3"):
        mpamp._C._masked_fill(x, m)
    with pytest.raises(OverflowError, match="does not fit in int64"):
        x.masked_fill(m, 2 ** 70)


@pytest.mark.parametrize("dtype,value,name", [
    ("float32", 1e39, "float"), ("float16", 1e6, "c10::Half"),
    ("bfloat16", 1e39, "c10::BFloat16"), ("int64", 1e30, "int64_t"),
    ("int64", float("nan"), "int64_t"), ("int64", float("-inf"), "int64_t")])
def test_masked_fill_overflow(dtype, value, name):
    m = mpamp.tensor([True, False])
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} without "
                                           "overflow"):
        mpamp.zeros(2, dtype=getattr(mpamp, dtype)).masked_fill(m, value)
    with np.errstate(over="ignore"):
        as_fp32 = np.float32(value)
    if dtype == "int64" or np.isfinite(as_fp32):     # a 0-d value tensor is at most fp32
        with pytest.raises(RuntimeError, match="without overflow"):
            mpamp.zeros(2, dtype=getattr(mpamp, dtype)).masked_fill(m, mpamp.tensor(float(as_fp32)))


# ---- tril / triu ----

def np_tri(x, k, upper):
    return np.triu(x, k) if upper else np.tril(x, k)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("k", [-5, -1, 0, 1, 3, 10 ** 15, -(10 ** 15)])
def test_triangle_every_dtype_and_diagonal(dtype, upper, k, rng):
    x = make(rng, (2, 3, 4, 6), dtype)
    fn = mpamp.triu if upper else mpamp.tril
    out = fn(x, k)
    assert out.dtype is x.dtype
    np.testing.assert_array_equal(to_numpy(out), np_tri(to_numpy(x), k, upper))
    meth = x.triu(diagonal=k) if upper else x.tril(diagonal=k)
    np.testing.assert_array_equal(to_numpy(meth), to_numpy(out))


@pytest.mark.parametrize("upper", [False, True])
def test_triangle_layouts_and_empty(upper, rng):
    base = make(rng, (5, 7, 3), "float32")
    fn = mpamp.triu if upper else mpamp.tril
    for x in (base.transpose(0, 2), base[::2, 1::2], make(rng, (1, 7), "float32").expand(4, 7),
              mpamp.zeros(0, 3), mpamp.zeros(3, 0, 2)):
        np.testing.assert_array_equal(fn(x, 1).cpu().numpy(), np_tri(x.cpu().numpy(), 1, upper))


@pytest.mark.parametrize("upper", [False, True])
def test_triangle_backward_and_in_place(upper, rng):
    x = mpamp.tensor(rng.normal(size=(2, 5, 4)).astype(np.float32), requires_grad=True)
    y = x.triu(1) if upper else x.tril(-1)
    assert y.grad_fn.name() == ("TriuBackward0" if upper else "TrilBackward0")
    g = rng.normal(size=(2, 5, 4)).astype(np.float32)
    y.backward(mpamp.tensor(g))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np_tri(g, 1 if upper else -1, upper))
    z = mpamp.tensor(rng.normal(size=(4, 4)).astype(np.float32))
    ref = z.cpu().numpy().copy()
    assert (z.triu_(2) if upper else z.tril_(diagonal=-2)) is z
    np.testing.assert_array_equal(z.cpu().numpy(), np_tri(ref, 2 if upper else -2, upper))
    w = mpamp.zeros(3, 6)
    w[:, ::2] = 1.0
    view = w[:, ::2]
    view.triu_() if upper else view.tril_()
    np.testing.assert_array_equal(w.cpu().numpy()[:, ::2], np_tri(np.ones((3, 3)), 0, upper))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.triu_() if upper else x.tril_()


def test_triangle_errors():
    for fn, name in ((mpamp.tril, "tril"), (mpamp.triu, "triu")):
        with pytest.raises(RuntimeError, match=f"{name}: input tensor must have at least 2 "
                                               "dimensions"):
            fn(mpamp.arange(3.0))
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            fn(mpamp.tensor(1.0))
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'diagonal' \(position 2\) "
                                            "must be int, not float"):
            fn(mpamp.zeros(2, 2), 1.5)
        with pytest.raises(TypeError, match="must be int, not bool"):
            fn(mpamp.zeros(2, 2), True)
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' must be Tensor"):
            fn([[1.0]])
    with pytest.raises(TypeError, match=r"argument 'diagonal' \(position 1\) must be int"):
        mpamp.zeros(2, 2).tril("1")
    with pytest.raises(TypeError, match="takes at most 1 arguments"):
        mpamp.zeros(2, 2).triu(1, 2)
    with pytest.raises(TypeError, match=r"_triangle\(input, diagonal, upper\) takes 3"):
        mpamp._C._triangle(mpamp.zeros(2, 2), 0)


# ---- against torch ----

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.normal(size=(2, 3, 5, 5)).astype(np.float32)
    mask = rng.random((1, 1, 5, 5)) > 0.5
    tx, mx = torch.tensor(x, requires_grad=True), mpamp.tensor(x, requires_grad=True)
    tv, mv = torch.tensor(0.5, requires_grad=True), mpamp.tensor(0.5, requires_grad=True)
    want = tx.masked_fill(torch.tensor(mask), tv).tril(1).triu(-1)
    got = mx.masked_fill(mpamp.tensor(mask), mv).tril(1).triu(-1)
    np.testing.assert_array_equal(got.detach().cpu().numpy(), want.detach().cpu().numpy())
    g = rng.normal(size=x.shape).astype(np.float32)
    want.backward(torch.tensor(g))
    got.backward(mpamp.tensor(g))
    np.testing.assert_allclose(mx.grad.cpu().numpy(), tx.grad.cpu().numpy(), rtol=1e-6)
    np.testing.assert_allclose(mv.grad.item(), tv.grad.item(), rtol=1e-5)
    for dt in (torch.float16, torch.bfloat16, torch.int64, torch.bool):
        t = torch.tensor(x > 0).to(dt) if dt is torch.bool else torch.tensor(x * 10).to(dt)
        m = (mpamp.from_dlpack(t, device=mpamp.get_default_device()) if dt is not torch.bfloat16
             else mpamp.tensor(x * 10).bfloat16())
        np.testing.assert_array_equal(to_numpy(m.masked_fill(mpamp.tensor(mask), 3)),
                                      t.masked_fill(torch.tensor(mask), 3).float().cpu().numpy()
                                      if dt in (torch.float16, torch.bfloat16)
                                      else t.masked_fill(torch.tensor(mask), 3).cpu().numpy())
        np.testing.assert_array_equal(to_numpy(mpamp.tril(m, -1)),
                                      torch.tril(t, -1).float().cpu().numpy()
                                      if dt in (torch.float16, torch.bfloat16)
                                      else torch.tril(t, -1).cpu().numpy())
