"""mpamp.nn.utils: clip_grad_norm_ / get_total_norm / clip_grad_value_ against NumPy, and hook
handles. Norms need mpamp.sum / mpamp.max (reduce branch), clamping mpamp.clamp (matmul
branch); those tests skip until the ops exist."""
import math

import numpy as np
import pytest

import mpamp
from mpamp import nn
from mpamp.nn.utils import clip_grad_norm_, clip_grad_value_, get_total_norm
from conftest import TOL, to_numpy


def needs(*ops):
    missing = [op for op in ops if not hasattr(mpamp, op)]
    return pytest.mark.skipif(bool(missing), reason=f"mpamp.{', '.join(missing)} not built "
                                                    "yet (another branch)")


def params_with_grads(rng, dtype=mpamp.float32, shapes=((3, 4), (5,), (2, 2, 2))):
    params = []
    for shape in shapes:
        p = nn.Parameter(mpamp.zeros(shape, dtype=dtype))
        p.grad = mpamp.tensor(rng.standard_normal(shape).astype(np.float32)).to(dtype)
        params.append(p)
    return params


def np_total_norm(grads, p):
    flat = np.concatenate([g.ravel() for g in grads]).astype(np.float64)
    if p == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** p).sum() ** (1 / p)


def grads_of(params):
    return [to_numpy(q.grad).astype(np.float32) for q in params]


@needs("sum", "max")
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_against_numpy(norm_type, max_norm, rng):
    p = float(norm_type)
    params = params_with_grads(rng)
    params.append(nn.Parameter(mpamp.ones(2)))       # no grad: ignored
    before = grads_of(params[:-1])
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    expected = np_total_norm(before, p)
    assert isinstance(total, mpamp.Tensor) and total.ndim == 0
    assert total.dtype == mpamp.float32
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5)
    coef = min(max_norm / (expected + 1e-6), 1.0)
    for got, want in zip(grads_of(params[:-1]), before):
        np.testing.assert_allclose(got, want * coef, rtol=1e-5, atol=1e-7)
    if max_norm < expected:
        np.testing.assert_allclose(np_total_norm(grads_of(params[:-1]), p), max_norm,
                                   rtol=1e-4)


@needs("sum")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_clip_grad_norm_low_precision(dtype, rng):
    params = params_with_grads(rng, getattr(mpamp, dtype))
    before = grads_of(params)
    total = clip_grad_norm_(params, 1.0)
    assert total.dtype == getattr(mpamp, dtype)       # as torch: the gradients' dtype
    rtol = TOL[dtype][0]
    np.testing.assert_allclose(float(total), np_total_norm(before, 2), rtol=rtol)
    coef = 1.0 / (np_total_norm(before, 2) + 1e-6)
    for got, want in zip(grads_of(params), before):
        np.testing.assert_allclose(got, want * coef, rtol=2 * rtol, atol=1e-3)


@needs("sum")
def test_total_norm_mixed_dtypes_and_single_tensor(rng):
    params = params_with_grads(rng) + params_with_grads(rng, mpamp.float16, ((4,),))
    total = get_total_norm([q.grad for q in params])
    assert total.dtype == mpamp.float32
    np.testing.assert_allclose(total.item(), np_total_norm(grads_of(params), 2), rtol=1e-3)
    single = params[0]
    g = to_numpy(single.grad).copy()
    np.testing.assert_allclose(clip_grad_norm_(single, 1e9).item(), np.linalg.norm(g),
                               rtol=1e-5)


