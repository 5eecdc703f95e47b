"""Property-based tests (Hypothesis) over the public API: random shapes, dtypes, broadcasting,
strides and special values, against NumPy references; nothing may crash or raise anything
but a clear Python error."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import mpamp  # noqa: E402
from conftest import TOL, to_numpy  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FLOATS = ["float32", "float16", "bfloat16"]
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)
specials = st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 65504.0,
                            65520.0, 3.4e38, 1.0, -2.5])


def arrays(shape):
    return hnp.arrays(np.float32, shape, elements=st.one_of(
        st.floats(-1e3, 1e3, width=32), specials))


def rounded(a, dtype):
    t = mpamp.tensor(a).to(getattr(mpamp, dtype))
    return t, to_numpy(t).astype(np.float32)


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(FLOATS))
def test_cast_round_trip_is_idempotent(data, dtype):
    a = data.draw(arrays(data.draw(shapes)))
    t, back = rounded(a, dtype)
    again = to_numpy(mpamp.tensor(back).to(getattr(mpamp, dtype))).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(back), np.isnan(a))
    np.testing.assert_array_equal(again, back)         # rounding a rounded value is exact
    if dtype == "float16":
        with np.errstate(over="ignore"):
            expect = a.astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(back[~np.isnan(a)], expect[~np.isnan(a)])


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(FLOATS),
       op=st.sampled_from(["add", "sub", "mul", "div"]))
def test_binary_ops_broadcast_like_numpy(data, dtype, op):
    sa, sb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4,
                                                         max_side=4)).input_shapes
    a = data.draw(hnp.arrays(np.float32, sa, elements=st.floats(-100, 100, width=32)))
    b = data.draw(hnp.arrays(np.float32, sb, elements=st.floats(0.5, 100, width=32)))
    ta, an = rounded(a, dtype)
    tb, bn = rounded(b, dtype)
    out = getattr(mpamp, op)(ta, tb)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](an, bn)
    ref = to_numpy(mpamp.tensor(ref.astype(np.float32)).to(getattr(mpamp, dtype)))
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(out), ref, rtol=rtol, atol=atol)


@SETTINGS
@given(data=st.data())
def test_strided_views_read_like_numpy(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = mpamp.tensor(a)
    key = tuple(slice(data.draw(st.integers(0, n - 1)), None, data.draw(st.integers(1, 3)))
                for n in shape)
    perm = data.draw(st.permutations(range(len(shape))))
    view = t[key].permute(*perm)
    ref = a[key].transpose(perm)
    np.testing.assert_array_equal(to_numpy(view), ref)
    np.testing.assert_array_equal(to_numpy(view.contiguous()), ref)
    np.testing.assert_array_equal(to_numpy(view.half().float()),
                                  ref.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(to_numpy(view.reshape(-1)), ref.reshape(-1))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(FLOATS))
def test_sum_and_mean_over_random_dims(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    a = data.draw(hnp.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    keep = data.draw(st.booleans())
    t, an = rounded(a, dtype)
    for name, fn in (("sum", np.sum), ("mean", np.mean)):
        out = getattr(mpamp, name)(t, dim=dims, keepdim=keep)
        ref = fn(an.astype(np.float64), axis=dims, keepdims=keep).astype(np.float32)
        ref = to_numpy(mpamp.tensor(ref).to(getattr(mpamp, dtype)))
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(to_numpy(out), ref, rtol=rtol, atol=atol * 10)


@SETTINGS
@given(m=st.integers(1, 9), k=st.integers(1, 17), n=st.integers(1, 9),
       dtype=st.sampled_from(FLOATS), seed=st.integers(0, 2**31 - 1))
def test_matmul_and_its_gradients(m, k, n, dtype, seed):
    rng = np.random.default_rng(seed)
    a, an = rounded(rng.normal(size=(m, k)).astype(np.float32), dtype)
    b, bn = rounded(rng.normal(size=(k, n)).astype(np.float32), dtype)
    a.requires_grad_()
    b.requires_grad_()
    out = a @ b
    ref = an.astype(np.float64) @ bn.astype(np.float64)
    bound = (k + 2) * np.finfo(np.float32).eps * (np.abs(an) @ np.abs(bn)) + \
        (np.abs(ref) * {"float32": 0, "float16": 2**-11, "bfloat16": 2**-8}[dtype])
    assert (np.abs(to_numpy(out).astype(np.float64) - ref) <= bound + 1e-6).all()
    out.backward(mpamp.ones(m, n, dtype=dtype))
    ga = np.ones((m, n)) @ bn.T.astype(np.float64)
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    np.testing.assert_allclose(to_numpy(a.grad), ga, rtol=tol, atol=tol * k)


@SETTINGS
@given(data=st.data())
def test_bad_shapes_never_crash(data):
    dims = data.draw(st.lists(st.integers(-3, 6), min_size=0, max_size=5))
    t = mpamp.zeros(2, 3)
    for attempt in (lambda: t.view(*dims), lambda: t.reshape(*dims), lambda: t.expand(*dims),
                    lambda: t.permute(*dims), lambda: mpamp.zeros(*dims),
                    lambda: t.sum(dim=tuple(dims)), lambda: t.flatten(*dims[:2])):
        try:
            attempt()
        except (RuntimeError, ValueError, IndexError, TypeError):
            pass
