"""Gradient hooks (csrc/core/autograd/autograd_hooks.c): Tensor.register_hook on leaves and non-leaves
(order, replacement, removal, torch's checks), retain_grad / retains_grad, and
register_post_accumulate_grad_hook (once per leaf per backward, in the order gradients become
ready), with the AccumulateGrad steal kept correct when hooks see or replace gradients."""
import gc

import numpy as np
import pytest

import mpamp

try:
    import torch
except ImportError:
    torch = None


def test_hooks_run_in_registration_order_and_may_replace():
    calls = []
    x = mpamp.ones(3, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: calls.append(("y1", g.tolist())))
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: calls.append(("y3", g.tolist())))
    x.register_hook(lambda g: calls.append(("x", g.tolist())) or g + 1)
    y.sum().backward()
    assert calls == [("y1", [1.0] * 3), ("y3", [10.0] * 3), ("x", [30.0] * 3)]
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(3, 31, np.float32))


def test_hook_removal_and_handle():
    x = mpamp.ones(2, requires_grad=True)
    y = x * 2
    h1 = y.register_hook(lambda g: g * 100)
    h2 = x.register_hook(lambda g: g * 5)
    assert isinstance(h1, mpamp.utils.hooks.RemovableHandle)
    h1.remove()
    h1.remove()                             # idempotent
    with h2:
        pass                                # a context manager, as torch's
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(2, 2, np.float32))


def test_hooks_match_torch():
    if torch is None:
        pytest.skip("torch not installed")

    def run(lib):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        w = lib.tensor([0.5, 0.25, 2.0], requires_grad=True)
        h = x * w
        h.register_hook(lambda g: g * 2)
        h.retain_grad()
        z = h.sigmoid()
        z.retain_grad()
        z.register_hook(lambda g: g - 1)
        w.register_hook(lambda g: g * 3)
        (z * z).sum().backward()
        return [t.grad.detach().cpu().numpy().copy() for t in (x, w, h, z)]

    for got, want in zip(run(mpamp), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_retain_grad_accumulates_and_follows_inplace():
    x = mpamp.ones(3, requires_grad=True)
    z = x * 1
    assert not z.retains_grad
    z.retain_grad()
    z.retain_grad()                         # once is enough
    assert z.retains_grad and not x.retains_grad
    z.sum().backward(retain_graph=True)
    z.sum().backward()
    np.testing.assert_array_equal(z.grad.cpu().numpy(), np.full(3, 2, np.float32))
    z = x * 1
    z.retain_grad()
    z.add_(1)                               # the retained gradient is the new value's
    (z * 2).sum().backward()
    np.testing.assert_array_equal(z.grad.cpu().numpy(), np.full(3, 2, np.float32))
    x.retain_grad()                         # a no-op on leaves
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="^can't retain_grad on Tensor that has "
                                           "requires_grad=False$"):
        mpamp.zeros(3).retain_grad()


def test_retained_tensor_dying_first_is_safe():
    x = mpamp.ones(3, requires_grad=True)
    y = x * 2
    z = y * 1
    z.retain_grad()
    out = (z * 3).sum()
    del z
    gc.collect()
    out.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(3, 6, np.float32))


def test_autograd_grad_runs_tensor_hooks_and_retain():
    x = mpamp.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    y = x * 3
    y.register_hook(lambda g: g * 10)
    (gx,) = mpamp.autograd.grad(y.sum(), x)
    np.testing.assert_array_equal(gx.cpu().numpy(), np.full(3, 60, np.float32))
    assert x.grad is None
    y2 = x * 3
    y2.retain_grad()
    mpamp.autograd.grad(y2.sum(), x)
    np.testing.assert_array_equal(y2.grad.cpu().numpy(), np.ones(3, np.float32))


def test_hook_errors():
    x = mpamp.ones(3, requires_grad=True)
    for fn, err, msg in ((lambda g: g.sum(), RuntimeError,
                          "hook '<lambda>' has changed the size of value"),
                         (lambda g: g.half(), RuntimeError,
                          r"hook '<lambda>' has changed the type of value \(was "
                          r"mpamp.FloatTensor got mpamp.HalfTensor\)"),
                         (lambda g: 3, TypeError, "expected Variable, but hook returned 'int'")):
        z = x * 1
        z.register_hook(fn)
        with pytest.raises(err, match=msg):
            z.sum().backward()

    def bad(g):
        raise ValueError("boom")
    z = x * 1
    z.register_hook(bad)
    with pytest.raises(ValueError, match="boom"):
        z.sum().backward()
    x.register_post_accumulate_grad_hook(bad)
    with pytest.raises(ValueError, match="boom"):
        (x * 2).sum().backward()
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't "
                                           "require gradient$"):
        mpamp.zeros(3).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't "
                                           "require gradient$"):
        mpamp.zeros(3).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered "
                                           "on non-leaf tensors$"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_hooks_registered_before_inplace_see_the_old_value():
    # torch: a hook belongs to the grad_fn it was registered on
    x = mpamp.ones(3, requires_grad=True)
    seen = []
    y = x * 2
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.mul_(5)
    y.sum().backward()
    assert seen == [[5.0] * 3]


# ---- post-accumulate hooks ----

