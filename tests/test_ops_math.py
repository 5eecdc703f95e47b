"""sin, cos, erf, log1p, expm1, sign, floor, ceil, round (decimals=), trunc, square,
reciprocal, log2, log10, remainder and fmod: forward against NumPy per dtype (integers as
torch: exact int64 where the op keeps the dtype, float32 where it does not), special values,
non-contiguous and empty inputs, backward against analytic derivatives, in-place forms, the %
operators, autocast rows, torch's errors, and torch itself where installed."""
import math

import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

FLOATS = ["float32", "float16", "bfloat16"]


def rounded(a, dtype):
    t = mpamp.tensor(np.asarray(a, np.float32)).to(getattr(mpamp, dtype))
    return t, to_numpy(t).astype(np.float64)


def check(actual, expected, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    ref = to_numpy(mpamp.tensor(np.asarray(expected, np.float32)).to(getattr(mpamp, dtype)))
    np.testing.assert_allclose(to_numpy(actual), ref, rtol=rtol, atol=atol * scale)


def erf(x):
    return np.vectorize(math.erf)(np.asarray(x, np.float64))


LN2, LN10 = math.log(2), math.log(10)
# name: (reference, derivative (None: zero), input domain)
SMOOTH = {
    "sin": (np.sin, np.cos, "any"),
    "cos": (np.cos, lambda x: -np.sin(x), "any"),
    "erf": (erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x), "any"),
    "log1p": (np.log1p, lambda x: 1 / (1 + x), "above-1"),
    "expm1": (np.expm1, np.exp, "any"),
    "square": (np.square, lambda x: 2 * x, "any"),
    "reciprocal": (np.reciprocal, lambda x: -1 / (x * x), "nonzero"),
    "log2": (np.log2, lambda x: 1 / (x * LN2), "positive"),
    "log10": (np.log10, lambda x: 1 / (x * LN10), "positive"),
}
STEPS = {"sign": np.sign, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
         "trunc": np.trunc}
NAMES = {"sign": "SignBackward0", "floor": "FloorBackward0", "ceil": "CeilBackward0",
         "round": "RoundBackward0", "trunc": "TruncBackward0", "sin": "SinBackward0",
         "cos": "CosBackward0", "erf": "ErfBackward0", "log1p": "Log1PBackward0",
         "expm1": "Expm1Backward0", "square": "PowBackward0",
         "reciprocal": "ReciprocalBackward0", "log2": "Log2Backward0",
         "log10": "Log10Backward0"}


def domain(rng, kind, shape):
    x = rng.normal(size=shape) * 2.5
    if kind == "above-1":
        return rng.uniform(-0.9, 4, size=shape)
    if kind == "positive":
        return rng.uniform(0.05, 20, size=shape)
    if kind == "nonzero":
        return np.sign(x + 1e-9) * rng.uniform(0.2, 4, size=shape)
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_smooth_ops_forward_backward(name, dtype, rng):
    ref, deriv, kind = SMOOTH[name]
    x, xn = rounded(domain(rng, kind, (5, 9)), dtype)
    x.requires_grad_()
    for y in (getattr(mpamp, name)(x), getattr(x, name)()):
        assert y.dtype is x.dtype and y.shape == x.shape and y.grad_fn.name() == NAMES[name]
        check(y, ref(xn), dtype)
    g, gn = rounded(rng.normal(size=(5, 9)), dtype)
    y.backward(g)
    assert x.grad.dtype is x.dtype
    if name == "expm1":              # torch's derivative: from the (rounded) output
        d = to_numpy(y).astype(np.float64) + 1
    elif name == "reciprocal":
        yn = to_numpy(y).astype(np.float64)
        d = -yn * yn
    else:
        d = deriv(xn)
    check(x.grad, gn * d, dtype, scale=4)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(STEPS))
