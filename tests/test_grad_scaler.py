"""GradScaler against a plain-Python transcription of torch's algorithm (amp-spec §3): traces
with injected inf/NaN over thousands of steps, the state machine and its errors, state_dict
and pickling, and the recipes (clipping with unscale_, accumulation, two optimizers)."""
import pickle
import warnings

import numpy as np
import pytest

import mpamp
from mpamp import nn, optim
from mpamp.amp import GradScaler


# ---- the reference: torch's _amp_update_scale_, transcribed ----

def ref_update(scale, tracker, found_inf, growth, backoff, interval):
    scale = np.float32(scale)
    if found_inf:
        return np.float32(float(scale) * backoff), 0
    successful = tracker + 1
    if successful == interval:
        with np.errstate(over="ignore"):
            grown = np.float32(float(scale) * growth)
        return (grown if np.isfinite(grown) else scale), 0
    return scale, successful


class PlainSGD(optim.SGD):
    """An optimizer without _step_supports_amp_scaling (the GradScaler's normal path)."""
    _step_supports_amp_scaling = False


def make_params(rng, sizes=(7, 33)):
    return [nn.Parameter(mpamp.tensor(rng.standard_normal(n).astype(np.float32)))
            for n in sizes]


def run_trace(opt_cls, steps, interval, bad, rng):
    """bad: {step: (param index, value)} injected into the scaled grads."""
    params = make_params(rng)
    opt = opt_cls(params, lr=0.0)
    scaler = GradScaler("cpu", init_scale=2.0**10, growth_interval=interval)
    scale, tracker, skipped = np.float32(2.0**10), 0, 0
    for step in range(steps):
        scaler.scale(mpamp.tensor(1.0))
        for i, p in enumerate(params):
            g = np.full(p.shape, 0.5, np.float32) * np.float32(scaler.get_scale())
            if step in bad and bad[step][0] == i:
                g[3] = bad[step][1]
            p.grad = mpamp.tensor(g)
        scaler.step(opt)
        scaler.update()
        found = step in bad
        skipped += found
        scale, tracker = ref_update(scale, tracker, found, 2.0, 0.5, interval)
        assert scaler.get_scale() == float(scale), step
        assert scaler._get_growth_tracker() == tracker, step
    assert scaler.stats()["skipped_steps"] == skipped
    assert scaler.stats()["scale_history_len"] == steps


@pytest.mark.parametrize("opt_cls", [PlainSGD, optim.SGD])
def test_trace_matches_reference(opt_cls, rng):
    bad = {}
    for step in rng.choice(3000, 150, replace=False):
        bad[int(step)] = (int(rng.integers(2)), [np.inf, -np.inf, np.nan][int(rng.integers(3))])
    for s in range(40, 52):      # a burst: the scale keeps halving
        bad[s] = (0, np.nan)
    run_trace(opt_cls, 3000, 7, bad, rng)


