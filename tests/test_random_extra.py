"""multinomial, randperm, bernoulli, normal, the in-place fills (normal_, uniform_,
exponential_, bernoulli_, random_) and the uint8 RNG state: distributions (fixed seeds, loose
bounds over 1e5 draws), reproducibility from manual_seed and generator=, torch's shapes, dtypes
and errors. The numbers themselves are mpamp's Philox stream, not torch's."""
import struct

import numpy as np
import pytest

import mpamp
from conftest import run_python, to_numpy

FLOATS = [mpamp.float32, mpamp.float16, mpamp.bfloat16]


def _state(gen=None):
    g = mpamp.default_generator if gen is None else gen
    return struct.unpack("<QQ", bytes(g.get_state().numpy()))


# ---- RNG state ----

def test_rng_state_is_a_uint8_tensor_that_resumes_the_stream():
    mpamp.manual_seed(11)
    mpamp.rand(5)
    state = mpamp.get_rng_state()
    assert state.dtype is mpamp.uint8 and state.shape == (16,)
    assert _state() == (11, 2)                      # seed 11, 2 blocks used by rand(5)
    a = mpamp.randn(7).tolist()
    mpamp.rand(100)
    mpamp.set_rng_state(state)
    assert mpamp.randn(7).tolist() == a
    g = mpamp.Generator().manual_seed(3)
    gs = g.get_state()
    b = mpamp.rand(4, generator=g).tolist()
    assert g.set_state(gs) is g and mpamp.rand(4, generator=g).tolist() == b


def test_rng_state_through_a_checkpoint(tmp_path):
    mpamp.manual_seed(5)
    mpamp.randn(10)
    mpamp.save({"rng": mpamp.get_rng_state(), "step": 3}, tmp_path / "ckpt.pth")
    want = mpamp.rand(6).tolist()
    mpamp.manual_seed(99)
    ckpt = mpamp.load(tmp_path / "ckpt.pth")
    assert ckpt["rng"].dtype is mpamp.uint8
    mpamp.set_rng_state(ckpt["rng"])
    assert mpamp.rand(6).tolist() == want


def test_rng_state_torch_reads_the_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    mpamp.manual_seed(7)
    mpamp.save({"rng": mpamp.get_rng_state()}, tmp_path / "r.pth")
    back = torch.load(tmp_path / "r.pth", weights_only=True)["rng"]
    assert back.dtype == torch.uint8 and back.tolist() == mpamp.get_rng_state().tolist()
    torch.save({"rng": back}, tmp_path / "t.pth")
    want = mpamp.rand(3).tolist()
    mpamp.manual_seed(0)
    mpamp.set_rng_state(mpamp.load(tmp_path / "t.pth")["rng"])
    assert mpamp.rand(3).tolist() == want


def test_set_rng_state_errors():
    with pytest.raises(TypeError, match="expected a mpamp.ByteTensor, but got tuple"):
        mpamp.set_rng_state((1, 2))
    with pytest.raises(TypeError, match="RNG state must be a mpamp.ByteTensor"):
        mpamp.set_rng_state(mpamp.zeros(16))
    with pytest.raises(RuntimeError, match="state of size 16 .* state size to be 3"):
        mpamp.set_rng_state(mpamp.zeros(3, dtype=mpamp.uint8))
    with pytest.raises(RuntimeError, match="size to be 5056"):
        mpamp.Generator().set_state(mpamp.zeros(5056, dtype=mpamp.uint8))   # a torch state


