"""In-place ops under autograd (csrc/core/autograd/inplace.c): gradients after in-place ops on
activations and on views of activations, checked against the same computation done out of
place and against torch (where installed); training with in-place modules; no leaks. The
version counter and torch's refusals are in test_inplace_versions.py."""
import gc

import numpy as np
import pytest

import mpamp
from conftest import TOL

try:
    import torch
except ImportError:                      # the suite passes without torch
    torch = None


def _leaves(lib, arrays, dtype="float32"):
    dt = getattr(lib, dtype)
    return [lib.tensor(a).to(dt).requires_grad_() for a in arrays]


def _grads(lib, fn, arrays, dtype="float32"):
    xs = _leaves(lib, arrays, dtype)
    out = fn(lib, *xs)
    weights = np.linspace(-1.0, 2.0, out.numel(), dtype=np.float32).reshape(tuple(out.shape))
    (out.float() * lib.tensor(weights)).sum().backward()
    return [None if x.grad is None else x.grad.float().detach().cpu().numpy().copy() for x in xs], \
        out.float().detach().cpu().numpy().copy()


def check(inplace, reference, arrays, dtype="float32"):
    """inplace's gradients equal the out-of-place reference's, and torch's in-place ones."""
    got, out = _grads(mpamp, inplace, arrays, dtype)
    want, ref_out = _grads(mpamp, reference, arrays, dtype)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(out, ref_out, rtol=rtol, atol=atol)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    if torch is not None:
        tgot, tout = _grads(torch, inplace, arrays, dtype)
        np.testing.assert_allclose(out, tout, rtol=rtol, atol=max(atol, 1e-5))
        for g, w in zip(got, tgot):
            assert (g is None) == (w is None)
            if g is not None:
                np.testing.assert_allclose(g, w, rtol=max(rtol, 1e-5), atol=max(atol, 1e-5))


def _arrays(*shapes, seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(np.float32) for s in shapes]


# ---- in-place ops on activations ----

