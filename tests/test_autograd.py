"""The autograd engine: accumulation, retain_graph, errors as torch's, grad mode, autograd.grad,
user Functions, views and casts as graph nodes, deep graphs, and leaks."""
import gc
import threading

import numpy as np
import pytest

import mpamp
from conftest import to_numpy


def test_leaf_flags_grad_fn_names_and_detach():
    x = mpamp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2 + 1
    assert x.is_leaf and not y.is_leaf and y.requires_grad
    assert x.grad_fn is None and y.grad_fn.name() == "AddBackward0"
    assert repr(y.grad_fn).startswith("<AddBackward0 object at")
    (mul_node, _), (none_node, _) = y.grad_fn.next_functions
    assert mul_node.name() == "MulBackward0" and none_node is None
    acc = mul_node.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is not None
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    assert mpamp.ones(2).is_leaf and not (mpamp.ones(2) * 2).requires_grad
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad = False


def test_accumulation_across_backward_calls_and_zeroing():
    x = mpamp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).backward(mpamp.ones(3))
    g1 = x.grad
    (x * 3).backward(mpamp.ones(3))
    assert x.grad is g1                      # accumulated in place, same object
    assert x.grad.tolist() == [5.0, 7.0, 9.0]
    x.grad = None
    (x * 1).backward(mpamp.ones(3))
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_shared_subexpressions_sum_their_gradients():
    x = mpamp.tensor([2.0], requires_grad=True)
    a = x * x
    y = a * a + a                            # y = x^4 + x^2 -> 4x^3 + 2x
    y.backward()
    assert x.grad.item() == 4 * 8 + 4


def test_backward_errors_as_torch():
    x = mpamp.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        mpamp.ones(2).backward(mpamp.ones(2))
    y = (x * x).exp()
    y.backward(mpamp.ones(2))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        y.backward(mpamp.ones(2))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * x).backward(mpamp.ones(3))
    with pytest.raises(NotImplementedError, match="create_graph"):
        (x * x).backward(mpamp.ones(2), create_graph=True)


def test_retain_graph_allows_a_second_backward():
    x = mpamp.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).exp()
    y.backward(mpamp.ones(2), retain_graph=True)
    first = x.grad.tolist()
    y.backward(mpamp.ones(2))
    assert x.grad.tolist() == [2 * v for v in first]


