"""mpamp.utils: data loading (mpamp.utils.data), as torch.utils."""
from . import data  # noqa: F401
