"""pow with a Python-number exponent takes torch's special cases (2, 3, 0.5, -0.5, -1, -2 as
products, sqrt and divisions): values torch gives, including -0, infinities and NaN, forward
and backward, in every float dtype and on strided inputs."""
import math

import numpy as np
import pytest

import mpamp
from conftest import to_numpy

EXPS = [2, 3, 0.5, -0.5, -1, -2, 1, 0, 2.5, -3, 4.0]
SPECIAL = np.array([0.0, -0.0, 1.5, -1.5, 2.0, -2.0, np.inf, -np.inf, np.nan, 1e-3, 7.0],
                   dtype=np.float32)


def expected(x, e):
    with np.errstate(all="ignore"):
        x = x.astype(np.float32)
        if e == 2:
            return x * x
        if e == 3:
            return x * x * x
        if e == 0.5:
            return np.sqrt(x)
        if e == -0.5:
            return np.float32(1) / np.sqrt(x)
        if e == -1:
            return np.float32(1) / x
        if e == -2:
            return np.float32(1) / (x * x)
        return np.power(x, np.float32(e))


@pytest.mark.parametrize("e", EXPS)
def test_special_values_fp32(e):
    out = to_numpy(mpamp.tensor(SPECIAL) ** e)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected(SPECIAL, e)))
    np.testing.assert_allclose(out, expected(SPECIAL, e), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("e", EXPS)
def test_against_torch(e):
    torch = pytest.importorskip("torch")
    got = to_numpy(mpamp.pow(mpamp.tensor(SPECIAL), e))
    ref = torch.pow(torch.tensor(SPECIAL), e).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(ref[~np.isnan(ref)]))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("e", [2, 3, 0.5, -1, 2.5])
def test_backward_strided(dtype, e):
    base = np.random.default_rng(0).uniform(0.5, 2.0, (6, 8)).astype(np.float32)
    a = mpamp.tensor(base).to(getattr(mpamp, dtype))[:, ::2].detach().requires_grad_()
    y = a ** e
    assert y.dtype == a.dtype and y.shape == (6, 4)
    g = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    y.backward(mpamp.tensor(g).to(a.dtype))
    x = to_numpy(a.float()).astype(np.float64)
    tol = 1e-5 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(to_numpy(y.float()), x ** e, rtol=tol)
    gq = to_numpy(mpamp.tensor(g).to(a.dtype).float()).astype(np.float64)
    np.testing.assert_allclose(to_numpy(a.grad.float()), gq * e * x ** (e - 1), rtol=2 * tol,
                               atol=tol)


def test_zero_exponent_gradient_is_zero_and_int_exponent_on_int_tensor_stays_exact():
    a = mpamp.tensor([0.0, -2.0, 3.0], requires_grad=True)
    (a ** 0).sum().backward()
    assert to_numpy(a.grad).tolist() == [0.0, 0.0, 0.0]
    assert to_numpy(mpamp.tensor([3, -2]) ** 3).tolist() == [27, -8]
    assert (mpamp.tensor([3, -2]) ** 0.5).dtype == mpamp.float32


def test_tensor_exponent_keeps_the_general_path():
    a = mpamp.tensor([2.0, 3.0], requires_grad=True)
    b = mpamp.tensor([3.0, 0.5], requires_grad=True)
    (a ** b).sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), [3 * 4.0, 0.5 / math.sqrt(3.0)], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(b.grad), [8 * math.log(2), math.sqrt(3) * math.log(3)],
                               rtol=1e-6)
