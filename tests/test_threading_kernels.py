"""The kernel thread count (mpamp.get/set_num_threads, MPAMP_NUM_THREADS, OMP_NUM_THREADS) and
large kernels split over threads giving the same bits as one thread."""
import numpy as np
import pytest

import mpamp
from conftest import bits_of, run_python


@pytest.fixture
def restore_threads():
    n = mpamp.get_num_threads()
    yield
    mpamp.set_num_threads(n)


def test_set_and_get(restore_threads):
    assert mpamp.get_num_threads() >= 1
    mpamp.set_num_threads(1)
    assert mpamp.get_num_threads() == 1
    mpamp.set_num_threads(3)
    assert mpamp.get_num_threads() == 3
    with pytest.raises(ValueError, match="positive integer"):
        mpamp.set_num_threads(0)
    with pytest.raises(TypeError):
        mpamp.set_num_threads(1.5)


def test_environment_variables():
    code = "import mpamp; print(mpamp.get_num_threads())"
    assert run_python(code, MPAMP_NUM_THREADS="1").stdout.strip() == "1"
    assert run_python(code, MPAMP_NUM_THREADS="", OMP_NUM_THREADS="1").stdout.strip() == "1"
    assert run_python(code, MPAMP_NUM_THREADS="1", OMP_NUM_THREADS="2").stdout.strip() == "1"


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"),
                                     ("float16", "float32"), ("bfloat16", "float32"),
                                     ("float32", "float32")])
def test_threaded_copies_match_one_thread(src, dst, restore_threads):
    rng = np.random.default_rng(3)
    n = (1 << 22) + 12345                         # above the threading threshold, odd tail
    x = mpamp.tensor(rng.normal(size=n).astype(np.float32) * 1e3).to(getattr(mpamp, src))
    mpamp.set_num_threads(1)
    one = bits_of(x.to(getattr(mpamp, dst), copy=True))
    mpamp.set_num_threads(4)                      # more threads than cores is still correct
    many = bits_of(x.to(getattr(mpamp, dst), copy=True))
    np.testing.assert_array_equal(one, many)
    out = mpamp.empty(n, dtype=getattr(mpamp, dst))
    out.copy_(x)
    np.testing.assert_array_equal(bits_of(out), one)
