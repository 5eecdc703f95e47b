"""Gradient clipping, as torch.nn.utils: clip_grad_norm_ (with get_total_norm and
clip_grads_with_norm_) and clip_grad_value_. The 2-norm of contiguous gradients on one device
is one kernel (_C._foreach_sum_squares: every square summed in double, rounded once); other
norms are reductions (mpamp.sum, mpamp.max) accumulated in float32 whatever the gradients'
dtype. The result has the gradients' dtype (float32 when they are mixed), as torch's stacked
norm."""
import math

import mpamp as _mp

from ...autograd import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _tensor_list(tensors):
    return [tensors] if isinstance(tensors, _mp.Tensor) else list(tensors)


def _result_dtype(tensors):
    dtypes = {t.dtype for t in tensors}
    return dtypes.pop() if len(dtypes) == 1 else _mp.float32


def _power(a, p):
    """a ** p, with the common p = 1 and p = 2 as cheaper ops."""
    if p == 1.0:
        return a
    return a * a if p == 2.0 else a ** p


def _one_kernel(tensors):
    """Whether _C._foreach_sum_squares takes the tensors: contiguous, on one device."""
    device = tensors[0].device
    return all(t.is_contiguous() and t.device == device for t in tensors)


def _max_abs(tensors):
    """The inf-norm as a float: NaN when any element is NaN, as torch's max."""
    values = [_mp.max(t.float().abs()).item() for t in tensors if t.numel()]
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values, default=0.0)


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of all tensors together, as if concatenated into one vector."""
    tensors = _tensor_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _mp.tensor(0.0)
    if norm_type == math.inf:
        total = _mp.tensor(_max_abs(tensors))
    elif norm_type == 2.0 and _one_kernel(tensors):
        total = _mp._C._foreach_sum_squares(tensors) ** 0.5      # one read of each tensor
    elif norm_type > 0:
        power_sum = None
        for t in tensors:
            s = _mp.sum(_power(t.float().abs(), norm_type))
            power_sum = s if power_sum is None else power_sum + s
        total = power_sum if norm_type == 1.0 else power_sum ** (1.0 / norm_type)
    else:
        raise NotImplementedError(f"norm_type={norm_type}: mpamp supports p-norms with p > 0 "
                                  "and inf")
    total = total.to(_result_dtype(tensors))
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(max_norm / (total_norm + 1e-6), 1) in place."""
    grads = [p.grad for p in _tensor_list(parameters) if p.grad is not None]
    if not grads:
        return
    clip_coef = (float(max_norm) / (total_norm + 1e-6)).item()
    if not clip_coef >= 1.0:                    # NaN scales too, as torch's clamp passes it
        if _one_kernel(grads):                  # one multi-tensor multiply (fp32 math, as mul_)
            device = grads[0].device
            _mp._C._amp_foreach_non_finite_check_and_unscale_(
                grads, _mp.zeros((), device=device), _mp.tensor(clip_coef, device=device))
            return
        for g in grads:
            g.mul_(clip_coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale gradients so their total norm is at most max_norm; returns the total norm."""
    parameters = _tensor_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for p in _tensor_list(parameters):
        if p.grad is not None:
            p.grad.copy_(_mp.clamp(p.grad, -clip_value, clip_value))
