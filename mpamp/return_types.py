"""Result types of ops that return several tensors, as torch.return_types."""
from collections import namedtuple

__all__ = ["max"]


class max(namedtuple("max", ["values", "indices"])):  # noqa: A001 - torch's name
    """(values, indices) from mpamp.max(input, dim): a tuple with named fields."""

    __slots__ = ()

    def __repr__(self):
        return f"mpamp.return_types.max(\nvalues={self.values!r},\nindices={self.indices!r})"
