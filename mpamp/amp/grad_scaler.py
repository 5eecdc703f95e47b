"""GradScaler: dynamic loss scaling with torch.amp.GradScaler's exact semantics.

The numeric work (inf/NaN check + unscale, scale update) runs in C on tensors
(`_C._amp_foreach_non_finite_check_and_unscale_`, `_C._amp_update_scale_`); this module keeps
the per-optimizer READY/UNSCALED/STEPPED state machine and torch's messages.
Differences from torch: the growth tracker is an int64 tensor (mpamp has no int32), and
`stats()` and `min_scale=` (an opt-in floor for the scale; None keeps torch's trace) are
extensions. A scale that falls to 0 or below 2**-24 is warned about once, where its value is
read on the host anyway (after update() for a CPU scale, in get_scale()/unscale_() otherwise).
"""
import inspect
import math
import numbers
import warnings
import weakref
from collections import abc, defaultdict
from enum import Enum

from .. import _C
from ..autograd.grad_mode import no_grad

__all__ = ["OptState", "GradScaler"]


_GRAD_SCALER_KWARG = weakref.WeakKeyDictionary()   # step function -> accepts grad_scaler=


def _takes_grad_scaler(step):
    """Whether an optimizer's step accepts grad_scaler= (torch's deprecated protocol); the
    signature is inspected once per function, not on every step."""
    func = getattr(step, "__func__", step)
    try:
        return _GRAD_SCALER_KWARG[func]
    except (KeyError, TypeError):   # not seen yet, or not weak-referenceable
        pass
    found = "grad_scaler" in inspect.signature(step).parameters
    try:
        _GRAD_SCALER_KWARG[func] = found
    except TypeError:      # an unhashable callable: inspect it every time
        pass
    return found


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _default_device():
    from .. import cuda
    return "cuda" if cuda.is_available() else "cpu"


