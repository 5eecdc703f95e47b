"""Fused RMSprop, Adagrad and Adadelta against NumPy float32 transcriptions of torch's
documented update rules (every option, fp32/fp16/bf16 params, 40 steps), against torch itself
when installed (every option combination), defaults and state_dict layout as torch's, round
trips and torch-saved state loaded through mpamp.load, GradScaler (in-kernel unscale, inf
steps skipped with the state untouched), master weights, and torch's validation errors."""
import copy
import itertools

import numpy as np
import pytest

import mpamp
from mpamp import nn, optim
from mpamp.amp import GradScaler
from conftest import TOL, run_python, to_numpy

F = np.float32


def round_to(x, dtype):
    """Round a float32 array to fp16/bf16 (nearest even) and back to float32."""
    x = np.asarray(x, F)
    if dtype == "float32":
        return x.copy()
    if dtype == "float16":
        return x.astype(np.float16).astype(F)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(F)


# ---- NumPy float32 references (torch's _single_tensor_* update rules) ----

def lerp(a, b, w):
    w = F(w)
    return a + w * (b - a) if w < 0.5 else b - (b - a) * (F(1) - w)


def ref_rmsprop(p, g, st, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                centered=False, maximize=False):
    g = -g if maximize else g
    if weight_decay != 0:
        g = g + F(weight_decay) * p
    sq = st.get("square_avg", np.zeros_like(p)) * F(alpha) + F(1 - alpha) * g * g
    st["square_avg"] = sq
    if centered:
        ga = lerp(st.get("grad_avg", np.zeros_like(p)), g, 1 - alpha)
        st["grad_avg"] = ga
        avg = np.sqrt(sq - ga * ga) + F(eps)
    else:
        avg = np.sqrt(sq) + F(eps)
    if momentum > 0:
        buf = st.get("momentum_buffer", np.zeros_like(p)) * F(momentum) + g / avg
        st["momentum_buffer"] = buf
        return p + F(-lr) * buf
    return p + F(-lr) * (g / avg)


def ref_adagrad(p, g, st, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                eps=1e-10, maximize=False):
    st["step"] = step = st.get("step", 0) + 1
    g = -g if maximize else g
    if weight_decay != 0:
        g = g + F(weight_decay) * p
    clr = lr / (1 + (step - 1) * lr_decay)
    s = st.get("sum", np.full_like(p, F(initial_accumulator_value))) + g * g
    st["sum"] = s
    return p + F(-clr) * (g / (np.sqrt(s) + F(eps)))


