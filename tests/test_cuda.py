"""CUDA build and availability: what the extension reports, the "CUDA not available" error
path (stub build and real build on a GPU-less machine), setup.py's MPAMP_CUDA=1 failure, and,
on a machine with a device, the CUDA cast kernels bit-for-bit against the CPU casts."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mpamp
from mpamp import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
no_gpu = pytest.mark.skipif(mpamp.cuda.is_available(), reason="a CUDA device is present")


def _nvcc_found():
    """Mirrors setup.py's find_nvcc: CUDA_HOME when set, else PATH, else /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME")
    if home:
        return os.access(os.path.join(home, "bin", "nvcc"), os.X_OK)
    return bool(shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"))


def test_is_built_matches_build_environment():
    # Assumes the extension was built in the environment the tests run in (build in place,
    # then test with the same MPAMP_CUDA / CUDA_HOME); CI relies on this to catch an
    # nvcc that is present but silently not used.
    expected = os.environ.get("MPAMP_CUDA") != "0" and _nvcc_found()
    assert mpamp.cuda.is_built() is expected, (
        "the extension was built with CUDA = %s but this environment says %s: rebuild with "
        "`python setup.py build_ext --inplace --force`, or run the tests with the MPAMP_CUDA "
        "/ CUDA_HOME used for the build" % (mpamp.cuda.is_built(), expected))


def test_queries_are_consistent():
    count = mpamp.cuda.device_count()
    assert isinstance(count, int) and count >= 0
    assert mpamp.cuda.is_available() is (mpamp.cuda.is_built() and count > 0)
    if not mpamp.cuda.is_built():
        assert count == 0


@no_gpu
def test_nothing_available_without_a_device():
    assert mpamp.cuda.is_available() is False
    assert mpamp.cuda.device_count() == 0


def _expected_message():
    if mpamp.cuda.is_built():
        return "CUDA not available: no CUDA device was found"
    return "CUDA not available: mpamp was built without CUDA support"


@no_gpu
def test_probe_raises_not_available():
    # The C side (stub or cuda/device.cu) and the Python side must tell the same story.
    with pytest.raises(RuntimeError, match="CUDA not available") as info:
        _C._cuda_probe()
    assert str(info.value).startswith(_expected_message())


@no_gpu
def test_cuda_cast_raises_not_available():
    t = mpamp.ones(4)
    with pytest.raises(RuntimeError, match="^" + _expected_message()):
        _C._cuda_cast_roundtrip(t, mpamp.float16)


@no_gpu
def test_factories_and_moves_raise_not_available():
    with pytest.raises(RuntimeError, match="CUDA not available"):
        mpamp.zeros(2, device="cuda")
    t = mpamp.zeros(2)
    with pytest.raises(RuntimeError, match="CUDA not available"):
        t.cuda()
    with pytest.raises(RuntimeError, match="CUDA not available"):
        t.to("cuda:0")


def test_cast_roundtrip_rejects_bad_arguments():
    with pytest.raises(TypeError):
        _C._cuda_cast_roundtrip(np.ones(3, np.float32), mpamp.float16)
    with pytest.raises(ValueError, match="contiguous"):
        _C._cuda_cast_roundtrip(mpamp.ones(2, 3).t(), mpamp.float16)


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "setup.py")),
                    reason="needs the source tree")
def test_required_cuda_without_nvcc_fails_clearly(tmp_path):
    env = dict(os.environ, MPAMP_CUDA="1", CUDA_HOME=str(tmp_path / "no-cuda"),
               PATH=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path / "t"),
         "--build-lib", str(tmp_path / "l")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "MPAMP_CUDA=1 but nvcc was not found" in out
    assert "Traceback" not in out
    assert not os.path.exists(tmp_path / "t")   # failed before compiling anything


# ---- with a device: the CUDA kernels against the CPU casts, bit for bit ----

def _bits(t):
    # _C._memoryview: memoryview() refuses bf16 tensors (see csrc/bindings/interop_buffer.c)
    mv = mpamp._C._memoryview(t)
    return np.asarray(mv).view(np.uint32 if t.dtype is mpamp.float32 else np.uint16)


def _all_halves():
    return mpamp.from_numpy(np.arange(1 << 16, dtype=np.uint16).view(np.float16))


def _all_bf16():
    # every bf16 pattern, made exactly from its fp32 widening
    f32 = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    return mpamp.from_numpy(f32).to(mpamp.bfloat16)


def _f32_samples():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
                        0x477ff000, 0x477fefff, 0x33000000, 0x33000001, 0x387fc000,
                        0x00000001, 0x7f7fffff], dtype=np.uint32)
    return mpamp.from_numpy(np.concatenate([bits, special]).view(np.float32))


@pytest.mark.cuda
@pytest.mark.parametrize("make, dst", [
    (_f32_samples, mpamp.float16), (_f32_samples, mpamp.bfloat16),
    (_all_halves, mpamp.float32), (_all_halves, mpamp.bfloat16),
    (_all_bf16, mpamp.float32), (_all_bf16, mpamp.float16),
    (_all_halves, mpamp.float16), (_f32_samples, mpamp.float32),
])
def test_cuda_cast_matches_cpu(make, dst):
    src = make()
    gpu = _C._cuda_cast_roundtrip(src, dst)
    # The CPU reference converts through fp32, as the kernels do.
    cpu = src.to(dst) if mpamp.float32 in (src.dtype, dst) else src.float().to(dst)
    assert gpu.dtype is dst and tuple(gpu.shape) == tuple(src.shape)
    np.testing.assert_array_equal(_bits(gpu), _bits(cpu))


@pytest.mark.cuda
def test_cuda_cast_empty_and_odd_sizes():
    for n in (0, 1, 255, 257, 1_000_003):
        src = mpamp.from_numpy(np.linspace(-70000, 70000, n, dtype=np.float32))
        np.testing.assert_array_equal(_bits(_C._cuda_cast_roundtrip(src, mpamp.float16)),
                                      _bits(src.to(mpamp.float16)))


@pytest.mark.cuda
def test_cuda_probe_and_unsupported_cast():
    assert _C._cuda_probe() is None
    with pytest.raises(TypeError, match="not supported"):
        _C._cuda_cast_roundtrip(mpamp.ones(3), mpamp.int64)
