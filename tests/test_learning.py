"""Small models learn synthetic tasks in float32, float16 and bfloat16 (SGD written by hand:
the point is the ops, autograd and nn working together in each dtype)."""
import numpy as np
import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F

DTYPES = ["float32", "float16", "bfloat16"]


def sgd(params, lr):
    with mpamp.no_grad():
        for p in params:
            p.sub_(p.grad * lr)
            p.grad = None


@pytest.mark.parametrize("dtype", DTYPES)
def test_mlp_regression_learns(dtype):
    mpamp.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(256, 4)).astype(np.float32)
    y = (np.sin(2 * x[:, :1]) + x[:, 1:2] * x[:, 2:3] - 0.5 * x[:, 3:4]).astype(np.float32)
    model = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 1)).to(getattr(mpamp, dtype))
    xt = mpamp.tensor(x).to(getattr(mpamp, dtype))
    yt = mpamp.tensor(y).to(getattr(mpamp, dtype))
    params = list(model.parameters())
    first = None
    for step in range(300):
        loss = F.mse_loss(model(xt), yt)
        first = loss.item() if first is None else first
        loss.backward()
        assert all(p.grad.dtype is p.dtype for p in params)
        sgd(params, 0.1)
    final = F.mse_loss(model(xt), yt).float().item()
    assert np.isfinite(final) and final < 0.15 * first, (first, final)


@pytest.mark.parametrize("dtype", DTYPES)
def test_classifier_learns(dtype):
    mpamp.manual_seed(1)
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(3, 2)).astype(np.float32) * 3
    labels = rng.integers(0, 3, size=300)
    x = centers[labels] + rng.normal(size=(300, 2)).astype(np.float32) * 0.5
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.LayerNorm(16), nn.Dropout(0.1),
                          nn.Linear(16, 3)).to(getattr(mpamp, dtype))
    xt = mpamp.tensor(x).to(getattr(mpamp, dtype))
    yt = mpamp.tensor(labels)
    params = list(model.parameters())
    for _ in range(150):
        loss = F.cross_entropy(model(xt), yt, label_smoothing=0.05)
        loss.backward()
        sgd(params, 0.2)
    model.eval()
    with mpamp.no_grad():
        pred = model(xt).argmax(1).numpy()
    assert (pred == labels).mean() > 0.9
