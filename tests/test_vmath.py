"""The vector math kernels (csrc/cpu/vmath*.c): accuracy against a float64 reference over the
fp32 input space, bit-identity of every ISA level with the scalar oracle, special values,
the row reductions, and that the ops built on them give the same bits under MPAMP_CPU_ISA.

The input-space checks run in C (_C._check_vmath): by default every 64th chunk of 64Ki
patterns for exp (67M inputs) and every 256th for the others (16.7M each);
MPAMP_VMATH_FULL=1 checks all 2^32 patterns of every function (minutes each). The ulp bounds
are the maxima measured over all 2^32 inputs (benchmarks/RESULTS.md), rounded up a little.
"""
import math
import os

import numpy as np
import pytest

import mpamp
from conftest import bits_of, run_python, tensor_from_bits
from mpamp import _C

FULL = os.environ.get("MPAMP_VMATH_FULL") == "1"
VECTOR_ISAS = [i for i in _C._supported_isas() if i != "scalar"]
BEST = _C._supported_isas()[-1]      # its bits equal scalar's (checked), so its accuracy too

# name: (chunk step, max ulp over normal results, max over subnormal results in 2^-149);
# the maxima over all 2^32 inputs were exp 0.990 / 0.750, log 0.829, sigmoid 2.402 / 0.750,
# tanh 1.330, silu 3.394 / 1.305, gelu 4.950 / 2.573, gelu_tanh 3.379 / 1.214, silu_grad
# 4.541 / 1.269, gelu_grad 4.130 / 1.852, gelu_tanh_grad 6.543 / 2.199
BOUNDS = {
    "exp": (64, 1.0, 1.0),
    "log": (256, 1.0, 0.0),
    "sigmoid": (256, 2.5, 1.0),
    "tanh": (256, 1.5, 0.0),
    "silu": (256, 3.5, 1.5),
    "gelu": (256, 5.0, 3.0),
    "gelu_tanh": (256, 3.5, 1.5),   # against the formula with its fp32 inner term
    # derivatives are sums that cross zero: ulps of their largest term
    "silu_grad": (256, 5.0, 1.5),
    "gelu_grad": (256, 4.5, 2.0),
    "gelu_tanh_grad": (256, 7.0, 2.5),
}


def f32(bits):
    return float(np.uint32(bits).view(np.float32))


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_accuracy_and_identity_over_input_space(name):
    step, max_ulp, max_sub = BOUNDS[name]
    r = _C._check_vmath(BEST, name, 1 if FULL else step)
    assert r["checked"] == (1 << 32) // (1 if FULL else step)
    assert (r["mismatches"], r["first_bad"]) == (0, None)
    assert r["max_ulp"] <= max_ulp, (r, f32(r["worst"]))
    assert r["max_ulp_subnormal"] <= max_sub, (r, f32(r["worst_subnormal"]))


@pytest.mark.parametrize("isa", VECTOR_ISAS)
@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_every_level_matches_scalar(isa, name):
    r = _C._check_vmath(isa, name, 4096)
    assert (r["mismatches"], r["first_bad"]) == (0, None)


def run(isa, name, x, arg=None):
    t = mpamp.from_numpy(np.ascontiguousarray(x, np.float32))
    if arg is None:
        return _C._vmath_with_isa(isa, name, t)
    return _C._vmath_with_isa(isa, name, t, arg)


INF, NAN = math.inf, math.nan
SPECIALS = {      # input: exact result rounded to fp32 (mpmath), or inf / NaN by definition
    "exp": [(-INF, 0.0), (INF, INF), (0.0, 1.0), (-0.0, 1.0), (88.72283, 3.4027985e38),
            (88.72284, INF), (-87.33654, 1.1754997e-38), (-103.27893, 2**-149),
            (-103.97208, 2**-149), (-103.9721, 0.0), (-1e30, 0.0), (1e30, INF),
            (1e-30, 1.0), (-1e-30, 1.0), (2**-25, 1.0), (-2**-24, 1 - 2**-24)],
    "log": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (1.0, 0.0),
            (2**-149, -103.27893), (3.4028235e38, 88.72284), (math.e, 0.99999994)],
    "sigmoid": [(-INF, 0.0), (INF, 1.0), (0.0, 0.5), (-0.0, 0.5), (-100.0, 3.7835059e-44),
                (-104.0, 0.0), (20.0, 1.0), (-20.0, 2.0611537e-09)],
    "tanh": [(-INF, -1.0), (INF, 1.0), (0.0, 0.0), (-0.0, -0.0), (-1e-30, -1e-30),
             (2**-149, 2**-149), (10.0, 1.0), (-10.0, -1.0)],
    "silu": [(INF, INF), (0.0, 0.0), (-50.0, -9.643749e-21), (-1e30, -0.0), (-INF, NAN)],
    "gelu": [(INF, INF), (0.0, 0.0), (-5.0, -1.4332578e-06), (-10.0, -7.619853e-23),
             (-1e30, -0.0), (-INF, NAN)],
    "gelu_tanh": [(INF, INF), (0.0, 0.0), (-1e30, -0.0), (-INF, NAN)],
    "silu_grad": [(0.0, 0.5), (50.0, 1.0), (-1e30, -0.0), (INF, NAN), (-INF, NAN)],
    "gelu_grad": [(0.0, 0.5), (50.0, 1.0), (-50.0, 0.0), (INF, NAN), (-INF, NAN)],
    "gelu_tanh_grad": [(0.0, 0.5), (1e30, 1.0), (-1e30, 0.0), (INF, NAN), (-INF, NAN)],
}


