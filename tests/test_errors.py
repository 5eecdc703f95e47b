"""Bad input raises a clear Python exception (never a crash or SystemError)."""
import numpy as np
import pytest

import mpamp
from conftest import run_python


def test_ragged_and_non_numeric_lists():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 3\)"):
        mpamp.tensor([[1, 2], [3, 4, 5]])
    with pytest.raises(ValueError, match=r"expected sequence of length 1 at dim 2 \(got 2\)"):
        mpamp.tensor([[[1], [2]], [[3], [4, 5]]])
    with pytest.raises(TypeError, match="Could not infer dtype of str"):
        mpamp.tensor(["a", "b"])
    with pytest.raises(TypeError, match="Could not infer dtype of NoneType"):
        mpamp.tensor([1.0, None])
    with pytest.raises(TypeError, match="Could not infer dtype of dict"):
        mpamp.tensor([{}, {}])
    with pytest.raises(TypeError, match="complex"):
        mpamp.tensor([1 + 2j])
    with pytest.raises(OverflowError):
        mpamp.tensor([2**70])
    with pytest.raises(TypeError):
        mpamp.tensor(object())


def test_negative_and_overflowing_sizes():
    with pytest.raises(ValueError, match=r"negative dimension -1: \[2, -1\]"):
        mpamp.zeros(2, -1)
    with pytest.raises(MemoryError, match="overflowed"):
        mpamp.empty(2**40, 2**40)
    with pytest.raises(MemoryError):
        mpamp.empty(2**50)                      # 4 PiB: impossible allocation
    with pytest.raises(OverflowError):
        mpamp.zeros(2**64)
    with pytest.raises(ValueError, match="at most 16 dimensions"):
        mpamp.zeros(*([1] * 17))
    with pytest.raises(TypeError, match="tuple of ints"):
        mpamp.zeros(2.5)
    with pytest.raises(TypeError, match="must be tuple of ints"):
        mpamp.zeros((2, "3"))
    with pytest.raises(TypeError, match="size must be a tuple of ints"):
        mpamp.zeros("23")
    with pytest.raises(TypeError, match="expected a number"):
        mpamp.full((2,), "x")


def test_unsupported_numpy_dtypes_name_the_supported_ones():
    for dt in (np.float64, np.int32, np.uint16, np.complex64):
        with pytest.raises(TypeError, match="The only supported types are: float32, float16, "
                                            "bfloat16 \\(ml_dtypes\\), int64, bool and uint8"):
            mpamp.from_numpy(np.zeros(3, dtype=dt))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        mpamp.from_numpy([1.0])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.<U1"):
        mpamp.tensor(np.array(["a"]))


def test_from_numpy_layout_errors():
    a = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="negative"):
        mpamp.from_numpy(a[::-1])
    rec = np.zeros(4, dtype=[("a", np.float32), ("b", np.int8)])
    with pytest.raises(ValueError, match="strides not a multiple of the element byte size"):
        mpamp.from_numpy(rec["a"])
    ro = np.arange(3, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.warns(UserWarning, match="not writable"):
        mpamp.from_numpy(ro)
    assert mpamp.tensor(ro).tolist() == [0, 1, 2]       # tensor() copies silently
    be = np.arange(3, dtype=">f4")
    with pytest.raises(TypeError):
        mpamp.from_numpy(be)
    assert mpamp.tensor(be).tolist() == [0, 1, 2]       # converted by a copy


def test_isa_env_validation():
    out = run_python("import warnings; warnings.simplefilter('always'); import mpamp; "
                     "print(mpamp.backends.cpu.get_isa())", MPAMP_CPU_ISA="sse9")
    assert out.returncode == 0 and "not one of scalar, avx2, avx512, avx512bf16" in out.stderr
    assert out.stdout.strip() == mpamp.backends.cpu.get_isa()
