"""Shared test helpers: NumPy references, torch.testing's tolerances per dtype, and the
`cuda` marker (tests that need a device are skipped without one)."""
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


def pytest_collection_modifyitems(config, items):
    if mpamp.cuda.is_available():
        return
    reason = ("needs a CUDA device (mpamp.cuda.is_available() is False; built with CUDA: "
              f"{mpamp.cuda.is_built()})")
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


def run_python(code, **env_extra):
    """Run code in a fresh interpreter that imports the same mpamp as this process (whether
    installed or built in place), from a neutral working directory."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
    env = {**os.environ, **env_extra}
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, cwd="/")
