"""Shared test helpers: NumPy references and torch.testing's tolerances per dtype."""
import numpy as np
import pytest

import mpamp

TOL = {"float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def to_numpy(t):
    """A float32 / int64 / bool NumPy copy of a tensor (bf16 widened to float32)."""
    if t.dtype == mpamp.bfloat16:
        t = t.float()
    return np.array(t.detach().numpy(), copy=True)


def assert_close(actual, expected, dtype_name="float32"):
    rtol, atol = TOL[dtype_name]
    np.testing.assert_allclose(to_numpy(actual), expected, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
