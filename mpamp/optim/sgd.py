"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch's update rule).

One fused C call per param group (_C._fused_sgd_) walks every parameter; extensions beyond
torch: master_weights=True (fp32 master copies for fp16/bf16 params) and
stochastic_rounding=True (bf16 weights rounded stochastically from the default generator).
"""
import mpamp
from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _masters

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, as torch.optim.SGD (always fused)."""

    _step_supports_amp_scaling = True     # the fused kernel unscales and skips on inf

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None, master_weights=False, stochastic_rounding=False):
        if isinstance(lr, mpamp.Tensor):
            lr = lr.item()
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise RuntimeError("mpamp.optim.SGD does not support differentiable=True")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.master_weights = master_weights
        self.stochastic_rounding = stochastic_rounding
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        grad_scale, found_inf, skip = self._amp_args()
        if skip:
            return loss
        with no_grad():
            for group in self.param_groups:
                self._group_step(group, grad_scale, found_inf)
        return loss

    def _group_step(self, group, grad_scale, found_inf):
        momentum = group["momentum"]
        fresh, old = ([], [], [], []), ([], [], [], [])   # params, grads, masters, bufs
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            buf = state.get("momentum_buffer") if momentum != 0 else None
            lists = fresh if (momentum != 0 and buf is None) else old
            if momentum != 0 and buf is None:
                buf = mpamp.zeros(tuple(p.shape), dtype=mpamp.float32, device=p.device)
                state["momentum_buffer"] = buf
            lists[0].append(p)
            lists[1].append(p.grad)
            lists[2].append(self._master(p, state))
            lists[3].append(buf)
        for first, (ps, gs, ms, bufs) in ((True, fresh), (False, old)):
            if not ps:
                continue
            masters = _masters(ps, ms)
            self._fused(_C._fused_sgd_, ps, gs, masters, grad_scale, found_inf,
                        bufs if momentum != 0 else None, first, float(group["lr"]),
                        float(momentum), float(group["dampening"]),
                        float(group["weight_decay"]), bool(group["nesterov"]),
                        bool(group["maximize"]))
