"""Logic and bitwise ops, the float classifications, any/all and isclose/allclose/equal
against NumPy in every dtype (broadcast, non-contiguous, scalars on either side, NaN/inf,
empty), the & | ^ ~ operators and their in-place forms, and torch's errors for bad input."""
import operator

import numpy as np
import pytest

import mpamp
from conftest import to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]
FLOATS = ["float32", "float16", "bfloat16"]
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}
BITWISE = {"bitwise_and": (np.bitwise_and, operator.and_),
           "bitwise_or": (np.bitwise_or, operator.or_),
           "bitwise_xor": (np.bitwise_xor, operator.xor)}
TORCH_NAME = {"float32": "Float", "float16": "Half", "bfloat16": "BFloat16"}


def make(rng, shape, dtype, specials=True):
    vals = rng.integers(-2, 3, size=shape)
    if dtype == "bool":
        t = mpamp.tensor(vals > 0)
    elif dtype == "int64":
        t = mpamp.tensor((vals * 1000003).astype(np.int64))
    else:
        v = vals.astype(np.float32) * 0.5
        if specials and v.size >= 4:
            v.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
        t = mpamp.tensor(v).to(getattr(mpamp, dtype))
    return t, to_numpy(t)


# ---- logical_* ----

@pytest.mark.parametrize("db", DTYPES)
@pytest.mark.parametrize("da", DTYPES)
def test_logical_ops_any_dtypes(da, db, rng):
    a, an = make(rng, (3, 1, 5), da)
    b, bn = make(rng, (4, 5), db)
    for name, ref in LOGICAL.items():
        for out in (getattr(mpamp, name)(a, b), getattr(a, name)(b)):
            assert out.dtype is mpamp.bool and out.shape == (3, 4, 5)
            np.testing.assert_array_equal(to_numpy(out), ref(an, bn), err_msg=name)
    np.testing.assert_array_equal(to_numpy(mpamp.logical_not(a)), np.logical_not(an))
    np.testing.assert_array_equal(to_numpy(a.logical_not()), np.logical_not(an))


def test_nan_is_true_and_minus_zero_false():
    t = mpamp.tensor([float("nan"), -0.0, 0.0, 2.0])
    assert t.logical_not().tolist() == [False, True, True, False]
    assert mpamp.logical_and(t, t).tolist() == [True, False, False, True]


@pytest.mark.parametrize("dtype", DTYPES)
def test_logical_non_contiguous(dtype, rng):
    a, an = make(rng, (6, 8), dtype)
    b, bn = make(rng, (8, 6), dtype)
    for name, ref in LOGICAL.items():
        out = getattr(mpamp, name)(a[::2], b.t()[::2])
        np.testing.assert_array_equal(to_numpy(out), ref(an[::2], bn.T[::2]))
    np.testing.assert_array_equal(to_numpy(b.t().logical_not()), np.logical_not(bn.T))
    e = a[:1].expand(6, 8)
    np.testing.assert_array_equal(to_numpy(mpamp.logical_xor(e, a)),
                                  np.logical_xor(np.broadcast_to(an[:1], (6, 8)), an))


@pytest.mark.parametrize("dtype", DTYPES)
def test_logical_in_place_keeps_the_dtype(dtype, rng):
    a, an = make(rng, (3, 4), dtype, specials=False)
    b, bn = make(rng, (4,), "float32", specials=False)
    for name, ref in LOGICAL.items():
        c = a.clone()
        assert getattr(c, name + "_")(b) is c and c.dtype is a.dtype
        np.testing.assert_array_equal(to_numpy(c), ref(an, bn).astype(to_numpy(c).dtype))
    c = a.clone()
    c.logical_not_()
    np.testing.assert_array_equal(to_numpy(c), np.logical_not(an).astype(to_numpy(c).dtype))