def test_step_ops_forward_and_zero_gradient(name, dtype, rng):
    x, xn = rounded(np.concatenate([rng.normal(size=40) * 4,
                                    [0.5, 1.5, 2.5, -0.5, -2.5, 3.5, -0.0, 0.0, 7.0]]), dtype)
    x.requires_grad_()
    y = getattr(mpamp, name)(x)
    assert y.dtype is x.dtype and y.grad_fn.name() == NAMES[name]
    np.testing.assert_array_equal(to_numpy(y), STEPS[name](xn).astype(np.float32))
    y.backward(mpamp.full((49,), float("inf"), dtype=getattr(mpamp, dtype)))
    assert x.grad.dtype is x.dtype
    assert (x.grad == 0).all().item()         # zeros even for an inf incoming gradient


def test_round_is_half_to_even_and_sign_of_specials():
    x = mpamp.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1e30, -7.0])
    np.testing.assert_array_equal(to_numpy(mpamp.round(x)), np.array(
        [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 1e30, -7.0], np.float32))
    assert math.copysign(1, mpamp.round(x)[3].item()) == -1.0        # -0.5 rounds to -0
    s = mpamp.sign(mpamp.tensor([float("nan"), -0.0, 0.0, -3.0, float("inf")]))
    assert s.tolist() == [0.0, 0.0, 0.0, -1.0, 1.0]
    assert math.copysign(1, s[1].item()) == 1.0         # torch: sign(-0.0) is +0.0


SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 1e-30, 88.0]


@pytest.mark.parametrize("name", sorted(SMOOTH) + sorted(set(STEPS) - {"sign"}))
def test_special_values_follow_numpy(name):      # (sign(NaN) is 0 in torch: tested above)
    ref = SMOOTH[name][0] if name in SMOOTH else STEPS[name]
    x = np.array(SPECIAL, np.float32)
    with np.errstate(all="ignore"):
        exp = ref(x.astype(np.float64)).astype(np.float32)
    got = to_numpy(getattr(mpamp, name)(mpamp.tensor(x)))
    np.testing.assert_allclose(got, exp, rtol=2e-6, atol=0, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got[np.isfinite(got) & (got == 0)]),
                                  np.signbit(exp[np.isfinite(exp) & (exp == 0)]))


@pytest.mark.parametrize("name", sorted(SMOOTH) + sorted(STEPS))
def test_non_contiguous_empty_and_in_place(name, rng):
    ref = SMOOTH[name][0] if name in SMOOTH else STEPS[name]
    kind = SMOOTH[name][2] if name in SMOOTH else "any"
    base = mpamp.tensor(domain(rng, kind, (6, 8)).astype(np.float32))
    for v in (base.t(), base[::2, 1::3], base[:1].expand(5, 8)):
        assert not v.is_contiguous()
        check(getattr(v, name)(), ref(to_numpy(v).astype(np.float64)), "float32")
    assert getattr(mpamp, name)(mpamp.zeros(0, 3)).shape == (0, 3)
    c = base.clone()
    assert getattr(c, name + "_")() is c
    check(c, ref(to_numpy(base).astype(np.float64)), "float32")
    h = base.half()[::2]
    getattr(h, name + "_")()
    check(h, ref(to_numpy(base.half()[::2]).astype(np.float64)), "float16")
    w = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        getattr(w, name + "_")()


FLOAT_RESULT = ["sin", "cos", "erf", "log1p", "expm1", "reciprocal", "log2", "log10"]