def test_no_lower_bound_and_no_growth_to_inf():
    p = nn.Parameter(mpamp.ones(4))
    opt = PlainSGD([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=4.0)
    scale = np.float32(4.0)
    with pytest.warns(RuntimeWarning, match="loss scale fell to"):  # once (test_overflow_storms)
        for _ in range(200):
            scaler.scale(mpamp.tensor(1.0))
            p.grad = mpamp.tensor(np.array([np.inf, 1, 1, 1], np.float32))
            scaler.step(opt)
            scaler.update()
            scale, _ = ref_update(scale, 0, True, 2.0, 0.5, 2000)
            assert scaler.get_scale() == float(scale)
    assert scaler.get_scale() == 0.0
    big = GradScaler("cpu", init_scale=float(np.finfo(np.float32).max), growth_interval=1)
    big.scale(mpamp.tensor(1.0))
    p.grad = mpamp.ones(4)
    big.step(opt)
    big.update()
    assert big.get_scale() == float(np.finfo(np.float32).max)
    assert big._get_growth_tracker() == 0


def test_unscale_values_and_skip(rng):
    params = make_params(rng)
    opt = PlainSGD(params, lr=0.5)
    scaler = GradScaler("cpu", init_scale=3.0)
    scaler.scale(mpamp.tensor(1.0))
    raw = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    for p, g in zip(params, raw):
        p.grad = mpamp.tensor(g * np.float32(3.0))
    scaler.unscale_(opt)
    inv = np.float32(1.0 / 3.0)
    for p, g in zip(params, raw):
        np.testing.assert_array_equal(p.grad.cpu().numpy(), (g * np.float32(3.0)) * inv)
    before = [p.detach().cpu().numpy().copy() for p in params]
    params[1].grad.cpu().numpy()  # finite: step runs
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(before[0], params[0].detach().cpu().numpy())
    # now a NaN: the step is skipped, params unchanged, scale backs off
    scaler.scale(mpamp.tensor(1.0))
    params[0].grad = mpamp.tensor(np.full(7, np.nan, np.float32))
    before = [p.detach().cpu().numpy().copy() for p in params]
    scaler.step(opt)
    scaler.update()
    for b, p in zip(before, params):
        np.testing.assert_array_equal(b, p.detach().cpu().numpy())
    assert scaler.get_scale() == 1.5


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_large_gradients_are_checked_on_every_thread(dtype):
    """Gradients above the threading grain are split over threads: every range is unscaled,
    and a single inf anywhere (here in the last range) still skips the step."""
    dt = getattr(mpamp, dtype)
    n = 3 * (1 << 18) + 77
    g = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    before = mpamp.get_num_threads()
    try:
        mpamp.set_num_threads(3)
        for inf_at in (None, n - 5):
            p = nn.Parameter(mpamp.zeros(n, dtype=dt))
            opt = PlainSGD([p], lr=1.0)
            scaler = GradScaler("cpu", init_scale=4.0)
            scaler.scale(mpamp.tensor(1.0))
            scaled = g * np.float32(4.0)
            if inf_at is not None:
                scaled[inf_at] = np.inf
            p.grad = mpamp.tensor(scaled).to(dt)
            scaler.unscale_(opt)
            expect = (mpamp.tensor(scaled).to(dt).float().cpu().numpy() * np.float32(0.25))
            expect = mpamp.tensor(expect).to(dt).float().cpu().numpy()
            np.testing.assert_array_equal(p.grad.float().cpu().numpy(), expect)
            scaler.step(opt)
            scaler.update()
            moved = bool((p.detach().float().cpu().numpy() != 0).any())
            assert moved == (inf_at is None)
            assert scaler.get_scale() == (4.0 if inf_at is None else 2.0)
    finally:
        mpamp.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_grads(dtype):
    dt = getattr(mpamp, dtype)
    p = nn.Parameter(mpamp.ones(5, dtype=dt))
    opt = PlainSGD([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=8.0)
    scaler.scale(mpamp.tensor(1.0))
    p.grad = mpamp.full((5,), 16.0, dtype=dt)
    if dtype == "float16":
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            scaler.unscale_(opt)
        return
    scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.float().cpu().numpy(), np.full(5, 2.0, np.float32))
    # the fused (amp-aware) optimizer accepts fp16 grads: checked, unscaled in its kernel
    q = nn.Parameter(mpamp.ones(5, dtype=mpamp.float16))
    o2 = optim.SGD([q], lr=0.25)
    s2 = GradScaler("cpu", init_scale=8.0)
    s2.scale(mpamp.tensor(1.0))
    q.grad = mpamp.full((5,), 16.0, dtype=mpamp.float16)
    s2.step(o2)
    s2.update()
    np.testing.assert_array_equal(q.detach().float().cpu().numpy(), np.full(5, 0.5, np.float32))


def test_state_machine_errors():
    p = nn.Parameter(mpamp.ones(3))
    opt = PlainSGD([p], lr=0.1)
    scaler = GradScaler("cpu")
    with pytest.raises(AssertionError, match=r"Attempted unscale_ but _scale is None\.  This "
                       r"may indicate your script did not use scaler.scale\(loss or outputs\)"):
        scaler.unscale_(opt)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        scaler.update()
    scaler.scale(mpamp.tensor(2.0))
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer."):
        scaler.step(opt)                      # no grads at all
    p.grad = mpamp.ones(3)
    scaler.update(2.0)                        # resets the states
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this "
                       r"optimizer since the last update\(\)\."):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)\."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last "
                       r"update\(\)\."):
        scaler.step(opt)
    with pytest.raises(AssertionError, match="may only be pickled at the beginning"):
        pickle.dumps(scaler)
    scaler.update()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if "
                       "GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        GradScaler("cpu", backoff_factor=1.0)
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        GradScaler("cpu").load_state_dict({})


