"""mpamp.cpu.amp: the deprecated torch.cpu.amp spellings (autocast, GradScaler)."""
import warnings

from .._C import bfloat16
from ..amp import autocast_mode, grad_scaler


class autocast(autocast_mode.autocast):
    """torch.cpu.amp.autocast(args...) == mpamp.amp.autocast('cpu', args...)."""

    def __init__(self, enabled=True, dtype=bfloat16, cache_enabled=True):
        warnings.warn("`mpamp.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`mpamp.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """torch.cpu.amp.GradScaler(args...) == mpamp.amp.GradScaler('cpu', args...)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`mpamp.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`mpamp.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
