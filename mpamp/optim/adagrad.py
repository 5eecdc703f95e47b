"""Adagrad (torch's update rule for dense gradients: sum += g^2, p -= clr * g / (sqrt(sum) +
eps) with clr = lr / (1 + (step - 1) * lr_decay)).

One fused C call (_C._fused_adagrad_) per param group and step count. State is created in
__init__ as torch does (step = 0, sum = initial_accumulator_value), always float32.
Extensions beyond torch: master_weights=True and stochastic_rounding=True (see
mpamp.optim.SGD). Under GradScaler the kernel unscales and skips on inf/NaN itself.
"""
import mpamp
from .. import _C
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _masters
from .rmsprop import _scalar_lr

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, as torch.optim.Adagrad (always fused; sparse gradients are not supported)."""

    _step_supports_amp_scaling = True
    _skip_read_on_host = True      # step counts live on the host

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None, master_weights=False,
                 stochastic_rounding=False):
        lr = _scalar_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        self.master_weights = master_weights
        self.stochastic_rounding = stochastic_rounding
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        if differentiable:
            raise RuntimeError("mpamp.optim.Adagrad does not support differentiable=True")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = mpamp.zeros((), dtype=mpamp.float32)
        state["sum"] = mpamp.full(tuple(p.shape), float(group["initial_accumulator_value"]),
                                  dtype=mpamp.float32, device=p.device)

    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        grad_scale, found_inf, skip = self._amp_args()
        if skip:
            return loss
        with no_grad():
            for group in self.param_groups:
                for step, lists in self._buckets(group).items():
                    self._bucket_step(group, step, lists, grad_scale, found_inf)
        return loss

    def _buckets(self, group):
        """{new step count: (params, grads, masters, sums)}."""
        buckets = {}
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if "sum" not in state:      # a param group added after construction
                self._init_state(p, group)
            step = state["step"].item() + 1
            state["step"].fill_(step)
            lists = buckets.setdefault(step, ([], [], [], []))
            for lst, v in zip(lists, (p, p.grad, self._master(p, state), state["sum"])):
                lst.append(v)
        return buckets

    def _bucket_step(self, group, step, lists, grad_scale, found_inf):
        ps, gs, ms, sums = lists
        clr = float(group["lr"]) / (1 + (step - 1) * float(group["lr_decay"]))
        self._fused(_C._fused_adagrad_, ps, gs, _masters(ps, ms), grad_scale, found_inf, sums,
                    clr, float(group["weight_decay"]), float(group["eps"]),
                    bool(group["maximize"]))
