"""Overflow storms: injected inf/NaN gradients skip exactly the steps they hit, leaving
parameters and optimizer state bit-unchanged (all six optimizers, the fused path, after
unscale_, and the plain path); GradScaler(min_scale=) floors the scale so 1,000 consecutive
overflows stop there and training recovers (without it the scale reaches 0 and the next clean
step writes NaN weights, as torch); the default (None) keeps torch's trace exactly; a scale
that falls to 0 or below 2**-24 is warned about once.
"""
import pickle
import warnings

import numpy as np
import pytest

import mpamp
from mpamp import nn, optim
from mpamp.amp import GradScaler

from test_grad_scaler import ref_update

STORM = 1000


def bits(obj):
    if isinstance(obj, mpamp.Tensor):
        t = obj.detach().contiguous()
        return (str(t.dtype), tuple(t.shape), bytes(mpamp._C._memoryview(t).cast("B")))
    if isinstance(obj, dict):
        return {k: bits(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(bits(v) for v in obj)
    return obj


def model_and_data(seed=0):
    mpamp.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 1))
    gen = mpamp.Generator().manual_seed(seed + 1)
    return model, mpamp.randn(64, 12, generator=gen), mpamp.randn(64, 1, generator=gen)


def fp16_step(model, opt, scaler, x, y, inject=None, unscale_first=False):
    """One autocast-fp16 step; inject=(param index, value) poisons one scaled grad element."""
    opt.zero_grad()
    with mpamp.autocast("cpu", dtype=mpamp.float16):
        out = model(x)
    loss = nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    if inject is not None:
        p = list(model.parameters())[inject[0]]
        with mpamp.no_grad():
            p.grad.view(-1)[0] = inject[1]
    if unscale_first:
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    return loss.item()


class PlainAdam(optim.Adam):
    """Without _step_supports_amp_scaling: GradScaler unscales, then skips or calls step()."""
    _step_supports_amp_scaling = False


OPTIMIZERS = {
    "SGD": lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "Adam": lambda p: optim.Adam(p, lr=1e-2, amsgrad=True),
    "AdamW": lambda p: optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    "RMSprop": lambda p: optim.RMSprop(p, lr=1e-3, momentum=0.5, centered=True),
    "Adagrad": lambda p: optim.Adagrad(p, lr=0.05, lr_decay=1e-3),
    "Adadelta": lambda p: optim.Adadelta(p, lr=1.0, weight_decay=1e-3),
    "Adam (plain path)": lambda p: PlainAdam(p, lr=1e-2),
}
BAD = {0: (0, float("inf")), 3: (1, float("nan")), 4: (3, float("-inf")), 9: (2, float("nan"))}


