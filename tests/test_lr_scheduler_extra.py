"""ReduceLROnPlateau, CyclicLR, SequentialLR, ChainedScheduler and ConstantLR: lr (and
momentum / beta1) sequences against hand-computed values, against torch over 60 steps when
installed, state_dict round trips (and torch's state loaded), and torch's error messages."""
import math
import warnings

import numpy as np
import pytest

import mpamp
from mpamp import nn, optim
from mpamp.optim import lr_scheduler as S


def make_opt(cls=optim.SGD, lib=None, **kw):
    lib = lib or mpamp
    p1 = [lib.nn.Parameter(lib.zeros(3))]
    p2 = [lib.nn.Parameter(lib.zeros(2))]
    opt_cls = getattr(lib.optim, cls.__name__) if lib is not mpamp else cls
    return opt_cls([{"params": p1}, {"params": p2, "lr": 0.5}], lr=0.1, **kw)


def lrs(opt):
    return [g["lr"] for g in opt.param_groups]


# ---- hand-computed values ----

def test_reduce_on_plateau_by_hand():
    opt = make_opt()
    s = S.ReduceLROnPlateau(opt, patience=2, cooldown=1, factor=0.5, min_lr=[0.02, 0.0])
    assert s.get_last_lr() == [0.1, 0.5]
    metrics = [1.0, 1.0, 0.99995, 1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    seen = []
    for m in metrics:
        opt.step()
        s.step(mpamp.tensor(m))                                   # a 0-d tensor metric
        seen.append(lrs(opt))
    # 'rel' threshold: 0.99995 is not below 1 * (1 - 1e-4), so epochs 2-4 are bad;
    # epoch 4 (the third bad one) halves; then cooldown 1 ignores epoch 5 (0.5 is best anyway)
    assert seen[:3] == [[0.1, 0.5]] * 3
    assert seen[3] == [0.05, 0.25]
    assert seen[4] == [0.05, 0.25]                                # improvement: 0.5
    assert seen[8] == [0.025, 0.125] and seen[12] == [0.02, 0.0625]   # min_lr clamps group 0
    assert s.best == 0.5 and s.last_epoch == len(metrics)
    opt2 = make_opt()
    s2 = S.ReduceLROnPlateau(opt2, mode="max", threshold_mode="abs", threshold=0.1,
                             patience=0, eps=0.2)
    for m in (1.0, 1.05, 2.0, 1.0):
        s2.step(m)
    assert lrs(opt2) == [0.1, 0.05]      # group 0's decrease (0.09) is below eps: ignored
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        s2.step(3.0, epoch=10)
    assert s2.last_epoch == 10


def triangular(it, base, top, up, down, scale=lambda c: 1.0, mode="cycle"):
    total = up + down
    cycle = math.floor(1 + it / total)
    x = 1.0 + it / total - cycle
    f = x / (up / total) if x <= up / total else (x - 1) / (up / total - 1)
    return base + (top - base) * f * scale(cycle if mode == "cycle" else it)


def test_cyclic_lr_by_hand():
    opt = make_opt()
    s = S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=2)
    assert opt.param_groups[1]["momentum"] == 0.9            # max_momentum at the start
    for it in range(1, 20):
        opt.step()
        s.step()
        want = triangular(it, 0.01, 0.1, 4, 2)
        assert s.get_last_lr() == pytest.approx([want, want], rel=1e-12)
        mom = 0.9 - (0.9 - 0.8) * (want - 0.01) / (0.1 - 0.01)
        assert opt.param_groups[0]["momentum"] == pytest.approx(mom, rel=1e-12)
    adam = make_opt(optim.Adam)
    s = S.CyclicLR(adam, [0.01, 0.02], 0.1, step_size_up=3, mode="triangular2")
    for it in range(1, 13):
        adam.step()
        s.step()
        scale = lambda c: 1 / 2.0 ** (c - 1)               # noqa: E731
        assert s.get_last_lr()[1] == pytest.approx(triangular(it, 0.02, 0.1, 3, 3, scale))
    assert adam.param_groups[0]["betas"][1] == 0.999         # only beta1 cycles
    assert 0.8 <= adam.param_groups[0]["betas"][0] <= 0.9
    ex = make_opt()
    s = S.CyclicLR(ex, 0.01, 0.1, step_size_up=2, mode="exp_range", gamma=0.9,
                   cycle_momentum=False)
    assert s.scale_mode == "iterations" and "base_momentum" not in ex.param_groups[0]
    for it in range(1, 9):
        ex.step()
        s.step()
        assert s.get_last_lr()[0] == pytest.approx(
            triangular(it, 0.01, 0.1, 2, 2, lambda i: 0.9 ** i, "iterations"))