def test_scale_containers_and_new_scale():
    scaler = GradScaler(mpamp.get_default_device().type, init_scale=4.0)
    a, b = mpamp.tensor([1.0, 2.0]), mpamp.tensor(3.0)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[1][0].cpu().numpy(), 12.0)
    assert isinstance(scaler.scale(iter([a])), map)
    scaler.update(new_scale=0.5)
    assert scaler.get_scale() == 0.5
    scaler.update(new_scale=mpamp.tensor([8.0]))
    assert scaler.get_scale() == 8.0
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(new_scale=mpamp.tensor([1.0, 2.0]))
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        scaler.update(new_scale=mpamp.tensor([1.0], requires_grad=True))
    assert scaler._get_growth_tracker() == 0


def test_state_dict_pickle_and_setters():
    scaler = GradScaler("cpu", init_scale=2.0**8, growth_interval=3)
    assert scaler.state_dict() == {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 3, "_growth_tracker": 0}
    p = nn.Parameter(mpamp.ones(2))
    opt = optim.SGD([p], lr=0.1)
    for _ in range(4):
        scaler.scale(mpamp.tensor(1.0))
        p.grad = mpamp.ones(2)
        scaler.step(opt)
        scaler.update()
    sd = scaler.state_dict()
    assert sd["scale"] == 512.0 and sd["_growth_tracker"] == 1
    assert [type(sd[k]) for k in sorted(sd)] == [int, float, float, int, float]
    other = GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    other.scale(mpamp.tensor(1.0))
    assert other.get_scale() == 512.0 and other._get_growth_tracker() == 1
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone._scale is None and clone.state_dict() == sd
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(10)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(),
            scaler.get_growth_interval()) == (3.0, 0.25, 10)


def test_disabled_and_device_defaults():
    scaler = GradScaler("cpu", enabled=False)
    t = mpamp.tensor(2.0)
    assert scaler.scale(t) is t
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert not scaler.is_enabled()
    p = nn.Parameter(mpamp.ones(2))
    p.grad = mpamp.ones(2)
    opt = optim.SGD([p], lr=1.0)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(p.detach().cpu().numpy(), 0.0)
    assert pickle.loads(pickle.dumps(scaler)).is_enabled() is False
    auto = GradScaler()
    assert auto._device == ("cuda" if mpamp.cuda.is_available() else "cpu")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mpamp.cpu.amp.GradScaler()
    assert any(issubclass(x.category, FutureWarning) and "mpamp.amp.GradScaler('cpu'" in
               str(x.message) for x in w)
    if not mpamp.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            assert not GradScaler("cuda").is_enabled()


def mlp(seed, width=16):
    mpamp.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Linear(width, 1))


def data(rng, n=32):
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)
    return mpamp.tensor(x), mpamp.tensor(y)


def test_clipping_with_unscale(rng):
    x, y = data(rng)
    model = mlp(0)
    opt = PlainSGD(model.parameters(), lr=0.01)
    scaler = GradScaler("cpu", init_scale=1024.0)
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    ref = mlp(0)
    nn.functional.mse_loss(ref(x), y).backward()
    ref_norm = np.sqrt(sum(float((p.grad.cpu().numpy() ** 2).sum()) for p in ref.parameters()))
    np.testing.assert_allclose(float(total), ref_norm, rtol=1e-5)
    norm = np.sqrt(sum(float((p.grad.cpu().numpy() ** 2).sum()) for p in model.parameters()))
    np.testing.assert_allclose(norm, 0.1, rtol=1e-4)
    scaler.step(opt)      # does not unscale again
    scaler.update()


