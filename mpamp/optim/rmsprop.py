"""RMSprop (torch's update rule: square_avg, optional centered grad_avg and momentum_buffer).

One fused C call (_C._fused_rmsprop_) per param group walks every parameter. State has
torch's keys (step, square_avg, momentum_buffer when momentum > 0, grad_avg when centered),
always float32. Extensions beyond torch: master_weights=True and stochastic_rounding=True
(see mpamp.optim.SGD). Under GradScaler the kernel unscales and skips on inf/NaN itself.
"""
import mpamp
from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _masters

__all__ = ["RMSprop"]


def _scalar_lr(lr):
    if isinstance(lr, mpamp.Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return lr.item()
    return lr


class RMSprop(Optimizer):
    """RMSprop, as torch.optim.RMSprop (always fused)."""

    _step_supports_amp_scaling = True
    _skip_read_on_host = True      # step counts live on the host

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False, *, master_weights=False, stochastic_rounding=False):
        lr = _scalar_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if differentiable:
            raise RuntimeError("mpamp.optim.RMSprop does not support differentiable=True")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        self.master_weights = master_weights
        self.stochastic_rounding = stochastic_rounding
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        grad_scale, found_inf, skip = self._amp_args()
        if skip:    # torch's fused steps leave the state as it was on found_inf
            return loss
        with no_grad():
            for group in self.param_groups:
                self._group_step(group, grad_scale, found_inf)
        return loss

    def _group_step(self, group, grad_scale, found_inf):
        lists = ([], [], [], [], [], [])    # params, grads, masters, square, grad_avg, buf
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0 or "step" not in state:
                shape = tuple(p.shape)
                state["step"] = mpamp.zeros((), dtype=mpamp.float32)
                state["square_avg"] = mpamp.zeros(shape, dtype=mpamp.float32, device=p.device)
                if momentum > 0:
                    state["momentum_buffer"] = mpamp.zeros(shape, dtype=mpamp.float32,
                                                            device=p.device)
                if centered:
                    state["grad_avg"] = mpamp.zeros(shape, dtype=mpamp.float32, device=p.device)
            state["step"].fill_(state["step"].item() + 1)
            for lst, v in zip(lists, (p, p.grad, self._master(p, state), state["square_avg"],
                                      state.get("grad_avg"), state.get("momentum_buffer"))):
                lst.append(v)
        ps, gs, ms, sq, ga, bufs = lists
        if not ps:
            return
        self._fused(_C._fused_rmsprop_, ps, gs, _masters(ps, ms), grad_scale, found_inf, sq,
                    ga if centered else None, bufs if momentum > 0 else None,
                    float(group["lr"]), float(group["alpha"]), float(group["eps"]),
                    float(group["weight_decay"]), momentum, centered, bool(group["maximize"]))
