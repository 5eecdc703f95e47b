"""Fused SGD / Adam / AdamW against NumPy float32 transcriptions of torch's update rules over
100 steps (every option, fp32/fp16/bf16 params), param groups, state_dict layout and round
trips, validation errors, fp32 master weights and stochastic rounding, AVX2 vs scalar."""
import copy
import itertools
import math

import numpy as np
import pytest

import mpamp
from mpamp import nn, optim
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


# ---- NumPy float32 references (torch's _single_tensor_sgd / _single_tensor_adam) ----

def ref_sgd(p, g, st, lr, momentum, dampening, weight_decay, nesterov, maximize):
    g = -g if maximize else g
    if weight_decay != 0:
        g = g + F(weight_decay) * p
    if momentum != 0:
        buf = st.get("buf")
        buf = g.copy() if buf is None else F(momentum) * buf + F(1 - dampening) * g
        st["buf"] = buf
        g = g + F(momentum) * buf if nesterov else buf
    return p - F(lr) * g


def ref_adam(p, g, st, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled):
    b1, b2 = betas
    st["step"] = step = st.get("step", 0) + 1
    m, v = st.get("m", np.zeros_like(p)), st.get("v", np.zeros_like(p))
    g = -g if maximize else g
    if weight_decay != 0:
        if decoupled:
            p = p * F(1 - lr * weight_decay)
        else:
            g = g + F(weight_decay) * p
    m = m + (g - m) * F(1 - b1)
    v = v * F(b2) + F(1 - b2) * g * g
    st["m"], st["v"] = m, v
    if amsgrad:
        v = np.maximum(st.get("vmax", np.zeros_like(p)), v)
        st["vmax"] = v
    denom = np.sqrt(v) / F(math.sqrt(1 - b2 ** step)) + F(eps)
    return p - F(lr / (1 - b1 ** step)) * (m / denom)


def run(opt_factory, ref_fn, kw, dtype, rng, steps=100, sizes=(5, 37, 300)):
    dt = getattr(mpamp, dtype)
    init = [round_to(rng.standard_normal(n), dtype) for n in sizes]
    params = [nn.Parameter(mpamp.tensor(x).to(dtype=dt)) for x in init]
    opt = opt_factory(params, **kw)
    ref_p, ref_st = [x.copy() for x in init], [{} for _ in sizes]
    for _ in range(steps):
        grads = [round_to(rng.standard_normal(n), dtype) for n in sizes]
        for p, g in zip(params, grads):
            p.grad = mpamp.tensor(g).to(dtype=dt)
        opt.step()
        for i, g in enumerate(grads):
            ref_p[i] = round_to(ref_fn(ref_p[i], g, ref_st[i], **kw), dtype)
    return params, ref_p, opt


SGD_OPTS = [dict(lr=0.05, momentum=m, dampening=d, weight_decay=wd, nesterov=n, maximize=mx)
            for m, d, wd, n, mx in itertools.product((0.0, 0.9), (0.0, 0.25), (0.0, 0.01),
                                                     (False, True), (False, True))
            if not (n and (m == 0 or d != 0))]
ADAM_OPTS = [dict(lr=0.01, betas=(0.9, 0.99), eps=1e-6, weight_decay=wd, amsgrad=a,
                  maximize=mx) for wd, a, mx in itertools.product((0.0, 0.05), (False, True),
                                                                  (False, True))]