def test_sequential_and_chained_by_hand():
    opt = make_opt()
    s = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.1, total_iters=3),
                             S.ExponentialLR(opt, gamma=0.5)], milestones=[3])
    seen = [lrs(opt)]
    for _ in range(5):
        opt.step()
        s.step()
        seen.append(lrs(opt))
    want = [0.01, 0.01, 0.01, 0.1, 0.05, 0.025]
    assert [v[0] for v in seen] == pytest.approx(want)
    assert s.get_last_lr() == pytest.approx([0.025, 0.125])
    opt = make_opt()
    c = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
                            S.ExponentialLR(opt, gamma=0.9)])
    seen = [lrs(opt)[0]]
    for _ in range(4):
        opt.step()
        c.step()
        seen.append(lrs(opt)[0])
    assert seen == pytest.approx([0.05, 0.045, 0.1 * 0.9 ** 2, 0.1 * 0.9 ** 3, 0.1 * 0.9 ** 4])
    assert c.get_last_lr() == lrs(opt)
    opt = make_opt()
    k = S.ConstantLR(opt, factor=0.25, total_iters=2)
    assert lrs(opt) == [0.025, 0.125]
    for _ in range(3):
        opt.step()
        k.step()
    assert lrs(opt) == pytest.approx([0.1, 0.5])
    assert k._get_closed_form_lr() == pytest.approx([0.1, 0.5])


# ---- state dicts ----

def _drive(s, opt, n, metric=None):
    out = []
    for i in range(n):
        opt.step()
        s.step(metric(i)) if metric else s.step()
        out.append(lrs(opt))
    return out


METRIC = [5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 2.9999, 3, 3]


def _builders():
    return {
        "plateau": (lambda o: S.ReduceLROnPlateau(o, patience=1, factor=0.5),
                    lambda i: METRIC[i % 13] + i // 13),
        "cyclic": (lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3), None),
        "sequential": (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=4),
                                                    S.CosineAnnealingLR(o, T_max=10)], [4]),
                       None),
        "chained": (lambda o: S.ChainedScheduler([S.StepLR(o, 3, 0.5),
                                                  S.ExponentialLR(o, 0.95)], o), None),
    }


@pytest.mark.parametrize("name", ["plateau", "cyclic", "sequential", "chained"])
def test_state_dict_round_trip(name):
    build, metric = _builders()[name]
    o1 = make_opt()
    s1 = build(o1)
    full = _drive(s1, o1, 30, metric)
    o2 = make_opt()
    s2 = build(o2)
    _drive(s2, o2, 12, metric)
    sd, osd = s2.state_dict(), o2.state_dict()
    assert "optimizer" not in sd
    o3 = make_opt()
    s3 = build(o3)
    o3.load_state_dict(osd)
    s3.load_state_dict(sd)
    rest = _drive(s3, o3, 18, (lambda i: metric(i + 12)) if metric else None)
    assert rest == full[12:]


def test_cyclic_state_dict_scale_fn():
    class Halve:
        def __init__(self):
            self.k = 0.5

        def __call__(self, x):
            return self.k ** x

    opt = make_opt()
    fn = Halve()
    s = S.CyclicLR(opt, 0.01, 0.1, scale_fn=fn)
    fn.k = 0.25
    sd = s.state_dict()
    assert sd["_scale_fn_custom"] == {"k": 0.25}
    s2 = S.CyclicLR(make_opt(), 0.01, 0.1, scale_fn=Halve())
    s2.load_state_dict(sd)
    assert s2._scale_fn_custom.k == 0.25
    s3 = S.CyclicLR(make_opt(), 0.01, 0.1, scale_fn=lambda x: 1.0)
    assert s3.state_dict()["_scale_fn_custom"] is None


# ---- errors ----

