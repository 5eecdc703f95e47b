"""GradScaler with a user's own Optimizer subclass: the base class does not opt into
in-kernel unscaling (torch's _step_supports_amp_scaling), so scaler.step unscales the
gradients first; mpamp's fused SGD/Adam/AdamW opt in and unscale in their kernels."""
import numpy as np
import pytest

import mpamp

try:
    import torch
except ImportError:
    torch = None


def _plain_sgd(lib):
    class PlainSGD(lib.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            with lib.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.add_(p.grad, alpha=-group["lr"])
    return PlainSGD


def _train(lib, steps=5, poison=None):
    w = lib.nn.Parameter(lib.tensor([1.0, -0.5]))
    opt = _plain_sgd(lib)([w], lr=0.05)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 16) if lib is torch else \
        lib.amp.GradScaler(init_scale=2.0 ** 16)
    x, y = lib.tensor([2.0, 1.0]), lib.tensor([3.0, 0.5])
    trace = []
    for i in range(steps):
        opt.zero_grad()
        loss = ((w * x - y) ** 2).sum()
        if i == poison:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        trace.append((w.detach().cpu().numpy().copy(), scaler.get_scale()))
    return trace


def _numpy_reference(steps=5, poison=None):
    w, x, y = np.array([1.0, -0.5], np.float32), np.array([2.0, 1.0], np.float32), \
        np.array([3.0, 0.5], np.float32)
    scale, trace = 2.0 ** 16, []
    for i in range(steps):
        if i == poison:
            scale *= 0.5                        # the step is skipped, the scale backs off
        else:
            grad = 2 * (w * x - y) * x
            w = (w - np.float32(0.05) * grad).astype(np.float32)
        trace.append((w.copy(), scale))
    return trace


@pytest.mark.parametrize("poison", [None, 2])
def test_user_optimizer_steps_with_unscaled_gradients(poison):
    got = _train(mpamp, poison=poison)
    for (w, scale), (rw, rscale) in zip(got, _numpy_reference(poison=poison)):
        np.testing.assert_allclose(w, rw, rtol=1e-5, atol=1e-6)
        assert scale == rscale
    assert abs(got[-1][0][0]) < 2.0                # not the scaled step (w ~ -1e5)
    if torch is not None:
        for (w, scale), (tw, tscale) in zip(got, _train(torch, poison=poison)):
            np.testing.assert_allclose(w, tw, rtol=1e-5, atol=1e-6)
            assert scale == tscale


def test_only_fused_optimizers_opt_in():
    w = mpamp.nn.Parameter(mpamp.ones(2))
    assert mpamp.optim.Optimizer._step_supports_amp_scaling is False
    assert _plain_sgd(mpamp)([w])._step_supports_amp_scaling is False
    for opt in (mpamp.optim.SGD([w], lr=0.1), mpamp.optim.Adam([w]), mpamp.optim.AdamW([w])):
        assert opt._step_supports_amp_scaling is True
    if torch is not None:
        assert torch.optim.Optimizer.__dict__.get("_step_supports_amp_scaling", False) is False


def test_fused_sgd_under_scaler_still_matches_plain_descent():
    w = mpamp.nn.Parameter(mpamp.tensor([1.0, -0.5]))
    opt = mpamp.optim.SGD([w], lr=0.05)
    scaler = mpamp.amp.GradScaler(init_scale=2.0 ** 16)
    x, y = mpamp.tensor([2.0, 1.0]), mpamp.tensor([3.0, 0.5])
    for _ in range(5):
        opt.zero_grad()
        scaler.scale(((w * x - y) ** 2).sum()).backward()
        scaler.step(opt)
        scaler.update()
    np.testing.assert_allclose(w.detach().cpu().numpy(), _numpy_reference()[-1][0], rtol=1e-5)
