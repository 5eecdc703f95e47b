"""mpamp.nn.init: torch's gains, fan formulas and bounds, sample statistics, generators, error
paths, and that initialisation is not recorded by autograd."""
import math

import numpy as np
import pytest

import mpamp
from mpamp import nn
from mpamp.nn import init
from conftest import to_numpy


def f32(t):
    return to_numpy(t).astype(np.float32)


# ---- gains and fans ----

@pytest.mark.parametrize("name, param, gain", [
    ("linear", None, 1), ("conv2d", None, 1), ("sigmoid", None, 1), ("tanh", None, 5.0 / 3),
    ("relu", None, math.sqrt(2.0)), ("leaky_relu", None, math.sqrt(2.0 / (1 + 0.01 ** 2))),
    ("leaky_relu", 0.2, math.sqrt(2.0 / 1.04)), ("leaky_relu", 1, 1.0),
    ("leaky_relu", math.sqrt(5), math.sqrt(1 / 3)), ("selu", None, 0.75)])
def test_calculate_gain(name, param, gain):
    assert init.calculate_gain(name, param) == pytest.approx(gain, rel=1e-12)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("shape, fans", [((5, 3), (3, 5)), ((8, 4, 3, 3), (36, 72)),
                                         ((2, 6, 5), (30, 10)), ((1, 0), (0, 1))])
def test_fan_in_and_fan_out(shape, fans):
    assert init._calculate_fan_in_and_fan_out(mpamp.empty(shape)) == fans


@pytest.mark.parametrize("shape", [(), (7,)])
def test_fans_need_two_dims(shape):
    t = mpamp.empty(shape)
    msg = "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
    for fn in (init._calculate_fan_in_and_fan_out, init.xavier_uniform_, init.kaiming_uniform_,
               init.kaiming_normal_, init.xavier_normal_):
        with pytest.raises(ValueError, match=msg):
            fn(t)


def test_fans_match_torch():
    torch = pytest.importorskip("torch")
    for shape in [(5, 3), (8, 4, 3, 3), (2, 6, 5)]:
        assert init._calculate_fan_in_and_fan_out(mpamp.empty(shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


# ---- plain fills ----

@pytest.mark.parametrize("dtype", [mpamp.float32, mpamp.float16, mpamp.bfloat16])
def test_uniform_and_normal_statistics(dtype):
    mpamp.manual_seed(11)
    t = mpamp.empty(200, 300, dtype=dtype)
    assert init.uniform_(t, -2.0, 3.0) is t
    u = f32(t)
    assert u.min() >= -2.0 and u.max() <= 3.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.std() - 5 / math.sqrt(12)) < 0.02
    init.normal_(t, mean=1.0, std=0.5)
    n = f32(t)
    assert abs(n.mean() - 1.0) < 0.01 and abs(n.std() - 0.5) < 0.01


def test_constant_ones_zeros():
    t = mpamp.empty(3, 2, dtype=mpamp.bfloat16)
    assert init.constant_(t, 2.5) is t
    np.testing.assert_array_equal(f32(t), np.full((3, 2), 2.5))
    np.testing.assert_array_equal(f32(init.ones_(t)), np.ones((3, 2)))
    np.testing.assert_array_equal(f32(init.zeros_(t)), np.zeros((3, 2)))


def test_fill_errors():
    t = mpamp.empty(4)
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range, "
                                           "but found from=1 > to=0"):
        init.uniform_(t, 1, 0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        init.normal_(t, 0, -1)


def test_generator_reproducible_and_separate():
    a, b = mpamp.empty(50), mpamp.empty(50)
    init.normal_(a, generator=mpamp.Generator().manual_seed(7))
    state = mpamp.get_rng_state()
    init.normal_(b, generator=mpamp.Generator().manual_seed(7))
    np.testing.assert_array_equal(f32(a), f32(b))
    assert mpamp.get_rng_state().tolist() == state.tolist()   # the default stream was unused
    mpamp.manual_seed(5)
    init.uniform_(a)
    mpamp.manual_seed(5)
    init.uniform_(b)
    np.testing.assert_array_equal(f32(a), f32(b))


def test_init_is_not_recorded_by_autograd():
    p = nn.Parameter(mpamp.empty(4, 3))
    for fn in (init.uniform_, init.normal_, init.zeros_, init.ones_, init.xavier_uniform_,
               init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_,
               lambda t: init.constant_(t, 0.5)):
        assert fn(p) is p
        assert p.is_leaf and p.grad_fn is None and p.requires_grad
    assert mpamp.is_grad_enabled()


# ---- kaiming and xavier ----

def _draw(fn, shape, seed=0, **kwargs):
    mpamp.manual_seed(seed)
    t = mpamp.empty(shape)
    assert fn(t, **kwargs) is t
    return f32(t)


@pytest.mark.parametrize("kwargs, fan, gain", [
    ({}, 256, math.sqrt(2.0 / (1 + 0.0))),
    ({"a": math.sqrt(5)}, 256, math.sqrt(1 / 3)),
    ({"mode": "fan_out", "nonlinearity": "relu"}, 128, math.sqrt(2.0)),
    ({"mode": "FAN_IN", "nonlinearity": "tanh"}, 256, 5.0 / 3)])
def test_kaiming_uniform_bound(kwargs, fan, gain):
    w = _draw(init.kaiming_uniform_, (128, 256), **kwargs)
    bound = gain * math.sqrt(3.0 / fan)
    assert np.all(np.abs(w) <= bound)
    assert w.max() > 0.99 * bound and w.min() < -0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound


def test_kaiming_normal_std():
    w = _draw(init.kaiming_normal_, (64, 32, 3), mode="fan_out", nonlinearity="relu")
    std = math.sqrt(2.0) / math.sqrt(64 * 3)
    assert abs(w.mean()) < 0.02 * std and abs(w.std() - std) < 0.02 * std


def test_kaiming_errors_and_empty():
    with pytest.raises(ValueError, match="Mode fan_avg not supported, please use one of "
                                         "\\['fan_in', 'fan_out'\\]"):
        init.kaiming_uniform_(mpamp.empty(3, 3), mode="fan_avg")
    empty = mpamp.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(empty) is empty
    with pytest.warns(UserWarning):
        init.kaiming_normal_(empty)


def test_xavier_uniform_and_normal():
    gain = init.calculate_gain("tanh")
    w = _draw(init.xavier_uniform_, (100, 300), gain=gain)
    bound = gain * math.sqrt(6.0 / 400)
    assert np.all(np.abs(w) <= bound) and w.max() > 0.99 * bound
    w = _draw(init.xavier_normal_, (300, 100, 2), seed=1)
    std = math.sqrt(2.0 / (200 + 600))
    assert abs(w.std() - std) < 0.02 * std


@pytest.mark.parametrize("dtype", [mpamp.float16, mpamp.bfloat16])
def test_low_precision_bounds(dtype):
    mpamp.manual_seed(2)
    t = mpamp.empty(64, 64, dtype=dtype)
    init.kaiming_uniform_(t, a=math.sqrt(5))
    assert t.dtype == dtype
    assert np.all(np.abs(f32(t)) <= 1 / math.sqrt(64))   # bound 0.125 is exact in both