def test_accumulation_and_two_optimizers(rng):
    x, y = data(rng)
    m1, m2 = mlp(1), mlp(2)
    o1, o2 = optim.Adam(m1.parameters(), lr=1e-2), PlainSGD(m2.parameters(), lr=1e-2)
    scaler = GradScaler("cpu", init_scale=2.0**16, growth_interval=4)
    losses = []
    for it in range(24):
        for k in range(2):                      # accumulate two micro-batches
            xs, ys = x[k * 16:(k + 1) * 16], y[k * 16:(k + 1) * 16]
            l1 = nn.functional.mse_loss(m1(xs), ys) / 2
            l2 = nn.functional.mse_loss(m2(xs), ys) / 2
            scaler.scale(l1 + l2).backward()
        scaler.unscale_(o2)
        scaler.step(o1)
        scaler.step(o2)
        scaler.update()
        o1.zero_grad()
        o2.zero_grad()
        losses.append(float(nn.functional.mse_loss(m1(x), y)) + float(
            nn.functional.mse_loss(m2(x), y)))
    assert losses[-1] < 0.5 * losses[0]
    assert scaler.get_scale() > 0


def test_overflow_in_one_optimizer_skips_only_it():
    p, q = nn.Parameter(mpamp.ones(2)), nn.Parameter(mpamp.ones(2))
    op, oq = PlainSGD([p], lr=1.0), optim.SGD([q], lr=1.0)
    scaler = GradScaler("cpu", init_scale=2.0)
    scaler.scale(mpamp.tensor(1.0))
    p.grad = mpamp.tensor([np.inf, 1.0])
    q.grad = mpamp.tensor([2.0, 2.0])
    scaler.step(op)
    scaler.step(oq)
    scaler.update()
    np.testing.assert_array_equal(p.detach().cpu().numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(q.detach().cpu().numpy(), [0.0, 0.0])
    assert scaler.get_scale() == 1.0       # the union of found_infs backs off


def test_against_torch_scaler():
    torch = pytest.importorskip("torch")
    ts = torch.amp.GradScaler("cpu", init_scale=64.0, growth_interval=3)
    ms = GradScaler("cpu", init_scale=64.0, growth_interval=3)
    tp, mp = torch.nn.Parameter(torch.ones(3)), nn.Parameter(mpamp.ones(3))
    to, mo = torch.optim.SGD([tp], lr=0.1), PlainSGD([mp], lr=0.1)
    for step in range(40):
        g = np.full(3, 0.25, np.float32) * np.float32(ms.get_scale())
        if step % 7 == 3:
            g[1] = np.nan
        ts.scale(torch.tensor(1.0))
        ms.scale(mpamp.tensor(1.0))
        tp.grad, mp.grad = torch.tensor(g), mpamp.tensor(g)
        ts.step(to)
        ms.step(mo)
        ts.update()
        ms.update()
        assert ts.state_dict() == ms.state_dict()
        np.testing.assert_allclose(mp.detach().cpu().numpy(), tp.detach().cpu().numpy(), rtol=1e-6)


def test_fused_optimizer_after_unscale_does_not_unscale_twice():
    p, q = nn.Parameter(mpamp.zeros(3)), nn.Parameter(mpamp.zeros(3))
    g = np.array([1.0, -2.0, 0.5], np.float32)
    for param, unscale_first in ((p, True), (q, False)):
        opt = optim.SGD([param], lr=1.0)      # _step_supports_amp_scaling
        scaler = GradScaler("cpu", init_scale=256.0)
        scaler.scale(mpamp.tensor(1.0))
        param.grad = mpamp.tensor(g * np.float32(256.0))
        if unscale_first:
            scaler.unscale_(opt)
            np.testing.assert_array_equal(param.grad.cpu().numpy(), g)
        scaler.step(opt)
        scaler.update()
        np.testing.assert_array_equal(param.detach().cpu().numpy(), -g)
        assert not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")
    # without unscale_, the fused kernel unscaled on the fly and left the grads scaled
    np.testing.assert_array_equal(q.grad.cpu().numpy(), g * np.float32(256.0))


def test_grad_scaler_keyword_protocol_warns():
    class Legacy(PlainSGD):
        _step_supports_amp_scaling = True

        def step(self, closure=None, grad_scaler=None):
            self.seen = grad_scaler
            return "ret"

    p = nn.Parameter(mpamp.ones(2))
    opt = Legacy([p], lr=0.1)
    scaler = GradScaler("cpu")
    scaler.scale(mpamp.tensor(1.0))
    p.grad = mpamp.ones(2)
    with pytest.warns(FutureWarning, match="GradScaler is going to stop passing itself"):
        assert scaler.step(opt) == "ret"
    assert opt.seen is scaler