def test_scalar_root_and_leaf_root():
    x = mpamp.tensor(3.0, requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0
    (x * x).backward()
    assert x.grad.item() == 7.0


def test_no_grad_enable_grad_set_grad_enabled():
    x = mpamp.ones(2, requires_grad=True)
    with mpamp.no_grad():
        assert not mpamp.is_grad_enabled()
        y = x * 2
        with mpamp.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad
    assert mpamp.is_grad_enabled()

    @mpamp.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad and mpamp.is_grad_enabled()

    @mpamp.no_grad()
    def gen(t):
        yield t * 3

    assert not next(gen(x)).requires_grad
    mpamp.set_grad_enabled(False)
    assert not mpamp.is_grad_enabled()
    mpamp.set_grad_enabled(True)
    with mpamp.set_grad_enabled(False):
        assert not (x * 1).requires_grad
    assert mpamp.is_grad_enabled()

    @mpamp.set_grad_enabled(False)
    def h(t):
        return t * 1

    assert mpamp.is_grad_enabled() and not h(x).requires_grad
    with mpamp.inference_mode():
        assert not (x * 1).requires_grad
    with pytest.raises(TypeError):
        mpamp.set_grad_enabled("yes")


def test_grad_mode_is_per_thread():
    seen = {}
    x = mpamp.ones(2, requires_grad=True)

    def worker():
        seen["enabled"] = mpamp.is_grad_enabled()
        seen["requires"] = (x * 2).requires_grad

    with mpamp.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
    assert seen == {"enabled": True, "requires": True}


def test_autograd_grad():
    x = mpamp.tensor([1.0, 2.0], requires_grad=True)
    w = mpamp.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    gx, gw = mpamp.autograd.grad(y, (x, w), grad_outputs=mpamp.ones(2), retain_graph=True)
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None          # grad() does not accumulate
    mid = x * 2
    out = (mid * mid)
    (gmid,) = mpamp.autograd.grad(out, mid, mpamp.ones(2))
    assert gmid.tolist() == [4.0, 8.0]
    z = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        mpamp.autograd.grad(y, [z], mpamp.ones(2), retain_graph=True)
    assert mpamp.autograd.grad(y, [z], mpamp.ones(2), allow_unused=True,
                               retain_graph=True) == (None,)
    (gz,) = mpamp.autograd.grad(y, [z], mpamp.ones(2), materialize_grads=True)
    assert gz.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        mpamp.autograd.grad(x * 1, [mpamp.ones(2)], mpamp.ones(2))


def test_backward_inputs_argument():
    x = mpamp.tensor([1.0], requires_grad=True)
    w = mpamp.tensor([2.0], requires_grad=True)
    (x * w).backward(inputs=[x])
    assert x.grad.tolist() == [2.0] and w.grad is None


class Cube(mpamp.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.k, None


def test_user_function():
    x = mpamp.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward" and y.tolist() == [2.0, 16.0]
    (y * 1).backward(mpamp.ones(2))
    assert x.grad.tolist() == [6.0, 24.0]
    assert not Cube.apply(mpamp.ones(2), 1.0).requires_grad


def test_user_function_errors_propagate():
    class WrongShape(mpamp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return mpamp.ones(5)

    class Raises(mpamp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom from backward")

    class TooMany(mpamp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got "
                                           r"\[5\] but expected shape compatible with \[2\]"):
        WrongShape.apply(x).backward(mpamp.ones(2))
    with pytest.raises(ValueError, match="boom from backward"):
        Raises.apply(x).backward(mpamp.ones(2))
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooMany.apply(x).backward(mpamp.ones(2))
    with pytest.raises(NotImplementedError):
        mpamp.autograd.Function.apply(x)


def test_views_are_differentiable():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = mpamp.tensor(base, requires_grad=True)
    views = [x.view(6, 4), x.reshape(4, 6), x.permute(2, 0, 1), x.transpose(0, 1),
             x[0].t(), x[1, :, 1:3], x[..., None], x.unsqueeze(1).squeeze(1), x.flatten(),
             x[:, 0].expand(5, 2, 4), x[:, ::2, -1]]
    for i, v in enumerate(views):        # view i contributes (i + 1) * its elements
        (v * float(i + 1)).backward(mpamp.ones(tuple(v.shape)))
    expected = np.zeros_like(base)
    expected += 1 + 2 + 3 + 4 + 7 + 8 + 9               # views covering all of x
    expected[0] += 5
    expected[1, :, 1:3] += 6
    expected[:, 0] += 10 * 5                            # expanded 5 times
    expected[:, ::2, -1] += 11
    np.testing.assert_array_equal(to_numpy(x.grad), expected)


def test_casts_are_graph_nodes_and_grads_keep_leaf_dtype():
    w = mpamp.tensor([1.0, 2.0], requires_grad=True)      # fp32 master
    h = w.half()
    assert h.grad_fn.name() == "ToCopyBackward0"
    y = h * mpamp.tensor([3.0, 4.0], dtype="fp16")
    y.backward(mpamp.ones(2, dtype="fp16"))
    assert w.grad.dtype is mpamp.float32 and w.grad.tolist() == [3.0, 4.0]
    b = mpamp.tensor([1.0], dtype="bf16", requires_grad=True)
    (b.float() * 2).backward(mpamp.ones(1))
    assert b.grad.dtype is mpamp.bfloat16 and b.grad.tolist() == [2.0]
    c = w.clone()
    assert c.grad_fn.name() == "CloneBackward0"
    assert not w.long().requires_grad


def test_deep_graph_does_not_recurse():
    x = mpamp.ones(1, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1
    y.backward()
    assert x.grad.item() == 1.0
    del y
    z = x
    for _ in range(100_000):
        z = z * 1
    del z                                     # freeing a long chain must not overflow


def test_training_loop_does_not_leak():
    import tracemalloc
    stats = mpamp.backends.cpu.allocator_stats
    w = mpamp.randn(16, 8, requires_grad=True)
    x = mpamp.randn(4, 16)

    def step():
        h = (x.unsqueeze(2) * w).relu()           # (4, 16, 8)
        y = (h * h).sigmoid() - h.tanh() / 2
        y.backward(mpamp.ones(4, 16, 8))
        with mpamp.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None

    for _ in range(50):
        step()
    gc.collect()
    base = stats()["in_use_bytes"]
    tracemalloc.start()
    s1 = tracemalloc.take_snapshot()
    for _ in range(300):
        step()
    gc.collect()
    s2 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert sum(d.size_diff for d in s2.compare_to(s1, "filename")) < 20_000
    assert stats()["in_use_bytes"] == base


def test_first_gradient_becomes_grad_without_a_copy():
    """As torch's AccumulateGrad: a gradient only the engine holds is stored as .grad itself
    (one allocation in this backward: the product grad * c), values unchanged."""
    stats = mpamp.backends.cpu.allocator_stats     # the CPU allocator's: CPU tensors
    w = mpamp.randn(1000, requires_grad=True, device="cpu")
    c, g = mpamp.randn(1000, device="cpu"), mpamp.ones(1000, device="cpu")
    z = w * c
    before = stats()["allocs"]
    z.backward(g)
    assert stats()["allocs"] - before == 1
    np.testing.assert_array_equal(to_numpy(w.grad), to_numpy(c))


def test_a_gradient_someone_else_holds_is_copied_into_grad():
    """A gradient the caller holds (or a view, or one of another dtype) is never aliased:
    changing it afterwards must not change .grad."""
    w = mpamp.zeros(4, requires_grad=True)
    g = mpamp.tensor([1.0, 2.0, 3.0, 4.0])
    w.backward(g)
    assert w.grad.data_ptr() != g.data_ptr()
    g.add_(10.0)
    np.testing.assert_array_equal(to_numpy(w.grad), [1.0, 2.0, 3.0, 4.0])
    v = mpamp.zeros(2, requires_grad=True)
    base = mpamp.tensor([5.0, 6.0, 7.0, 8.0])
    v.backward(base[::2])                       # a strided view: copied, contiguous
    assert v.grad.is_contiguous()
    np.testing.assert_array_equal(to_numpy(v.grad), [5.0, 7.0])
    h = mpamp.zeros(3, dtype=mpamp.float16, requires_grad=True)
    (h.float() * 2).sum().backward()            # fp32 gradient cast to the leaf's fp16
    assert h.grad.dtype == mpamp.float16
    np.testing.assert_array_equal(to_numpy(h.grad), [2.0, 2.0, 2.0])