def test_cuda_seeding_as_torch_cpu_build():
    assert mpamp.cuda.manual_seed(3) is None and mpamp.cuda.manual_seed_all(4) is None
    assert mpamp.cuda.seed() is None and mpamp.cuda.seed_all() is None
    mpamp.manual_seed(8)                     # seeds the CUDA generator too, as torch
    assert mpamp._random.cuda_generator.initial_seed() == 8
    mpamp.cuda.manual_seed(12)
    assert mpamp._random.cuda_generator.initial_seed() == 12
    assert mpamp.initial_seed() == 8         # the CPU stream is left alone
    states = mpamp.cuda.get_rng_state_all()
    assert len(states) == mpamp.cuda.device_count()
    if not mpamp.cuda.is_available():
        assert mpamp.cuda.set_rng_state(mpamp.zeros(16, dtype=mpamp.uint8)) is None  # ignored
        assert mpamp._random.cuda_generator.initial_seed() == 12
        for fn in (mpamp.cuda.initial_seed, mpamp.cuda.get_rng_state):
            with pytest.raises(RuntimeError, match="CUDA not available"):
                fn()
    else:
        assert mpamp.cuda.initial_seed() == 12
        state = mpamp.cuda.get_rng_state()
        assert state.dtype is mpamp.uint8 and state.shape == (16,)
        mpamp.cuda.set_rng_state(mpamp.get_rng_state())
        assert mpamp.cuda.initial_seed() == 8


# ---- multinomial ----

def test_multinomial_with_replacement_frequencies():
    p = np.array([0.1, 0.0, 0.2, 0.3, 0.4], np.float32)
    mpamp.manual_seed(1)
    s = to_numpy(mpamp.multinomial(mpamp.tensor(p * 7), 100000, replacement=True))
    assert s.dtype == np.int64 and s.shape == (100000,)
    freq = np.bincount(s, minlength=5) / s.size
    assert freq[1] == 0
    np.testing.assert_allclose(freq, p, atol=5 * np.sqrt(0.25 / s.size))


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_without_replacement_follows_sequential_draws(dtype):
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    rows = 40000
    probs = mpamp.tensor(p).to(dtype)[None].expand(rows, 4)        # expanded, stride 0
    s = to_numpy(mpamp.multinomial(probs, 3, generator=mpamp.Generator().manual_seed(2)))
    assert s.shape == (rows, 3)
    assert (s[:, 0] != s[:, 1]).all() and (s[:, 1] != s[:, 2]).all() and \
        (s[:, 0] != s[:, 2]).all()
    pr = to_numpy(mpamp.tensor(p).to(dtype).float()).astype(np.float64)
    pr /= pr.sum()
    second = [sum(pr[i] * pr[j] / (1 - pr[i]) for i in range(4) if i != j) for j in range(4)]
    tol = 5 * np.sqrt(0.25 / rows)
    np.testing.assert_allclose(np.bincount(s[:, 0], minlength=4) / rows, pr, atol=tol)
    np.testing.assert_allclose(np.bincount(s[:, 1], minlength=4) / rows, second, atol=tol)


def test_multinomial_zero_probabilities_come_last_and_all_categories():
    mpamp.manual_seed(0)
    for _ in range(20):
        s = mpamp.multinomial(mpamp.tensor([0.0, 1.0, 0.0, 2.0]), 4).tolist()
        assert sorted(s) == [0, 1, 2, 3] and set(s[:2]) == {1, 3}
    s = mpamp.multinomial(mpamp.tensor([0.0, 1.0, 0.0]), 2, True).tolist()
    assert s == [1, 1]
    one = mpamp.multinomial(mpamp.tensor([[0.0, 0.0, 5.0], [3.0, 0.0, 0.0]]), 1)
    assert one.tolist() == [[2], [0]]


def test_multinomial_reproducible_and_method():
    p = mpamp.rand(3, 50)
    a = mpamp.multinomial(p, 10, generator=mpamp.Generator().manual_seed(4))
    b = p.multinomial(10, generator=mpamp.Generator().manual_seed(4))
    assert a.tolist() == b.tolist()
    mpamp.manual_seed(4)
    c = mpamp.multinomial(p.t().contiguous().t(), 10)              # same values, strided
    assert c.tolist() == a.tolist()
    assert mpamp.multinomial(mpamp.ones(0, 3), 2).shape == (0, 2)


