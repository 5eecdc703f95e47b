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


def test_threaded_maps_match_one_thread_and_numpy(restore_threads):
    """Large pointwise ops (forward and backward) run in row-major ranges on several threads:
    ranges start and end inside rows, and operands may be transposed, broadcast or fp16."""
    rng = np.random.default_rng(4)
    a_np = rng.normal(size=(517, 1031)).astype(np.float32)     # odd sizes: ranges cut rows
    b_np = rng.normal(size=(1031,)).astype(np.float32)
    cases = {
        "relu": lambda a, b: mpamp.relu(a),
        "add broadcast": lambda a, b: a + b,
        "mul transposed": lambda a, b: a.t().contiguous().t() * 3.0,
        "div by a transposed view": lambda a, b: a[:, :517] / (a[:, :517].t() + 10.0),
        "fp16 tanh": lambda a, b: mpamp.tanh(a.half()),
        "int64 add": lambda a, b: (a * 100).long() + 7,
    }
    refs = {
        "relu": np.maximum(a_np, 0),
        "add broadcast": a_np + b_np,
        "mul transposed": a_np * np.float32(3.0),
        "div by a transposed view": a_np[:, :517] / (a_np[:, :517].T + np.float32(10.0)),
    }
    for name, f in cases.items():
        outs = []
        for threads in (1, 3):
            mpamp.set_num_threads(threads)
            outs.append(bits_of(f(mpamp.tensor(a_np), mpamp.tensor(b_np))))
        np.testing.assert_array_equal(outs[0], outs[1], err_msg=name)
        if name in refs:
            np.testing.assert_array_equal(outs[0], bits_of(mpamp.tensor(refs[name])),
                                          err_msg=name)
    x = mpamp.tensor(a_np, requires_grad=True)
    grads = []
    for threads in (1, 3):
        mpamp.set_num_threads(threads)
        x.grad = None
        (mpamp.sigmoid(x) * mpamp.tensor(b_np)).sum().backward()
        grads.append(bits_of(x.grad))
    np.testing.assert_array_equal(grads[0], grads[1])
