"""End to end: the AMP recipe (autocast fp16 + GradScaler + Adam) and bf16 autocast train a
tiny and a wider MLP to within 2% of the fp32 loss; an over-large initial scale calibrates by
skipping steps; a .bfloat16() model with fp32 master weights also lands within 2%."""
import numpy as np
import pytest

import mpamp
from mpamp import nn, optim


def problem(seed=0, n=2048):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    w = rng.standard_normal((8, 1)).astype(np.float32)
    y = (np.tanh(x @ w) + 0.3 * rng.standard_normal((n, 1))).astype(np.float32)
    return mpamp.tensor(x), mpamp.tensor(y)


def model_for(width, seed=0):
    mpamp.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 1))


def train(mode, width, steps=100, **scaler_kw):
    X, Y = problem()
    model = model_for(width)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    dev = mpamp.get_default_device().type     # "cuda" in the device suite
    scaler = mpamp.amp.GradScaler(dev, enabled=(mode == "fp16"), **scaler_kw)
    dtype = mpamp.float16 if mode == "fp16" else mpamp.bfloat16
    for _ in range(steps):
        opt.zero_grad()
        with mpamp.autocast(dev, dtype=dtype, enabled=mode != "fp32"):
            loss = nn.functional.mse_loss(model(X), Y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    with mpamp.no_grad():
        return float(nn.functional.mse_loss(model(X), Y)), scaler


@pytest.mark.parametrize("width", [16, 64])
def test_fp16_and_bf16_within_2_percent(width):
    ref, _ = train("fp32", width)
    assert ref < 0.2                       # it learned (the initial loss is ~0.6)
    for mode in ("fp16", "bf16"):
        loss, scaler = train(mode, width)
        assert abs(loss - ref) <= 0.02 * ref, (mode, loss, ref)
    assert scaler.stats()["skipped_steps"] == 0


def test_large_initial_scale_calibrates():
    loss, scaler = train("fp16", 16, init_scale=2.0**24, growth_interval=50)
    stats = scaler.stats()
    assert 0 < stats["skipped_steps"] < 20
    # a skipped step leaves params and Adam state untouched: compare with fewer fp32 steps
    ref, _ = train("fp32", 16, steps=100 - stats["skipped_steps"])
    assert scaler.get_scale() < 2.0**24
    assert abs(loss - ref) <= 0.02 * ref


def test_bf16_model_with_master_weights():
    X, Y = problem()
    losses = {}
    for masters in (None, True):
        model = model_for(16)
        if masters:
            model = model.bfloat16()
        opt = optim.AdamW(model.parameters(), lr=3e-3, master_weights=bool(masters))
        x = X.to(dtype=mpamp.bfloat16) if masters else X
        for _ in range(100):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x).float(), Y)
            loss.backward()
            opt.step()
        with mpamp.no_grad():
            losses[masters] = float(nn.functional.mse_loss(model(x).float(), Y))
    assert abs(losses[True] - losses[None]) <= 0.02 * losses[None], losses