@pytest.mark.parametrize("unscale_first", [False, True], ids=["fused", "after_unscale"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_injected_overflows_skip_exactly_those_steps(name, unscale_first):
    model, x, y = model_and_data()
    opt = OPTIMIZERS[name](model.parameters())
    scaler = GradScaler("cpu", init_scale=2.0**12, growth_interval=4)
    skipped = 0
    for step in range(12):
        before = bits((model.state_dict(), opt.state_dict()))
        fp16_step(model, opt, scaler, x, y, BAD.get(step), unscale_first)
        after = bits((model.state_dict(), opt.state_dict()))
        if step in BAD:
            skipped += 1
            assert after == before, f"{name}: step {step} changed something though it overflowed"
        else:
            assert after[0] != before[0], f"{name}: clean step {step} changed no parameter"
        assert all(np.isfinite(p.detach().numpy()).all() for p in model.parameters())
    assert scaler.stats()["skipped_steps"] == skipped == len(BAD)


def storm(scaler, steps, model, opt, x, y):
    """`steps` overflowing steps (the batch overflows fp16) on a real model."""
    for _ in range(steps):
        fp16_step(model, opt, scaler, x * 1e6, y)


def test_a_floored_scale_survives_a_thousand_overflows_and_recovers():
    model, x, y = model_and_data()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    scaler = GradScaler("cpu", init_scale=2.0**16, growth_interval=5, min_scale=1.0)
    first = [fp16_step(model, opt, scaler, x, y) for _ in range(3)]
    weights = bits(model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # a floored scale never warns
        storm(scaler, STORM, model, opt, x, y)
    assert scaler.get_scale() == 1.0 and scaler.stats()["skipped_steps"] == STORM
    assert bits(model.state_dict()) == weights        # nothing moved during the storm
    losses = [fp16_step(model, opt, scaler, x, y) for _ in range(30)]
    assert all(np.isfinite(p.detach().numpy()).all() for p in model.parameters())
    assert losses[-1] < first[-1] and scaler.get_scale() == 2.0**6   # grew 6 times in 30 steps
    assert scaler.stats()["skipped_steps"] == STORM


def test_without_a_floor_the_storm_ends_in_nan_weights_as_torch():
    model, x, y = model_and_data()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    scaler = GradScaler("cpu", init_scale=2.0**16, growth_interval=5)
    with pytest.warns(RuntimeWarning, match=r"loss scale fell to .*below 2\*\*-24.*min_scale"):
        storm(scaler, STORM, model, opt, x, y)
    assert scaler.get_scale() == 0.0
    fp16_step(model, opt, scaler, x, y)
    assert np.isnan(list(model.parameters())[0].detach().numpy()).all()


def test_default_trace_is_torchs_and_equals_min_scale_none():
    p = nn.Parameter(mpamp.ones(4))
    scalers = [GradScaler("cpu", init_scale=2.0**3, growth_interval=3),
               GradScaler("cpu", init_scale=2.0**3, growth_interval=3, min_scale=None)]
    floored = GradScaler("cpu", init_scale=2.0**3, growth_interval=3, min_scale=2.0**-5)
    opts = [optim.SGD([p], lr=0.0) for _ in range(3)]
    scale, tracker, low = np.float32(8.0), 0, np.float32(8.0)
    pattern = [True] * 200 + [False] * 40 + [True, False, False] * 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for step, bad in enumerate(pattern):
            for scaler, opt in zip(scalers + [floored], opts):
                scaler.scale(mpamp.tensor(1.0))
                p.grad = mpamp.tensor([np.inf if bad else 1.0, 1, 1, 1])
                scaler.step(opt)
                scaler.update()
            low, _ = ref_update(low, tracker, bad, 2.0, 0.5, 3)   # same tracker: same steps
            low = max(low, np.float32(2.0**-5))
            scale, tracker = ref_update(scale, tracker, bad, 2.0, 0.5, 3)
            for scaler in scalers:
                assert scaler.get_scale() == float(scale) and \
                    scaler._get_growth_tracker() == tracker, step
            assert floored.get_scale() == float(low), step
            assert scalers[0].state_dict() == scalers[1].state_dict()
    assert scalers[0].get_scale() == 0.0         # the storm drove torch's trace to 0 ...
    assert floored.get_scale() >= 2.0**-5       # ... and the floor held


def test_the_warning_comes_once_and_from_host_reads():
    p = nn.Parameter(mpamp.ones(4))
    opt = optim.SGD([p], lr=0.0)
    scaler = GradScaler("cpu", init_scale=2.0**16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(120):
            scaler.scale(mpamp.tensor(1.0))
            p.grad = mpamp.tensor([np.nan, 1, 1, 1])
            scaler.step(opt)
            scaler.update()
            if step == 40:                       # 2**16 halved 41 times: 2**-25 < 2**-24
                assert len(caught) == 1 and scaler.get_scale() == 2.0**-25
            elif step == 39:
                assert caught == [] and scaler.get_scale() == 2.0**-24
    assert [w.category for w in caught] == [RuntimeWarning]
    # update(new_scale=) writes the scale without reading it: the next host read warns
    other = GradScaler("cpu")
    other.scale(mpamp.tensor(1.0))
    p.grad = mpamp.ones(4)
    other.step(opt)
    other.update(new_scale=0.0)
    with pytest.warns(RuntimeWarning, match="fell to 0.0"):
        assert other.get_scale() == 0.0


def test_min_scale_argument():
    assert GradScaler("cpu").get_min_scale() is None
    assert GradScaler("cpu", min_scale=2).get_min_scale() == 2.0
    assert GradScaler("cpu", enabled=False, min_scale=1.0).get_min_scale() is None
    for bad in (0, -1.0, float("inf"), float("nan"), "1", True):
        with pytest.raises(ValueError, match="min_scale must be None or a finite number > 0"):
            GradScaler("cpu", min_scale=bad)
    s = pickle.loads(pickle.dumps(GradScaler("cpu", min_scale=0.5)))
    assert s.get_min_scale() == 0.5
    assert set(s.state_dict()) == {"scale", "growth_factor", "backoff_factor",
                                   "growth_interval", "_growth_tracker"}   # torch's keys only
    old = GradScaler("cpu")
    state = old.__getstate__()
    del state["_min_scale"], state["_warned_tiny_scale"]          # pickled by an older mpamp
    fresh = GradScaler.__new__(GradScaler)
    fresh.__setstate__(state)
    assert fresh.get_min_scale() is None