def check(params, ref_p, dtype):
    # fp32: the same operations in the same order; 100 steps compound last-bit differences
    # of the vector sqrt/div only, so the elementwise fp32 tolerance is kept.
    rtol, atol = TOL[dtype]
    for p, r in zip(params, ref_p):
        np.testing.assert_allclose(to_numpy(p), r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kw", SGD_OPTS, ids=lambda k: "-".join(f"{v}" for v in k.values()))
def test_sgd_matches_numpy(kw, rng):
    params, ref_p, _ = run(optim.SGD, ref_sgd, kw, "float32", rng)
    check(params, ref_p, "float32")


@pytest.mark.parametrize("cls,decoupled", [(optim.Adam, False), (optim.AdamW, True)])
@pytest.mark.parametrize("kw", ADAM_OPTS, ids=lambda k: f"wd{k['weight_decay']}-ams"
                         f"{k['amsgrad']}-max{k['maximize']}")
def test_adam_matches_numpy(cls, decoupled, kw, rng):
    params, ref_p, _ = run(cls, lambda *a, **k: ref_adam(*a, **k, decoupled=decoupled), kw,
                           "float32", rng)
    check(params, ref_p, "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_params_without_masters(dtype, rng):
    kw = dict(lr=0.01, weight_decay=0.01)
    params, ref_p, _ = run(optim.AdamW, lambda *a, **k: ref_adam(
        *a, betas=(0.9, 0.999), eps=1e-8, amsgrad=False, maximize=False, decoupled=True, **k),
        kw, dtype, rng, steps=30)
    check(params, ref_p, dtype)
    kw = dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=True,
              maximize=False)
    params, ref_p, _ = run(optim.SGD, ref_sgd, kw, dtype, rng, steps=30)
    check(params, ref_p, dtype)


def test_param_groups_and_zero_grad(rng):
    a, b = nn.Parameter(mpamp.ones(4)), nn.Parameter(mpamp.ones(4))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    a.grad, b.grad = mpamp.ones(4), mpamp.ones(4)
    opt.step()
    np.testing.assert_allclose(a.detach().cpu().numpy(), 0.9)
    np.testing.assert_allclose(b.detach().cpu().numpy(), 0.5)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.cpu().numpy(), 0.0)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    opt.step()                                      # no grads: nothing happens
    c = nn.Parameter(mpamp.ones(2))
    opt.add_param_group({"params": [c], "momentum": 0.9})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.9
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                       "group"):
        opt.add_param_group({"params": [a]})


def test_validation_errors():
    p = [nn.Parameter(mpamp.ones(2))]
    cases = [(lambda: optim.SGD(p, lr=-1), "Invalid learning rate: -1"),
             (lambda: optim.SGD(p, momentum=-0.5), "Invalid momentum value: -0.5"),
             (lambda: optim.SGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
             (lambda: optim.SGD(p, nesterov=True), "Nesterov momentum requires a momentum and "
              "zero dampening"),
             (lambda: optim.Adam(p, lr=-0.1), "Invalid learning rate: -0.1"),
             (lambda: optim.Adam(p, eps=-1.0), "Invalid epsilon value: -1.0"),
             (lambda: optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
             (lambda: optim.AdamW(p, betas=(0.9, -0.1)),
              "Invalid beta parameter at index 1: -0.1"),
             (lambda: optim.AdamW(p, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
             (lambda: optim.Adam([]), "optimizer got an empty parameter list")]
    for fn, msg in cases:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            fn()
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                       "iterable of Tensors or dicts"):
        optim.SGD(p[0])
    with pytest.raises(TypeError, match="ordering of tensors in sets will change"):
        optim.SGD(set(p))
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p[0] * 2])


def test_defaults_and_state_dict_layout_match_torch():
    torch = pytest.importorskip("torch")
    for name, kw in [("SGD", {"momentum": 0.9}), ("Adam", {"amsgrad": True}), ("AdamW", {})]:
        mp, tp = nn.Parameter(mpamp.ones(3)), torch.nn.Parameter(torch.ones(3))
        mo, to = getattr(optim, name)([mp], **kw), getattr(torch.optim, name)([tp], **kw)
        mp.grad, tp.grad = mpamp.ones(3), torch.ones(3)
        mo.step()
        to.step()
        msd, tsd = mo.state_dict(), to.state_dict()
        assert msd["param_groups"] == tsd["param_groups"]
        assert set(msd["state"][0]) == set(tsd["state"][0])
        for k, v in tsd["state"][0].items():
            np.testing.assert_allclose(msd["state"][0][k].cpu().numpy(), v.cpu().numpy(), rtol=1e-6)
        np.testing.assert_allclose(mp.detach().cpu().numpy(), tp.detach().cpu().numpy(), rtol=1e-6)


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9)),
                                    (optim.Adam, dict(lr=0.01, amsgrad=True)),
                                    (optim.AdamW, dict(lr=0.01))])
