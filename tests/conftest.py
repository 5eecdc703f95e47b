"""Shared test helpers: NumPy references, torch.testing's tolerances per dtype, the `cuda`
marker (tests that need a device are skipped without one), and the device suite.

The device suite: MPAMP_TEST_DEVICE=cuda (with MPAMP_CUDA_SIM=1, or on a GPU) makes every
factory default to that device for the whole run (mpamp.set_default_device), so the op,
autograd, autocast, scaler, optimizer, nn, serialization and data tests run again with their
tensors there (tests/test_device_suite.py does that in a subprocess). A test whose op has no
kernel on that device yet fails with torch's NotImplementedError ("Could not run '<op>' with
arguments from the 'CUDA' backend"); it is reported as skipped, naming the op, so the run
lists what is still host-only. Any other failure fails."""
import os
import platform
import re
import shutil
import subprocess

import numpy as np
import pytest

import mpamp

TEST_DEVICE = os.environ.get("MPAMP_TEST_DEVICE") or None
if TEST_DEVICE:
    mpamp.set_default_device(TEST_DEVICE)
_HOST_ONLY = re.compile(r"Could not run '([^']+)' with arguments from the 'CUDA' backend")

TOL = {"float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}


def to_numpy(t):
    """A float32 / int64 / bool NumPy copy of a tensor (bf16 widened to float32)."""
    if t.dtype == mpamp.bfloat16:
        t = t.float()
    return np.array(t.detach().cpu().numpy(), copy=True)


def assert_close(actual, expected, dtype_name="float32"):
    rtol, atol = TOL[dtype_name]
    if isinstance(expected, mpamp.Tensor):
        expected = to_numpy(expected)
    np.testing.assert_allclose(to_numpy(actual), expected, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not (TEST_DEVICE and rep.failed and call.excinfo is not None):
        return
    # NotImplementedError is a RuntimeError: pytest.raises(RuntimeError, match=...) catches it
    # and fails on the message, which then names the op; pytest.warns fails with it as the
    # context of its own failure
    exc, m = call.excinfo.value, None
    while exc is not None and m is None:
        m = _HOST_ONLY.search(str(exc))
        exc = exc.__cause__ or exc.__context__
    if m:
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0,
                        f"Skipped: host-only on {TEST_DEVICE}: {m.group(1)}")


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


def tensor_from_bits(bits, dtype):
    """A contiguous tensor of `dtype` whose memory holds exactly `bits` (no conversion)."""
    t = mpamp.empty(len(bits), dtype=dtype)
    view = np.asarray(mpamp._C._memoryview(t))
    view.view(np.uint32 if view.itemsize == 4 else np.uint16)[...] = bits
    return t


def bits_of(t):
    """The raw bits of a tensor (made contiguous) as uint16 or uint32."""
    a = np.asarray(mpamp._C._memoryview(t.contiguous()))
    return a.view(np.uint32 if a.itemsize == 4 else np.uint16).copy()


def python_runs_during(work):
    """True when another Python thread got to run strictly inside the middle half of the time
    work() took: proof that work released the GIL."""
    import threading
    import time
    stamps, stop = [], threading.Event()

    def counter():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0)

    th = threading.Thread(target=counter)
    th.start()
    try:
        time.sleep(0.01)
        t0 = time.perf_counter()
        work()
        t1 = time.perf_counter()
    finally:
        stop.set()
        th.join()
    lo, hi = t0 + 0.25 * (t1 - t0), t1 - 0.25 * (t1 - t0)
    return any(lo < s < hi for s in stamps)


def emulation_compiler():
    """A C compiler that can build the AVX-512 emulation harnesses (tests/avx512_emu: SIMDe
    stands in for AVX-512, the host's AVX2/FMA/F16C runs the rest); skips the test otherwise."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("x86-64 only")
    if "avx2" not in mpamp._C._supported_isas():
        pytest.skip("the emulation runs on the host's AVX2/FMA/F16C")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    probe = subprocess.run([cc, "-E", "-x", "c", "-", "-o", os.devnull],
                           input="#include <simde/x86/avx512.h>\n", text=True,
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("SIMDe headers not installed (apt-get install libsimde-dev)")
    return cc