def test_logical_errors():
    t = mpamp.tensor([1.0, 0.0])
    with pytest.raises(TypeError, match=r"logical_and\(\): argument 'other' \(position 2\) "
                                        "must be Tensor, not int"):
        mpamp.logical_and(t, 1)
    with pytest.raises(TypeError, match=r"logical_or\(\): argument 'input' \(position 1\) "
                                        "must be Tensor, not float"):
        mpamp.logical_or(1.0, t)
    with pytest.raises(TypeError, match=r"logical_xor\(\): argument 'other' \(position 1\) "
                                        "must be Tensor, not int"):
        t.logical_xor(1)
    with pytest.raises(TypeError, match=r"logical_and_\(\): argument 'other' \(position 1\)"):
        t.logical_and_(None)
    with pytest.raises(TypeError, match=r"logical_not\(\): argument 'input' \(position 1\) "
                                        "must be Tensor, not bool"):
        mpamp.logical_not(True)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size "
                                           "of tensor b \\(3\\)"):
        mpamp.logical_and(t, mpamp.ones(3))
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                           r"broadcast shape \[3, 2\]"):
        t.logical_or_(mpamp.ones(3, 2))


# ---- bitwise and the operators ----

@pytest.mark.parametrize("db", ["int64", "bool"])
@pytest.mark.parametrize("da", ["int64", "bool"])
def test_bitwise_ops(da, db, rng):
    a, an = make(rng, (3, 1, 5), da)
    b, bn = make(rng, (4, 5), db)
    want = mpamp.int64 if "int64" in (da, db) else mpamp.bool
    for name, (ref, op) in BITWISE.items():
        exp = ref(an.astype(np.int64), bn.astype(np.int64)) if want is mpamp.int64 \
            else ref(an, bn)
        for out in (getattr(mpamp, name)(a, b), getattr(a, name)(b), op(a, b)):
            assert out.dtype is want and out.shape == (3, 4, 5)
            np.testing.assert_array_equal(to_numpy(out), exp, err_msg=name)
        np.testing.assert_array_equal(to_numpy(op(a[:, :, ::2], b.t().t()[:, ::2])),
                                      exp[:, :, ::2])
    ref_not = ~an
    for out in (~a, mpamp.bitwise_not(a), a.bitwise_not()):
        assert out.dtype is a.dtype
        np.testing.assert_array_equal(to_numpy(out), ref_not)


def test_bitwise_int64_is_exact_and_scalars_work_on_either_side():
    big = 2**62 + 5
    t = mpamp.tensor([big, -1, 0])
    assert (t & (2**62 + 3)).tolist() == [big & (2**62 + 3), 2**62 + 3, 0]
    assert (t | 2).tolist() == [big | 2, -1, 2]
    assert (t ^ -1).tolist() == [~big, 0, -1]
    assert (~t).tolist() == [~big, 0, -1]
    assert ((2**62 + 3) & t).tolist() == [big & (2**62 + 3), 2**62 + 3, 0]
    b = mpamp.tensor([True, False])
    assert (b & True).dtype is mpamp.bool and (True & b).tolist() == [True, False]
    assert (b | False).tolist() == [True, False] and (False ^ b).tolist() == [True, False]
    assert (b & 1).dtype is mpamp.int64 and (b & 1).tolist() == [1, 0]
    assert (1 | mpamp.tensor([2])).tolist() == [3]
    assert mpamp.bitwise_and(1, b).tolist() == [1, 0]
    assert mpamp.bitwise_xor(b, True).tolist() == [False, True]
    z = mpamp.tensor(6)
    assert (z & 3).item() == 2 and (z & 3).shape == ()


def test_bitwise_in_place():
    i = mpamp.tensor([5, -3, 12])
    j = i.clone()
    j &= mpamp.tensor([True, False, True])
    assert j.tolist() == [1, 0, 0]
    j = i.clone()
    j |= 3
    assert j.tolist() == [7, -1, 15]
    j = i.clone()
    j ^= i
    assert j.tolist() == [0, 0, 0]
    b = mpamp.tensor([True, False, True])
    c = b.clone()
    c &= True
    assert c.tolist() == [True, False, True] and c.dtype is mpamp.bool
    c |= mpamp.tensor([False, True, False])
    assert c.tolist() == [True, True, True]
    c ^= b
    assert c.tolist() == [False, True, False]
    k = i.clone()
    assert k.bitwise_and_(6) is k and k.tolist() == [4, 4, 4]
    assert k.bitwise_or_(1).tolist() == [5, 5, 5] and k.bitwise_xor_(5).tolist() == [0, 0, 0]
    assert k.bitwise_not_().tolist() == [-1, -1, -1]
    assert b.clone().bitwise_not_().tolist() == [False, True, False]


