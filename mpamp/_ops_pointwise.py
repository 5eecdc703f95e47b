"""Functional forms of the pointwise ops (mpamp.add, mpamp.relu, ...). The work is in C:
_C._binary for two-operand ops and Tensor methods for one-operand ops."""
from . import _C

_ADD, _SUB, _MUL, _DIV, _POW = (_C.op_ids[n] for n in ("add", "sub", "mul", "div", "pow"))


def _tensor_arg(x, fname):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{fname}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


def add(input, other, *, alpha=1):  # noqa: A002 - torch's parameter names
    """input + alpha * other."""
    return _C._binary(_ADD, input, other, alpha)


def sub(input, other, *, alpha=1):  # noqa: A002
    """input - alpha * other."""
    return _C._binary(_SUB, input, other, alpha)


def mul(input, other):  # noqa: A002
    """input * other."""
    return _C._binary(_MUL, input, other, 1)


def div(input, other):  # noqa: A002
    """input / other (true division)."""
    return _C._binary(_DIV, input, other, 1)


true_divide = divide = div
multiply = mul
subtract = sub


def pow(input, exponent):  # noqa: A001,A002
    """input ** exponent."""
    return _C._binary(_POW, input, exponent, 1)


def neg(input):  # noqa: A002
    """-input."""
    return _tensor_arg(input, "neg").neg()


negative = neg


def relu(input):  # noqa: A002
    """max(input, 0)."""
    return _tensor_arg(input, "relu").relu()


def gelu(input, approximate="none"):  # noqa: A002
    """Gaussian error linear unit (exact, or the tanh approximation)."""
    return _tensor_arg(input, "gelu").gelu(approximate)


def silu(input):  # noqa: A002
    """input * sigmoid(input)."""
    return _tensor_arg(input, "silu").silu()


def sigmoid(input):  # noqa: A002
    """1 / (1 + exp(-input))."""
    return _tensor_arg(input, "sigmoid").sigmoid()


def tanh(input):  # noqa: A002
    """Hyperbolic tangent."""
    return _tensor_arg(input, "tanh").tanh()


def exp(input):  # noqa: A002
    """e ** input."""
    return _tensor_arg(input, "exp").exp()


def log(input):  # noqa: A002
    """Natural logarithm."""
    return _tensor_arg(input, "log").log()


def sqrt(input):  # noqa: A002
    """Square root."""
    return _tensor_arg(input, "sqrt").sqrt()


def rsqrt(input):  # noqa: A002
    """1 / sqrt(input)."""
    return _tensor_arg(input, "rsqrt").rsqrt()


def abs(input):  # noqa: A001,A002
    """Absolute value."""
    return _tensor_arg(input, "abs").abs()


__all__ = ["add", "sub", "mul", "div", "true_divide", "divide", "multiply", "subtract", "pow",
           "neg", "negative", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt",
           "rsqrt", "abs"]