def test_errors():
    opt = make_opt()
    cases = [
        (lambda: S.ReduceLROnPlateau(opt, factor=1.0), ValueError, "Factor should be < 1.0."),
        (lambda: S.ReduceLROnPlateau(opt, mode="avg"), ValueError, "mode avg is unknown!"),
        (lambda: S.ReduceLROnPlateau(opt, threshold_mode="x"), ValueError,
         "threshold mode x is unknown!"),
        (lambda: S.ReduceLROnPlateau(opt, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
        (lambda: S.ReduceLROnPlateau("sgd"), TypeError, "str is not an Optimizer"),
        (lambda: S.CyclicLR(opt, 0.1, 1.0, mode="saw"), ValueError,
         "mode is invalid and scale_fn is None"),
        (lambda: S.CyclicLR(opt, [0.1], 1.0), ValueError,
         "base_lr must have the same length as optimizer.param_groups. base_lr has 1 values, "
         "param_groups has 2."),
        (lambda: S.CyclicLR(optim.Adagrad([nn.Parameter(mpamp.ones(1))]), 0.1, 1.0), ValueError,
         "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        (lambda: S.CyclicLR(None, 0.1, 1.0), TypeError, "NoneType is not an Optimizer"),
        (lambda: S.ConstantLR(opt, factor=2), ValueError,
         "Constant multiplicative factor expected to be between 0 and 1."),
        (lambda: S.SequentialLR(opt, [], []), ValueError,
         "SequentialLR expects at least one scheduler, but got no scheduler."),
        (lambda: S.ChainedScheduler([]), ValueError,
         "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
        (lambda: S.SequentialLR(opt, [S.StepLR(opt, 2)], [1]), ValueError,
         "Sequential Schedulers expects number of schedulers provided to be one more than the "
         "number of milestone points, but got number of schedulers 1 and the number of "
         "milestones to be equal to 1"),
        (lambda: S.SequentialLR(opt, [object()], []), TypeError,
         "SequentialLR at index 0 should have `optimizer` as its attribute."),
        (lambda: S.ChainedScheduler([S.ReduceLROnPlateau(opt)]), ValueError,
         "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
        (lambda: S.SequentialLR(opt, [S.StepLR(make_opt(), 2)], []), ValueError,
         "SequentialLR expects all schedulers to belong to the same optimizer, but got "
         "scheduler StepLR at index 0 has"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg.replace("(", "\\(").replace(")", "\\)")
                           .replace("[", "\\[").replace("]", "\\]")):
            fn()
    s = S.ReduceLROnPlateau(opt, min_lr=[0.0, 0.0], patience=0)
    opt.add_param_group({"params": [nn.Parameter(mpamp.ones(1))]})
    s.step(1.0)
    with pytest.raises(RuntimeError, match="The number of param groups in the `optimizer` \\(3\\) "
                                           "differs from when `ReduceLROnPlateau` was "
                                           "initialized \\(2\\)"):
        s.step(2.0)
    s = S.ReduceLROnPlateau(opt, patience=0)                  # a float min_lr just extends
    s.step(1.0)
    s.step(2.0)
    assert len(s.min_lrs) == 3


# ---- against torch ----

TORCH_CASES = {
    "plateau": ("SGD", lambda L, o: L.ReduceLROnPlateau(o, patience=2, cooldown=1,
                                                         min_lr=[0.01, 0.002], factor=0.5)),
    "plateau_max_abs": ("SGD", lambda L, o: L.ReduceLROnPlateau(
        o, mode="max", threshold_mode="abs", threshold=0.1, patience=1)),
    "cyclic": ("SGD", lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=5, step_size_down=3)),
    "cyclic2": ("SGD", lambda L, o: L.CyclicLR(o, [0.01, 0.02], 0.1, step_size_up=4,
                                               mode="triangular2")),
    "cyclic_exp_adam": ("Adam", lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=4,
                                                        mode="exp_range", gamma=0.9)),
    "cyclic_fn_rmsprop": ("RMSprop", lambda L, o: L.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")),
    "sequential": ("SGD", lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, 0.1, total_iters=5), L.CosineAnnealingLR(o, T_max=20),
            L.ExponentialLR(o, 0.9)], milestones=[5, 25])),
    "sequential_constant": ("SGD", lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, 0.1, total_iters=20), L.ExponentialLR(o, 0.9)], milestones=[20])),
    "chained": ("SGD", lambda L, o: L.ChainedScheduler([L.ConstantLR(o, 0.1, total_iters=20),
                                                        L.ExponentialLR(o, 0.9)])),
    "chained_steps": ("SGD", lambda L, o: L.ChainedScheduler(
        [L.StepLR(o, 3, 0.5), L.MultiStepLR(o, [10, 20], 0.1)], optimizer=o)),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_against_torch_60_steps(name):
    torch = pytest.importorskip("torch")
    opt_name, build = TORCH_CASES[name]
    metric = (lambda i: METRIC[i % 13] + i // 13) if name.startswith("plateau") else None
    seqs, states = [], []
    for lib, sched in ((torch, torch.optim.lr_scheduler), (mpamp, S)):
        opt = make_opt(getattr(optim, opt_name), lib=lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = build(sched, opt)
            out = []
            for i in range(60):
                opt.step()
                s.step(metric(i)) if metric else s.step()
                out.append(lrs(opt) + [g.get("momentum", g.get("betas", (None,))[0])
                                       for g in opt.param_groups])
        seqs.append(np.array(out, dtype=float))
        states.append((s, opt))
    np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-12, atol=0)
    assert states[1][0].get_last_lr() == pytest.approx(states[0][0].get_last_lr(), rel=1e-12)
    if name in ("plateau", "cyclic"):                 # torch's state loads into mpamp's
        m = build(S, make_opt(getattr(optim, opt_name)))
        m.load_state_dict(states[0][0].state_dict())
        assert m.last_epoch == states[0][0].last_epoch
        assert m.get_last_lr() == pytest.approx(states[0][0].get_last_lr())
