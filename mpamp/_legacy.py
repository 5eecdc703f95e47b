"""torch's legacy typed constructors: mpamp.FloatTensor, LongTensor, HalfTensor,
BFloat16Tensor, BoolTensor. Called with data (a list, tuple or array) they build a tensor of
their dtype; with sizes (ints, or an mpamp.Size) an uninitialised one; with nothing an empty
one. isinstance(t, mpamp.FloatTensor) is True for float32 tensors, as in torch."""
import numpy as np

from . import _C
from ._factories import empty, tensor
from ._size import Size
from ._tensor import Tensor

__all__ = ["FloatTensor", "LongTensor", "HalfTensor", "BFloat16Tensor", "BoolTensor"]


def _is_int(a):
    return isinstance(a, int) and not isinstance(a, bool)


class _LegacyTensorType(type):
    """The metaclass: calling the class constructs, isinstance checks the dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        if not args:
            return empty(0, dtype=cls.dtype, device=device)
        if len(args) == 1:
            return cls._from_one(args[0], device)
        if all(_is_int(a) for a in args):
            return empty(*args, dtype=cls.dtype, device=device)
        names = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"new() received an invalid combination of arguments - got ({names}), "
                        f"but expected one of: (*, device), (mpamp.Size size, *, device), "
                        f"(object data, *, device), (int ... size, *, device)")

    def _from_one(cls, a, device):
        if isinstance(a, Size) or _is_int(a):
            return empty(a, dtype=cls.dtype, device=device)
        if isinstance(a, Tensor):
            if a.dtype is not cls.dtype:
                raise TypeError(f"expected {cls.dtype} (got {a.dtype})")
            return a.detach()
        if isinstance(a, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(a, (list, tuple, np.ndarray)):
            return tensor(a, dtype=cls.dtype, device=device)
        raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")


def _legacy(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "__module__": "mpamp",
                                        "__doc__": f"Legacy constructor of {dtype} tensors."})


FloatTensor = _legacy("FloatTensor", _C.float32)
HalfTensor = _legacy("HalfTensor", _C.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _C.bfloat16)
LongTensor = _legacy("LongTensor", _C.int64)
BoolTensor = _legacy("BoolTensor", _C.bool)