BINARY = {
    "iadd": (lambda h, t: h.__iadd__(t), lambda h, t: h + t),
    "isub": (lambda h, t: h.__isub__(t), lambda h, t: h - t),
    "imul": (lambda h, t: h.__imul__(t), lambda h, t: h * t),
    "idiv": (lambda h, t: h.__itruediv__(t.abs() + 1), lambda h, t: h / (t.abs() + 1)),
    "add_alpha": (lambda h, t: h.add_(t, alpha=-0.5), lambda h, t: h.add(t, alpha=-0.5)),
    "sub_alpha": (lambda h, t: h.sub_(t, alpha=2.0), lambda h, t: h.sub(t, alpha=2.0)),
    "mul_scalar": (lambda h, t: h.mul_(3.0), lambda h, t: h * 3.0),
    "div_scalar": (lambda h, t: h.div_(4.0), lambda h, t: h / 4.0),
    "pow_": (lambda h, t: h.pow_(2), lambda h, t: h ** 2),
    "mul_broadcast": (lambda h, t: h.mul_(t[0]), lambda h, t: h * t[0]),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_binary_inplace_on_activation(name, dtype):
    ip, op = BINARY[name]

    def inplace(lib, x, t):
        h = x * 2.0 + 1.0
        ip(h, t)
        return h * x

    def reference(lib, x, t):
        return op(x * 2.0 + 1.0, t) * x
    check(inplace, reference, _arrays((3, 5), (3, 5)), dtype)


UNARY = ["relu", "exp", "sigmoid", "tanh", "neg", "abs", "silu"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_inplace_on_activation(name):
    def inplace(lib, x):
        h = x * 1.5
        if name == "silu":                  # torch has F.silu(inplace=True), no Tensor.silu_
            r = lib.nn.functional.silu(h, inplace=True)
        else:
            r = getattr(h, name + "_")()
        assert r is h
        return h + x

    def reference(lib, x):
        return getattr(x * 1.5, name)() + x
    check(inplace, reference, _arrays((4, 6)))


@pytest.mark.parametrize("name", ["sqrt", "log", "rsqrt"])
def test_unary_inplace_positive_domain(name):
    def inplace(lib, x):
        h = x * x + 0.5
        getattr(h, name + "_")()
        return h * x

    def reference(lib, x):
        return getattr(x * x + 0.5, name)() * x
    check(inplace, reference, _arrays((3, 4)))


def test_clamp_and_relu_functional_inplace():
    def inplace(lib, x):
        h = x * 2
        h.clamp_(-0.5, 1.0)
        g = x + 1
        lib.nn.functional.relu(g, inplace=True)
        return h * g

    def reference(lib, x):
        return (x * 2).clamp(-0.5, 1.0) * (x + 1).relu()
    check(inplace, reference, _arrays((5, 3)))


def test_chained_inplace_ops_and_saved_results():
    # relu_ saves its result; the later in-place op on another tensor leaves it intact
    def inplace(lib, x, t):
        h = x @ t
        h.relu_()
        h2 = h * 1
        h2 += t[:1, :1]
        h2.sigmoid_()
        return h2 * h

    def reference(lib, x, t):
        h = (x @ t).relu()
        return (h * 1 + t[:1, :1]).sigmoid() * h
    check(inplace, reference, _arrays((3, 4), (4, 4)))


def test_mul_inplace_with_operand_needing_grad_keeps_original():
    # torch saves the original self of mul_: both operands get the right gradient
    def inplace(lib, x, w):
        a = x * 1
        a.mul_(w)
        a.div_(w.abs() + 1)
        return a

    def reference(lib, x, w):
        return x * w / (w.abs() + 1)
    check(inplace, reference, _arrays((6,), (6,)))


def test_inplace_on_tensor_not_requiring_grad_with_grad_result():
    def inplace(lib, x):
        buf = lib.zeros(3, 4)
        buf += x
        buf.mul_(x)
        return buf

    def reference(lib, x):
        return x * x
    check(inplace, reference, _arrays((3, 4)))
    b = mpamp.zeros(3)
    x = mpamp.ones(3, requires_grad=True)
    b.add_(x)
    assert b.requires_grad and not b.is_leaf and b.grad_fn.name() == "AddBackward0"


def test_copy_fill_zero_on_activation():
    def inplace(lib, x, s):
        h = x * 3
        h.copy_(s * 2)                     # gradient to s; none to h's old history
        g = x * 1
        g.zero_()
        k = x * 1
        k.fill_(2.0)
        return h + g * x + k * x

    def reference(lib, x, s):
        return (s * 2).expand(3, 4) + 0 * x + 2.0 * x
    check(inplace, reference, _arrays((3, 4), (4,)))


def test_copy_converts_dtype_and_gradient_back():
    x = mpamp.randn(3, 4, dtype="bf16", requires_grad=True)
    h = mpamp.zeros(3, 4)
    h.copy_(x)
    assert h.dtype == mpamp.float32 and h.requires_grad
    (h * 2).sum().backward()
    assert x.grad.dtype == mpamp.bfloat16
    np.testing.assert_array_equal(x.grad.float().cpu().numpy(), np.full((3, 4), 2, np.float32))
    # an fp16 activation updated with an fp32 tensor: the update's gradient comes back fp32
    a = mpamp.randn(2, 3, requires_grad=True)
    w = mpamp.randn(2, 3, requires_grad=True)
    h = a.half() * 1
    h += w
    assert h.dtype == mpamp.float16
    h.float().sum().backward()
    assert w.grad.dtype == mpamp.float32 and a.grad.dtype == mpamp.float32
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.ones((2, 3), np.float32))


def test_where_style_write_through_copy_stands_in_for_masked_fill():
    # the shape other helpers' masked_fill_ / index_put_ take: check, compute out of place,
    # commit; here the commit is copy_ of a computed result
    def inplace(lib, x, v):
        h = x * 2
        m = lib.tensor(np.array([[True, False, True, False]] * 3))
        h.copy_(lib.where(m, v.expand(3, 4), h))
        return h * x

    def reference(lib, x, v):
        m = lib.tensor(np.array([[True, False, True, False]] * 3))
        return lib.where(m, v.expand(3, 4), x * 2) * x
    check(inplace, reference, _arrays((3, 4), (1, 4)))


# ---- in-place ops on views of activations (CopySlices) ----

VIEW_CASES = {
    "setitem_row": (lambda y, v: y.__setitem__(0, v[0]), None),
    "setitem_cols": (lambda y, v: y.__setitem__((slice(None), slice(1, None)), v[:, 1:]),
                     None),
    "setitem_scalar": (lambda y, v: y.__setitem__((1, 2), 7.0), None),
    "setitem_step": (lambda y, v: y.__setitem__((Ellipsis, slice(None, None, 2)),
                                                v[:, ::2] * 3), None),
    "select_relu": (lambda y, v: y[:, 0].relu_(), None),
    "view_mul": (lambda y, v: y.view(12).mul_(2.0), None),
    "t_add": (lambda y, v: y.t().add_(v.t()), None),
    "slice_copy": (lambda y, v: y[1:].copy_(v[:2] * v[1:]), None),
    "nested_view": (lambda y, v: y[1:][:, 2:].mul_(v[1:, 2:]), None),
    "unsqueeze_sub": (lambda y, v: y.unsqueeze(0).sub_(v), None),
}


def _view_reference(name, lib, y, v):
    """The same writes done out of place."""
    rows = [y[i] for i in range(3)]
    if name == "setitem_row":
        return lib.stack([v[0], rows[1], rows[2]])
    if name == "setitem_cols":
        return lib.cat([y[:, :1], v[:, 1:]], dim=1)
    if name == "setitem_scalar":
        mask = np.zeros((3, 4), np.float32)
        mask[1, 2] = 1
        mk = lib.tensor(mask).to(y.dtype)      # no promotion to float32
        return y * (1 - mk) + 7.0 * mk
    if name == "setitem_step":
        mask = np.zeros((3, 4), np.float32)
        mask[:, ::2] = 1
        mk = lib.tensor(mask).to(y.dtype)      # no promotion to float32
        return y * (1 - mk) + (v * 3) * mk
    if name == "select_relu":
        return lib.cat([y[:, :1].relu(), y[:, 1:]], dim=1)
    if name == "view_mul":
        return y * 2.0
    if name == "t_add":
        return y + v
    if name == "slice_copy":
        return lib.cat([y[:1], v[:2] * v[1:]])
    if name == "nested_view":
        top = y[:1]
        bottom = lib.cat([y[1:, :2], y[1:, 2:] * v[1:, 2:]], dim=1)
        return lib.cat([top, bottom])
    if name == "unsqueeze_sub":
        return y - v
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_inplace_on_view_of_activation(name, dtype):
    write = VIEW_CASES[name][0]

    def inplace(lib, x, v):
        y = x * 2 + 1
        before = y[2]                      # a view made before the write
        write(y, v)
        assert y.grad_fn.name() in ("CopySlices", "torch::autograd::CopySlices")
        return y * x + before.sum()

    def reference(lib, x, v):
        written = _view_reference(name, lib, x * 2 + 1, v)
        return written * x + written[2].sum()    # the earlier view sees the written values
    check(inplace, reference, _arrays((3, 4), (3, 4)), dtype)


def test_view_made_before_write_sees_new_history():
    x = mpamp.randn(3, 4, requires_grad=True)
    v = mpamp.ones(4, requires_grad=True)
    y = x * 1
    row0, whole = y[0], y.view(12)
    y[0] = v * 5
    assert row0.grad_fn.name() == "AsStridedBackward0"
    (row0.sum() + whole.sum()).backward()
    np.testing.assert_array_equal(v.grad.cpu().numpy(), np.full(4, 10, np.float32))
    gx = np.ones((3, 4), np.float32)
    gx[0] = 0
    np.testing.assert_array_equal(x.grad.cpu().numpy(), gx)


def test_view_of_buffer_not_requiring_grad_gains_history():
    buf = mpamp.zeros(3, 3)
    other = buf[1]
    y = mpamp.ones(3, requires_grad=True)
    buf[0] = y
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    assert other.requires_grad and other.grad_fn.name() == "AsStridedBackward0"
    assert buf[2].grad_fn.name() == "SelectBackward0"
    (buf * mpamp.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    np.testing.assert_array_equal(y.grad.cpu().numpy(), np.ones(3, np.float32))


def test_expanded_view_refresh_sums_gradient():
    x = mpamp.randn(3, requires_grad=True)
    y = x * 1
    e = y.expand(2, 3)
    y[0] = 0.0
    e.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.array([0, 2, 2], np.float32))


def test_setitem_on_noncontiguous_base_and_leaf_storage():
    w = mpamp.randn(4, 6, requires_grad=True)
    src = mpamp.randn(2, 3, requires_grad=True)

    def run(lib, w, src):
        y = (w * 1).t()[1::2]              # (3, 4) non-contiguous view
        base = y.contiguous() * 1
        z = base.t()                        # (4, 3) view of a contiguous activation
        z[1:3] = src
        return base * 2

    wn, sn = w.detach().cpu().numpy(), src.detach().cpu().numpy()
    got, out = _grads(mpamp, run, [wn, sn])
    assert out.shape == (3, 4)
    want = np.zeros((3, 4), np.float32)
    want[:, 1:3] = sn.T
    np.testing.assert_allclose(out[:, 1:3], want[:, 1:3] * 2, rtol=1e-6)
    if torch is not None:
        tgot, tout = _grads(torch, run, [wn, sn])
        np.testing.assert_allclose(out, tout, rtol=1e-6)
        for g, t in zip(got, tgot):
            np.testing.assert_allclose(g, t, rtol=1e-6, atol=1e-6)


def test_empty_and_zero_size_views():
    x = mpamp.randn(0, 3, requires_grad=True)
    y = x * 1
    y[:, 1:] = 2.0
    y.sum().backward()
    assert x.grad.shape == (0, 3)
    x = mpamp.randn(2, 3, requires_grad=True)
    y = x * 1
    y[:, 3:] = 1.0                         # an empty region
    (y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full((2, 3), 2, np.float32))


# ---- modules and training ----

def test_inplace_modules_train_and_match_out_of_place():
    def make(inplace):
        mpamp.manual_seed(0)
        return mpamp.nn.Sequential(mpamp.nn.Linear(8, 16), mpamp.nn.Dropout(0.2, inplace=inplace),
                                   mpamp.nn.ReLU(inplace=inplace),
                                   mpamp.nn.Linear(16, 16), mpamp.nn.ReLU(inplace=inplace),
                                   mpamp.nn.Linear(16, 1))

    r = np.random.default_rng(1)
    xs = r.standard_normal((64, 8)).astype(np.float32)
    ys = (xs[:, :1] * 2 - xs[:, 1:2]).astype(np.float32)
    losses = {}
    for inplace in (False, True):
        model = make(inplace)
        opt = mpamp.optim.SGD(model.parameters(), lr=0.05)
        mpamp.manual_seed(123)
        hist = []
        for _ in range(60):
            opt.zero_grad()
            loss = mpamp.nn.functional.mse_loss(model(mpamp.tensor(xs)), mpamp.tensor(ys))
            loss.backward()
            opt.step()
            hist.append(loss.item())
        losses[inplace] = hist
    assert losses[True][-1] < 0.5 * losses[True][0]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)


