"""Error sites of the C core reached through the public API: each raises the Python exception
its status maps to, with the core's message (tools/audit_error_paths.py found them unreached
by the rest of the suite). Sites behind Python-side validation are in
test_error_paths_entry.py; unreachable ones in tools/error_sites_allowlist.txt."""
import pytest

import mpamp
import mpamp.nn.functional as F
from mpamp import nn, optim

SECOND = "backward through the graph a second time"


def _x():
    return mpamp.randn(3, 4, requires_grad=True)


_COND = [[True, False, True, False]] * 3
# Every backward that reads saved tensors stops with the engine's message when the graph has
# been freed, and returns the status (not a stale message) from its own early exit.
SECOND_BACKWARD = {
    "div": lambda x: (x / 2).sum(),
    "clamp": lambda x: x.clamp(0, 1).sum(),
    "where": lambda x: mpamp.where(mpamp.tensor(_COND), x, x * 2).sum(),
    "pow": lambda x: (x ** 2).sum(),
    "mse_loss": lambda x: F.mse_loss(x, mpamp.zeros(3, 4)),
    "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, mpamp.zeros(3, 4)),
    "nll_loss": lambda x: F.nll_loss(x, mpamp.tensor([0, 1, 2])),
    "cross_entropy_probs": lambda x: F.cross_entropy(x, mpamp.full((3, 4), 0.25)),
    "layer_norm": lambda x: F.layer_norm(x, (4,)).sum(),
    "max_dim": lambda x: x.max(1)[0].sum(),
    "max_all": lambda x: x.max(),
    "softmax": lambda x: mpamp.softmax(x, -1).sum(),
    "embedding": lambda x: F.embedding(mpamp.tensor([1, 2]), x).sum(),
}


@pytest.mark.parametrize("op", sorted(SECOND_BACKWARD))
def test_second_backward_through_each_op(op):
    y = SECOND_BACKWARD[op](_x())
    y.backward()
    with pytest.raises(RuntimeError, match=SECOND):
        y.backward()


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: mpamp.clamp(mpamp.tensor([True]), 0, 1), TypeError,
     r"\"clamp\" is not implemented for 'Bool'"),
    (lambda: F.binary_cross_entropy_with_logits(mpamp.zeros(2, 4), mpamp.zeros(2, 4),
                                                weight=mpamp.ones(4).long()),
     TypeError, "weight must be a floating point tensor, got Long"),
    (lambda: F.nll_loss(mpamp.randn(4), mpamp.zeros(2, 1).long()), RuntimeError,
     "multi-target not supported"),
    (lambda: F.nll_loss(mpamp.randn(3, 4), mpamp.tensor([0, 1, 2]),
                        weight=mpamp.ones(4).long()),
     TypeError, "nll_loss: weight must be a floating point tensor, got Long"),
    (lambda: F.cross_entropy(mpamp.ones(3, 4).long(), mpamp.full((3, 4), 0.25)),
     RuntimeError, "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda: F.linear(mpamp.tensor(1.0), mpamp.ones(2, 1)), RuntimeError,
     "they are 0D and 2D"),
    (lambda: F.linear(mpamp.ones(2), mpamp.ones(2, 2, 2)), RuntimeError, "they are 1D and 3D"),
    (lambda: F.layer_norm(mpamp.ones(2, 4), (4,), weight=mpamp.ones(4).long()), TypeError,
     "layer_norm: weight must be a floating point tensor, got Long"),
    (lambda: nn.init.uniform_(mpamp.zeros(3).long()), TypeError,
     "uniform_ needs a floating point tensor"),
    (lambda: nn.init.normal_(mpamp.zeros(3).long()), TypeError,
     "normal_ needs a floating point tensor"),
], ids=["clamp-bool", "bce-int-weight", "nll-multi-target", "nll-int-weight",
        "cross-entropy-int", "linear-0d", "linear-3d-weight", "layer-norm-int-weight",
        "uniform-int", "normal-int"])
def test_op_argument_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_rank_limits():
    t16 = mpamp.zeros(*[1] * 16)
    with pytest.raises(ValueError, match="stack: tensors may have at most 16 dimensions"):
        mpamp.stack([t16, t16])
    with pytest.raises(ValueError, match="embedding: indices may have at most 15 dim"):
        F.embedding(t16.long(), mpamp.ones(2, 3))
    with pytest.raises(ValueError, match="^tensors may have at most 16 dimensions$"):
        t16.unsqueeze(0)


def test_sizes_that_overflow_int64_are_refused():
    # Empty tensors and expanded views used to compute strides and numel with signed overflow
    # (undefined behaviour; strides came out negative).
    big = 2**62
    with pytest.raises(RuntimeError, match=r"numel: integer multiplication overflow "
                                           r"\(sizes=\[0, 4611686018427387904, 46"):
        mpamp.empty(0, big, big)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        mpamp.empty(big, big, 0)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        mpamp.ones(1).expand(big, big)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        mpamp.zeros(0).view(0, big, 4)
    with pytest.raises(RuntimeError, match="is invalid for input of size 4"):
        mpamp.zeros(4).view(big, big, -1)
    with pytest.raises(RuntimeError, match="cat: the result's size in dimension 1 overflows"):
        mpamp.cat([mpamp.empty(0, big), mpamp.empty(0, big)], dim=1)
    ok = mpamp.empty(0, big, 1)
    assert tuple(ok.shape) == (0, big, 1) and ok.stride() == (big, 1, 1)
    assert tuple(mpamp.ones(1).expand(big).shape) == (big,)


def test_allocation_too_large_for_the_allocator():
    with pytest.raises(MemoryError, match="cannot allocate 2305843009213693952 bytes: the "
                                          "size is too large"):
        mpamp.empty(2**61, dtype=mpamp.bool)


def _adam_after_one_step():
    p = nn.Parameter(mpamp.zeros(2, 3))
    opt = optim.Adam([p])
    p.grad = mpamp.ones(2, 3)
    opt.step()
    return p, opt


@pytest.mark.parametrize("attr,value,msg", [
    ("grad_scale", lambda: mpamp.ones(2), "grad_scale must be a 1-element tensor"),
    ("grad_scale", lambda: mpamp.ones(()).bfloat16(), "grad_scale must be a float tensor"),
])
def test_fused_step_checks_amp_tensors(attr, value, msg):
    p, opt = _adam_after_one_step()
    setattr(opt, attr, value())     # what GradScaler.step sets for fused optimizers
    with pytest.raises(RuntimeError, match=msg):
        opt.step()


def test_fused_step_checks_state_tensors():
    p, opt = _adam_after_one_step()
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = mpamp.zeros(5)
    opt.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="state 0 has 5 elements, the parameter has 6"):
        opt.step()
    p, opt = _adam_after_one_step()
    opt.state[p]["exp_avg"] = mpamp.zeros(2, 3).bfloat16()
    with pytest.raises(TypeError, match="state 0 has an unsupported dtype"):
        opt.step()


def test_fused_step_refuses_integer_parameters():
    q = nn.Parameter(mpamp.zeros(3).long(), requires_grad=False)
    q.grad = mpamp.ones(3).long()
    with pytest.raises(TypeError, match="param 0 has an unsupported dtype"):
        optim.SGD([q], lr=0.1).step()


def test_custom_function_returning_a_non_tensor_gradient():
    class Bad(mpamp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 5
    x = mpamp.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="returned a gradient of type int at index 0; "
                                        "expected a Tensor or None"):
        Bad.apply(x).sum().backward()
