"""Adam and AdamW (torch's update rules; AdamW = Adam with decoupled weight decay).

Both call one fused C kernel (_C._fused_adam_) per param group, with a decay-mode flag; the
kernel counts each tensor's steps itself (on the CPU as on a GPU). Optimizer state (step, exp_avg, exp_avg_sq, max_exp_avg_sq) has torch's keys;
the moments are float32 whatever the parameter dtype. Extensions beyond torch:
master_weights=True and stochastic_rounding=True (see mpamp.optim.SGD).
"""

import mpamp
from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _masters

__all__ = ["Adam", "AdamW"]


def _validate(lr, betas, eps, weight_decay):
    if isinstance(lr, mpamp.Tensor):
        lr = lr.item()
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    return lr


class Adam(Optimizer):
    """Adam, as torch.optim.Adam (always fused; decoupled_weight_decay=True gives AdamW)."""

    _step_supports_amp_scaling = True     # the fused kernel unscales and skips on inf
    _device_step_counts = True            # CUDA params: steps counted on the device

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False,
                 master_weights=False, stochastic_rounding=False):
        lr = _validate(lr, betas, eps, weight_decay)
        if differentiable:
            raise RuntimeError("mpamp.optim.Adam does not support differentiable=True")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        self.master_weights = master_weights
        self.stochastic_rounding = stochastic_rounding
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        grad_scale, found_inf, skip = self._amp_args()
        if skip:    # torch's fused step reverts its step count on found_inf; we never add it
            return loss
        with no_grad():
            for group in self.param_groups:
                self._device_step(group, grad_scale, found_inf)
        return loss

    def _init_state(self, p, group):
        state = self.state[p]
        shape, dev = tuple(p.shape), p.device
        state["step"] = mpamp.zeros((), dtype=mpamp.float32,
                                    device=dev if dev.type != "cpu" else None)
        state["exp_avg"] = mpamp.zeros(shape, dtype=mpamp.float32, device=dev)
        state["exp_avg_sq"] = mpamp.zeros(shape, dtype=mpamp.float32, device=dev)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = mpamp.zeros(shape, dtype=mpamp.float32, device=dev)
        return state

    def _device_step(self, group, grad_scale, found_inf):
        """One fused call whose kernel counts the steps where the parameters are and derives
        each tensor's bias corrections from its own count (in double, as torch's Python
        numbers), so nothing is read on the host: on a GPU no sync, on the CPU no per-tensor
        .item() and fill_ (the step's largest Python cost on small models)."""
        ps, gs, ms, m1, m2, vmax, steps = [], [], [], [], [], [], []
        masters = getattr(self, "master_weights", False)
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            state = self.state[p]
            if "step" not in state:
                state = self._init_state(p, group)
            ps.append(p)
            gs.append(g)
            ms.append(self._master(p, state) if masters else None)
            m1.append(state["exp_avg"])
            m2.append(state["exp_avg_sq"])
            vmax.append(state.get("max_exp_avg_sq"))
            steps.append(state["step"])
        if not ps:
            return
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        amsgrad = bool(group["amsgrad"])
        self._fused(_C._fused_adam_, ps, gs, _masters(ps, ms), grad_scale, found_inf, m1, m2,
                    vmax if amsgrad else None, beta1, beta2, float(group["eps"]), wd,
                    0.0, 0.0, 1.0 - lr * wd,
                    bool(group.get("decoupled_weight_decay", False)), amsgrad,
                    bool(group["maximize"]), steps, lr)


class AdamW(Adam):
    """AdamW, as torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None, master_weights=False,
                 stochastic_rounding=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True, master_weights=master_weights,
                         stochastic_rounding=stochastic_rounding)
