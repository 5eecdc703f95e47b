"""The version counter of in-place ops under autograd (csrc/core/autograd/inplace.c, autograd.c):
torch's _version rules, its "modified by an inplace operation" error (exact text, mpamp's
type names), and torch's refusals: leaves that require grad and views of them while grad mode
is on, views made under no_grad, destinations whose elements overlap."""
import numpy as np
import pytest

import mpamp

try:
    import torch
except ImportError:                      # the suite passes without torch
    torch = None


# ---- versions ----

def test_version_counter_follows_torch():
    x = mpamp.randn(3, requires_grad=True)
    y = x * 2
    assert y._version == 0 and x._version == 0
    y[0] = 5
    assert y._version == 1
    v = y[1:]
    v.mul_(2)
    assert y._version == v._version == 2
    assert v._is_view() and not y._is_view() and v._base is not None
    d = y.detach()
    d.add_(1)
    assert y._version == 3                 # detach() shares the counter
    y.data.add_(1)                         # .data does not (torch's rule)
    assert y._version == 3
    with mpamp.no_grad():
        x.add_(1)
    assert x._version == 1 and x.is_leaf


def test_version_error_message_exact():
    x = mpamp.randn(3, 4, requires_grad=True)
    a = x * 1
    a.relu_()
    a += 1
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation: [mpamp.FloatTensor [3, 4]], which is output 0 of Relu, is at "
           "version 2; expected version 1 instead. Hint: the operation that modified it ran "
           "after the tensor was saved for backward; use its out-of-place form, or modify a "
           "clone() instead.")
    with pytest.raises(RuntimeError) as err:
        a.sum().backward()
    assert str(err.value) == msg
    if torch is not None:
        tx = torch.randn(3, 4, requires_grad=True)
        ta = tx * 1
        ta.relu_()
        ta += 1
        with pytest.raises(RuntimeError) as terr:
            ta.sum().backward()
        torch_head = str(terr.value).split(" Hint:")[0]
        assert torch_head.replace("torch.", "mpamp.") == msg.split(" Hint:")[0]


@pytest.mark.parametrize("dtype,name", [("float16", "HalfTensor"),
                                        ("bfloat16", "BFloat16Tensor")])
def test_version_error_names_dtype_and_producer(dtype, name):
    x = mpamp.randn(2, 3, dtype=dtype, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=rf"\[mpamp.{name} \[2, 3\]\], which is output 0 of "
                                           r"Exp, is at version 1; expected version 0"):
        y.sum().backward()


def test_version_error_for_saved_input_and_leaf():
    w = mpamp.randn(3, requires_grad=True)
    a = mpamp.randn(3)
    y = w * a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"\[mpamp.FloatTensor \[3\]\] is at version 1; "
                                           "expected version 0 instead"):
        y.sum().backward()
    for write in (lambda a: a.zero_(), lambda a: a.fill_(2), lambda a: a.__setitem__(0, 1.0)):
        a = mpamp.randn(3)
        y = w * a
        write(a)                            # the allocation-free fill bumps the version too
        assert a._version == 1
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
            y.sum().backward()
    x = mpamp.randn(3, requires_grad=True)
    t = x.sigmoid()
    t[0] = 0.0                             # through a view
    with pytest.raises(RuntimeError, match="output 0 of Sigmoid, is at version 1"):
        t.sum().backward()


def test_mul_by_scalar_saves_nothing_to_refuse():
    # torch saves no self for x * 2.0, so writing x afterwards is fine; mpamp likewise
    x = mpamp.randn(3, requires_grad=True)
    h = x * 1
    y = h * 2.0
    h.add_(1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2, np.float32))


# ---- refusals ----

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place " \
               "operation."
NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled. Given that this use case is ambiguous and error-prone, it is "
                "forbidden. You can clarify your code by moving both the view and the inplace "
                "either both inside the no_grad block (if you don't want the inplace to be "
                "tracked) or both outside (if you want the inplace to be tracked).")
OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.")


