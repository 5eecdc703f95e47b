"""Comparisons (== != < <= > >=, eq/ne/lt/le/gt/ge and torch's aliases, in-place eq_ ...)
against NumPy in every dtype: broadcasting, non-contiguous operands, Python scalars on either
side, torch's promotion (int64 exact, floats rounded to the common dtype), NaN, empty
tensors; unsupported operands as torch (t == None is False); identity hashing; and the
places in mpamp that must compare tensors by identity, not by value."""
import operator

import numpy as np
import pytest

import mpamp
from conftest import to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64", "bool"]
FLOATS = ["float32", "float16", "bfloat16"]
OPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
       "gt": operator.gt, "ge": operator.ge}
ALIASES = {"not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
           "greater_equal": "ge"}


def make(rng, shape, dtype, specials=True):
    """A tensor of small integers (so that ties occur) plus NaN/inf for floats, and its
    exact values as float32 / int64 / bool NumPy."""
    vals = rng.integers(-3, 4, size=shape)
    if dtype == "bool":
        t = mpamp.tensor(vals > 0)
    elif dtype == "int64":
        t = mpamp.tensor(vals.astype(np.int64))
    else:
        v = vals.astype(np.float32) * 0.5
        if specials and v.size >= 4:
            flat = v.reshape(-1)
            flat[:3] = [np.nan, np.inf, -np.inf]
        t = mpamp.tensor(v).to(getattr(mpamp, dtype))
    return t, to_numpy(t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_operators_functions_methods_match_numpy(name, dtype, rng):
    a, an = make(rng, (3, 1, 4), dtype)
    b, bn = make(rng, (5, 4), dtype)
    ref = OPS[name](an, bn)
    for out in (OPS[name](a, b), getattr(mpamp, name)(a, b), getattr(a, name)(b)):
        assert out.dtype is mpamp.bool and out.shape == (3, 5, 4)
        assert not out.requires_grad and out.grad_fn is None
        np.testing.assert_array_equal(to_numpy(out), ref)


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_torch_aliases(alias, name, rng):
    a, an = make(rng, (4, 5), "float32")
    b, bn = make(rng, (5,), "float32")
    ref = OPS[name](an, bn)
    np.testing.assert_array_equal(to_numpy(getattr(mpamp, alias)(a, b)), ref)
    np.testing.assert_array_equal(to_numpy(getattr(a, alias)(b)), ref)
    c = a.clone()
    assert getattr(c, alias + "_")(b) is c
    np.testing.assert_array_equal(to_numpy(c), ref.astype(np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_operands(dtype, rng):
    base, bn = make(rng, (6, 8), dtype)
    other, on = make(rng, (8, 8), dtype)       # other.t() is a transposed view
    views = [(base.t(), bn.T), (base[::2, 1::3], bn[::2, 1::3]),
             (base[:1].expand(6, 8), np.broadcast_to(bn[:1], (6, 8)))]
    for v, vn in views:
        r, c = v.shape
        o, o_n = other.t()[:r, :c], on.T[:r, :c]
        assert not v.is_contiguous() and not o.is_contiguous()
        for name, fn in OPS.items():
            np.testing.assert_array_equal(to_numpy(fn(v, o)), fn(vn, o_n), err_msg=name)
            np.testing.assert_array_equal(to_numpy(fn(o[:, :1], v)), fn(o_n[:, :1], vn))


@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_sizes_and_long_runs(dtype, rng):
    a, an = make(rng, (1027,), dtype)       # several chunks of the kernel plus a tail
    b, bn = make(rng, (1027,), dtype)
    for name, fn in OPS.items():
        np.testing.assert_array_equal(to_numpy(fn(a, b)), fn(an, bn), err_msg=name)


def test_large_input_runs_on_threads_with_the_same_result(rng):
    x = rng.normal(size=300_000).astype(np.float32)
    t = mpamp.tensor(x)
    np.testing.assert_array_equal(to_numpy(t > 0.25), x > np.float32(0.25))
    np.testing.assert_array_equal(to_numpy(t[::3] <= t[1::3][:100_000]),
                                  x[::3] <= x[1::3][:100_000])


@pytest.mark.parametrize("dtype", DTYPES)
def test_python_scalars_on_either_side(dtype, rng):
    a, an = make(rng, (4, 6), dtype)
    for s in (0, 1, -2, 0.5, True, False):
        sn = np.float32(s) if isinstance(s, float) else s
        if dtype in ("float16",) and isinstance(s, float):
            sn = np.float32(np.float16(s))
        for name, fn in OPS.items():
            ref = fn(an, sn)
            np.testing.assert_array_equal(to_numpy(fn(a, s)), ref, err_msg=f"{name} {s}")
            np.testing.assert_array_equal(to_numpy(fn(s, a)), fn(sn, an),
                                          err_msg=f"reflected {name} {s}")
            np.testing.assert_array_equal(to_numpy(getattr(mpamp, name)(a, s)), ref)
    zero_d = mpamp.tensor(1.0)
    assert (zero_d == 1).item() is True and (zero_d < 1).item() is False
    assert (zero_d == 1).shape == ()


def test_int64_is_compared_exactly_beyond_fp32_and_fp64():
    big = 2**62 + 1
    t = mpamp.tensor([big, 2**53 + 1, 16777217, -(2**63)])
    assert (t == big).tolist() == [True, False, False, False]
    assert (t == 2**62).tolist() == [False] * 4
    assert (t > 2**62).tolist() == [True, False, False, False]
    assert (t == 2**53).tolist() == [False] * 4
    assert (t == 16777216).tolist() == [False] * 4
    assert (t == -(2**63)).tolist() == [False, False, False, True]
    u = mpamp.tensor([2**62, 2**53, 16777216, -(2**63) + 1])
    assert (t == u).tolist() == [False] * 4
    assert (t > u).tolist() == [True, True, True, False]
    assert (t != u).tolist() == [True] * 4
    with pytest.raises(OverflowError, match="too large to convert to int64"):
        t == 2**64       # noqa: B015


def test_promotion_follows_torch():
    # int64 against a float compares in float32 (torch's default dtype): 2^24 + 1 rounds
    assert (mpamp.tensor([0, 1]) < 0.5).tolist() == [True, False]
    assert (mpamp.tensor([16777217]) == 16777216.0).tolist() == [True]
    assert (mpamp.tensor([16777217]) == 16777216).tolist() == [False]
    # a Python float is rounded to the tensor's float dtype first
    for dt in ("float16", "bfloat16", "float32"):
        assert (mpamp.tensor([0.1]).to(dt) == 0.1).tolist() == [True], dt
        assert (mpamp.tensor([0.1]).to(dt) != 0.1).tolist() == [False], dt
    # ... and so is a 0-d fp32 tensor against a dimensioned bf16 one
    assert (mpamp.tensor([0.1], dtype="bf16") == mpamp.tensor(0.1)).tolist() == [True]
    # a dimensioned fp32 tensor does promote: bf16(0.1) != fp32(0.1)
    assert (mpamp.tensor([0.1], dtype="bf16") == mpamp.tensor([0.1])).tolist() == [False]
    # int64 against a 0-d fp16 tensor compares in fp16: 2049 rounds to 2048
    assert (mpamp.tensor([2049]) == mpamp.tensor(2048.0, dtype="fp16")).tolist() == [True]
    # bool against numbers
    assert (mpamp.tensor([True, False]) == 1).tolist() == [True, False]
    assert (mpamp.tensor([True, False]) > 0.5).tolist() == [True, False]
    assert (mpamp.tensor([True, False]) < mpamp.tensor([True, True])).tolist() == [False, True]
    assert (mpamp.tensor([1., 2.]) > True).tolist() == [False, True]
    assert (mpamp.tensor([1]) < float("inf")).tolist() == [True]
    assert (mpamp.tensor([1]) != float("nan")).tolist() == [True]


def test_mixed_dtype_tensors(rng):
    for da in DTYPES:
        for db in DTYPES:
            a, an = make(rng, (7,), da)
            b, bn = make(rng, (7,), db)
            for name, fn in OPS.items():
                np.testing.assert_array_equal(to_numpy(fn(a, b)), fn(an, bn),
                                              err_msg=f"{da} {name} {db}")


def test_nan_is_ieee():
    t = mpamp.tensor([1.0, float("nan")])
    assert (t == t).tolist() == [True, False]
    assert (t != t).tolist() == [False, True]
    for fn in (operator.lt, operator.le, operator.gt, operator.ge):
        assert fn(t, t).tolist()[1] is False
    assert (t != float("nan")).tolist() == [True, True]


def test_empty_tensors():
    a = mpamp.zeros(0, 3)
    out = a == mpamp.zeros(3)
    assert out.shape == (0, 3) and out.dtype is mpamp.bool
    assert (mpamp.zeros(0) < 1).shape == (0,)
    assert mpamp.zeros(2, 0).eq_(1).shape == (2, 0)


def test_unsupported_operands_as_torch():
    t = mpamp.tensor([1.0, 2.0])
    # operators return NotImplemented, so Python falls back as torch's do
    assert (t == None) is False and (t != None) is True       # noqa: E711
    assert (t == "a") is False and (t != "a") is True
    assert (t == [1.0, 2.0]) is False and (t == (1.0, 2.0)) is False
    with pytest.raises(TypeError, match="'<' not supported between instances of 'Tensor' "
                                        "and 'NoneType'"):
        t < None       # noqa: B015
    with pytest.raises(TypeError, match="'>=' not supported between instances of 'Tensor' "
                                        "and 'str'"):
        t >= "a"       # noqa: B015
    with pytest.raises(TypeError, match=r"eq\(\): argument 'other' must be Tensor or Number, "
                                        "not NoneType"):
        t.eq(None)
    with pytest.raises(TypeError, match=r"lt\(\): argument 'other' must be Tensor or Number, "
                                        "not str"):
        mpamp.lt(t, "a")
    with pytest.raises(TypeError, match=r"eq\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not int"):
        mpamp.eq(1, t)
    with pytest.raises(TypeError, match=r"ge_\(\): argument 'other' \(position 1\) must be "
                                        "Tensor or Number, not NoneType"):
        t.ge_(None)
    # a NumPy float works as a number; an array is left to NumPy (which reads a CPU tensor)
    assert (t == np.float64(2.0)).tolist() == [False, True]
    if not t.is_cuda:
        got = t == np.array([1.0, 3.0])
        assert isinstance(got, np.ndarray) and got.tolist() == [True, False]
        assert (np.array([2.0, 2.0]) > t).tolist() == [True, False]
    ids = mpamp._C.op_ids
    for bad in (ids["add"], ids["logical_and"], -1, 10**6):
        with pytest.raises(ValueError, match="_compare: .* is not an op id of this function"):
            mpamp._C._compare(bad, t, t)
    for bad in (ids["eq"], ids["maximum"], -1):
        with pytest.raises(ValueError, match="_logic: .* is not an op id of this function"):
            mpamp._C._logic(bad, t, t)


def test_shapes_that_do_not_broadcast():
    msg = "The size of tensor a \\(3\\) must match the size of tensor b \\(4\\) at " \
          "non-singleton dimension 1"
    for fn in (operator.eq, operator.lt, mpamp.ge, lambda a, b: a.ne(b)):
        with pytest.raises(RuntimeError, match=msg):
            fn(mpamp.ones(2, 3), mpamp.ones(4))


def test_results_never_require_grad_and_masks_gate_gradients():
    x = mpamp.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    mask = x > 0
    assert mask.dtype is mpamp.bool and not mask.requires_grad and mask.is_leaf
    y = mpamp.where(x > 0, x * 3, mpamp.zeros(3))
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 3.0]


def test_accuracy_count_and_where_work():
    pred = mpamp.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]).argmax(1)
    y = mpamp.tensor([1, 0, 0])
    correct = (pred == y).sum()
    assert correct.dtype is mpamp.int64 and correct.item() == 2
    assert pred.eq(y).sum().item() == 2 and pred.eq(y.view_as(pred)).sum().item() == 2
    assert (pred == y).float().mean().item() == pytest.approx(2 / 3)
    t = mpamp.tensor([0.0, 1.5, 0.0, -2.0])
    a, b = mpamp.full((4,), 10.0), mpamp.full((4,), -10.0)
    assert mpamp.where(t == 0, a, b).tolist() == [10.0, -10.0, 10.0, -10.0]
    assert mpamp.where(t != 0, t, b).tolist() == [-10.0, 1.5, -10.0, -2.0]
    assert mpamp.where(t < 0, a, b).tolist() == [-10.0, -10.0, -10.0, 10.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_comparisons_write_ones_and_zeros(dtype, rng):
    a, an = make(rng, (3, 4), dtype, specials=False)
    b, bn = make(rng, (4,), dtype, specials=False)
    for name, fn in OPS.items():
        c = a.clone()
        assert getattr(c, name + "_")(b) is c
        assert c.dtype is a.dtype
        np.testing.assert_array_equal(to_numpy(c), fn(an, bn).astype(to_numpy(c).dtype))
    c = a.clone()
    c.lt_(1)
    np.testing.assert_array_equal(to_numpy(c), (an < 1).astype(to_numpy(c).dtype))


def test_in_place_comparison_errors():
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        mpamp.ones(3).eq_(mpamp.ones(2, 3))
    w = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.gt_(0)
    with mpamp.no_grad():
        w.gt_(0)
    assert w.tolist() == [1.0, 1.0]


def test_tensors_stay_hashable_by_identity():
    a, b = mpamp.tensor([1.0]), mpamp.tensor([1.0])
    base = mpamp._C.TensorBase(2)
    p = mpamp.nn.Parameter(mpamp.ones(2))
    for t in (a, base, p):
        assert hash(t) == object.__hash__(t)
    d = {a: "a", b: "b", p: "p"}
    assert d[a] == "a" and d[b] == "b" and d[p] == "p" and len({a, b, a}) == 2


# ---- code that must compare tensors by identity (a value comparison would be wrong) ----

def test_save_for_backward_names_the_bad_argument_by_position():
    class F(mpamp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 5)       # x == 5 holds: a value lookup would say 0
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="argument 1 is of type int"):
        F.apply(mpamp.tensor([5.0], requires_grad=True))