def _check_min_scale(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or value <= 0:
        raise ValueError(f"min_scale must be None or a finite number > 0, got {value!r}")
    return float(value)


def _full(value, dtype, device):
    import mpamp
    return mpamp.full((), value, dtype=dtype, device=device)


def _combine_on(like, found_infs):
    """The sum of found_inf tensors on the device of tensor `like` (one there already is
    returned as it is: no copy, no add), or None when there are none. Two CPU tensors are
    known to share the device without building device objects (the per-step common case)."""
    total = None
    for f in found_infs:
        if (f.is_cuda or like.is_cuda) and f.device != like.device:
            f = f.to(device=like.device)
        total = f if total is None else total + f
    return total


class _MultiDeviceReplicator:
    """Lazily serves copies of a master tensor per device."""

    def __init__(self, master_tensor):
        self.master = master_tensor
        self._per_device_tensors = {}
        self._master_device = master_tensor.device

    def get(self, device):
        if device is self._master_device or device == self._master_device:
            retval = self.master         # the master's own device: no copy, no dict
            self._per_device_tensors.setdefault(str(device), retval)
            return retval
        key = str(device)
        retval = self._per_device_tensors.get(key)
        if retval is None:
            retval = self.master.to(device=device)
            self._per_device_tensors[key] = retval
        return retval


class GradScaler:
    """Scales losses so fp16 gradients do not underflow; skips steps whose grads overflowed."""

    def __init__(self, device=None, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True, min_scale=None):
        if device is None:
            device = _default_device()
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("mpamp.cuda.amp.GradScaler is enabled, but CUDA is not available."
                              "  Disabling.")
                self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
            self._stats = {"steps": 0, "skipped_steps": 0, "scale_updates": 0}
            self._min_scale = _check_min_scale(min_scale)
            self._warned_tiny_scale = False
            self._skipped_on_device = None   # skipped fused steps, counted on the device

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier " \
              "in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, \
            f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        import mpamp
        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = _full(float(self._init_scale), mpamp.float32, dev)
        self._growth_tracker = _full(int(self._init_growth_tracker), mpamp.int64, dev)

    def scale(self, outputs):
        """Multiply a tensor (or an iterable of tensors) by the scale factor."""
        import mpamp
        if not self._enabled:
            return outputs
        if isinstance(outputs, mpamp.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            assert self._scale is not None
            return outputs * self._scale.to(device=outputs.device)

        stash = []

        def apply_scale(val):
            if isinstance(val, mpamp.Tensor):
                if len(stash) == 0:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    assert self._scale is not None
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Check (and unscale, when inv_scale is given) every grad; {device: found_inf}."""
        import mpamp
        if not found_inf.is_cuda:            # the CPU's hot path: every grad there, one call
            grads = []
            for group in optimizer.param_groups:
                for param in group["params"]:
                    g = param.grad
                    if g is None:
                        continue
                    if g.is_cuda:
                        break
                    if (not allow_fp16) and g.dtype == mpamp.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads.append(g)
                else:
                    continue
                break
            else:       # (the C call only reads and writes the grads: no autograd involved)
                if grads:
                    _C._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
                return {"cpu": found_inf} if grads else {}
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale) if inv_scale is not None \
            else None
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        per_device = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if (not allow_fp16) and param.grad.dtype == mpamp.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device[str(param.grad.device)].append(param.grad)
            for device, grads in per_device.items():
                inv = per_device_inv_scale.get(device) if per_device_inv_scale else None
                # one C call walks every grad of the device (fp32/fp16/bf16 each in place)
                _C._amp_foreach_non_finite_check_and_unscale_(
                    grads, per_device_found_inf.get(device), inv)
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (in place), recording inf/NaN."""
        import mpamp
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        if not self._scale.is_cuda:      # host memory: reading it costs no sync
            self._note_scale(self._scale.item())
        # reciprocal in double, stored as float32, on the scale's device (torch:
        # scale.double().reciprocal().float()); no host read of a device scale
        inv_scale = _C._amp_inv_scale_(_full(0.0, mpamp.float32, self._scale.device),
                                       self._scale)
        found_inf = _full(0.0, mpamp.float32, self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(
            optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        found = sum(v.item() for v in optimizer_state["found_inf_per_device"].values())
        self._stats["steps"] += 1
        if not found:
            retval = optimizer.step(*args, **kwargs)
        else:
            self._stats["skipped_steps"] += 1
            optimizer._mpamp_step_skipped = True
        return retval

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if needed) and call optimizer.step() unless the grads hold inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_amp_aware(optimizer, optimizer_state, *args, **kwargs)
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(optimizer_state["found_inf_per_device"]) > 0, \
            "No inf checks were recorded for this optimizer."
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _step_amp_aware(self, optimizer, optimizer_state, *args, **kwargs):
        """torch's _step_supports_amp_scaling protocol: the optimizer unscales in its kernel."""
        if _takes_grad_scaler(optimizer.step):
            warnings.warn(
                "GradScaler is going to stop passing itself as a keyword argument to the passed "
                "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                "`found_inf: Tensor` to the passed optimizer and let the optimizer use them "
                "directly.", FutureWarning)
            kwargs["grad_scaler"] = self
            retval = optimizer.step(*args, **kwargs)
            optimizer_state["stage"] = OptState.STEPPED
            return retval
        if optimizer_state["stage"] is OptState.READY:
            self._check_inf_per_device(optimizer)
        scaler = self._get_scale_async()
        assert scaler is not None
        found_inf = _combine_on(scaler, optimizer_state["found_inf_per_device"].values())
        if found_inf is None:                # no grads at all: nothing to skip on
            import mpamp
            found_inf = _full(0.0, mpamp.float32, scaler.device)
        if optimizer_state["stage"] is OptState.UNSCALED:
            optimizer.grad_scale = getattr(optimizer, "grad_scale", None)
        else:       # torch: scaler * (the optimizer's own grad_scale or 1); x 1 is exact
            own = getattr(optimizer, "grad_scale", None)
            optimizer.grad_scale = scaler if own is None else scaler * own
        optimizer.found_inf = found_inf
        self._stats["steps"] += 1
        if not found_inf.is_cuda:        # free to read; a device count is summed there
            self._stats["skipped_steps"] += found_inf.item() != 0.0
        else:
            skipped = found_inf.clamp(max=1.0)
            self._skipped_on_device = skipped if self._skipped_on_device is None \
                else self._skipped_on_device.add_(skipped)
        retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        del optimizer.grad_scale
        del optimizer.found_inf
        return retval

    def update(self, new_scale=None):
        """Update the scale: backoff after an overflow, growth after growth_interval steps."""
        import mpamp
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            assert self._scale is not None
            if not isinstance(new_scale, mpamp.Tensor):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element mpamp.FloatTensor with "
                          "requires_grad=False.")
                assert new_scale.device.type == self._device, reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_inf_combined = _combine_on(
                _scale, [found_inf for state in self._per_optimizer_states.values()
                                for found_inf in state["found_inf_per_device"].values()])
            assert found_inf_combined is not None, "No inf checks were recorded prior to update."
            _C._amp_update_scale_(_scale, _growth_tracker, found_inf_combined,
                                  float(self._growth_factor), float(self._backoff_factor),
                                  int(self._growth_interval))
            if self._min_scale is not None:      # extension: the floor (stays on the device)
                _scale.clamp_(min=self._min_scale)
            if not _scale.is_cuda:               # host memory: reading it costs no sync
                self._note_scale(_scale.item())
        self._stats["scale_updates"] += 1   # a count, not a list: long runs must not grow
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def _note_scale(self, value):
        """Warn once when the scale (a host value already read) has collapsed; returns it."""
        if value < 2.0**-24 and not self._warned_tiny_scale:
            self._warned_tiny_scale = True
            warnings.warn(
                f"GradScaler: the loss scale fell to {value!r} (below 2**-24, the smallest "
                f"float16 subnormal) after the gradients overflowed step after step; scaled "
                f"float16 gradients now underflow to zero, and at 0 the next step that does not "
                f"overflow writes NaN into the weights. Check the model for a source of inf/NaN, "
                f"or floor the scale with GradScaler(min_scale=...) (an mpamp extension).",
                RuntimeWarning, stacklevel=3)
        return value

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if (scale := self._get_scale_async()) is None \
                else self._note_scale(float(scale.item()))
        return 1.0

    def get_min_scale(self):
        """Extension: the floor of the scale (None: no floor, as torch)."""
        return self._min_scale if self._enabled else None

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None \
                else int(self._growth_tracker.item())
        return 0

    def is_enabled(self):
        return self._enabled

    def stats(self):
        """Extension: {'steps', 'skipped_steps', 'scale_history_len', 'scale'}."""
        if not self._enabled:
            return {"steps": 0, "skipped_steps": 0, "scale_history_len": 0, "scale": 1.0}
        skipped = self._stats["skipped_steps"]
        if self._skipped_on_device is not None:     # read only when asked for (one copy)
            skipped += int(self._skipped_on_device.item())
        return {"steps": self._stats["steps"], "skipped_steps": skipped,
                "scale_history_len": self._stats["scale_updates"],
                "scale": self.get_scale()}

    def state_dict(self):
        """torch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        """Restore from state_dict() output."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            assert len(self._per_optimizer_states) == 0, \
                "A GradScaler instance may only be pickled at the beginning of an iteration, " \
                "or at the end after scaler.update()."
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_stats"] = dict(self._stats, skipped_steps=self.stats()["skipped_steps"])
            state["_skipped_on_device"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.__dict__.get("_enabled"):          # pickled before min_scale existed
            self.__dict__.setdefault("_min_scale", None)
            self.__dict__.setdefault("_warned_tiny_scale", False)
            self.__dict__.setdefault("_skipped_on_device", None)

    def _check_inf_per_device(self, optimizer):
        """Record inf/NaN per device without unscaling."""
        import mpamp
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        found_inf = _full(0.0, mpamp.float32, _scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = \
            self._unscale_grads_(optimizer, None, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
