"""mpamp.amp: automatic mixed precision, as torch.amp."""
from .autocast_mode import (_cast_cache_stats, autocast, clear_autocast_cache, custom_bwd,
                            custom_fwd, get_autocast_dtype, is_autocast_available,
                            is_autocast_cache_enabled, is_autocast_enabled,
                            set_autocast_cache_enabled, set_autocast_dtype,
                            set_autocast_enabled)
from .grad_scaler import GradScaler, OptState

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler"]
