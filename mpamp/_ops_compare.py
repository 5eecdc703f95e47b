"""Functional forms of the comparisons and logic ops (mpamp.eq, mpamp.logical_and,
mpamp.isnan, mpamp.any, ...) and the Tensor methods with keyword arguments (any, all,
equal, isclose, allclose). The per-element work is in C (_C._compare, _C._logic,
_C._any_all and the Tensor methods); isclose/allclose/equal compose those C ops, as torch's
own implementations do."""
import builtins
import numbers

from . import _C
from ._tensor import Tensor, _TORCH_NAMES

_OPS = _C.op_ids      # the core's op table: name -> id
_EQ, _NE, _LT, _LE, _GT, _GE = (_OPS[n] for n in ("eq", "ne", "lt", "le", "gt", "ge"))


def _tensor_arg(x, fname, arg="input", pos=1):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


# ---- comparisons ----

def eq(input, other):  # noqa: A002 - torch's parameter names
    """input == other, elementwise (bool)."""
    return _C._compare(_EQ, input, other)


def ne(input, other):  # noqa: A002
    """input != other, elementwise (bool; True where either is NaN)."""
    return _C._compare(_NE, input, other)


def lt(input, other):  # noqa: A002
    """input < other, elementwise (bool)."""
    return _C._compare(_LT, input, other)


def le(input, other):  # noqa: A002
    """input <= other, elementwise (bool)."""
    return _C._compare(_LE, input, other)


def gt(input, other):  # noqa: A002
    """input > other, elementwise (bool)."""
    return _C._compare(_GT, input, other)


def ge(input, other):  # noqa: A002
    """input >= other, elementwise (bool)."""
    return _C._compare(_GE, input, other)


not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge


# ---- logic ----

def logical_and(input, other):  # noqa: A002
    """Elementwise logical and of two tensors of any dtypes (nonzero is true)."""
    return _C._logic(_OPS["logical_and"], input, other)


def logical_or(input, other):  # noqa: A002
    """Elementwise logical or of two tensors of any dtypes (nonzero is true)."""
    return _C._logic(_OPS["logical_or"], input, other)


def logical_xor(input, other):  # noqa: A002
    """Elementwise logical xor of two tensors of any dtypes (nonzero is true)."""
    return _C._logic(_OPS["logical_xor"], input, other)


def logical_not(input):  # noqa: A002
    """Elementwise logical not (bool)."""
    return _tensor_arg(input, "logical_not").logical_not()


def bitwise_and(input, other):  # noqa: A002
    """input & other for bool and int64 tensors (or numbers)."""
    return _C._logic(_OPS["bitwise_and"], input, other)


def bitwise_or(input, other):  # noqa: A002
    """input | other for bool and int64 tensors (or numbers)."""
    return _C._logic(_OPS["bitwise_or"], input, other)


def bitwise_xor(input, other):  # noqa: A002
    """input ^ other for bool and int64 tensors (or numbers)."""
    return _C._logic(_OPS["bitwise_xor"], input, other)


def bitwise_not(input):  # noqa: A002
    """~input for bool and int64 tensors."""
    return _tensor_arg(input, "bitwise_not").bitwise_not()


def isnan(input):  # noqa: A002
    """True where input is NaN."""
    return _tensor_arg(input, "isnan").isnan()


def isinf(input):  # noqa: A002
    """True where input is +inf or -inf."""
    return _tensor_arg(input, "isinf").isinf()


def isfinite(input):  # noqa: A002
    """True where input is neither inf nor NaN."""
    return _tensor_arg(input, "isfinite").isfinite()


def isposinf(input):  # noqa: A002
    """True where input is +inf."""
    return _tensor_arg(input, "isposinf").isposinf()


def isneginf(input):  # noqa: A002
    """True where input is -inf."""
    return _tensor_arg(input, "isneginf").isneginf()


def any(input, dim=None, keepdim=False):  # noqa: A001,A002
    """True where any element (over dim: an int, a tuple of ints, or None for all) is nonzero."""
    return _C._any_all(False, input, dim, keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001,A002
    """True where every element (over dim: an int, a tuple of ints, or None for all) is
    nonzero."""
    return _C._any_all(True, input, dim, keepdim)


# ---- closeness ----

def _format_double(x):
    return f"{builtins.float(x):g}"


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol * |other| elementwise (bool), as torch: equal values
    (infinities included) are close, NaN only with equal_nan; same dtypes required."""
    _tensor_arg(input, "isclose")
    _tensor_arg(other, "isclose", "other", 2)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_TORCH_NAMES[str(input.dtype)[6:]]} did not match "
                           f"{_TORCH_NAMES[str(other.dtype)[6:]]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got "
                           f"{_format_double(rtol)}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got "
                           f"{_format_double(atol)}")
    from .autograd.grad_mode import no_grad
    with no_grad():
        close = input == other
        if equal_nan and input.is_floating_point():
            close |= input.isnan() & other.isnan()
        if rtol == 0 and atol == 0:
            return close
        if not input.is_floating_point():
            input, other = input.float(), other.float()
        allowed = atol + (rtol * other).abs()
        actual = (input - other).abs()
        return close | (actual.isfinite() & (actual <= allowed))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """True when isclose holds everywhere (a Python bool)."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):  # noqa: A002
    """True when both tensors have the same shape and equal elements (a Python bool; NaN is
    never equal)."""
    _tensor_arg(input, "equal")
    _tensor_arg(other, "equal", "other", 2)
    if input.shape != other.shape:
        return False
    return builtins.bool((input == other).all())


# ---- Tensor methods with keyword arguments ----

def _any_method(self, dim=None, keepdim=False):
    """True where any element is nonzero (over dim, or all of them)."""
    return _C._any_all(False, self, dim, keepdim)


def _all_method(self, dim=None, keepdim=False):
    """True where every element is nonzero (over dim, or all of them)."""
    return _C._any_all(True, self, dim, keepdim)


def _isclose_method(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise closeness to other (see mpamp.isclose)."""
    return isclose(self, other, rtol, atol, equal_nan)


def _allclose_method(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is close to other's (see mpamp.allclose)."""
    return allclose(self, other, rtol, atol, equal_nan)


def _equal_method(self, other):
    """Same shape and equal elements (see mpamp.equal)."""
    return equal(self, other)


def _contains(self, element):
    """element in tensor: whether any element equals it (a tensor or a number)."""
    if isinstance(element, (_C.TensorBase, numbers.Number)):
        return builtins.bool((element == self).any().item())
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                       f"a {type(element)}.")


for _name, _fn in (("any", _any_method), ("all", _all_method), ("isclose", _isclose_method),
                   ("allclose", _allclose_method), ("equal", _equal_method),
                   ("__contains__", _contains)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
del _name, _fn

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal", "greater",
           "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isnan", "isinf",
           "isfinite", "isposinf", "isneginf", "any", "all", "isclose", "allclose", "equal"]