def test_relu_inplace_then_dropout_inplace_is_refused_as_in_torch():
    # ReLU saves its result; an in-place dropout then overwrites it: torch refuses too
    model = mpamp.nn.Sequential(mpamp.nn.Linear(8, 16), mpamp.nn.ReLU(inplace=True),
                                mpamp.nn.Dropout(0.2, inplace=True), mpamp.nn.Linear(16, 1))
    with pytest.raises(RuntimeError, match=r"\[mpamp.FloatTensor \[4, 16\]\], which is output "
                                           "0 of Relu, is at version 2; expected version 1"):
        model(mpamp.randn(4, 8)).sum().backward()


def test_residual_add_on_activation():
    def inplace(lib, x, w):
        h = (x @ w).relu()
        out = h @ w
        out += x                            # the ResNet shortcut
        return lib.nn.functional.relu(out, inplace=True)

    def reference(lib, x, w):
        return ((x @ w).relu() @ w + x).relu()
    check(inplace, reference, _arrays((4, 5), (5, 5)))


# ---- lifetime ----

def test_no_leaks_in_a_loop_of_inplace_ops():
    stats = mpamp.backends.cpu.allocator_stats
    w = mpamp.randn(32, 32, requires_grad=True)

    def step():
        x = mpamp.randn(16, 32)
        h = x @ w
        h += x
        h.relu_()
        g = h * 1.0
        g[:, 0] = 0.0
        v = g[1:]
        v.mul_(0.5)
        g.t()[2].copy_(x[0, :16])
        g.retain_grad()
        g.register_hook(lambda grad: grad * 1)
        (g * h).sum().backward()
        assert g.grad is not None
        w.grad = None

    for _ in range(5):
        step()
    gc.collect()
    base = stats()["in_use_bytes"]
    import tracemalloc
    tracemalloc.start()
    snap1 = tracemalloc.take_snapshot()
    for _ in range(100):
        step()
    gc.collect()
    snap2 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in snap2.compare_to(snap1, "filename"))
    assert growth < 20_000, growth
    assert stats()["in_use_bytes"] == base