@pytest.mark.parametrize("isa", _C._supported_isas())
@pytest.mark.parametrize("name", sorted(SPECIALS))
def test_special_values(isa, name):
    xs, want = zip(*SPECIALS[name])
    got = run(isa, name, np.array(xs, np.float32)).numpy()
    want = np.array(want, np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=3e-7, atol=2**-149)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("isa", _C._supported_isas())
@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_nan_input_comes_back_quieted(isa, name):
    bits = np.array([0x7FC00000, 0xFFC00001, 0x7F800001, 0xFF812345], np.uint32)
    got = bits_of(_C._vmath_with_isa(isa, name, tensor_from_bits(bits, mpamp.float32)))
    np.testing.assert_array_equal(got, bits | 0x00400000)


def ulp_errors(y, ref):
    """|y - ref| in ulps of ref as fp32, subnormal refs in units of 2^-149."""
    a = np.maximum(np.abs(ref), 2.0**-126)
    return np.abs(y.astype(np.float64) - ref) / 2.0 ** (np.floor(np.log2(a)) - 23)


def patterns_between(lo, hi, stride):
    """Every stride-th fp32 value in [lo, hi] (both negative)."""
    a, b = (int(np.float32(-v).view(np.uint32)) for v in (hi, lo))
    u = np.arange(a, b + 1, stride, dtype=np.uint64).astype(np.uint32) | np.uint32(1 << 31)
    return u.view(np.float32)


@pytest.mark.parametrize("isa", _C._supported_isas())
def test_lower_tails_keep_their_bits(isa):
    # silu: e^x is subnormal below -87.3 while x e^x stays normal down to -91.8; gelu: Phi(x)
    # is subnormal below -12.95. Both are carried 2^64 larger until the last product.
    x = patterns_between(-104.0, -80.0, 13)
    xd = x.astype(np.float64)
    ref = xd / (1 + np.exp(-xd))
    assert ulp_errors(run(isa, "silu", x).numpy(), ref).max() <= 3.0
    x = patterns_between(-14.6, -10.0, 211)
    xd = x.astype(np.float64)
    ref = xd * 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in xd])
    assert ulp_errors(run(isa, "gelu", x).numpy(), ref).max() <= 5.0


LENGTHS = list(range(0, 40)) + [63, 64, 65, 1023, 4097]


def reduction_inputs(rng, n):
    x = (rng.standard_normal(n + 3) * 4).astype(np.float32)
    if n > 5:
        x[rng.choice(n, 3, replace=False)] = [-0.0, 1e-40, -3e38]
    return x


@pytest.mark.parametrize("isa", VECTOR_ISAS)
def test_reductions_match_scalar_at_every_length_and_offset(isa, rng):
    for n in LENGTHS:
        base = reduction_inputs(rng, n)
        other = reduction_inputs(rng, n)
        for off in (0, 1, 3):
            x, y = base[off:off + n], other[off:off + n]
            for name, arg in (("max", None), ("sum", None), ("dot", y)):
                a = run(isa, name, x, None if arg is None else mpamp.tensor(arg))
                b = run("scalar", name, x, None if arg is None else mpamp.tensor(arg))
                assert np.float64(a).tobytes() == np.float64(b).tobytes(), (name, n, off)
            sa, ya = run(isa, "exp_sum", x, 1.5)
            sb, yb = run("scalar", "exp_sum", x, 1.5)
            assert sa == sb, n
            np.testing.assert_array_equal(bits_of(ya), bits_of(yb))


def test_reductions_against_numpy(rng):
    for n in LENGTHS:
        x = (rng.standard_normal(n) * 4).astype(np.float32)
        y = (rng.standard_normal(n)).astype(np.float32)
        isa = BEST
        assert run(isa, "max", x) == (x.max() if n else -INF)
        assert run(isa, "sum", x) == pytest.approx(math.fsum(x.astype(np.float64)), abs=1e-12)
        dot = math.fsum(x.astype(np.float64) * y.astype(np.float64))
        assert run(isa, "dot", x, mpamp.tensor(y)) == pytest.approx(dot, abs=1e-12)
        s, e = run(isa, "exp_sum", x, 2.0)
        ref = np.exp((x - np.float32(2.0)).astype(np.float64))    # difference in fp32
        np.testing.assert_allclose(e.numpy(), ref, rtol=1.2e-7)
        assert s == pytest.approx(math.fsum(e.numpy().astype(np.float64)), rel=1e-15, abs=0)


