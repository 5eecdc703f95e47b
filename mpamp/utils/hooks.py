"""mpamp.utils.hooks: RemovableHandle, what register_*_hook returns (torch.utils.hooks)."""
from ..nn.utils.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
