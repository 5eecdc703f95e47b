"""mpamp.Size and mpamp.device: small value types mirroring torch.Size and torch.device."""


class Size(tuple):
    """The shape of a tensor: a tuple of ints, as torch.Size."""

    __slots__ = ()

    def numel(self):
        """Number of elements of a tensor of this shape."""
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"mpamp.Size({list(self)})"

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))


_DEVICE_TYPES = ("cpu", "cuda")


class device:
    """Where a tensor lives: device('cpu') or device('cuda', 0), as torch.device."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - torch's parameter name
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string like 'cpu' or 'cuda:0', "
                            f"got {type.__class__.__name__}")
        if ":" in type:
            if index is not None:
                raise ValueError(f"device string {type!r} already has an index")
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise ValueError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in _DEVICE_TYPES:
            raise ValueError(f"Expected one of cpu, cuda device type at start of device "
                             f"string: {type}")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise ValueError(f"Device index must not be negative, got {index}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError("mpamp.device is immutable")

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (ValueError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))