@pytest.mark.parametrize("isa", _C._supported_isas())
def test_unscale_finds_every_non_finite_value_and_scales_as_fp32(isa, rng):
    """GradScaler's pass: found is 1 exactly when an inf or NaN is present, wherever it lies
    (vector body, the 8/16-lane steps, the masked tail); values are x * inv in fp32 (inv 1:
    untouched), the same bits on every level. Subnormals and the largest finite values are
    finite; an overflow to inf by the product is not a find (the check reads x)."""
    for n in (0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 100, 1000):
        x = (rng.standard_normal(n) * 1e3).astype(np.float32)
        for inv in (1.0, 2.0**-16, 0.37, 3.0e38):
            found, y = run(isa, "unscale", x, inv)
            assert found == 0
            with np.errstate(over="ignore"):                # 3e38 * x: inf, not a find
                want = x if inv == 1.0 else (x * np.float32(inv)).astype(np.float32)
            np.testing.assert_array_equal(bits_of(y), want.view(np.uint32))
        for pos in sorted({0, n // 2, n - 1}) if n else []:
            for bad in (np.inf, -np.inf, np.nan):
                z = x.copy()
                z[pos] = bad
                found, y = run(isa, "unscale", z, 0.5)
                assert found == 1, (n, pos, bad)
                fb, yb = run("scalar", "unscale", z, 0.5)
                np.testing.assert_array_equal(bits_of(y), bits_of(yb))
    edge = np.array([np.finfo(np.float32).max, -np.finfo(np.float32).max, 1e-45, -0.0,
                     np.finfo(np.float32).tiny], np.float32)
    assert run(isa, "unscale", edge, 1.0)[0] == 0


def test_max_passes_over_nan_and_exp_sum_propagates_it():
    x = np.array([1.0, np.nan, 3.0, -np.inf], np.float32)
    for isa in _C._supported_isas():
        assert run(isa, "max", x) == 3.0
        s, _ = run(isa, "exp_sum", x, 3.0)
        assert math.isnan(s)
        assert run(isa, "max", np.array([np.nan], np.float32)) == -INF


def test_hook_errors():
    x = mpamp.ones(3)
    with pytest.raises(ValueError):
        _C._vmath_with_isa("avx9000", "exp", x)
    with pytest.raises(ValueError):
        _C._vmath_with_isa("scalar", "expm1", x)
    with pytest.raises(TypeError):
        _C._vmath_with_isa("scalar", "exp", mpamp.ones(3, dtype=mpamp.bfloat16))
    with pytest.raises(TypeError):
        _C._vmath_with_isa("scalar", "exp", mpamp.ones(4, 4).t())
    with pytest.raises(ValueError):
        _C._vmath_with_isa("scalar", "dot", x, mpamp.ones(4))
    with pytest.raises(ValueError):
        _C._check_vmath("scalar", "exp", 0)
    with pytest.raises(ValueError):
        _C._check_vmath("scalar", "cosh", 1)


# ---- the ops that use the kernels give the same bits on every level ----

OPS_SCRIPT = """
import hashlib
import numpy as np, mpamp
import mpamp.nn.functional as F
rng = np.random.default_rng(7)
parts = []
for dt in (mpamp.float32, mpamp.bfloat16):
    x = mpamp.tensor((rng.standard_normal((37, 133)) * 3).astype(np.float32)).to(dt)
    t = mpamp.tensor(rng.integers(0, 133, 37))
    g = mpamp.tensor(rng.standard_normal((37, 133)).astype(np.float32)).to(dt)
    for fn in (lambda a: F.softmax(a, 1), lambda a: F.log_softmax(a, 0), mpamp.exp,
               mpamp.sigmoid, mpamp.tanh, F.gelu, lambda a: F.gelu(a, approximate="tanh"),
               F.silu, lambda a: mpamp.log(a.abs())):
        a = x.detach().requires_grad_()
        y = fn(a)
        y.backward(g)
        parts += [y.detach().float().numpy().tobytes(), a.grad.float().numpy().tobytes()]
    a = x.detach().requires_grad_()
    w = mpamp.tensor(rng.standard_normal(133).astype(np.float32)).requires_grad_()
    b = mpamp.tensor(rng.standard_normal(133).astype(np.float32)).requires_grad_()
    y = F.layer_norm(a, (133,), w, b)
    y.backward(g)
    parts += [y.detach().float().numpy().tobytes(), a.grad.float().numpy().tobytes(),
              w.grad.numpy().tobytes(), b.grad.numpy().tobytes(),
              x.sum(0).float().numpy().tobytes(), x.float().sum(0).numpy().tobytes()]
    a = x.detach().requires_grad_()
    loss = F.cross_entropy(a, t, label_smoothing=0.1)
    loss.backward()
    parts += [loss.detach().float().numpy().tobytes(), a.grad.float().numpy().tobytes()]
print(mpamp.backends.cpu.get_isa(), hashlib.sha256(b"".join(parts)).hexdigest())
"""


def test_ops_identical_on_every_isa_level():
    runs = {isa: run_python(OPS_SCRIPT, MPAMP_CPU_ISA=isa) for isa in _C._supported_isas()}
    digests = set()
    for isa, r in runs.items():
        assert r.returncode == 0, r.stderr
        got_isa, digest = r.stdout.split()
        assert got_isa == isa
        digests.add(digest)
    assert len(digests) == 1, runs
