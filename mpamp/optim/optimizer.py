"""Optimizer base class, as torch.optim.Optimizer: param_groups, state, zero_grad, state_dict.

state_dict() has torch's layout ({'state': {index: {...}}, 'param_groups': [...]}); optimizer
state tensors (moments, momentum buffers, fp32 master weights) are always float32 in mpamp.
Subclasses implement step() with one fused C call per param group (and per step count).
"""
import warnings
from collections import defaultdict
from copy import deepcopy

import mpamp
from .._random import default_generator
from ..autograd.grad_mode import enable_grad, no_grad

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()
_SET_MESSAGE = ("optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead.")


def _typename(obj):
    if isinstance(obj, mpamp.Tensor):
        return "mpamp.Tensor"
    return type(obj).__module__ + "." + type(obj).__qualname__


class Optimizer:
    """Base class of all optimizers."""

    # As torch: a subclass opts in (sets this True) only when its step() reads grad_scale and
    # found_inf (set by GradScaler.step) and unscales and skips itself, as mpamp's fused SGD,
    # Adam and AdamW do; for every other optimizer GradScaler.step unscales the gradients first.
    _step_supports_amp_scaling = False
    # True when state["step"] lives on the parameter's device (Adam/AdamW: its fused kernel
    # counts there); False keeps step counts on the host, as torch's non-fused optimizers.
    _device_step_counts = False
    # True when a skipped step must be known on the host even for a device found_inf: the
    # optimizer counts steps (and creates state) on the host, so _amp_args reads found_inf
    # once per step (torch's one copy per optimizer for a path that cannot fuse the skip).
    _skip_read_on_host = False

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, mpamp.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        if isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        state = {"defaults": self.defaults, "state": self.state,
                 "param_groups": self.param_groups}
        for key in ("master_weights", "stochastic_rounding"):   # mpamp extensions
            if hasattr(self, key):
                state[key] = getattr(self, key)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group.keys()):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group):
        """Add a param group (a dict with 'params' and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, mpamp.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, mpamp.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with no_grad():
                        p.grad.zero_()

    def state_dict(self):
        """{'state': {index: state}, 'param_groups': [group with 'params': [indices]]}."""
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                if id(p) not in param_mappings:
                    param_mappings[id(p)] = i
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {param_mappings[id(k)]: v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        """Load a state_dict() result (state tensors are copied, as float32)."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {old_id: p for old_id, p in
                  zip([i for g in saved_groups for i in g["params"]],
                      [p for g in groups for p in g["params"]])}
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: _load_value(val, param, key, self._device_step_counts)
                                for key, val in v.items()}
            else:
                state[k] = v
        new_groups = []
        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            new_groups.append(new_group)
        self.state = state
        self.param_groups = new_groups

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _amp_args(self):
        """(grad_scale, found_inf, skip) as set by GradScaler.step for this call. skip is read
        on the host only for a CPU found_inf (free there); a device found_inf is read by the
        fused kernel, which skips on the device, so the step costs no device-to-host copy."""
        grad_scale = getattr(self, "grad_scale", None)
        found_inf = getattr(self, "found_inf", None)
        if found_inf is None and grad_scale is None:      # the common case: no GradScaler
            return None, None, False
        if found_inf is not None and not isinstance(found_inf, mpamp.Tensor):
            found_inf = mpamp.full((), float(found_inf), dtype=mpamp.float32,
                                   device=self._device())
        if grad_scale is not None and not isinstance(grad_scale, mpamp.Tensor):
            grad_scale = mpamp.full((), float(grad_scale), dtype=mpamp.float32,
                                    device=self._device())
        skip = (found_inf is not None and (not found_inf.is_cuda or self._skip_read_on_host)
                and found_inf.item() != 0.0)
        return grad_scale, found_inf, skip

    def _device(self):
        """The device of the first parameter (the fused kernels need one device per group)."""
        for group in self.param_groups:
            for p in group["params"]:
                return p.device
        return None

    def _fused(self, fn, params, grads, masters, grad_scale, found_inf, *rest):
        """One fused C call; stochastic rounding draws from the default Philox generator."""
        if not getattr(self, "stochastic_rounding", False):
            return fn(params, grads, masters, grad_scale, found_inf, False, 0, 0, *rest)

        def call(seed, offset):
            used = fn(params, grads, masters, grad_scale, found_inf, True, seed, offset, *rest)
            return None, used

        return default_generator._draw(call)

    def _master(self, p, state):
        """The fp32 master copy of a low-precision parameter (created on first use)."""
        if not getattr(self, "master_weights", False) or p.dtype == mpamp.float32:
            return None
        m = state.get("master_weight")
        if m is None:
            m = p.detach().to(dtype=mpamp.float32).clone()
            state["master_weight"] = m
        return m

    def step(self, closure=None):
        raise NotImplementedError


def _masters(params, masters):
    """The masters list for a fused call: None when no param has one, else fp32 params stand
    in for their own master (the kernel then updates them in place)."""
    if all(m is None for m in masters):
        return None
    return [m if m is not None else p for m, p in zip(masters, params)]


def _load_value(val, param, key, device_steps):
    """A loaded state value, as torch's _process_value_according_to_param_policy: tensors
    become float32 on the parameter's device, except step counts of an optimizer that keeps
    them on the host (device_steps False: all but Adam/AdamW, as torch's non-fused ones)."""
    if isinstance(val, mpamp.Tensor):
        device = param.device if key != "step" or device_steps else "cpu"
        return val.detach().to(device=device, dtype=mpamp.float32).clone()
    return deepcopy(val)
