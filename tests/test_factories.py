"""zeros/ones/empty/full(+_like), arange, and the counter-based random factories."""

import numpy as np
import pytest

import mpamp
from conftest import run_python, to_numpy

FLOATS = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "bool"])
def test_filled_factories(dtype):
    dt = getattr(mpamp, dtype)
    z = mpamp.zeros(2, 3, dtype=dt)
    assert z.shape == (2, 3) and z.dtype is dt and not to_numpy(z).any()
    o = mpamp.ones((2, 3), dtype=dt)
    assert (to_numpy(o) == 1).all()
    assert mpamp.empty([4], dtype=dt).shape == (4,)
    assert mpamp.zeros_like(o).dtype is dt and mpamp.ones_like(z).shape == (2, 3)
    assert mpamp.empty_like(z, dtype="fp16").dtype is mpamp.float16
    f = mpamp.full((3,), 1, dtype=dt)
    assert (to_numpy(f) == 1).all()
    assert mpamp.full_like(z, 1).dtype is dt


def test_full_infers_dtype_like_torch():
    assert mpamp.full((2,), 7).dtype is mpamp.int64
    assert mpamp.full((2,), 7.5).dtype is mpamp.float32
    assert mpamp.full((2,), True).dtype is mpamp.bool
    assert mpamp.full((2,), 2**40).tolist() == [2**40] * 2      # int64 exact
    assert mpamp.full((2,), 0.1, dtype="fp16").tolist() == [float(np.float16(0.1))] * 2


def test_zero_size_and_scalar_shapes():
    assert mpamp.zeros(()).shape == () and mpamp.zeros(()).item() == 0.0
    assert mpamp.zeros(0).numel() == 0 and mpamp.ones(3, 0).shape == (3, 0)
    assert mpamp.zeros(mpamp.Size([2, 2])).shape == (2, 2)
    assert mpamp.zeros(np.int64(3)).shape == (3,)


def test_factory_requires_grad_and_device():
    assert mpamp.zeros(2, requires_grad=True).requires_grad
    assert mpamp.ones(2, device="cpu").device == "cpu"
    assert mpamp.rand(2, device=mpamp.device("cpu")).shape == (2,)
    with pytest.raises(RuntimeError, match="CUDA not available"):
        mpamp.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="floating point"):
        mpamp.zeros(2, dtype=mpamp.int64, requires_grad=True)


def test_arange():
    assert mpamp.arange(5).tolist() == [0, 1, 2, 3, 4] and mpamp.arange(5).dtype is mpamp.int64
    assert mpamp.arange(2, 8, 3).tolist() == [2, 5]
    assert mpamp.arange(5, 0, -2).tolist() == [5, 3, 1]
    a = mpamp.arange(0, 1, 0.1)
    assert a.dtype is mpamp.float32 and a.numel() == 10
    np.testing.assert_allclose(to_numpy(a), np.arange(0, 1, 0.1, dtype=np.float64), rtol=1e-6)
    assert mpamp.arange(3, dtype="bf16").dtype is mpamp.bfloat16
    assert mpamp.arange(0).numel() == 0 and mpamp.arange(3, 3).numel() == 0
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        mpamp.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        mpamp.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="finite"):
        mpamp.arange(0, float("inf"))
    with pytest.raises(TypeError, match="must be a number"):
        mpamp.arange("5")


def test_manual_seed_reproducible():
    mpamp.manual_seed(42)
    a = mpamp.rand(1000)
    b = mpamp.randn(3, 7, dtype="fp16")
    c = mpamp.randint(0, 100, (50,))
    mpamp.manual_seed(42)
    assert mpamp.rand(1000).tolist() == a.tolist()
    assert mpamp.randn(3, 7, dtype="fp16").tolist() == b.tolist()
    assert mpamp.randint(0, 100, (50,)).tolist() == c.tolist()
    assert mpamp.rand(10).tolist() != a[:10].tolist()        # the stream moves on
    assert mpamp.initial_seed() == 42


def test_same_numbers_in_a_fresh_process_and_on_every_isa():
    code = ("import mpamp; mpamp.manual_seed(7); "
            "print(mpamp.rand(5).tolist(), mpamp.randn(5, dtype='bf16').tolist(), "
            "mpamp.randint(-5, 5, (5,)).tolist())")
    here = run_python(code).stdout
    scalar = run_python(code, MPAMP_CPU_ISA="scalar").stdout
    assert here == scalar and here.strip()
    mpamp.manual_seed(7)
    expected = f"{mpamp.rand(5).tolist()} {mpamp.randn(5, dtype='bf16').tolist()} " \
               f"{mpamp.randint(-5, 5, (5,)).tolist()}"
    assert here.strip() == expected


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_distribution(dtype):
    g = mpamp.Generator().manual_seed(1)
    u = to_numpy(mpamp.rand(200_000, dtype=dtype, generator=g)).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0              # never rounds up to 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    n = to_numpy(mpamp.randn(200_000, dtype=dtype, generator=g)).astype(np.float64)
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.02
    assert np.isfinite(n).all()


def test_randint_range_and_forms():
    g = mpamp.Generator().manual_seed(3)
    r = to_numpy(mpamp.randint(-3, 4, (10_000,), generator=g))
    assert r.min() == -3 and r.max() == 3
    assert set(np.unique(r)) == set(range(-3, 4))
    assert mpamp.randint(10, (2, 3)).shape == (2, 3)
    assert mpamp.randint(5, size=(4,)).dtype is mpamp.int64
    assert mpamp.randint(0, 2, (3,), dtype="fp32").dtype is mpamp.float32
    big = mpamp.randint(-2**62, 2**62, (100,), generator=g)
    assert to_numpy(big).std() > 2**55
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        mpamp.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="size"):
        mpamp.randint(5)


def test_like_random_factories():
    t = mpamp.zeros(2, 3, dtype="bf16")
    assert mpamp.rand_like(t).dtype is mpamp.bfloat16 and mpamp.randn_like(t).shape == (2, 3)
    assert mpamp.randint_like(mpamp.zeros(4, dtype=mpamp.int64), 3).dtype is mpamp.int64
    with pytest.raises(TypeError, match="floating point"):
        mpamp.rand(3, dtype=mpamp.int64)
    with pytest.raises(TypeError, match="expected a Tensor"):
        mpamp.zeros_like([1, 2])


def test_generator_state_roundtrip_and_independence():
    g1 = mpamp.Generator().manual_seed(5)
    state = g1.get_state()
    a = mpamp.rand(10, generator=g1).tolist()
    g1.set_state(state)
    assert mpamp.rand(10, generator=g1).tolist() == a
    g2 = mpamp.Generator().manual_seed(5)
    assert mpamp.rand(10, generator=g2).tolist() == a
    assert mpamp.Generator().manual_seed(6).initial_seed() == 6
    with pytest.raises(TypeError):
        mpamp.manual_seed(1.5)
    s = mpamp.seed()
    assert isinstance(s, int) and mpamp.initial_seed() == s
    mpamp.manual_seed(2**64 + 3)                         # reduced modulo 2**64, like torch
    assert mpamp.initial_seed() == 3
