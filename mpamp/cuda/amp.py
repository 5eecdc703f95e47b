"""mpamp.cuda.amp: the deprecated torch.cuda.amp spellings (FutureWarning, then the new API)."""
import functools
import warnings

from .._C import float16
from ..amp import autocast_mode, grad_scaler


class autocast(autocast_mode.autocast):
    """torch.cuda.amp.autocast(args...) == mpamp.amp.autocast('cuda', args...)."""

    def __init__(self, enabled=True, dtype=float16, cache_enabled=True):
        warnings.warn("`mpamp.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`mpamp.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: mpamp.amp.custom_fwd(device_type='cuda')."""
    warnings.warn("`mpamp.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`mpamp.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda",
                             cast_inputs=cast_inputs)(fwd) if fwd else \
        functools.partial(autocast_mode.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated: mpamp.amp.custom_bwd(device_type='cuda')."""
    warnings.warn("`mpamp.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`mpamp.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return autocast_mode.custom_bwd(bwd, device_type="cuda")


class GradScaler(grad_scaler.GradScaler):
    """torch.cuda.amp.GradScaler(args...) == mpamp.amp.GradScaler('cuda', args...)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`mpamp.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`mpamp.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