def ref_adadelta(p, g, st, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    g = -g if maximize else g
    if weight_decay != 0:
        g = g + F(weight_decay) * p
    sq = st.get("square_avg", np.zeros_like(p)) * F(rho) + F(1 - rho) * g * g
    acc = st.get("acc_delta", np.zeros_like(p))
    delta = np.sqrt(acc + F(eps)) / np.sqrt(sq + F(eps)) * g
    st["square_avg"], st["acc_delta"] = sq, acc * F(rho) + F(1 - rho) * delta * delta
    return p + F(-lr) * delta


REFS = {optim.RMSprop: ref_rmsprop, optim.Adagrad: ref_adagrad, optim.Adadelta: ref_adadelta}

RMSPROP_OPTS = [dict(lr=0.01, alpha=a, weight_decay=wd, momentum=m, centered=c, maximize=mx)
                for a, wd, m, c, mx in itertools.product((0.99, 0.3), (0, 0.05), (0, 0.9),
                                                         (False, True), (False, True))]
ADAGRAD_OPTS = [dict(lr=0.1, lr_decay=d, weight_decay=wd, initial_accumulator_value=iv, eps=e,
                     maximize=mx)
                for d, wd, iv, e, mx in itertools.product((0, 0.05), (0, 0.05), (0, 0.3),
                                                          (1e-10, 1e-3), (False, True))]
ADADELTA_OPTS = [dict(lr=lr, rho=rho, eps=e, weight_decay=wd, maximize=mx)
                 for lr, rho, e, wd, mx in itertools.product((1.0, 0.3), (0.9, 0.5), (1e-6, 1e-3),
                                                             (0, 0.05), (False, True))]
ALL_OPTS = ([(optim.RMSprop, k) for k in RMSPROP_OPTS] + [(optim.Adagrad, k) for k in ADAGRAD_OPTS]
            + [(optim.Adadelta, k) for k in ADADELTA_OPTS])


def opt_id(case):
    cls, kw = case
    return cls.__name__ + "-" + "-".join(f"{v}" for v in kw.values())


def run(cls, kw, dtype, rng, steps=40, sizes=(5, 37, 1500), **extra):
    dt = getattr(mpamp, dtype)
    init = [round_to(rng.standard_normal(n), dtype) for n in sizes]
    params = [nn.Parameter(mpamp.tensor(x).to(dtype=dt)) for x in init]
    opt = cls(params, **kw, **extra)
    ref_p, ref_st = [x.copy() for x in init], [{} for _ in sizes]
    for _ in range(steps):
        grads = [round_to(rng.standard_normal(n), dtype) for n in sizes]
        for p, g in zip(params, grads):
            p.grad = mpamp.tensor(g).to(dtype=dt)
        opt.step()
        for i, g in enumerate(grads):
            ref_p[i] = round_to(REFS[cls](ref_p[i], g, ref_st[i], **kw), dtype)
    return params, ref_p, ref_st, opt


def check(params, ref_p, dtype):
    rtol, atol = TOL[dtype]
    for p, r in zip(params, ref_p):
        np.testing.assert_allclose(to_numpy(p), r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", ALL_OPTS, ids=opt_id)
def test_matches_numpy(case, rng):
    cls, kw = case
    params, ref_p, ref_st, opt = run(cls, kw, "float32", rng)
    check(params, ref_p, "float32")
    for p, st in zip(params, ref_st):           # the state too, under torch's keys
        for k, v in st.items():
            if k != "step":
                np.testing.assert_allclose(to_numpy(opt.state[p][k]), v, rtol=1.3e-6,
                                           atol=1e-7)
        assert opt.state[p]["step"].item() == 40.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("cls", [optim.RMSprop, optim.Adagrad, optim.Adadelta])
def test_low_precision_params(cls, dtype, rng):
    kw = {optim.RMSprop: dict(momentum=0.9, centered=True), optim.Adagrad: dict(lr_decay=0.01),
          optim.Adadelta: dict(weight_decay=0.01)}[cls]
    params, ref_p, _, opt = run(cls, kw, dtype, rng, steps=15)
    check(params, ref_p, dtype)
    assert all(p.dtype == getattr(mpamp, dtype) for p in params)
    assert all(v.dtype == mpamp.float32 for st in opt.state.values() for v in st.values())


@pytest.mark.parametrize("cls", [optim.RMSprop, optim.Adagrad, optim.Adadelta])
def test_master_weights(cls, rng):
    init = round_to(rng.standard_normal(300), "bfloat16")
    ref = nn.Parameter(mpamp.tensor(init))
    low = nn.Parameter(mpamp.tensor(init).to(dtype=mpamp.bfloat16))
    o32, o16 = cls([ref], lr=0.01), cls([low], lr=0.01, master_weights=True)
    for _ in range(20):
        g = round_to(rng.standard_normal(300), "bfloat16")
        ref.grad, low.grad = mpamp.tensor(g), mpamp.tensor(g).to(dtype=mpamp.bfloat16)
        o32.step()
        o16.step()
    master = o16.state[low]["master_weight"]
    np.testing.assert_array_equal(master.cpu().numpy(), ref.detach().cpu().numpy())
    np.testing.assert_array_equal(to_numpy(low), round_to(ref.detach().cpu().numpy(), "bfloat16"))
    mpamp.manual_seed(5)
    sr = nn.Parameter(mpamp.ones(64, dtype=mpamp.bfloat16))
    o = cls([sr], lr=1e-3, master_weights=True, stochastic_rounding=True)
    sr.grad = mpamp.ones(64, dtype=mpamp.bfloat16)
    o.step()
    assert sr.dtype == mpamp.bfloat16 and o.stochastic_rounding


def test_param_groups_skipped_grads_and_closure(rng):
    a, b, c = (nn.Parameter(mpamp.tensor(rng.standard_normal(4).astype(F))) for _ in range(3))
    opt = optim.RMSprop([{"params": [a, b]}, {"params": [c], "lr": 0.5, "centered": True}],
                        momentum=0.5)
    a.grad, c.grad = mpamp.ones(4), mpamp.ones(4)
    before = b.detach().cpu().numpy().copy()
    assert opt.step(lambda: 3.0) == 3.0
    assert b not in opt.state or len(opt.state[b]) == 0
    np.testing.assert_array_equal(b.detach().cpu().numpy(), before)
    assert set(opt.state[c]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}
    assert set(opt.state[a]) == {"step", "square_avg", "momentum_buffer"}
    ada = optim.Adagrad([a], initial_accumulator_value=0.25)
    assert ada.state[a]["step"].item() == 0.0                     # created eagerly, as torch
    np.testing.assert_array_equal(ada.state[a]["sum"].cpu().numpy(), np.full(4, 0.25, F))
    ada.add_param_group({"params": [b]})
    b.grad = mpamp.ones(4)
    ada.step()
    assert ada.state[b]["step"].item() == 1.0
    dl = optim.Adadelta([a], lr=mpamp.tensor(0.5))
    assert dl.param_groups[0]["lr"] == 0.5
    dl.zero_grad()
    assert a.grad is None
    dl.step()                                                     # no grads: nothing happens
    assert len(dl.state[a]) == 0


def test_validation_errors():
    p = [nn.Parameter(mpamp.ones(2))]
    cases = [
        (optim.RMSprop, dict(lr=-1), "Invalid learning rate: -1"),
        (optim.RMSprop, dict(eps=-1), "Invalid epsilon value: -1"),
        (optim.RMSprop, dict(momentum=-1), "Invalid momentum value: -1"),
        (optim.RMSprop, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
        (optim.RMSprop, dict(alpha=-1), "Invalid alpha value: -1"),
        (optim.Adagrad, dict(lr=-1), "Invalid learning rate: -1"),
        (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value: -1"),
        (optim.Adagrad, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
        (optim.Adagrad, dict(initial_accumulator_value=-1),
         "Invalid initial_accumulator_value value: -1"),
        (optim.Adagrad, dict(eps=-1), "Invalid epsilon value: -1"),
        (optim.Adadelta, dict(lr=-1), "Invalid learning rate: -1"),
        (optim.Adadelta, dict(rho=1.5), "Invalid rho value: 1.5"),
        (optim.Adadelta, dict(rho=-0.1), "Invalid rho value: -0.1"),
        (optim.Adadelta, dict(eps=-1), "Invalid epsilon value: -1"),
        (optim.Adadelta, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
        (optim.Adadelta, dict(lr=mpamp.ones(2)), "Tensor lr must be 1-element"),
    ]
    for cls, kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            cls(p, **kw)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        optim.Adagrad(p, fused=True, differentiable=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        optim.Adagrad(p, fused=True, foreach=True)
    for cls in (optim.RMSprop, optim.Adagrad, optim.Adadelta):
        with pytest.raises(RuntimeError, match="does not support differentiable=True"):
            cls(p, differentiable=True)
        with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
            cls([])
        assert cls._step_supports_amp_scaling is True
    optim.RMSprop(p, capturable=True, foreach=False)              # accepted, as torch
    optim.Adadelta(p, capturable=True, foreach=False)
    optim.Adagrad(p, fused=True)


def test_fused_kernel_errors():
    p = nn.Parameter(mpamp.ones(4))
    g, z = mpamp.ones(4), mpamp.zeros(4)
    group = ([p], [g], None, None, None, False, 0, 0)
    with pytest.raises(ValueError, match="fused rmsprop step: missing state tensors"):
        mpamp._C._fused_rmsprop_(*group, [z], None, None, 0.1, 0.9, 1e-8, 0.0, 0.0, True, False)
    with pytest.raises(ValueError, match="fused rmsprop step: missing state tensors"):
        mpamp._C._fused_rmsprop_(*group, [z], None, None, 0.1, 0.9, 1e-8, 0.0, 0.5, False, False)
    with pytest.raises(RuntimeError, match="state 0 has 3 elements, the parameter has 4"):
        mpamp._C._fused_adagrad_(*group, [mpamp.zeros(3)], 0.1, 0.0, 1e-10, False)
    with pytest.raises(ValueError, match="state lists must match the parameters"):
        mpamp._C._fused_adadelta_(*group, [z], [z, z], 1.0, 0.9, 1e-6, 0.0, False)
    with pytest.raises(TypeError, match="takes 13 positional arguments"):
        mpamp._C._fused_adagrad_(*group)
    with pytest.raises(TypeError, match="takes 18 positional arguments"):
        mpamp._C._fused_rmsprop_(*group)
    with pytest.raises(TypeError, match="takes 15 positional arguments"):
        mpamp._C._fused_adadelta_(*group)
    with pytest.raises(TypeError, match="'acc_deltas' must be a list of tensors"):
        mpamp._C._fused_adadelta_(*group, [z], None, 1.0, 0.9, 1e-6, 0.0, False)
    q = nn.Parameter(mpamp.ones(4, 4))
    q.grad = mpamp.ones(4, 4).t()
    with pytest.raises(RuntimeError, match="grad 0 is not contiguous"):
        optim.Adadelta([q]).step()


def test_isa_levels_bit_identical():
    """The AVX2 spans against the scalar bodies (the oracle): every flag, a tail, an unscale
    factor (GradScaler's path), bf16 params widened by the driver."""
    code = """
import itertools, numpy as np, mpamp
from mpamp import nn, optim
rng = np.random.default_rng(7)
out = []
cases = [(optim.RMSprop, dict(alpha=a, momentum=m, centered=c, maximize=mx, weight_decay=0.1))
         for a, m, c, mx in itertools.product((0.99, 0.3), (0, 0.9), (False, True), (False, True))]
cases += [(optim.Adagrad, dict(lr_decay=0.1, weight_decay=wd, maximize=mx))
          for wd, mx in itertools.product((0, 0.1), (False, True))]
cases += [(optim.Adadelta, dict(rho=0.8, weight_decay=wd, maximize=mx))
          for wd, mx in itertools.product((0, 0.1), (False, True))]
for cls, kw in cases:
    for dt in (mpamp.float32, mpamp.bfloat16):
        p = nn.Parameter(mpamp.tensor(rng.standard_normal(1027).astype(np.float32)).to(dtype=dt))
        o = cls([p], **kw)
        for i in range(4):
            p.grad = mpamp.tensor(rng.standard_normal(1027).astype(np.float32)).to(dtype=dt)
            o.grad_scale = mpamp.tensor(4.0) if i % 2 else None
            o.step()
        out.append(p.detach().float().cpu().numpy().tobytes().hex())
print(" ".join(out))
"""
    out = {isa: run_python(code, MPAMP_CPU_ISA=isa) for isa in ("scalar", "avx2")}
    for r in out.values():
        assert r.returncode == 0, r.stderr
    assert out["scalar"].stdout == out["avx2"].stdout and len(out["avx2"].stdout) > 1000


# ---- state_dict ----

def test_signatures_match_torch():
    torch = pytest.importorskip("torch")
    import inspect
    for name in ("RMSprop", "Adagrad", "Adadelta"):
        mine = inspect.signature(getattr(optim, name)).parameters
        theirs = inspect.signature(getattr(torch.optim, name)).parameters
        extra = [k for k in mine if k not in theirs]
        assert extra == ["master_weights", "stochastic_rounding"]
        assert [k for k in mine if k in theirs] == list(theirs)
        for k, v in theirs.items():
            assert mine[k].kind == v.kind and mine[k].default == v.default, (name, k)


def test_defaults_and_state_dict_layout_match_torch():
    torch = pytest.importorskip("torch")
    for name, kw in [("RMSprop", dict(momentum=0.9, centered=True)), ("RMSprop", {}),
                     ("Adagrad", dict(lr_decay=0.1)), ("Adadelta", {})]:
        mp, tp = nn.Parameter(mpamp.ones(3)), torch.nn.Parameter(torch.ones(3))
        mo, to = getattr(optim, name)([mp], **kw), getattr(torch.optim, name)([tp], **kw)
        assert mo.defaults == to.defaults
        for _ in range(3):
            mp.grad, tp.grad = mpamp.tensor([1.0, -2.0, 0.5]), torch.tensor([1.0, -2.0, 0.5])
            mo.step()
            to.step()
        msd, tsd = mo.state_dict(), to.state_dict()
        assert msd["param_groups"] == tsd["param_groups"]
        assert list(msd["state"][0]) == list(tsd["state"][0])
        for k, v in tsd["state"][0].items():
            assert msd["state"][0][k].dtype == mpamp.float32
            np.testing.assert_allclose(msd["state"][0][k].cpu().numpy(), v.cpu().numpy(), rtol=1e-6)


@pytest.mark.parametrize("cls,kw", [(optim.RMSprop, dict(momentum=0.9, centered=True)),
                                    (optim.Adagrad, dict(lr_decay=0.01)),
                                    (optim.Adadelta, dict(rho=0.8))])
def test_state_dict_round_trip(cls, kw, rng, tmp_path):
    grads = [rng.standard_normal(6).astype(F) for _ in range(30)]
    init = rng.standard_normal(6).astype(F)

    def train(opt, p, gs):
        for g in gs:
            p.grad = mpamp.tensor(g)
            opt.step()

    p1 = nn.Parameter(mpamp.tensor(init))
    train(cls([p1], **kw), p1, grads)
    p2 = nn.Parameter(mpamp.tensor(init))
    o2 = cls([p2], **kw)
    train(o2, p2, grads[:15])
    mpamp.save(o2.state_dict(), str(tmp_path / "opt.pt"))
    sd = mpamp.load(str(tmp_path / "opt.pt"))
    p3 = nn.Parameter(p2.detach().clone())
    o3 = cls([p3], lr=123.0)
    o3.load_state_dict(copy.deepcopy(sd))
    assert o3.param_groups[0]["lr"] == o2.param_groups[0]["lr"]
    train(o3, p3, grads[15:])
    np.testing.assert_array_equal(p1.detach().cpu().numpy(), p3.detach().cpu().numpy())


@pytest.mark.parametrize("name,kw", [("RMSprop", dict(momentum=0.5, centered=True, lr=0.01)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
                                     ("Adadelta", dict(weight_decay=0.01))])
def test_torch_saved_state_loads(name, kw, rng, tmp_path):
    torch = pytest.importorskip("torch")
    init = rng.standard_normal((3, 4)).astype(F)
    grads = [rng.standard_normal((3, 4)).astype(F) for _ in range(20)]
    tp = torch.nn.Parameter(torch.tensor(init))
    to = getattr(torch.optim, name)([tp], **kw)
    for g in grads[:10]:
        tp.grad = torch.tensor(g)
        to.step()
    torch.save(to.state_dict(), str(tmp_path / "torch_opt.pt"))
    mp = nn.Parameter(mpamp.tensor(tp.detach().cpu().numpy()))
    mo = getattr(optim, name)([mp], lr=5.0)
    mo.load_state_dict(mpamp.load(str(tmp_path / "torch_opt.pt")))
    assert mo.param_groups[0]["lr"] == kw.get("lr", 1.0)
    for g in grads[10:]:
        tp.grad, mp.grad = torch.tensor(g), mpamp.tensor(g)
        to.step()
        mo.step()
    np.testing.assert_allclose(mp.detach().cpu().numpy(), tp.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


# ---- GradScaler ----

@pytest.mark.parametrize("cls,kw", [(optim.RMSprop, dict(momentum=0.9, centered=True)),
                                    (optim.Adagrad, dict(lr_decay=0.1)),
                                    (optim.Adadelta, {})])
def test_grad_scaler_unscales_in_kernel_and_skips_inf(cls, kw, rng):
    init = rng.standard_normal(16).astype(F)
    ref, p = nn.Parameter(mpamp.tensor(init)), nn.Parameter(mpamp.tensor(init))
    oref, opt = cls([ref], **kw), cls([p], **kw)
    scaler = GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=1000)
    for step in range(6):
        scaler.scale(mpamp.tensor(1.0))
        g = rng.standard_normal(16).astype(F)
        scaled = g * F(scaler.get_scale())
        if step == 3:
            scaled[5] = np.inf
        p.grad = mpamp.tensor(scaled)
        state_before = {k: v.cpu().numpy().copy() for k, v in opt.state[p].items()}
        p_before = p.detach().cpu().numpy().copy()
        scaler.step(opt)
        scaler.update()
        if step == 3:                           # skipped: params and state untouched
            np.testing.assert_array_equal(p.detach().cpu().numpy(), p_before)
            for k, v in opt.state[p].items():
                np.testing.assert_array_equal(v.cpu().numpy(), state_before[k])
            continue
        np.testing.assert_array_equal(p.grad.cpu().numpy(), scaled)   # unscaled in the kernel only
        ref.grad = mpamp.tensor(g)
        oref.step()
        np.testing.assert_allclose(p.detach().cpu().numpy(), ref.detach().cpu().numpy(), rtol=2e-6,
                                   atol=1e-7)
    assert scaler.stats()["skipped_steps"] == 1
    assert opt.state[p]["step"].item() == 5.0
    assert scaler.get_scale() == 2.0 ** 7


def test_grad_scaler_after_unscale_(rng):
    p = nn.Parameter(mpamp.tensor(rng.standard_normal(8).astype(F)))
    opt = optim.Adadelta([p])
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale(mpamp.tensor(1.0))
    p.grad = mpamp.tensor(np.full(8, np.nan, F))
    scaler.unscale_(opt)
    before = p.detach().cpu().numpy().copy()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(p.detach().cpu().numpy(), before)
    assert len(opt.state[p]) == 0 and scaler.get_scale() == 2.0


# ---- against torch ----

@pytest.mark.parametrize("case", ALL_OPTS, ids=opt_id)
def test_against_torch(case, rng):
    torch = pytest.importorskip("torch")
    cls, kw = case
    init = [rng.standard_normal(n).astype(F) for n in (7, 40)]
    mps = [nn.Parameter(mpamp.tensor(x)) for x in init]
    tps = [torch.nn.Parameter(torch.tensor(x)) for x in init]
    mo = cls([{"params": mps[:1]}, {"params": mps[1:], "lr": kw["lr"] * 0.5}], **kw)
    to = getattr(torch.optim, cls.__name__)([{"params": tps[:1]},
                                             {"params": tps[1:], "lr": kw["lr"] * 0.5}], **kw)
    for _ in range(12):
        for m, t in zip(mps, tps):
            g = rng.standard_normal(tuple(m.shape)).astype(F)
            m.grad, t.grad = mpamp.tensor(g), torch.tensor(g)
        mo.step()
        to.step()
    for m, t in zip(mps, tps):
        np.testing.assert_allclose(m.detach().cpu().numpy(), t.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