def test_state_dict_round_trip_mid_training(cls, kw, rng):
    grads = [rng.standard_normal(6).astype(F) for _ in range(40)]
    init = rng.standard_normal(6).astype(F)

    def train(opt, p, gs):
        for g in gs:
            p.grad = mpamp.tensor(g)
            opt.step()

    p1 = nn.Parameter(mpamp.tensor(init))
    o1 = cls([p1], **kw)
    train(o1, p1, grads)
    p2 = nn.Parameter(mpamp.tensor(init))
    o2 = cls([p2], **kw)
    train(o2, p2, grads[:20])
    sd = copy.deepcopy(o2.state_dict())
    p3 = nn.Parameter(p2.detach().clone())
    o3 = cls([p3], lr=123.0)
    o3.load_state_dict(sd)
    assert o3.param_groups[0]["lr"] == kw["lr"]
    train(o3, p3, grads[20:])
    np.testing.assert_array_equal(p1.detach().cpu().numpy(), p3.detach().cpu().numpy())
    with pytest.raises(ValueError, match="different number of parameter groups"):
        o3.load_state_dict({"state": {}, "param_groups": []})


def test_master_weights_keep_small_updates():
    # 100 updates of 1e-4 on 1.0: each is below half a bf16 ulp (2^-8), so plain bf16 loses all
    p = nn.Parameter(mpamp.ones(64, dtype=mpamp.bfloat16))
    q = nn.Parameter(mpamp.ones(64, dtype=mpamp.bfloat16))
    plain, master = optim.SGD([p], lr=1e-4), optim.SGD([q], lr=1e-4, master_weights=True)
    for _ in range(100):
        p.grad = mpamp.ones(64, dtype=mpamp.bfloat16)
        q.grad = mpamp.ones(64, dtype=mpamp.bfloat16)
        plain.step()
        master.step()
    np.testing.assert_array_equal(to_numpy(p), 1.0)
    mw = master.state[q]["master_weight"]
    assert mw.dtype == mpamp.float32
    np.testing.assert_allclose(mw.cpu().numpy(), 0.99, rtol=1e-5)
    np.testing.assert_array_equal(to_numpy(q), round_to(mw.cpu().numpy(), "bfloat16"))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_master_weights_track_fp32(dtype, rng):
    dt = getattr(mpamp, dtype)
    init = round_to(rng.standard_normal(200), dtype)
    ref = nn.Parameter(mpamp.tensor(init))
    low = nn.Parameter(mpamp.tensor(init).to(dtype=dt))
    o_ref, o_low = optim.Adam([ref], lr=1e-3), optim.Adam([low], lr=1e-3, master_weights=True)
    for _ in range(100):
        g = round_to(rng.standard_normal(200), dtype)
        ref.grad, low.grad = mpamp.tensor(g), mpamp.tensor(g).to(dtype=dt)
        o_ref.step()
        o_low.step()
    np.testing.assert_allclose(o_low.state[low]["master_weight"].cpu().numpy(),
                               ref.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(to_numpy(low), round_to(ref.detach().cpu().numpy(), dtype))


def test_stochastic_rounding_unbiased_and_reproducible():
    n = 20000

    def train(seed):
        mpamp.manual_seed(seed)
        p = nn.Parameter(mpamp.ones(n, dtype=mpamp.bfloat16))
        opt = optim.SGD([p], lr=1e-3, stochastic_rounding=True)
        for _ in range(100):
            p.grad = mpamp.ones(n, dtype=mpamp.bfloat16)
            opt.step()
        return to_numpy(p)

    a, b, c = train(7), train(7), train(8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # expected 1 - 100 * 1e-3 = 0.9; nearest-even rounding would leave every weight at 1.0
    assert abs(a.mean() - 0.9) < 2e-3
    assert len(np.unique(a)) > 1


def test_isa_levels_bit_identical():
    code = """
import numpy as np, mpamp
from mpamp import nn, optim
rng = np.random.default_rng(3)
p = nn.Parameter(mpamp.tensor(rng.standard_normal(1003).astype(np.float32)))
o = optim.AdamW([p], lr=1e-2, amsgrad=True, maximize=True)
q = nn.Parameter(mpamp.tensor(rng.standard_normal(517).astype(np.float32)))
o2 = optim.Adam([q], lr=1e-2, weight_decay=0.1)
for _ in range(5):
    p.grad = mpamp.tensor(rng.standard_normal(1003).astype(np.float32))
    q.grad = mpamp.tensor(rng.standard_normal(517).astype(np.float32))
    o.step()
    o2.step()
print(p.detach().cpu().numpy().tobytes().hex(), q.detach().cpu().numpy().tobytes().hex())
"""
    out = {isa: run_python(code, MPAMP_CPU_ISA=isa) for isa in ("scalar", "avx2")}
    for r in out.values():
        assert r.returncode == 0, r.stderr
    assert out["scalar"].stdout == out["avx2"].stdout


def test_fused_kernel_errors():
    p = nn.Parameter(mpamp.ones(4, 4))
    q = nn.Parameter(mpamp.ones(4, 4).t())
    q.grad = mpamp.ones(4, 4)
    with pytest.raises(RuntimeError, match="not contiguous"):
        optim.Adam([q]).step()
    with pytest.raises(TypeError):
        mpamp._C._fused_sgd_([p], [1.0], None, None, None, None, False, 0, 0, None, True,
                             0.1, 0.0, 0.0, 0.0, False, False)


def test_against_torch_100_steps(rng):
    torch = pytest.importorskip("torch")
    for name, kw in [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
                     ("Adam", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
                     ("AdamW", dict(lr=1e-2, maximize=True))]:
        init = rng.standard_normal(50).astype(F)
        mp, tp = nn.Parameter(mpamp.tensor(init)), torch.nn.Parameter(torch.tensor(init))
        mo, to = getattr(optim, name)([mp], **kw), getattr(torch.optim, name)([tp], **kw)
        for _ in range(100):
            g = rng.standard_normal(50).astype(F)
            mp.grad, tp.grad = mpamp.tensor(g), torch.tensor(g)
            mo.step()
            to.step()
        np.testing.assert_allclose(mp.detach().cpu().numpy(), tp.detach().cpu().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_stochastic_rounding_with_masters():
    mpamp.manual_seed(3)
    n = 4096
    p = nn.Parameter(mpamp.ones(n, dtype=mpamp.bfloat16))
    opt = optim.Adam([p], lr=1e-3, master_weights=True, stochastic_rounding=True)
    for _ in range(10):
        p.grad = mpamp.ones(n, dtype=mpamp.bfloat16)
        opt.step()
    master = opt.state[p]["master_weight"].cpu().numpy()
    w = to_numpy(p)
    lo = round_to(master, "bfloat16")
    ulp = np.float32(2.0 ** -8)                 # bf16 spacing just below 1.0
    assert np.all((np.abs(w - master) < ulp) & ((w == lo) | (np.abs(w - lo) == ulp)))
    assert abs(float(w.mean()) - float(master.mean())) < 3e-4   # unbiased around the masters


def test_pickle_keeps_extensions():
    import pickle
    p = nn.Parameter(mpamp.ones(3, dtype=mpamp.bfloat16))
    opt = optim.AdamW([p], master_weights=True, stochastic_rounding=True)
    p.grad = mpamp.ones(3, dtype=mpamp.bfloat16)
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.master_weights and clone.stochastic_rounding
    assert clone.state_dict()["param_groups"] == opt.state_dict()["param_groups"]


def test_bf16_master_path_and_threads_bit_identical():
    # the AVX2 fused bf16/master pass vs the scalar chunks, and 1 vs 2 threads on a group
    # above the threading threshold (with stochastic rounding: counters are per element)
    code = """
import numpy as np, mpamp
from mpamp import nn, optim
rng = np.random.default_rng(5)
mpamp.manual_seed(11)
def model(n):
    return nn.Parameter(mpamp.tensor(rng.standard_normal(n).astype(np.float32)).bfloat16())
ps = [model(700_001), model(600_003)]
o = optim.AdamW(ps, lr=1e-2, amsgrad=True, master_weights=True)
qs = [model(1_100_000), model(77)]
o2 = optim.SGD(qs, lr=1e-2, momentum=0.9, stochastic_rounding=True)
for _ in range(3):
    for p in ps + qs:
        p.grad = mpamp.tensor(rng.standard_normal(p.numel()).astype(np.float32)).bfloat16()
    o.step()
    o2.step()
out = [p.detach().float().cpu().numpy().tobytes() for p in ps + qs]
out += [o.state[p]["master_weight"].cpu().numpy().tobytes() for p in ps]
import hashlib
print(hashlib.sha256(b"".join(out)).hexdigest())
"""
    runs = [run_python(code, MPAMP_CPU_ISA="scalar"), run_python(code, MPAMP_NUM_THREADS="1"),
            run_python(code)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
