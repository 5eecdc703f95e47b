"""LR schedulers: torch's formulas step for step (closed forms written here, and torch itself
when installed), state_dict round trips, validation errors, and the call-order warning (not
raised when a GradScaler skipped the optimizer step)."""
import math
import warnings

import numpy as np
import pytest

import mpamp
from mpamp import nn, optim
from mpamp.optim import lr_scheduler as lrs


def make_opt(cls=optim.SGD, lrs_=(0.1, 0.02), **kw):
    groups = [{"params": [nn.Parameter(mpamp.ones(2))], "lr": lr} for lr in lrs_]
    return cls(groups, lr=lrs_[0], **kw)


def trace(sched, opt, n):
    out = []
    for _ in range(n):
        opt.step()
        sched.step()
        out.append([g["lr"] for g in opt.param_groups])
    return out


CASES = {
    "StepLR": (lambda o: lrs.StepLR(o, step_size=3, gamma=0.5),
               lambda b, e: b * 0.5 ** (e // 3)),
    "MultiStepLR": (lambda o: lrs.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
                    lambda b, e: b * 0.1 ** sum(m <= e for m in [2, 5, 5, 9])),
    "ExponentialLR": (lambda o: lrs.ExponentialLR(o, gamma=0.9), lambda b, e: b * 0.9 ** e),
    "CosineAnnealingLR": (lambda o: lrs.CosineAnnealingLR(o, T_max=6, eta_min=0.001),
                          lambda b, e: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 6))
                          / 2),
    "LambdaLR": (lambda o: lrs.LambdaLR(o, lambda e: 1.0 / (1 + e)),
                 lambda b, e: b / (1 + e)),
    "LinearLR": (lambda o: lrs.LinearLR(o, start_factor=0.25, total_iters=4),
                 lambda b, e: b * (0.25 + 0.75 * min(e, 4) / 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_closed_forms(name):
    make, closed = CASES[name]
    opt = make_opt()
    sched = make(opt)
    assert sched.get_last_lr() == pytest.approx([closed(b, 0) for b in (0.1, 0.02)])
    n = 12 if name == "CosineAnnealingLR" else 15
    got = trace(sched, opt, n)
    for e, lrs_e in enumerate(got, 1):
        assert lrs_e == pytest.approx([closed(b, e) for b in (0.1, 0.02)], rel=1e-9,
                                      abs=1e-12), (name, e)


@pytest.mark.parametrize("name", sorted(CASES) + ["OneCycleLR"])
def test_state_dict_round_trip(name):
    make = CASES[name][0] if name in CASES else \
        (lambda o: lrs.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=30))
    opt1 = make_opt()
    s1 = make(opt1)
    trace(s1, opt1, 7)
    sd = s1.state_dict()
    assert "optimizer" not in sd
    opt2 = make_opt()
    s2 = make(opt2)
    s2.load_state_dict(sd)
    for g1, g2 in zip(opt1.param_groups, opt2.param_groups):
        g2["lr"] = g1["lr"]
        if "momentum" in g1:
            g2["momentum"] = g1["momentum"]
    assert trace(s1, opt1, 5) == trace(s2, opt2, 5)


def test_one_cycle_shape():
    opt = make_opt(optim.SGD, (0.1,), momentum=0.9)
    sched = lrs.OneCycleLR(opt, max_lr=1.0, total_steps=100, pct_start=0.25)
    assert opt.param_groups[0]["lr"] == pytest.approx(1.0 / 25)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)
    got = [v[0] for v in trace(sched, opt, 99)]
    assert max(got) == pytest.approx(1.0) and got.index(max(got)) == 23
    assert got[-1] == pytest.approx(1.0 / 25 / 1e4)
    with pytest.raises(ValueError, match="Tried to step 101 times. The specified number of "
                       "total steps is 100"):
        trace(sched, opt, 2)
    adam = make_opt(optim.Adam, (0.1,))
    lrs.OneCycleLR(adam, max_lr=0.1, epochs=2, steps_per_epoch=5, three_phase=True,
                   anneal_strategy="linear")
    assert adam.param_groups[0]["betas"][0] == pytest.approx(0.95)


def test_validation_errors():
    opt = make_opt()
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be "
                       "greater than 0 and less or equal to 1."):
        lrs.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor expected to be between "
                       "0 and 1."):
        lrs.LinearLR(opt, end_factor=2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lrs.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        lrs.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        lrs.OneCycleLR(opt, max_lr=1.0, total_steps=0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        lrs.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="x")
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in "
                       r"param_groups\[0\] when resuming an optimizer"):
        lrs.StepLR(make_opt(), step_size=2, last_epoch=3)


def test_order_warning_and_scaler_skip():
    opt = make_opt()
    sched = lrs.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                      r"`optimizer.step\(\)`"):
        sched.step()

    class PlainSGD(optim.SGD):
        _step_supports_amp_scaling = False

    for cls in (PlainSGD, optim.SGD):
        p = nn.Parameter(mpamp.ones(2))
        opt = cls([p], lr=0.1)
        sched = lrs.ExponentialLR(opt, gamma=0.5)
        scaler = mpamp.amp.GradScaler("cpu")
        scaler.scale(mpamp.tensor(1.0))
        p.grad = mpamp.tensor([np.inf, 0.0])
        scaler.step(opt)                   # skipped
        scaler.update()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(0.05)
        np.testing.assert_array_equal(p.detach().cpu().numpy(), 1.0)


def test_against_torch():
    torch = pytest.importorskip("torch")
    tl = torch.optim.lr_scheduler
    makers = {
        "StepLR": dict(step_size=3, gamma=0.5), "MultiStepLR": dict(milestones=[2, 5, 5]),
        "ExponentialLR": dict(gamma=0.9), "CosineAnnealingLR": dict(T_max=5, eta_min=0.01),
        "LinearLR": dict(start_factor=0.5, total_iters=6),
        "OneCycleLR": dict(max_lr=0.5, total_steps=40, three_phase=True),
    }
    for name, kw in makers.items():
        tp = torch.nn.Parameter(torch.ones(1))
        topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
        mopt = optim.SGD([nn.Parameter(mpamp.ones(1))], lr=0.1, momentum=0.9)
        ts, ms = getattr(tl, name)(topt, **kw), getattr(lrs, name)(mopt, **kw)
        for _ in range(39):
            topt.step()
            mopt.step()
            ts.step()
            ms.step()
            assert ms.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12), name
            assert mopt.param_groups[0]["momentum"] == \
                pytest.approx(topt.param_groups[0]["momentum"], rel=1e-12)
