"""Backend queries and settings, as torch.backends."""
from . import cpu  # noqa: F401
