"""mpamp.utils: data loading (mpamp.utils.data) and hook handles (mpamp.utils.hooks), as
torch.utils."""
from . import data, hooks  # noqa: F401