def test_equal_valued_parameters_are_distinct_everywhere():
    class M(mpamp.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = mpamp.nn.Parameter(mpamp.tensor([1.0]))
            self.b = mpamp.nn.Parameter(mpamp.tensor([1.0]))      # same value, not the same

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["a", "b"]
    opt = mpamp.optim.SGD([{"params": [m.a]}, {"params": [m.b]}], lr=0.1)   # no overlap
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        opt.add_param_group({"params": [m.a]})
    opt2 = mpamp.optim.Adam(m.parameters(), lr=0.1)
    m.a.grad, m.b.grad = mpamp.tensor([1.0]), mpamp.tensor([2.0])
    opt2.step()
    sd = opt2.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    mpamp.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    assert m.a.grad.item() == pytest.approx(1 / 5 ** 0.5, rel=1e-5)


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "bool": torch.bool}
    for da in DTYPES:
        for db in DTYPES:
            a, _ = make(rng, (3, 5), da)
            b, _ = make(rng, (5,), db)
            ta = torch.from_numpy(to_numpy(a)).to(tdt[da])
            tb = torch.from_numpy(to_numpy(b)).to(tdt[db])
            for name, fn in OPS.items():
                got = to_numpy(fn(a, b))
                np.testing.assert_array_equal(got, fn(ta, tb).cpu().numpy(), err_msg=name)
                for s in (0.1, 1, -2.5, True):
                    np.testing.assert_array_equal(to_numpy(fn(a, s)), fn(ta, s).cpu().numpy(),
                                                  err_msg=f"{da} {name} {s}")
                    np.testing.assert_array_equal(to_numpy(fn(s, b)), fn(s, tb).cpu().numpy())
    x = torch.tensor([16777217, 2**62 + 1])
    for s in (16777216.0, 16777216, 2**62):
        np.testing.assert_array_equal(to_numpy(mpamp.tensor(x.tolist()) == s),
                                      (x == s).cpu().numpy())
