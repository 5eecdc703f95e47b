"""Pointwise ops forward and backward against NumPy float32, per dtype: broadcasting,
non-contiguous inputs, Python scalars, torch's type promotion, in-place and reflected forms."""
import math

import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

FLOATS = ["float32", "float16", "bfloat16"]


def rounded(a, dtype):
    """(tensor in dtype, float32 NumPy copy of its exact values)."""
    t = mpamp.tensor(np.asarray(a, np.float32)).to(getattr(mpamp, dtype))
    return t, to_numpy(t).astype(np.float32)


def check(actual, expected, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    exp = np.asarray(expected, np.float32)
    # the reference is rounded to the output dtype once, as the kernel does
    ref = to_numpy(mpamp.tensor(exp).to(getattr(mpamp, dtype)))
    np.testing.assert_allclose(to_numpy(actual), ref, rtol=rtol, atol=atol * scale)


def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(np.float32)


UNARY = {
    "neg": (lambda x: -x, lambda x: -np.ones_like(x)),
    "relu": (lambda x: np.maximum(x, 0), lambda x: (x > 0).astype(np.float32)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "tanh": (np.tanh, None),
    "exp": (np.exp, None),
    "abs": (np.abs, np.sign),
    "silu": (lambda x: x / (1 + np.exp(-x)),
             lambda x: (1 / (1 + np.exp(-x))) * (1 + x * (1 - 1 / (1 + np.exp(-x))))),
    "gelu": (lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))),
             lambda x: 0.5 * (1 + erf(x / np.sqrt(2))) + x * np.exp(-x * x / 2) /
             np.sqrt(2 * np.pi)),
}
POSITIVE = {
    "log": (np.log, lambda x: 1 / x),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: -0.5 * x ** -1.5),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(POSITIVE))
def test_unary_forward_backward(name, dtype, rng):
    fwd, grad = {**UNARY, **POSITIVE}[name]
    base = rng.uniform(0.1, 3, (5, 7)) if name in POSITIVE else rng.normal(size=(5, 7)) * 2
    x, xn = rounded(base, dtype)
    x.requires_grad_()
    y = getattr(mpamp, name)(x)
    assert y.dtype is x.dtype and y.shape == x.shape
    yn = to_numpy(y).astype(np.float32)
    check(y, fwd(xn), dtype)
    g, gn = rounded(rng.normal(size=(5, 7)), dtype)
    y.backward(g)
    assert x.grad.dtype is x.dtype
    if grad is None:                    # derivative from the (rounded) output, like torch
        d = {"sigmoid": yn * (1 - yn), "tanh": 1 - yn * yn, "exp": yn}[name]
    else:
        d = grad(xn)
    check(x.grad, gn * d, dtype, scale=4)


def test_gelu_tanh_and_bad_approximate():
    x = mpamp.tensor([-2.0, -0.5, 0.0, 0.7, 3.0])
    xn = to_numpy(x)
    inner = np.sqrt(2 / np.pi) * (xn + 0.044715 * xn ** 3)
    np.testing.assert_allclose(to_numpy(mpamp.gelu(x, approximate="tanh")),
                               0.5 * xn * (1 + np.tanh(inner)), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        x.gelu("fast")


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 1), (1, 5)), ((3, 4, 5), (5,)),
                                    ((), (2, 3)), ((6,), ())])