def test_post_accumulate_order_and_count():
    a, b, c = (mpamp.ones(2, requires_grad=True) for _ in range(3))
    order = []
    for name, t in (("a", a), ("b", b), ("c", c)):
        t.register_post_accumulate_grad_hook(
            lambda p, name=name, t=t: order.append((name, p is t, p.grad.tolist())))
    (((a * 2) * b) * 3 * c).sum().backward()
    assert [o[0] for o in order] == ["c", "b", "a"]        # as gradients become ready
    assert all(o[1] for o in order)                        # called with the tensor itself
    order.clear()
    ((c * 2) + (b * 3) + (a * 4)).sum().backward()
    assert [o[0] for o in order] == ["a", "b", "c"]
    assert order[0][2] == [10.0, 10.0]                     # 6 + 4: .grad already accumulated
    order.clear()
    (a * a * b).sum().backward()                           # a used twice: still once
    assert sorted(o[0] for o in order) == ["a", "b"]


def test_post_accumulate_matches_torch_on_a_model():
    if torch is None:
        pytest.skip("torch not installed")

    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 8),
                                  lib.nn.ReLU(), lib.nn.Linear(8, 2))
        names = {id(p): n for n, p in model.named_parameters()}
        order = []
        for p in model.parameters():
            p.register_post_accumulate_grad_hook(lambda t: order.append(names[id(t)]))
        x = lib.ones(3, 4)
        model(x).sum().backward()
        return order

    got, want = run(mpamp), run(torch)
    assert sorted(got) == sorted(want) and len(got) == 6
    # every layer's parameters are ready before those of the layer below it
    depth = {n: int(n.split(".")[0]) for n in got}
    assert [depth[n] for n in got] == sorted((depth[n] for n in got), reverse=True)
    assert [depth[n] for n in want] == sorted((depth[n] for n in want), reverse=True)


def test_post_accumulate_removal_and_not_in_autograd_grad():
    w = mpamp.ones(2, requires_grad=True)
    calls = []
    h = w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    mpamp.autograd.grad((w * 2).sum(), w)
    assert calls == []                      # nothing is accumulated there
    (w * 2).sum().backward()
    assert calls == [1]
    h.remove()
    (w * 2).sum().backward()
    assert calls == [1]
    for _ in range(50):                     # register/remove in a loop stays bounded
        w.register_post_accumulate_grad_hook(lambda t: None).remove()


# ---- the AccumulateGrad steal with hooks ----

def test_steal_with_hooks_never_aliases():
    w = mpamp.ones(4, requires_grad=True)
    kept = []
    w.register_hook(lambda g: kept.append(g))          # the hook keeps the gradient
    (w * 3).sum().backward()
    assert kept[0].tolist() == [3.0] * 4
    (w * 1).sum().backward()                           # accumulates into .grad in place
    assert kept[0].tolist() == [3.0] * 4               # the kept tensor is not .grad
    assert w.grad.tolist() == [4.0] * 4


def test_steal_of_a_hook_replacement():
    w = mpamp.ones(3, requires_grad=True)
    keep = mpamp.full((3,), 7.0)
    w.register_hook(lambda g: keep)                    # a tensor the user still holds
    (w * 2).sum().backward()
    assert w.grad.tolist() == [7.0] * 3
    (w * 2).sum().backward()
    assert keep.tolist() == [7.0] * 3                  # not stolen, so not accumulated into
    assert w.grad.tolist() == [14.0] * 3
    v = mpamp.ones(3, requires_grad=True)
    v.register_hook(lambda g: g * 5)                   # a fresh tensor: may become .grad
    (v * 2).sum().backward()
    assert v.grad.tolist() == [10.0] * 3


def test_no_leaks_with_hooks():
    stats = mpamp.backends.cpu.allocator_stats
    w = mpamp.randn(64, 64, requires_grad=True)
    hooks = [w.register_post_accumulate_grad_hook(lambda t: None)]

    def step():
        h = w * 2
        h.register_hook(lambda g: g * 1)
        h.retain_grad()
        (h * h).sum().backward()
        w.grad = None

    for _ in range(3):
        step()
    gc.collect()
    base = stats()["in_use_bytes"]
    for _ in range(50):
        step()
    gc.collect()
    assert stats()["in_use_bytes"] == base
    hooks[0].remove()


def test_hook_closing_over_its_parameter_is_collected():
    import weakref

    class Bucket:
        pass

    p = mpamp.nn.Parameter(mpamp.ones(3))
    bucket = Bucket()
    bucket.params = [p]                     # a cycle through C: p -> hook -> bucket -> p
    p.register_post_accumulate_grad_hook(lambda t: bucket.params)
    p.register_hook(lambda g: bucket and g)
    ref = weakref.ref(p)
    del p, bucket
    gc.collect()
    assert ref() is None


def test_hooks_survive_module_dtype_change():
    model = mpamp.nn.Linear(3, 2)
    seen = []
    model.weight.register_post_accumulate_grad_hook(lambda t: seen.append(t.dtype))
    model.bfloat16()
    model(mpamp.ones(1, 3, dtype="bf16")).sum().backward()
    assert seen == [mpamp.bfloat16]


def test_optimizer_step_between_forward_and_backward_is_caught():
    w = mpamp.nn.Parameter(mpamp.ones(3))
    x = mpamp.ones(3, requires_grad=True)
    opt = mpamp.optim.SGD([w], lr=0.1)
    w.grad = mpamp.ones(3)
    y = (w * x).sum()                       # saves w
    opt.step()                              # writes w in place
    assert w._version == 1
    with pytest.raises(RuntimeError, match=r"\[mpamp.FloatTensor \[3\]\] is at version 1; "
                                           "expected version 0"):
        y.backward()