def test_bitwise_errors():
    f = mpamp.tensor([1.5, 0.0])
    for dt, name in TORCH_NAME.items():
        x = f.to(dt)
        with pytest.raises(NotImplementedError, match=f'"bitwise_and_cpu" not implemented '
                                                      f"for '{name}'"):
            x & x
        with pytest.raises(NotImplementedError, match=f'"bitwise_not_cpu" not implemented '
                                                      f"for '{name}'"):
            mpamp.bitwise_not(x)
        with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on "
                                            "integer and Boolean-type tensors"):
            ~x
    with pytest.raises(NotImplementedError, match="\"bitwise_or_cpu\" not implemented for "
                                                  "'Float'"):
        mpamp.tensor([1]) | 1.5           # the promoted dtype is float
    with pytest.raises(NotImplementedError, match="\"bitwise_xor_cpu\" not implemented for "
                                                  "'Float'"):
        mpamp.tensor([True]) ^ 1.5
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                                                  "'Float'"):
        f.clone().__iand__(1)
    b = mpamp.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        b.clone().__iand__(mpamp.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        b.clone().__ior__(2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        mpamp.tensor([5]).__ixor__(1.0)
    with pytest.raises(TypeError, match="unsupported operand type\\(s\\) for &: 'Tensor' and "
                                        "'NoneType'"):
        b & None
    with pytest.raises(TypeError, match="unsupported operand type\\(s\\) for \\|: 'str' and "
                                        "'Tensor'"):
        "a" | b
    with pytest.raises(TypeError, match=r"bitwise_and\(\): argument 'other' \(position 2\) "
                                        "must be Tensor or Number, not NoneType"):
        mpamp.bitwise_and(b, None)
    with pytest.raises(TypeError, match=r"bitwise_or\(\): expected a Tensor as 'input' or "
                                        "'other', got two numbers"):
        mpamp.bitwise_or(1, 2)
    with pytest.raises(TypeError, match=r"bitwise_xor_\(\): argument 'other' \(position 1\) "
                                        "must be Tensor or Number, not str"):
        b.bitwise_xor_("a")
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match"):
        b & mpamp.tensor([True, False, True])


# ---- isnan / isinf / isfinite / isposinf / isneginf ----

CLASSIFY = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
            "isposinf": np.isposinf, "isneginf": np.isneginf}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CLASSIFY))
def test_classification(name, dtype, rng):
    a, an = make(rng, (7, 9), dtype)
    ref = CLASSIFY[name]
    for t, tn in ((a, an), (a.t(), an.T), (a[::2, 1::2], an[::2, 1::2])):
        for out in (getattr(mpamp, name)(t), getattr(t, name)()):
            assert out.dtype is mpamp.bool and out.shape == tn.shape
            np.testing.assert_array_equal(to_numpy(out), ref(tn.astype(np.float32)))
    assert getattr(mpamp, name)(mpamp.zeros(0, 2, dtype=getattr(mpamp, dtype))).shape == (0, 2)


def test_classification_of_special_values():
    for dt in FLOATS:
        t = mpamp.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -1e30]).to(dt)
        assert t.isnan().tolist() == [True, False, False, False, False]
        assert t.isinf().tolist() == [False, True, True, False, dt == "float16"]
        assert t.isfinite().tolist() == [False, False, False, True, dt != "float16"]
        assert t.isposinf().tolist() == [False, True, False, False, False]
        assert t.isneginf().tolist() == [False, False, True, False, dt == "float16"]
    with pytest.raises(TypeError, match=r"isnan\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not float"):
        mpamp.isnan(1.0)