def test_relu_inplace_keeps_no_extra_copy():
    # the saved result of relu_ is the activation itself, not a second buffer
    stats = mpamp.backends.cpu.allocator_stats
    x = mpamp.randn(256, 256, requires_grad=True)
    h = x * 1
    gc.collect()
    before = stats()["in_use_bytes"]
    h.relu_()
    assert stats()["in_use_bytes"] == before
    h.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), (x.detach().cpu().numpy() > 0).astype(np.float32))


# ---- overwrites: fills, random fills and copy_ end the old history with zeros ----

OVERWRITES = [("fill_", (1.5,), "FillBackward2"), ("zero_", (), "ZeroBackward0"),
              ("uniform_", (), "UniformBackward0"), ("normal_", (), "NormalBackward0"),
              ("exponential_", (), "ExponentialBackward0"),
              ("bernoulli_", (0.5,), "BernoulliBackward2"), ("random_", (0, 5), "RandomBackward0")]


@pytest.mark.parametrize("op,args,node", OVERWRITES, ids=[o[0] for o in OVERWRITES])
def test_an_overwritten_history_gets_zeros_as_torch(op, args, node):
    """y = x * 2; y.<fill>_(); y.sum().backward() leaves x.grad zeros (not None), as torch's
    zeros_like(grad) derivative does; an optimizer then sees a zero gradient, not a skip."""
    x = mpamp.ones(3, requires_grad=True)
    y = x * 2
    getattr(y, op)(*args)
    assert y.requires_grad and y.grad_fn.name() == node
    y.sum().backward()
    assert x.grad is not None and x.grad.tolist() == [0.0, 0.0, 0.0]