def test_integer_inputs_as_torch():
    i = mpamp.tensor([5, -3, 12, 0])
    n = to_numpy(i).astype(np.float64)
    for name in FLOAT_RESULT:
        y = getattr(mpamp, name)(i)
        assert y.dtype is mpamp.float32, name
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(to_numpy(y), SMOOTH[name][0](n).astype(np.float32),
                                       rtol=2e-6, equal_nan=True)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            getattr(i.clone(), name + "_")()
        b = mpamp.tensor([True, False])
        assert getattr(b, name)().dtype is mpamp.float32
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Bool"):
            getattr(b.clone(), name + "_")()
    big = mpamp.tensor([2**62 + 1, -(2**53) - 1, 7, 0])        # exact, never via fp32/fp64
    for name in ("floor", "ceil", "round", "trunc"):
        assert getattr(big, name)().dtype is mpamp.int64
        assert getattr(big, name)().tolist() == big.tolist()
        assert getattr(big.clone(), name + "_")().tolist() == big.tolist()
    assert big.sign().tolist() == [1, -1, 1, 0] and big.sign().dtype is mpamp.int64
    assert mpamp.tensor([3037000500, -3]).square().tolist() == [3037000500 ** 2 - 2**64, 9]
    assert (-big).tolist() == [-(2**62) - 1, 2**53 + 1, -7, 0]
    assert big.abs().tolist() == [2**62 + 1, 2**53 + 1, 7, 0]
    assert mpamp.tensor([-(2**63)]).neg().tolist() == [-(2**63)]    # wraps, as torch
    b = mpamp.tensor([True, False])
    assert b.sign().dtype is mpamp.bool and b.sign().tolist() == [True, False]
    assert b.square().dtype is mpamp.int64 and b.square().tolist() == [1, 0]
    assert b.clone().sign_().tolist() == [True, False]
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        b.clone().square_()
    for name in ("floor", "ceil", "round", "trunc"):
        with pytest.raises(NotImplementedError, match=f'"{name}_vml_cpu" not implemented for '
                                                      "'Bool'"):
            getattr(mpamp, name)(b)
    assert mpamp.sgn(i).tolist() == [1, -1, 1, 0] and mpamp.fix(mpamp.tensor([-1.5])).item() \
        == -1.0


def test_round_decimals():
    x = mpamp.tensor([1.2345, 2.5, -1.25, 1e30, 0.285, 1234.5, 1250.0, 1350.0, float("nan")])
    xn = to_numpy(x)
    for d in (0, 1, 2, 3, -1, -2):
        p = np.float32(10.0 ** abs(d))
        exp = np.rint(xn * p) / p if d >= 0 else np.rint(xn / p) * p
        y = mpamp.round(x, decimals=d)
        np.testing.assert_array_equal(to_numpy(y), exp.astype(np.float32))
        np.testing.assert_array_equal(to_numpy(x.round(decimals=d)), to_numpy(y))
    assert mpamp.round(x, decimals=None).tolist()[:3] == [1.0, 2.0, -1.0]
    h = mpamp.tensor([1.2345]).half()
    assert mpamp.round(h, decimals=2).dtype is mpamp.float16
    assert mpamp.round(h, decimals=2).item() == float(np.float16(np.float32(1.23)))
    b = mpamp.tensor([1.2345]).bfloat16().round(decimals=2)
    assert b.item() == to_numpy(mpamp.tensor([1.23]).bfloat16())[0]
    c = mpamp.tensor([1.2345, 9.87])
    assert c.round_(decimals=1) is c and to_numpy(c).tolist() == [np.float32(1.2),
                                                                  np.float32(9.9)]
    g = mpamp.tensor([1.26], requires_grad=True)
    y = g.round(decimals=1)
    assert y.grad_fn.name() == "RoundBackward1"
    y.backward(mpamp.tensor([5.0]))
    assert g.grad.tolist() == [0.0]
    with pytest.raises(NotImplementedError, match="\"round_cpu\" not implemented for 'Long'"):
        mpamp.tensor([15]).round(decimals=1)
    with pytest.raises(NotImplementedError, match="\"round_vml_cpu\" not implemented for "
                                                  "'Long'"):
        mpamp.round(mpamp.tensor([15]), decimals=0)
    with pytest.raises(NotImplementedError, match="\"round_cpu\" not implemented for 'Bool'"):
        mpamp.tensor([True]).round_(decimals=-1)
    with pytest.raises(TypeError, match="decimals is keyword-only"):
        mpamp.tensor([1.5]).round(1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'digits'"):
        mpamp.tensor([1.5]).round_(digits=1)
    with pytest.raises(TypeError, match=r"round\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not float"):
        mpamp.round(1.5)


# ---- remainder / fmod ----

def py_mod(a, b):
    """Python's % on floats (the divisor's sign), elementwise in float64."""
    return np.vectorize(lambda x, y: math.fmod(x, y) + y if y != 0 and math.fmod(x, y) != 0
                        and (math.fmod(x, y) < 0) != (y < 0) else
                        (math.fmod(x, y) if y != 0 else math.nan))(a, b)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((3, 1), (1, 5)), ((2, 3, 4), (4,)),
                                    ((6,), ())])