def test_binary_broadcast_forward_backward(name, dtype, shapes, rng):
    a, an = rounded(rng.normal(size=shapes[0]), dtype)
    b, bn = rounded(rng.uniform(0.5, 2, size=shapes[1]), dtype)
    a.requires_grad_()
    b.requires_grad_()
    y = getattr(mpamp, name)(a, b)
    out_shape = np.broadcast_shapes(shapes[0], shapes[1])
    assert y.shape == out_shape and y.dtype is a.dtype
    check(y, BINARY[name](an, bn), dtype)
    g, gn = rounded(rng.normal(size=out_shape), dtype)
    y.backward(g)
    da, db = {"add": (gn, gn), "sub": (gn, -gn), "mul": (gn * bn, gn * an),
              "div": (gn / bn, -gn * an / bn ** 2)}[name]

    def reduce_to(x, shape):
        while x.ndim > len(shape):
            x = x.sum(0)
        for i, s in enumerate(shape):
            if s == 1 and x.shape[i] != 1:
                x = x.sum(i, keepdims=True)
        return x
    # gradients summed over broadcast dims accumulate rounding: scale atol with the count
    n = max(1, int(np.prod(out_shape)) // max(1, int(np.prod(shapes[0]) or 1)))
    check(a.grad, reduce_to(da, shapes[0]), dtype, scale=4 * n)
    n = max(1, int(np.prod(out_shape)) // max(1, int(np.prod(shapes[1]) or 1)))
    check(b.grad, reduce_to(db, shapes[1]), dtype, scale=4 * n)


def test_add_sub_alpha_and_grad():
    a = mpamp.tensor([1.0, 2.0], requires_grad=True)
    b = mpamp.tensor([3.0, 5.0], requires_grad=True)
    y = mpamp.add(a, b, alpha=2)
    assert y.tolist() == [7.0, 12.0]
    (mpamp.sub(y, a, alpha=0.5)).backward(mpamp.ones(2))
    assert a.grad.tolist() == [0.5, 0.5] and b.grad.tolist() == [2.0, 2.0]
    assert a.add(b, alpha=-1).tolist() == [-2.0, -3.0]
    with pytest.raises(TypeError, match="unexpected keyword"):
        a.add(b, beta=2)


def test_non_contiguous_inputs(rng):
    base = rng.normal(size=(6, 8)).astype(np.float32)
    t = mpamp.tensor(base)
    v = t.t()[::2, 1:]                                  # strided, transposed view
    ref = base.T[::2, 1:]
    np.testing.assert_allclose(to_numpy(v * 2 + v.exp()), ref * 2 + np.exp(ref), rtol=1e-6)
    h = t.half().t()[1:, ::3]
    np.testing.assert_allclose(to_numpy(h.relu()), np.maximum(to_numpy(h), 0))


def test_type_promotion_like_torch():
    f32, f16, bf = mpamp.ones(2), mpamp.ones(2, dtype="fp16"), mpamp.ones(2, dtype="bf16")
    i64, b = mpamp.ones(2, dtype=mpamp.int64), mpamp.ones(2, dtype=mpamp.bool)
    assert (f16 + f32).dtype is mpamp.float32
    assert (bf + f16).dtype is mpamp.float32
    assert (f16 + 2.5).dtype is mpamp.float16          # Python scalars do not promote
    assert (bf * 3).dtype is mpamp.bfloat16
    assert (i64 + 2).dtype is mpamp.int64
    assert (i64 + 2.5).dtype is mpamp.float32          # int tensor + float scalar
    assert (i64 / 2).dtype is mpamp.float32            # true division
    assert (b + b).dtype is mpamp.bool and (b + 1).dtype is mpamp.int64
    assert (f16 + mpamp.tensor(2.0)).dtype is mpamp.float16   # 0-d tensors do not promote
    assert (i64 + mpamp.tensor(2.0)).dtype is mpamp.float32
    assert (mpamp.tensor(1.0, dtype="fp16") + mpamp.tensor(1.0)).dtype is mpamp.float32
    assert (i64 * 3).tolist() == [3, 3] and (mpamp.tensor([2**40]) + 1).tolist() == [2**40 + 1]
    assert mpamp.exp(i64).dtype is mpamp.float32 and mpamp.relu(i64).dtype is mpamp.int64
    assert mpamp.neg(i64).tolist() == [-1, -1]


def test_operators_and_reflected_forms():
    a = mpamp.tensor([2.0, 4.0])
    assert (1 + a).tolist() == [3, 5] and (1 - a).tolist() == [-1, -3]
    assert (8 / a).tolist() == [4, 2] and (2 * a).tolist() == [4, 8]
    assert (a ** 2).tolist() == [4, 16] and (2 ** a).tolist() == [4, 16]
    assert (-a).tolist() == [-2, -4] and abs(-a).tolist() == [2, 4] and (+a) is a
    assert (a + np.float32(1)).tolist() == [3, 5]
    assert mpamp.pow(a, 0.5).tolist() == pytest.approx([2 ** 0.5, 2.0])
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        mpamp.add(a, "x")
    with pytest.raises(TypeError):
        pow(a, 2, 3)


def test_pow_backward_both_operands():
    a = mpamp.tensor([1.5, 2.0, 0.0], requires_grad=True)
    b = mpamp.tensor([2.0, 0.5, 3.0], requires_grad=True)
    (a ** b).backward(mpamp.ones(3))
    an, bn = np.array([1.5, 2.0, 0.0], np.float32), np.array([2.0, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(to_numpy(a.grad), bn * an ** (bn - 1), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(b.grad), [1.5 ** 2 * np.log(1.5),
                                                  2 ** 0.5 * np.log(2), 0.0], rtol=1e-6)
    x = mpamp.tensor([3.0], requires_grad=True)
    (x ** 3).backward()
    assert x.grad.tolist() == [27.0]
    y = mpamp.tensor([3.0], requires_grad=True)
    (2 ** y).backward()
    assert y.grad.item() == pytest.approx(8 * np.log(2), rel=1e-6)


def test_in_place_forms():
    a = mpamp.tensor([1.0, 2.0])
    a += 1
    a *= mpamp.tensor([2.0, 3.0])
    a -= 1
    a /= 2
    assert a.tolist() == [1.5, 4.0]
    assert a.add_(1, alpha=2) is a and a.tolist() == [3.5, 6.0]
    a.relu_()
    a.neg_().abs_()
    assert a.tolist() == [3.5, 6.0]
    h = mpamp.ones(2, dtype="fp16")
    h += mpamp.ones(2)                                  # result cast back to fp16
    assert h.dtype is mpamp.float16 and h.tolist() == [2, 2]
    i = mpamp.ones(2, dtype=mpamp.int64)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        i += 0.5
    for name in ("sqrt_", "exp_", "sigmoid_", "tanh_", "log_", "rsqrt_"):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            getattr(mpamp.tensor([4, 9]), name)()       # torch refuses to truncate
    with pytest.raises(RuntimeError, match="desired output type Bool"):
        mpamp.tensor([True, False]).exp_()
    j = mpamp.tensor([-4, 9])
    assert j.relu_().tolist() == [0, 9] and j.neg_().abs_().tolist() == [0, 9]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        mpamp.ones(2).add_(mpamp.ones(3, 2))
    w = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w += 1
    with mpamp.no_grad():
        w -= 0.5                                        # optimizer-style update
    assert w.tolist() == [0.5, 0.5] and w.requires_grad


def test_shape_errors_name_the_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"add: The size of tensor a \(3\) must match the "
                                           r"size of tensor b \(4\).*\[3\] and \[4\]"):
        mpamp.ones(3) + mpamp.ones(4)
    with pytest.raises(RuntimeError, match="mul"):
        mpamp.ones(2, 3) * mpamp.ones(3, 2)


def test_nan_and_inf_propagate():
    x = mpamp.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    assert np.isnan(to_numpy(x.relu())[0]) and np.isnan(to_numpy(x.sigmoid())[0])
    assert to_numpy(x.exp())[1] == np.inf and to_numpy(x.exp())[2] == 0
    assert np.isnan(to_numpy(mpamp.zeros(1) / mpamp.zeros(1)))[0]
    assert to_numpy(mpamp.tensor([1.0, -1.0], dtype="fp16") / 0).tolist() == [np.inf, -np.inf]


def test_bool_negation_error():
    with pytest.raises(TypeError, match="Negation, the `-` operator, on a bool tensor"):
        -mpamp.tensor([True])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_relu_on_16_bit_bits_is_the_widened_path_bit_for_bit(dtype):
    """Contiguous fp16/bf16 ReLU and its backward select on the bits (no fp32 round trip):
    over every 16-bit pattern as input (forward) and as saved output (backward, with every
    pattern as gradient too) the bits equal those of the widening path a strided view takes -
    NaNs quieted, -0 passed forward, +0 where the output is <= 0 backward."""
    pats = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    grads = np.roll(pats, 12345)
    dt = getattr(mpamp, dtype)
    dev = mpamp.get_default_device()          # the device suite runs this on a (simulated) GPU

    def bits_of(t):
        return np.asarray(mpamp._C._memoryview(t.cpu().contiguous())).view(np.uint16).copy()

    def t16(bits, strided):
        t = mpamp.empty(len(bits), dtype=dt, device="cpu")
        np.asarray(mpamp._C._memoryview(t)).view(np.uint16)[...] = bits
        t = t.to(dev)
        if strided:          # every other element of a doubled buffer: not contiguous
            wide = mpamp.zeros(2 * len(bits), dtype=dt, device=dev)
            wide[::2] = t
            t = wide[::2]
            assert not t.is_contiguous()
        np.testing.assert_array_equal(bits_of(t), bits)       # the same inputs either way
        return t

    outs = []
    for strided in (False, True):
        x = t16(pats, strided).requires_grad_()
        y = mpamp.relu(x)
        y.backward(t16(grads, strided))
        outs.append((bits_of(y.detach()), bits_of(x.grad)))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_relu_edge_values_as_torch(dtype):
    """clamp_min semantics forward (NaN and -0 pass through), threshold_backward semantics
    backward: the gradient is 0 wherever the input was <= 0, even an inf or NaN gradient."""
    v = [float("nan"), -0.0, 0.0, -1.0, 2.0, float("inf"), -float("inf")]
    g = [1.0, float("nan"), float("inf"), float("nan"), 3.0, 1.0, float("inf")]
    x = mpamp.tensor(v, dtype=dtype, requires_grad=True)
    y = mpamp.relu(x)
    y.backward(mpamp.tensor(g, dtype=dtype))
    out = to_numpy(y.float())
    assert np.isnan(out[0]) and np.signbit(out[1]) and not np.signbit(out[2])
    np.testing.assert_array_equal(out[1:], [0.0, 0.0, 0.0, 2.0, np.inf, 0.0])
    np.testing.assert_array_equal(to_numpy(x.grad.float()), [1, 0, 0, 0, 3, 1, 0])
