"""Padding layers over F.pad (torch.nn.ConstantPad1d/2d/3d, ZeroPad1d/2d/3d,
ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d, CircularPad1d/2d/3d). An int padding pads
every side of the last 1, 2 or 3 dims; a tuple is F.pad's (left, right, top, ...) order."""
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _sides(padding, dims):
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    return tuple(padding)


class _PadNd(Module):
    _mode = "constant"
    _dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _sides(padding, self._dims)

    def forward(self, input):  # noqa: A002 - torch's parameter name
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _make(name, base, mode, dims, doc):
    return type(name, (base,), {"_mode": mode, "_dims": dims, "__doc__": doc,
                                "__module__": __name__, "__qualname__": name})


ConstantPad1d = _make("ConstantPad1d", _ConstantPadNd, "constant", 1, "Pad with a value.")
ConstantPad2d = _make("ConstantPad2d", _ConstantPadNd, "constant", 2, "Pad with a value.")
ConstantPad3d = _make("ConstantPad3d", _ConstantPadNd, "constant", 3, "Pad with a value.")
ReflectionPad1d = _make("ReflectionPad1d", _PadNd, "reflect", 1, "Pad by reflection.")
ReflectionPad2d = _make("ReflectionPad2d", _PadNd, "reflect", 2, "Pad by reflection.")
ReflectionPad3d = _make("ReflectionPad3d", _PadNd, "reflect", 3, "Pad by reflection.")
ReplicationPad1d = _make("ReplicationPad1d", _PadNd, "replicate", 1, "Pad with the edge.")
ReplicationPad2d = _make("ReplicationPad2d", _PadNd, "replicate", 2, "Pad with the edge.")
ReplicationPad3d = _make("ReplicationPad3d", _PadNd, "replicate", 3, "Pad with the edge.")
CircularPad1d = _make("CircularPad1d", _PadNd, "circular", 1, "Pad by wrapping around.")
CircularPad2d = _make("CircularPad2d", _PadNd, "circular", 2, "Pad by wrapping around.")
CircularPad3d = _make("CircularPad3d", _PadNd, "circular", 3, "Pad by wrapping around.")


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


ZeroPad1d = _make("ZeroPad1d", _ZeroPadNd, "constant", 1, "Pad with zeros.")
ZeroPad2d = _make("ZeroPad2d", _ZeroPadNd, "constant", 2, "Pad with zeros.")
ZeroPad3d = _make("ZeroPad3d", _ZeroPadNd, "constant", 3, "Pad with zeros.")