def test_copy_from_a_tensor_that_requires_grad():
    x = mpamp.ones(3, requires_grad=True)
    src = mpamp.ones(1, requires_grad=True)
    y = x * 2
    y.copy_(src.half())                  # broadcast and a cast: the source still gets its grad
    assert y.grad_fn.name() == "CopyBackwards"
    (y * mpamp.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0] and src.grad.tolist() == [6.0]
    x2 = mpamp.ones(3, requires_grad=True)
    y2 = x2 * 2
    y2.copy_(mpamp.ones(3))               # a source without history
    y2.sum().backward()
    assert y2.grad_fn is not None and x2.grad.tolist() == [0.0, 0.0, 0.0]


def test_an_in_place_op_that_reads_the_old_value_keeps_its_history():
    x = mpamp.ones(3, requires_grad=True)
    y = x * 2
    y.add_(1.0)
    assert y.grad_fn.name() == "AddBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_overwrites_match_torch():
    torch = pytest.importorskip("torch")
    for op, args, _ in OVERWRITES + [("copy_", None, None)]:
        grads = []
        for lib in (mpamp, torch):
            x = lib.ones(3, requires_grad=True)
            y = x * 2
            if op == "copy_":
                src = lib.ones(3, requires_grad=True)
                y.copy_(src)
            else:
                getattr(y, op)(*args)
            y.sum().backward()
            grads.append((type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name(),
                          x.grad.tolist()))
        assert grads[0] == grads[1], op