def test_remainder_fmod_float(dtype, shapes, rng):
    a, an = rounded(rng.normal(size=shapes[0]) * 7, dtype)
    b, bn = rounded(np.where(rng.random(shapes[1]) < 0.5, -1, 1) *
                    rng.uniform(0.3, 3, size=shapes[1]), dtype)
    a.requires_grad_()
    b.requires_grad_()
    r = mpamp.remainder(a, b)
    f = mpamp.fmod(a, b)
    out = np.broadcast_shapes(shapes[0], shapes[1])
    assert r.shape == out and r.dtype is a.dtype and r.grad_fn.name() == "RemainderBackward1"
    assert f.grad_fn.name() == "FmodBackward1"
    check(r, py_mod(an, bn), dtype, scale=8)
    check(f, np.fmod(an, bn), dtype, scale=8)
    check(a % b, py_mod(an, bn), dtype, scale=8)
    check(a.remainder(b), py_mod(an, bn), dtype, scale=8)
    check(a.fmod(b), np.fmod(an, bn), dtype, scale=8)
    g, gn = rounded(rng.normal(size=out), dtype)
    (r * g).sum().backward()
    cnt = max(1, int(np.prod(out)) // max(1, int(np.prod(shapes[1]))))
    ga = np.broadcast_to(gn, out)
    gb = -ga * np.floor(an / bn)

    def reduce_to(x, shape):
        while x.ndim > len(shape):
            x = x.sum(0)
        for i, s in enumerate(shape):
            if s == 1 and x.shape[i] != 1:
                x = x.sum(i, keepdims=True)
        return x
    check(a.grad, reduce_to(np.array(ga), shapes[0]), dtype, scale=4)
    check(b.grad, reduce_to(gb, shapes[1]), dtype, scale=8 * cnt * 8)
    a.grad = b.grad = None
    (mpamp.fmod(a, b) * g).sum().backward()
    check(b.grad, reduce_to(-ga * np.trunc(an / bn), shapes[1]), dtype, scale=8 * cnt * 8)


def test_remainder_with_scalars_and_integers():
    t = mpamp.tensor([-3.0, 3.0, -3.5, 5.0])
    assert (t % 2).tolist() == [1.0, 1.0, 0.5, 1.0]
    assert (t % -2).tolist() == [-1.0, -1.0, -1.5, -1.0]
    assert mpamp.fmod(t, 2).tolist() == [-1.0, 1.0, -1.5, 1.0]
    assert (5 % mpamp.tensor([-3, 3])).tolist() == [-1, 2]
    assert (5.5 % mpamp.tensor([-3, 3])).tolist() == [-0.5, 2.5]
    assert mpamp.remainder(5, mpamp.tensor([-3, 3])).tolist() == [-1, 2]
    assert mpamp.remainder(2.5, mpamp.tensor([2.0])).tolist() == [0.5]
    i = mpamp.tensor([-7, 7, -7, 7, 0])
    j = mpamp.tensor([2, 2, -2, -2, 3])
    assert (i % j).tolist() == [-7 % 2, 7 % 2, -7 % -2, 7 % -2, 0]
    assert (i % j).dtype is mpamp.int64
    assert mpamp.fmod(i, j).tolist() == [-1, 1, -1, 1, 0]
    assert (mpamp.tensor([5, -5]) % 1.5).tolist() == [0.5, 1.0]          # promotes to float
    big = mpamp.tensor([2**62 + 7, -(2**63)])
    assert (big % 10).tolist() == [(2**62 + 7) % 10, -(2**63) % 10]
    assert (big % -1).tolist() == [0, 0] and mpamp.fmod(big, -1).tolist() == [0, 0]
    assert (mpamp.tensor([True]) % 2).tolist() == [1]
    assert (mpamp.tensor([3]) % mpamp.tensor([True])).tolist() == [0]
    special = mpamp.tensor([5.0, -5.0, float("inf"), -4.0, 4.0])
    assert (special % float("inf")).tolist()[:2] == [5.0, float("inf")]
    assert math.isnan((special % float("inf"))[2].item())
    assert math.copysign(1, (special % 2.0)[3].item()) == -1.0       # -0.0 as torch
    assert mpamp.fmod(special, float("inf")).tolist()[:2] == [5.0, -5.0]
    assert math.isnan((special % 0.0)[0].item())
    assert math.isnan(mpamp.fmod(mpamp.tensor([3]), 0.0)[0].item())
    h = mpamp.tensor([-3.3]).half()          # fmod(-3.30078, 2) + 2, rounded once to fp16
    assert (h % 2).item() == float(np.float16(np.float32(np.float16(-3.3)) + 4))
    # a Python float is rounded to the tensor's dtype first, as torch: fp16(0.1) divides
    h = mpamp.tensor([0.5]).half()
    assert (h % 0.1).item() == float(np.float16(np.fmod(np.float32(np.float16(0.5)),
                                                        np.float32(np.float16(0.1)))))
    x = mpamp.tensor([5.5, -3.2], requires_grad=True)
    y = x % 2
    assert y.grad_fn.name() == "RemainderBackward0"
    assert mpamp.fmod(x, 2).grad_fn.name() == "FmodBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    x.grad = None
    (7 % x).sum().backward()            # torch has no derivative here; mpamp's is -floor(a/b)
    assert x.grad.tolist() == [-1.0, 3.0]


def test_remainder_in_place_and_errors():
    t = mpamp.tensor([5.0, 7.0])
    t %= 2
    assert t.tolist() == [1.0, 1.0]
    u = mpamp.tensor([5.0, -7.0])
    assert u.remainder_(3) is u and u.tolist() == [2.0, 2.0]
    assert u.fmod_(mpamp.tensor([1.5, 3.0])).tolist() == [0.5, 2.0]
    k = mpamp.tensor([5, -7])
    k %= 3
    assert k.tolist() == [2, 2] and k.dtype is mpamp.int64
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        mpamp.tensor([5, 7]).remainder_(1.5)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        mpamp.tensor([-3]) % 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        mpamp.fmod(mpamp.tensor([-3, 4]), mpamp.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        mpamp.tensor([4]).remainder_(0)
    with pytest.raises(NotImplementedError, match="\"remainder_cpu\" not implemented for "
                                                  "'Bool'"):
        mpamp.tensor([True]) % mpamp.tensor([True])
    with pytest.raises(NotImplementedError, match="\"fmod_cpu\" not implemented for 'Bool'"):
        mpamp.fmod(mpamp.tensor([True]), True)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size "
                                           "of tensor b \\(4\\)"):
        mpamp.remainder(mpamp.ones(2, 3), mpamp.ones(4))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        mpamp.ones(3).fmod_(mpamp.ones(2, 3))
    with pytest.raises(TypeError, match="unsupported operand type\\(s\\) for %: 'Tensor' and "
                                        "'NoneType'"):
        mpamp.ones(2) % None
    with pytest.raises(TypeError, match=r"remainder\(\): expected Tensor or Number operands "
                                        "with at least one Tensor, got Tensor and NoneType"):
        mpamp.remainder(mpamp.ones(2), None)
    with pytest.raises(TypeError, match=r"remainder\(\): expected Tensor or Number operands "
                                        "with at least one Tensor, got int and int"):
        mpamp.remainder(5, 3)
    with pytest.raises(TypeError, match=r"fmod\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not int"):
        mpamp.fmod(5, mpamp.ones(2))
    with pytest.raises(TypeError, match=r"remainder_\(\): argument 'other' must be Tensor or "
                                        "Number, not str"):
        mpamp.ones(2).remainder_("a")
    w = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        w.remainder_(2)
    y = mpamp.remainder(w, mpamp.ones(2) * 3)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


# ---- autocast ----

def test_autocast_rows_follow_torchs_lists():
    pol = mpamp._C._autocast_policy
    for op in ("expm1", "log1p", "log2", "log10", "reciprocal"):       # CUDA's fp32 list
        assert pol(op, "cuda") == "fp32" and pol(op, "cpu") is None
    for op in ("sin", "cos", "erf", "sign", "floor", "ceil", "round", "trunc", "square",
               "remainder", "fmod", "eq", "lt", "logical_and", "isnan", "any"):
        assert pol(op, "cuda") is None and pol(op, "cpu") is None


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_cpu_autocast_leaves_these_ops_in_their_dtype(low):
    x = mpamp.randn(3, 4, dtype=low).abs() + 0.5
    f = mpamp.randn(3, 4).abs() + 0.5
    with mpamp.autocast("cpu", dtype=low):
        for name in sorted(SMOOTH) + sorted(STEPS):
            assert getattr(mpamp, name)(x).dtype is x.dtype, name
            assert getattr(mpamp, name)(f).dtype is mpamp.float32, name
        assert (x % 0.3).dtype is x.dtype and (x < f).dtype is mpamp.bool
        assert mpamp.remainder(x, f).dtype is mpamp.float32


# ---- torch ----

def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    for dt in FLOATS:
        base = (rng.normal(size=200) * 4).astype(np.float32)
        base[:6] = [0.5, 1.5, 2.5, -0.5, -2.5, 0.0]
        x = mpamp.tensor(base).to(dt)
        tx = torch.from_numpy(to_numpy(x)).to(tdt[dt])
        for name in sorted(SMOOTH) + sorted(STEPS):
            kind = SMOOTH[name][2] if name in SMOOTH else "any"
            if kind == "any":
                xs, txs = x, tx
            else:
                v = domain(rng, kind, 200).astype(np.float32)
                xs = mpamp.tensor(v).to(dt)
                txs = torch.from_numpy(to_numpy(xs)).to(tdt[dt])
            got = to_numpy(getattr(mpamp, name)(xs))
            exp = getattr(torch, name)(txs).float().cpu().numpy()
            rtol, atol = TOL[dt]
            if name in STEPS:
                np.testing.assert_array_equal(got, exp, err_msg=name)
            else:
                np.testing.assert_allclose(got, exp, rtol=rtol * 2, atol=atol, err_msg=name)
        for d in (1, 2, -1):
            np.testing.assert_array_equal(to_numpy(mpamp.round(x, decimals=d)),
                                          torch.round(tx, decimals=d).float().cpu().numpy())
        y = mpamp.tensor(np.where(base > 0, 1.7, -2.3).astype(np.float32)).to(dt)
        ty = torch.from_numpy(to_numpy(y)).to(tdt[dt])
        for s_m, s_t in ((y, ty), (0.3, 0.3), (-2, -2)):
            np.testing.assert_array_equal(to_numpy(x % s_m), (tx % s_t).float().cpu().numpy())
            np.testing.assert_array_equal(to_numpy(mpamp.fmod(x, s_m)),
                                          torch.fmod(tx, s_t).float().cpu().numpy())
    i = rng.integers(-50, 50, size=100)
    j = rng.integers(1, 9, size=100) * np.where(rng.random(100) < 0.5, -1, 1)
    ti, tj = torch.tensor(i), torch.tensor(j)
    mi, mj = mpamp.tensor(i), mpamp.tensor(j)
    np.testing.assert_array_equal(to_numpy(mi % mj), (ti % tj).cpu().numpy())
    np.testing.assert_array_equal(to_numpy(mpamp.fmod(mi, mj)), torch.fmod(ti, tj).cpu().numpy())
    np.testing.assert_array_equal(to_numpy(7 % mj), (7 % tj).cpu().numpy())
    np.testing.assert_array_equal(to_numpy(mi % 2.5), (ti % 2.5).cpu().numpy())
    xg = torch.tensor([5.5, -3.2, 7.0], requires_grad=True)
    og = torch.tensor([2.0, 1.5, -2.5], requires_grad=True)
    torch.remainder(xg, og).sum().backward()
    mx = mpamp.tensor([5.5, -3.2, 7.0], requires_grad=True)
    mo = mpamp.tensor([2.0, 1.5, -2.5], requires_grad=True)
    mpamp.remainder(mx, mo).sum().backward()
    np.testing.assert_allclose(to_numpy(mo.grad), og.grad.cpu().numpy())
    np.testing.assert_allclose(to_numpy(mx.grad), xg.grad.cpu().numpy())