# ---- any / all ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_any_all_match_numpy(dtype, rng):
    a, an = make(rng, (3, 4, 5), dtype)
    a = a * (a.abs() > 0.6) if dtype in FLOATS else a
    an = to_numpy(a)
    for fn, ref in (("any", np.any), ("all", np.all)):
        f = getattr(mpamp, fn)
        out = f(a)
        assert out.dtype is mpamp.bool and out.shape == () and not out.requires_grad
        assert out.item() == bool(ref(an))
        assert getattr(a, fn)().item() == bool(ref(an))
        for dim in (0, 1, -1, (0, 2), [1, 2], (0, 1, 2), ()):
            for keepdim in (False, True):
                axis = tuple(dim) if isinstance(dim, list) else dim   # (): no dims, as torch
                exp = ref(an, axis=axis, keepdims=keepdim)
                got = f(a, dim, keepdim=keepdim)
                np.testing.assert_array_equal(to_numpy(got), exp, err_msg=f"{fn} {dim}")
                assert getattr(a, fn)(dim=dim, keepdim=keepdim).shape == exp.shape
        t = a.transpose(0, 2)[::2]
        np.testing.assert_array_equal(to_numpy(f(t, 1)), ref(an.transpose(2, 1, 0)[::2],
                                                             axis=1))


def test_any_all_edge_cases():
    assert mpamp.zeros(0).any().item() is False and mpamp.zeros(0).all().item() is True
    assert mpamp.zeros(2, 0).any(1).tolist() == [False, False]
    assert mpamp.zeros(2, 0).all(1).tolist() == [True, True]
    assert mpamp.tensor([float("nan")]).all().item() is True
    assert mpamp.tensor([float("nan"), 0.0]).any().item() is True
    assert mpamp.tensor(3.0).any(0).shape == () and mpamp.tensor(0).all(-1).item() is False
    assert mpamp.ones(2, 3).any(None, keepdim=True).shape == (1, 1)
    assert mpamp.ones(2, 3).all(dim=()).shape == (2, 3)
    assert (0.5 in mpamp.tensor([0.5, 1.0])) and (2 not in mpamp.tensor([0.5, 1.0]))
    assert mpamp.tensor(1.0) in mpamp.ones(2, 2) and mpamp.tensor([3, 4]) not in mpamp.ones(2)
    with pytest.raises(RuntimeError, match="Tensor.__contains__ only supports Tensor or "
                                           "scalar, but you passed in a <class 'str'>."):
        "a" in mpamp.ones(2)       # noqa: B015
    x = mpamp.ones(2, requires_grad=True)
    assert not (x * 2).any().requires_grad
    big = mpamp.zeros(200_000)
    big[123_457] = 1.0
    assert big.any().item() is True and big.all().item() is False
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-1, 0\], but got 3\)"):
        mpamp.tensor([1.0]).any(3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of "
                                           "dims"):
        mpamp.ones(2, 2).all((0, -2))
    with pytest.raises(TypeError, match=r"any\(\): argument 'dim' must be int or tuple of "
                                        "ints, not float"):
        mpamp.ones(2).any(0.5)
    with pytest.raises(TypeError, match=r"all\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not list"):
        mpamp.all([True])


# ---- isclose / allclose / equal ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_isclose_matches_numpy(dtype, rng):
    a = rng.normal(size=(6, 7)).astype(np.float32)
    b = a + rng.normal(size=(6, 7)).astype(np.float32) * rng.choice([1e-9, 1e-6, 1e-3, 1],
                                                                     size=(6, 7))
    b[0, :4] = [np.nan, np.inf, -np.inf, np.inf]
    a[0, :4] = [np.nan, np.inf, np.inf, 1.0]
    ta, tb = mpamp.tensor(a).to(dtype), mpamp.tensor(b).to(dtype)
    an, bn = to_numpy(ta).astype(np.float64), to_numpy(tb).astype(np.float64)
    for rtol, atol, nan in ((1e-5, 1e-8, False), (1e-2, 1e-3, True), (0.0, 0.0, False),
                            (0.0, 0.1, True)):
        got = mpamp.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=nan)
        exp = np.isclose(an, bn, rtol=rtol, atol=atol, equal_nan=nan)
        if dtype == "float32":
            np.testing.assert_array_equal(to_numpy(got), exp)
        else:       # torch computes |a - b| in the low dtype: a few borderline elements move
            assert np.mean(to_numpy(got) != exp) < 0.1
            np.testing.assert_array_equal(to_numpy(got)[0, :4], exp[0, :4])
        np.testing.assert_array_equal(to_numpy(ta.isclose(tb, rtol, atol, nan)),
                                      to_numpy(got))
    assert mpamp.isclose(ta[:, :1], tb.t()[:1]).shape == (6, 6)