def test_multinomial_errors_match_torch():
    P = mpamp.tensor([0.2, 0.3, 0.5])
    cases = [
        ((P, 4), RuntimeError, "cannot sample n_sample > prob_dist.size\\(-1\\) samples without "
                               "replacement"),
        ((P, 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
        ((P, -1, True), RuntimeError, "cannot sample n_sample <= 0 samples"),
        ((mpamp.tensor([1, 2]), 1), RuntimeError, "multinomial only supports floating-point "
                                                  "dtypes for input, got: Long"),
        ((mpamp.ones(3, dtype=mpamp.uint8), 1), RuntimeError, "got: Byte"),
        ((mpamp.ones(1, 1, 1), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
        ((mpamp.tensor(1.0), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
        ((mpamp.tensor([-1.0, 2.0]), 1), RuntimeError, "probability tensor contains either "
                                                       "`inf`, `nan` or element < 0"),
        ((mpamp.tensor([float("inf"), 2.0]), 1), RuntimeError, "`inf`, `nan`"),
        ((mpamp.tensor([float("nan"), 2.0]), 1, True), RuntimeError, "`inf`, `nan`"),
        ((mpamp.tensor([[0.0, 1.0], [0.0, 0.0]]), 1), RuntimeError,
         "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
        ((mpamp.ones(2, 0), 1, True), RuntimeError, "sum of probabilities <= 0"),
        ((P, 2.0), TypeError, "argument 'num_samples' \\(position 2\\) must be int, not float"),
        ((P, True), TypeError, "must be int, not bool"),
        (([0.5], 1), TypeError, "argument 'input' \\(position 1\\) must be Tensor, not list"),
    ]
    before = _state()
    for args, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            mpamp.multinomial(*args)
    assert _state() == before                # failed calls do not move the stream


def test_multinomial_torch_shapes_and_errors_agree():
    torch = pytest.importorskip("torch")
    for shape, n, repl in [((5,), 3, False), ((4, 6), 6, False), ((2, 3), 7, True),
                           ((0, 3), 2, False)]:
        pm, pt = mpamp.ones(*shape), torch.ones(*shape)
        assert tuple(mpamp.multinomial(pm, n, repl).shape) == \
            tuple(torch.multinomial(pt, n, repl).shape)
        assert mpamp.multinomial(pm, n, repl).dtype is mpamp.int64
    for bad in ([-1.0, 1.0], [0.0, 0.0]):
        with pytest.raises(RuntimeError) as et:
            torch.multinomial(torch.tensor(bad), 1)
        with pytest.raises(RuntimeError) as em:
            mpamp.multinomial(mpamp.tensor(bad), 1)
        assert str(em.value) == str(et.value)


# ---- randperm ----

@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_randperm_is_a_permutation(n):
    p = mpamp.randperm(n, generator=mpamp.Generator().manual_seed(n))
    assert p.dtype is mpamp.int64 and p.shape == (n,)
    assert sorted(p.tolist()) == list(range(n))


def test_randperm_uniform_over_permutations_and_reproducible():
    g = mpamp.Generator().manual_seed(0)
    counts = {}
    for _ in range(6000):
        key = tuple(mpamp.randperm(3, generator=g).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6
    assert all(abs(c - 1000) < 5 * np.sqrt(1000) for c in counts.values())
    mpamp.manual_seed(3)
    a = mpamp.randperm(50).tolist()
    mpamp.manual_seed(3)
    assert mpamp.randperm(50).tolist() == a
    pos = np.zeros((10, 10))
    for _ in range(5000):
        pos[np.arange(10), to_numpy(mpamp.randperm(10, generator=g))] += 1
    np.testing.assert_allclose(pos / 5000, 0.1, atol=5 * np.sqrt(0.09 / 5000))


@pytest.mark.parametrize("dtype", [mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.uint8])
def test_randperm_dtypes(dtype):
    p = mpamp.randperm(200, dtype=dtype)
    assert p.dtype is dtype and sorted(p.long().tolist()) == list(range(200))


def test_randperm_errors():
    for call, exc, msg in [
        (lambda: mpamp.randperm(-1), RuntimeError, "negative dimension -1: \\[-1\\]"),
        (lambda: mpamp.randperm(3.0), TypeError, "argument 'n' \\(position 1\\) must be int, "
                                                 "not float"),
        (lambda: mpamp.randperm(True), TypeError, "must be int, not bool"),
        (lambda: mpamp.randperm(5, dtype=mpamp.bool), NotImplementedError,
         "\"randperm\" not implemented for 'Bool'"),
        (lambda: mpamp.randperm(300, dtype=mpamp.uint8), RuntimeError,
         "value cannot be converted to type uint8_t without overflow"),
        (lambda: mpamp.randperm(3000, dtype=mpamp.float16), RuntimeError,
         "n cannot be greater than 2049 for Half type."),
        (lambda: mpamp.randperm(300, dtype=mpamp.bfloat16), RuntimeError,
         "n cannot be greater than 257 for BFloat16 type."),
        (lambda: mpamp.randperm(2 ** 24 + 2, dtype=mpamp.float32), RuntimeError,
         "n cannot be greater than 2\\^24\\+1 for Float type."),
        (lambda: mpamp.randperm(3, device="cuda"), RuntimeError, "CUDA not available"),
    ]:
        with pytest.raises(exc, match=msg):
            call()


def test_randperm_torch_agrees_on_dtypes_and_errors():
    torch = pytest.importorskip("torch")
    assert str(torch.randperm(5).dtype).split(".")[1] == repr(mpamp.randperm(5).dtype)[6:]
    for n, dt in [(300, "uint8"), (3000, "float16"), (-1, "int64")]:
        with pytest.raises(RuntimeError) as et:
            torch.randperm(n, dtype=getattr(torch, dt))
        with pytest.raises(RuntimeError) as em:
            mpamp.randperm(n, dtype=getattr(mpamp, dt))
        assert str(em.value) == str(et.value)


# ---- bernoulli ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_bernoulli_per_element_probabilities(dtype):
    p = np.tile(np.array([0.0, 0.25, 0.5, 1.0], np.float32), 25000)
    out = mpamp.bernoulli(mpamp.tensor(p).to(dtype), generator=mpamp.Generator().manual_seed(1))
    assert out.dtype is dtype and out.shape == (100000,)
    o = to_numpy(out).reshape(-1, 4)
    assert set(np.unique(o)) <= {0.0, 1.0}
    assert not o[:, 0].any() and o[:, 3].all()
    np.testing.assert_allclose(o.mean(0), [0, 0.25, 0.5, 1], atol=5 * np.sqrt(0.25 / 25000))


def test_bernoulli_scalar_p_and_method_and_reproducible():
    x = mpamp.zeros(100000, dtype=mpamp.int64)
    out = mpamp.bernoulli(x, 0.3, generator=mpamp.Generator().manual_seed(2))
    assert out.dtype is mpamp.int64 and abs(to_numpy(out).mean() - 0.3) < 0.01
    again = x.bernoulli(0.3, generator=mpamp.Generator().manual_seed(2))
    assert again.tolist() == out.tolist()
    assert x.tolist() == [0] * 100000                                 # input untouched
    p = mpamp.rand(2, 3, requires_grad=True)
    assert not mpamp.bernoulli(p).requires_grad


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        mpamp.bernoulli(mpamp.tensor([2.0, 0.5]))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        mpamp.bernoulli(mpamp.tensor([float("nan")]))
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_p_\" not implemented "
                                                  "for 'Long'"):
        mpamp.bernoulli(mpamp.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\], but got "
                                           "p=2"):
        mpamp.bernoulli(mpamp.zeros(3), 2.0)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        mpamp.bernoulli([0.5])


# ---- in-place fills ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_uniform_exponential_statistics(dtype):
    n = 100000
    t = mpamp.empty(n, dtype=dtype)

    def f64(x):
        return to_numpy(x).astype(np.float64)
    x = f64(t.normal_(3.0, 2.0, generator=mpamp.Generator().manual_seed(1)))
    assert abs(x.mean() - 3) < 0.03 and abs(x.std() - 2) < 0.03
    x = f64(t.uniform_(-1.0, 3.0, generator=mpamp.Generator().manual_seed(2)))
    assert x.min() >= -1 and x.max() <= 3                  # fp16/bf16 may round up to 3
    assert abs(x.mean() - 1) < 0.03 and abs(x.var() - 16 / 12) < 0.03
    x = f64(t.exponential_(2.0, generator=mpamp.Generator().manual_seed(3)))
    assert x.min() >= 0 and np.isfinite(x).all()
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 0.25) < 0.01
    x = f64(t.bernoulli_(0.2, generator=mpamp.Generator().manual_seed(4)))
    assert set(np.unique(x)) <= {0.0, 1.0} and abs(x.mean() - 0.2) < 0.01


def test_fills_return_self_and_reproduce_under_manual_seed():
    for name, args in [("normal_", (0.0, 1.0)), ("uniform_", (0.0, 1.0)),
                       ("exponential_", (1.0,)), ("bernoulli_", (0.5,)), ("random_", (10,))]:
        t = mpamp.empty(33)
        mpamp.manual_seed(21)
        assert getattr(t, name)(*args) is t
        a = t.tolist()
        mpamp.manual_seed(21)
        assert getattr(t, name)(*args).tolist() == a, name


def test_fills_on_non_contiguous_views_write_only_the_view():
    base = mpamp.zeros(6, 8)
    v = base.t()[::2]                                              # (4, 6), strided
    v.normal_(generator=mpamp.Generator().manual_seed(5))
    b = to_numpy(base)
    assert (b[:, 1::2] == 0).all() and (b[:, ::2] != 0).all()
    c = mpamp.zeros(4, 6)
    c.normal_(generator=mpamp.Generator().manual_seed(5))
    np.testing.assert_array_equal(to_numpy(v), to_numpy(c))       # row-major order of the view
    e = mpamp.zeros(2, 3)
    e.bernoulli_(mpamp.tensor([1.0, 0.0, 1.0]))                     # broadcast p
    assert e.tolist() == [[1, 0, 1], [1, 0, 1]]


def test_random_integers():
    t = mpamp.empty(100000)
    x = to_numpy(t.random_(2, 5, generator=mpamp.Generator().manual_seed(1)))
    assert set(np.unique(x)) == {2.0, 3.0, 4.0}
    x = to_numpy(t.random_(generator=mpamp.Generator().manual_seed(1)))
    assert x.min() >= 0 and x.max() <= 2 ** 24 and x.max() > 2 ** 23
    u = mpamp.empty(10000, dtype=mpamp.uint8).random_()
    assert u.dtype is mpamp.uint8 and to_numpy(u).max() > 200
    b = mpamp.empty(1000, dtype=mpamp.bool).random_()
    assert 300 < to_numpy(b).sum() < 700
    k = mpamp.empty(1000, dtype=mpamp.int64).random_(to=3)
    assert set(k.tolist()) == {0, 1, 2}
    assert set(mpamp.empty(200).random_(**{"from": 7, "to": 9}).tolist()) == {7.0, 8.0}


def test_fill_errors_match_torch():
    f = mpamp.zeros(3)
    i = mpamp.zeros(3, dtype=mpamp.int64)
    cases = [
        (lambda: f.normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
        (lambda: i.normal_(), NotImplementedError, "\"normal_kernel_cpu\" not implemented for "
                                                   "'Long'"),
        (lambda: f.uniform_(2, 1), RuntimeError, "uniform_ expects to return a \\[from, to\\) "
                                                 "range, but found from=2 > to=1"),
        (lambda: i.uniform_(), NotImplementedError, "\"check_uniform_bounds\" not implemented"),
        (lambda: f.exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found "
                                                  "lambda=0"),
        (lambda: f.exponential_(-1.5), RuntimeError, "found lambda=-1.5"),
        (lambda: i.exponential_(), RuntimeError, "Exponential distribution is a continuous "
                                                 "probability distribution. dtype must be a "
                                                 "floating point but you specified Long"),
        (lambda: f.bernoulli_(2), RuntimeError, "bernoulli_ expects p to be in \\[0, 1\\], but "
                                                "got p=2"),
        (lambda: f.bernoulli_(mpamp.tensor([2.0, 0, 0])), RuntimeError, "Expected p_in >= 0"),
        (lambda: f.bernoulli_(mpamp.tensor([1.0, 0])), RuntimeError, "expanded size"),
        (lambda: f.bernoulli_(mpamp.tensor([1, 0, 1])), TypeError,
         "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
        (lambda: f.random_(5, 2), RuntimeError, "random_ expects 'from' to be less than 'to', "
                                                "but got from=5 >= to=2"),
        (lambda: f.random_(1.5), TypeError, "argument 'to' \\(position 2\\) must be int"),
        (lambda: f.random_(1, 2, 3), TypeError, "at most 2 arguments"),
        (lambda: f.random_(bogus=1), TypeError, "unexpected keyword argument 'bogus'"),
        (lambda: f.random_(1, **{"from": 2}), TypeError, "multiple values for argument 'from'"),
        (lambda: f.uniform_(bogus=1), TypeError, "unexpected keyword argument 'bogus'"),
        (lambda: mpamp.zeros(3, dtype=mpamp.uint8).random_(300), RuntimeError,
         "to - 1 is out of bounds for unsigned char"),
        (lambda: mpamp.zeros(3, dtype=mpamp.uint8).random_(-1, 3), RuntimeError,
         "from is out of bounds for unsigned char"),
        (lambda: mpamp.zeros(3, dtype=mpamp.bool).random_(3), RuntimeError,
         "to - 1 is out of bounds for bool"),
        (lambda: mpamp.zeros(3, requires_grad=True).normal_(), RuntimeError,
         "a leaf Variable that requires grad is being used in an in-place operation"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()
    assert f.tolist() == [0.0, 0.0, 0.0]                 # nothing was written
    with mpamp.no_grad():
        w = mpamp.zeros(3, requires_grad=True)
        w.uniform_()                                      # allowed without grad mode
    assert w.requires_grad and w.is_leaf and len(set(w.tolist())) == 3


def test_fill_error_messages_equal_torchs():
    torch = pytest.importorskip("torch")
    for name, args in [("normal_", (0, -1)), ("uniform_", (2, 1)), ("exponential_", (0,)),
                       ("bernoulli_", (2,)), ("random_", (5, 2))]:
        with pytest.raises(RuntimeError) as et:
            getattr(torch.zeros(3), name)(*args)
        with pytest.raises(RuntimeError) as em:
            getattr(mpamp.zeros(3), name)(*args)
        assert str(em.value) == str(et.value), name


def test_c_entry_points_check_their_arguments():
    C = mpamp._C
    t = mpamp.zeros(3)
    with pytest.raises(TypeError, match="_random_inplace_"):
        C._random_inplace_(t, "normal", 0, 1, "x", 0)
    with pytest.raises(ValueError, match="unknown random kind 'bogus'"):
        C._random_inplace_(t, "bogus", 0, 1, "x", 0, 0)
    with pytest.raises(TypeError, match="the bounds must be integers"):
        C._random_inplace_(t, "int", 0.5, 1, "random_", 0, 0)
    with pytest.raises(TypeError, match="_multinomial"):
        C._multinomial([1.0], 1, False, 0, 0)
    with pytest.raises(TypeError, match="_randperm"):
        C._randperm(3, None, 0)


# ---- normal() ----

def test_normal_function_forms():
    mpamp.manual_seed(0)
    x = mpamp.normal(2.0, 3.0, (100000,))
    assert x.dtype is mpamp.float32 and abs(to_numpy(x).mean() - 2) < 0.05
    assert abs(to_numpy(x).std() - 3) < 0.05
    assert mpamp.normal(0.0, 1.0, (3,), dtype=mpamp.bfloat16).dtype is mpamp.bfloat16
    m = mpamp.normal(mpamp.zeros(2, 3), mpamp.ones(3))
    assert m.shape == (2, 3)
    assert mpamp.normal(mpamp.zeros(3, dtype=mpamp.float16), 1.0).dtype is mpamp.float16
    assert mpamp.normal(0.0, mpamp.ones(4)).shape == (4,)
    big = to_numpy(mpamp.normal(mpamp.full((100000,), 5.0), 0.5))
    assert abs(big.mean() - 5) < 0.01 and abs(big.std() - 0.5) < 0.01
    g = mpamp.Generator()
    a = mpamp.normal(mpamp.zeros(5), mpamp.ones(5), generator=g.manual_seed(1)).tolist()
    assert mpamp.normal(mpamp.zeros(5), mpamp.ones(5), generator=g.manual_seed(1)).tolist() == a


def test_normal_function_is_differentiable_in_mean_and_std():
    mean = mpamp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    std = mpamp.tensor([0.5, 1.0, 2.0], requires_grad=True)
    out = mpamp.normal(mean, std, generator=mpamp.Generator().manual_seed(3))
    out.sum().backward()
    z = (to_numpy(out) - to_numpy(mean)) / to_numpy(std)
    np.testing.assert_allclose(to_numpy(mean.grad), 1.0)
    np.testing.assert_allclose(to_numpy(std.grad), z, rtol=1e-5, atol=1e-6)


def test_normal_function_errors():
    with pytest.raises(TypeError, match="size is required"):
        mpamp.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        mpamp.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        mpamp.normal(mpamp.zeros(3), -1.0)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        mpamp.normal(mpamp.zeros(3), -mpamp.ones(3))
    with pytest.raises(RuntimeError, match="must match the size"):
        mpamp.normal(mpamp.zeros(2), mpamp.ones(3))
    with pytest.raises(TypeError, match="size is only accepted"):
        mpamp.normal(mpamp.zeros(2), 1.0, (2,))
    for fn in (lambda: mpamp.multinomial(mpamp.ones(2), 1, out=mpamp.zeros(1)),
               lambda: mpamp.randperm(2, out=mpamp.zeros(2)),
               lambda: mpamp.bernoulli(mpamp.ones(2), out=mpamp.zeros(2)),
               lambda: mpamp.normal(0.0, 1.0, (2,), out=mpamp.zeros(2))):
        with pytest.raises(TypeError, match="out= is not supported"):
            fn()


def test_init_functions_still_use_the_stream():
    w = mpamp.empty(64, 32)
    mpamp.manual_seed(9)
    mpamp.nn.init.kaiming_uniform_(w)
    a = w.tolist()
    mpamp.manual_seed(9)
    mpamp.nn.init.kaiming_uniform_(w)
    assert w.tolist() == a


def test_seed_reproducible_in_a_fresh_process():
    code = ("import mpamp; mpamp.manual_seed(42); "
            "print(mpamp.multinomial(mpamp.ones(10), 4).tolist(), mpamp.randperm(6).tolist(), "
            "mpamp.empty(3).exponential_().tolist())")
    a, b = run_python(code), run_python(code)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout and a.stdout.strip()


def test_torch_random_module_and_fork_rng():
    import mpamp.random as r
    assert r.manual_seed is mpamp.manual_seed and r.get_rng_state is mpamp.get_rng_state
    mpamp.manual_seed(6)
    with r.fork_rng():
        inside = mpamp.rand(5).tolist()
        mpamp.manual_seed(100)
        mpamp.cuda.manual_seed(100)
    assert mpamp.rand(5).tolist() == inside          # the block's draws did not count
    assert mpamp._random.cuda_generator.initial_seed() == 6
    with r.fork_rng(enabled=False):
        mpamp.rand(1)
    assert mpamp.rand(5).tolist() != inside