@pytest.mark.parametrize("op", [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.relu_(),
                                lambda t: t.copy_(mpamp.ones(3)), lambda t: t.zero_(),
                                lambda t: t.fill_(1), lambda t: t.__setitem__(0, 1.0),
                                lambda t: t.clamp_(0, 1), lambda t: t.__iadd__(1)])
def test_leaf_refusals_and_no_grad(op):
    w = mpamp.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError) as err:
        op(w)
    setitem = "__setitem__" in op.__code__.co_names      # t[0] = v writes through a view
    assert str(err.value) == (VIEW_OF_LEAF if setitem else LEAF)
    w0 = w.detach().numpy().copy()
    with pytest.raises(RuntimeError) as err:
        op(w[0:3])
    assert str(err.value) == VIEW_OF_LEAF
    np.testing.assert_array_equal(w.detach().numpy(), w0)     # refused before any write
    with mpamp.no_grad():
        op(w)                               # optimizers update leaves like this
        op(w[0:3])
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_leaf_refusal_matches_torch():
    if torch is None:
        pytest.skip("torch not installed")
    tw = torch.randn(3, requires_grad=True)
    for f, msg in ((lambda t: t.add_(1), LEAF), (lambda t: t[0].add_(1), VIEW_OF_LEAF)):
        with pytest.raises(RuntimeError) as terr:
            f(tw)
        assert str(terr.value) == msg


def test_no_grad_view_and_overlap_refusals():
    x = mpamp.randn(3, requires_grad=True)
    y = x * 1
    with mpamp.no_grad():
        v = y[0:2]
    with pytest.raises(RuntimeError) as err:
        v.mul_(2)
    assert str(err.value) == NO_GRAD_VIEW
    buf = mpamp.zeros(3)
    with mpamp.no_grad():
        bv = buf[0:2]
    with pytest.raises(RuntimeError) as err:
        bv.copy_(y[:2])
    assert str(err.value) == NO_GRAD_VIEW
    bv.mul_(2)                              # nothing to track: allowed, as torch
    with mpamp.no_grad():
        v.mul_(2)                           # both inside no_grad: allowed
    for e in (y.expand(2, 3), mpamp.zeros(3).expand(2, 3)):
        with pytest.raises(RuntimeError) as err:
            e.add_(1)
        assert str(err.value) == OVERLAP
        with pytest.raises(RuntimeError) as err:
            e.fill_(1)
        assert str(err.value) == OVERLAP


def test_copy_from_overlapping_source():
    a = mpamp.arange(9.0).reshape(3, 3)
    a.copy_(a.t())
    np.testing.assert_array_equal(a.numpy(), np.arange(9.0, dtype=np.float32).reshape(3, 3).T)
    b = mpamp.arange(6.0)
    b[1:].copy_(b[:-1])
    np.testing.assert_array_equal(b.numpy(), np.array([0, 0, 1, 2, 3, 4], np.float32))
    x = mpamp.arange(4.0).requires_grad_()
    y = x * 1
    y[1:].copy_(y[:-1] * 2)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.array([3, 2, 2, 0], np.float32))


def test_whole_overwrite_still_runs_the_old_history_with_zeros():
    # as torch: the overwritten history gets zero gradients (ZeroBackward0), so it still runs,
    # and here it refuses the sigmoid output that add_ modified after sigmoid saved it
    x = mpamp.randn(3, requires_grad=True)
    y = x.sigmoid()
    y.add_(1)
    y.zero_()
    assert y.grad_fn.name() == "ZeroBackward0" and y.requires_grad
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient "
                       r"computation has been modified by an inplace operation: "
                       r"\[mpamp.FloatTensor \[3\]\], which is output 0 of Sigmoid, is at "
                       r"version 2; expected version 0 instead"):
        (y + x).sum().backward()
    # without the stale save the old history simply receives zeros
    x = mpamp.randn(3, requires_grad=True)
    y = x * 3
    y.add_(1)
    y.zero_()
    (y + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3, np.float32))
