"""Several Python threads training separate models at once, each in its own autocast state,
give the same results as running them one after another."""
import threading

import numpy as np

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F


def make_job(seed, dtype):
    mpamp.manual_seed(seed)                       # models are built before the threads start
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 4))
    rng = np.random.default_rng(seed)
    x = mpamp.tensor(rng.normal(size=(64, 16)).astype(np.float32))
    y = mpamp.tensor(rng.normal(size=(64, 4)).astype(np.float32))
    return model, x, y, dtype


def train(job, steps=15):
    model, x, y, dtype = job
    params = list(model.parameters())
    for _ in range(steps):
        with mpamp.autocast(dtype=dtype, enabled=dtype is not None):
            loss = F.mse_loss(model(x), y)
        loss.backward()
        with mpamp.no_grad():
            for p in params:
                p.sub_(p.grad * 0.05)
                p.grad = None
    return [p.detach().numpy().copy() for p in params]


def test_concurrent_training_matches_sequential():
    settings = [(1, "bf16"), (2, "fp16"), (3, None), (4, "bf16")]
    sequential = [train(make_job(s, d)) for s, d in settings]
    jobs = [make_job(s, d) for s, d in settings]
    results = [None] * len(jobs)
    errors = []

    def run(i):
        try:
            results[i] = train(jobs[i])
        except Exception as exc:          # surfaced below: a thread must not die silently
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for seq, par in zip(sequential, results):
        for a, b in zip(seq, par):
            np.testing.assert_array_equal(a, b)
    assert not mpamp.is_autocast_enabled("cpu")
