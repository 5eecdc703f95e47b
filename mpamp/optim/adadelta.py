"""Adadelta (torch's update rule: square_avg and acc_delta running averages with rho).

One fused C call (_C._fused_adadelta_) per param group. State has torch's keys (step,
square_avg, acc_delta), always float32. Extensions beyond torch: master_weights=True and
stochastic_rounding=True (see mpamp.optim.SGD). Under GradScaler the kernel unscales and
skips on inf/NaN itself.
"""
import mpamp
from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _masters
from .rmsprop import _scalar_lr

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, as torch.optim.Adadelta (always fused)."""

    _step_supports_amp_scaling = True
    _skip_read_on_host = True      # step counts live on the host

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False, master_weights=False,
                 stochastic_rounding=False):
        lr = _scalar_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise RuntimeError("mpamp.optim.Adadelta does not support differentiable=True")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
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
        lists = ([], [], [], [], [])    # params, grads, masters, square_avg, acc_delta
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0 or "step" not in state:
                shape = tuple(p.shape)
                state["step"] = mpamp.zeros((), dtype=mpamp.float32)
                state["square_avg"] = mpamp.zeros(shape, dtype=mpamp.float32, device=p.device)
                state["acc_delta"] = mpamp.zeros(shape, dtype=mpamp.float32, device=p.device)
            state["step"].fill_(state["step"].item() + 1)
            for lst, v in zip(lists, (p, p.grad, self._master(p, state), state["square_avg"],
                                      state["acc_delta"])):
                lst.append(v)
        ps, gs, ms, sq, acc = lists
        if not ps:
            return
        self._fused(_C._fused_adadelta_, ps, gs, _masters(ps, ms), grad_scale, found_inf, sq,
                    acc, float(group["lr"]), float(group["rho"]), float(group["eps"]),
                    float(group["weight_decay"]), bool(group["maximize"]))
