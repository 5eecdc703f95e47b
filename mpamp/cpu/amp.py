"""mpamp.cpu.amp: the deprecated torch.cpu.amp.autocast spelling."""
import warnings

from .._C import bfloat16
from ..amp import autocast_mode


class autocast(autocast_mode.autocast):
    """torch.cpu.amp.autocast(args...) == mpamp.amp.autocast('cpu', args...)."""

    def __init__(self, enabled=True, dtype=bfloat16, cache_enabled=True):
        warnings.warn("`mpamp.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`mpamp.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
