"""ReduceOp (torch.distributed.ReduceOp) and the rules for which op suits which dtype, checked
on the caller's thread before a collective is issued (with torch's messages)."""
import enum

__all__ = ["ReduceOp", "RedOpType", "check_op"]


class RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class ReduceOp:
    """Reduction operations for all_reduce, reduce and reduce_scatter."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED


_BITWISE = (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR)
_TORCH_NAME = {"int64": "Long", "uint8": "Byte", "bool": "Bool"}


def check_op(op, dtype, fname):
    """op as a RedOpType valid for dtype (torch's errors for the ones that are not)."""
    if not isinstance(op, RedOpType):
        raise TypeError(f"{fname}(): op must be a mpamp.distributed.ReduceOp (e.g. "
                        f"ReduceOp.SUM), got {op!r}")
    if op in (RedOpType.PREMUL_SUM, RedOpType.UNUSED):
        raise ValueError(f"{fname}(): ReduceOp.{op.name} is not supported by mpamp.distributed;"
                         f" use ReduceOp.SUM and scale the tensor")
    name = str(dtype).rsplit(".", 1)[-1]
    floating = dtype.is_floating_point
    if floating and op in _BITWISE:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if not floating and op is RedOpType.AVG:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_TORCH_NAME.get(name, name)}")
    return op
