"""Functional forms of the math ops added for real training code (mpamp.sin, mpamp.floor,
mpamp.round(decimals=), mpamp.remainder, ...). The work is in C: Tensor methods for the
one-operand ops, _C._remainder for remainder and fmod (either operand may be a number)."""
from . import _C


def _tensor_arg(x, fname):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _unary(name, doc):
    def fn(input):  # noqa: A002 - torch's parameter name
        return getattr(_tensor_arg(input, name), name)()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


sin = _unary("sin", "Sine.")
cos = _unary("cos", "Cosine.")
erf = _unary("erf", "Error function.")
log1p = _unary("log1p", "log(1 + input), accurate near 0.")
expm1 = _unary("expm1", "exp(input) - 1, accurate near 0.")
sign = _unary("sign", "-1, 0 or 1 by sign (0 for NaN); int64 stays int64, bool stays bool.")
sgn = _unary("sgn", "sign (mpamp has no complex tensors).")
floor = _unary("floor", "Largest integer <= input (int64 unchanged).")
ceil = _unary("ceil", "Smallest integer >= input (int64 unchanged).")
trunc = _unary("trunc", "Round toward zero (int64 unchanged).")
fix = _unary("fix", "trunc.")
square = _unary("square", "input * input (bool gives int64).")
reciprocal = _unary("reciprocal", "1 / input (integers give float32).")
log2 = _unary("log2", "Base-2 logarithm.")
log10 = _unary("log10", "Base-10 logarithm.")


def round(input, *, decimals=None):  # noqa: A001,A002
    """Round half to even; with decimals=, at 10 ** -decimals (float tensors only)."""
    t = _tensor_arg(input, "round")
    return t.round() if decimals is None else t.round(decimals=decimals)


def remainder(input, other):  # noqa: A002
    """Python's modulo (the result has other's sign); input or other may be a number."""
    return _C._remainder(False, input, other)


def fmod(input, other):  # noqa: A002
    """C's fmod (the result has input's sign)."""
    _tensor_arg(input, "fmod")
    return _C._remainder(True, input, other)


__all__ = ["sin", "cos", "erf", "log1p", "expm1", "sign", "sgn", "floor", "ceil", "trunc",
           "fix", "square", "reciprocal", "log2", "log10", "round", "remainder", "fmod"]
