"""The machine-limit probe _C._cpu_peak_gflops (csrc/testing/peak.c): it returns a positive finite
GFLOP/s where the active ISA level has the instruction, None where it does not, and rejects
bad arguments with the accepted values in the message. No test asserts a speed: the numbers
belong to benchmarks/ (bench_gemm.py, bench_train_step.py)."""
import math

import pytest

from conftest import run_python
from mpamp import _C

SHORT = 0.02        # seconds per probe: enough to exercise the threads, not to measure


def has_fma():
    return _C._get_isa() != "scalar"


@pytest.mark.parametrize("threads", [1, 2])
def test_fp32_fma_is_positive_and_finite(threads):
    if not has_fma():
        pytest.skip("the scalar level has no FMA probe (returns None)")
    g = _C._cpu_peak_gflops("fp32_fma", threads, SHORT)
    assert isinstance(g, float) and math.isfinite(g) and g > 0


def test_defaults_use_the_pool_thread_count():
    g = _C._cpu_peak_gflops("fp32_fma")
    assert g is None if not has_fma() else g > 0


def test_more_threads_than_cores_still_returns():
    g = _C._cpu_peak_gflops("fp32_fma", 5, SHORT)
    assert g is None if not has_fma() else g > 0


def test_bf16_dot_is_none_without_avx512_bf16():
    g = _C._cpu_peak_gflops("bf16_dot", 2, SHORT)
    if _C._get_isa() == "avx512bf16":
        assert isinstance(g, float) and math.isfinite(g) and g > 0
    else:
        assert g is None


def test_follows_the_active_level():
    out = run_python("from mpamp import _C\n"
                     "print(_C._cpu_peak_gflops('fp32_fma', 1, 0.01), "
                     "_C._cpu_peak_gflops('bf16_dot', 1, 0.01))", MPAMP_CPU_ISA="scalar")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "None"]


def test_unknown_kind_names_the_accepted_ones():
    with pytest.raises(ValueError, match="'fp32_fma' or 'bf16_dot'"):
        _C._cpu_peak_gflops("fp64_fma", 1, SHORT)


@pytest.mark.parametrize("threads", [0, -1, 257])
def test_bad_thread_count(threads):
    with pytest.raises(ValueError, match="threads must be between 1 and 256"):
        _C._cpu_peak_gflops("fp32_fma", threads, SHORT)


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), 61])
def test_bad_duration(seconds):
    with pytest.raises(ValueError, match="seconds must be > 0"):
        _C._cpu_peak_gflops("fp32_fma", 1, seconds)


@pytest.mark.parametrize("args", [(), (3,), ("fp32_fma", 1.5), ("fp32_fma", True),
                                  ("fp32_fma", 1, "long"), ("fp32_fma", 1, 0.1, 0)])
def test_bad_argument_types(args):
    with pytest.raises(TypeError):
        _C._cpu_peak_gflops(*args)