def test_sum_of_squares_kernel(rng):
    """clip_grad_norm_'s 2-norm: one kernel over every tensor, squares summed in double in an
    order set by the sizes alone - float64's value rounded once, the same bits on 1 and 2
    threads - for fp32/fp16/bf16, empty and multi-segment tensors; non-contiguous gradients
    take the per-tensor reductions instead; errors name the problem."""
    shapes = [(1000,), (3, 5), (0,), (40000,), (7, 1), (70000,)]
    dts = [mpamp.float32, mpamp.float16, mpamp.float32, mpamp.bfloat16, mpamp.float32,
           mpamp.float32]
    ts = [mpamp.tensor((rng.standard_normal(s) * 3).astype(np.float32)).to(d)
          for s, d in zip(shapes, dts)]
    ref = sum((to_numpy(t.float()).astype(np.float64) ** 2).sum() for t in ts)
    got, before = [], mpamp.get_num_threads()
    try:
        for threads in (1, 2):
            mpamp.set_num_threads(threads)
            got.append(mpamp._C._foreach_sum_squares(ts))
    finally:
        mpamp.set_num_threads(before)
    assert got[0].dtype == mpamp.float32 and got[0].shape == ()
    assert to_numpy(got[0]) == to_numpy(got[1])
    np.testing.assert_allclose(to_numpy(got[0]), ref, rtol=2 ** -24)
    grads = [mpamp.tensor(rng.standard_normal((4, 3)).astype(np.float32)).t(),
             mpamp.tensor(rng.standard_normal(5).astype(np.float32))]   # one not contiguous
    want = np_total_norm([to_numpy(g) for g in grads], 2.0)
    np.testing.assert_allclose(to_numpy(get_total_norm(grads)), want, rtol=1e-6)
    with pytest.raises(ValueError, match="at least one tensor"):
        mpamp._C._foreach_sum_squares([])
    with pytest.raises(TypeError, match="contiguous float tensors"):
        mpamp._C._foreach_sum_squares([mpamp.ones(3), mpamp.tensor([1, 2])])
    with pytest.raises(TypeError, match="contiguous float tensors"):
        mpamp._C._foreach_sum_squares([mpamp.ones(3, 4).t()])
    with pytest.raises(TypeError, match="must contain only tensors"):
        mpamp._C._foreach_sum_squares([mpamp.ones(3), 2.0])


@pytest.mark.parametrize("dtype", [mpamp.float32, mpamp.float16, mpamp.bfloat16])
def test_clip_scales_like_mul(rng, dtype):
    """Contiguous gradients are scaled in one multi-tensor kernel: the bits of g.mul_(coef)."""
    params = params_with_grads(rng, dtype, shapes=((30, 40), (7,), (300,)))
    before = [q.grad.clone() for q in params]
    total = clip_grad_norm_(params, 0.5)
    coef = (0.5 / (total + 1e-6)).item()
    for q, g in zip(params, before):
        np.testing.assert_array_equal(to_numpy(q.grad.float()), to_numpy(g.mul_(coef).float()))


def test_clip_grad_norm_without_grads():
    params = [nn.Parameter(mpamp.ones(3))]
    total = clip_grad_norm_(params, 1.0)
    assert total.item() == 0.0 and params[0].grad is None
    assert clip_grad_norm_([], 1.0).item() == 0.0


@needs("sum", "max")
@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_nonfinite_norm(norm_type):
    p = nn.Parameter(mpamp.zeros(3))
    p.grad = mpamp.tensor([1.0, math.nan, 2.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        clip_grad_norm_([p], 1.0, norm_type=norm_type, error_if_nonfinite=True)
    total = clip_grad_norm_([p], 1.0, norm_type=norm_type)
    assert math.isnan(total.item())
    assert np.all(np.isnan(to_numpy(p.grad)))           # scaled by NaN, as torch


@needs("sum")
def test_clip_grad_norm_bad_norm_type(rng):
    with pytest.raises(NotImplementedError, match="norm_type"):
        clip_grad_norm_(params_with_grads(rng), 1.0, norm_type=0)


@needs("clamp")
def test_clip_grad_value(rng):
    params = params_with_grads(rng)
    before = grads_of(params)
    clip_grad_value_(params, 0.5)
    for got, want in zip(grads_of(params), before):
        np.testing.assert_array_equal(got, np.clip(want, -0.5, 0.5))


def test_removable_handle():
    from mpamp.nn.utils.hooks import RemovableHandle
    hooks = {}
    h = RemovableHandle(hooks)
    hooks[h.id] = print
    with h:
        assert h.id in hooks
    assert h.id not in hooks
    h.remove()                                          # twice is harmless
    assert RemovableHandle(hooks).id != h.id