def test_isclose_integers_and_bool():
    i = mpamp.tensor([5, -3, 12])
    assert mpamp.isclose(i, i + 1, rtol=0, atol=1).tolist() == [True, True, True]
    assert mpamp.isclose(i, i + 1).tolist() == [False, False, False]
    assert mpamp.isclose(i, i + 1, rtol=0.1).tolist() == [False, False, True]   # 1 <= 1.3
    b = mpamp.tensor([True, False])
    assert mpamp.isclose(b, b).tolist() == [True, True]
    assert not mpamp.isclose(b, ~b).any().item()


def test_allclose_and_equal():
    x = mpamp.tensor([1.0, 2.0, 3.0])
    assert mpamp.allclose(x, x + 1e-7) is True and x.allclose(x + 1e-3) is False
    assert mpamp.allclose(x, x + 1e-3, atol=1e-2) is True
    assert mpamp.allclose(x, x[:1]) is False          # broadcasts, as torch
    nan = mpamp.tensor([float("nan")])
    assert mpamp.allclose(nan, nan) is False and mpamp.allclose(nan, nan, equal_nan=True)
    assert mpamp.equal(x, x.clone()) is True and x.equal(x * 1) is True
    assert mpamp.equal(x, x[:2]) is False and mpamp.equal(x, x.view(3, 1)) is False
    assert mpamp.equal(x, x.half()) is True           # values, across dtypes, as torch
    assert mpamp.equal(mpamp.tensor([1, 2]), mpamp.tensor([1.0, 2.0])) is True
    assert mpamp.equal(nan, nan) is False
    assert mpamp.equal(mpamp.zeros(0), mpamp.zeros(0)) is True


def test_closeness_errors():
    f = mpamp.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Float did not match Half"):
        mpamp.isclose(f, f.half())
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        mpamp.isclose(mpamp.tensor([1]), f[:1])
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but "
                                           "got -1"):
        mpamp.isclose(f, f, rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero, but "
                                           "got -0.5"):
        mpamp.allclose(f, f, atol=-0.5)
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\) must "
                                        "be Tensor, not float"):
        mpamp.isclose(f, 1.5)
    with pytest.raises(TypeError, match=r"equal\(\): argument 'other' \(position 2\) must be "
                                        "Tensor, not int"):
        mpamp.equal(f, 1)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size "
                                           "of tensor b \\(3\\)"):
        mpamp.allclose(f, mpamp.ones(3))


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "bool": torch.bool}
    for da in DTYPES:
        a, an = make(rng, (4, 6), da)
        ta = torch.from_numpy(an).to(tdt[da])
        for db in DTYPES:
            b, bn = make(rng, (6,), db)
            tb = torch.from_numpy(bn).to(tdt[db])
            for name in LOGICAL:
                np.testing.assert_array_equal(to_numpy(getattr(mpamp, name)(a, b)),
                                              getattr(torch, name)(ta, tb).cpu().numpy())
            if da in FLOATS or db in FLOATS:
                continue
            for name, (_, op) in BITWISE.items():
                np.testing.assert_array_equal(to_numpy(op(a, b)), op(ta, tb).cpu().numpy())
        for name in CLASSIFY:
            np.testing.assert_array_equal(to_numpy(getattr(mpamp, name)(a)),
                                          getattr(torch, name)(ta).cpu().numpy())
        for fn in ("any", "all"):
            assert getattr(a, fn)().item() == getattr(ta, fn)().item()
            np.testing.assert_array_equal(to_numpy(getattr(a, fn)(1, keepdim=True)),
                                          getattr(ta, fn)(1, keepdim=True).cpu().numpy())
    for dt in FLOATS:
        x = rng.normal(size=50).astype(np.float32)
        y = x * (1 + rng.choice([1e-6, 1e-4, 1e-2], size=50).astype(np.float32))
        tx, ty = torch.tensor(x).to(tdt[dt]), torch.tensor(y).to(tdt[dt])
        mx, my = mpamp.tensor(x).to(dt), mpamp.tensor(y).to(dt)
        for rtol, atol in ((1e-5, 1e-8), (1e-3, 1e-5), (1e-2, 0.0)):
            np.testing.assert_array_equal(to_numpy(mpamp.isclose(mx, my, rtol, atol)),
                                          torch.isclose(tx, ty, rtol, atol).cpu().numpy())
