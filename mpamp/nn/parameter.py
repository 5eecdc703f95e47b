"""Parameter: a Tensor that Modules register as learnable state (torch.nn.Parameter).

A Parameter shares its data's storage: it is a detached header of that data whose class is
switched to Parameter (both classes have the C layout of _C.TensorBase). Ops on Parameters
return plain Tensors, as in torch.
"""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: requires grad by default, listed by parameters()."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C._empty((0,), None)
        elif not isinstance(data, _C.TensorBase):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        param = data.detach()
        param.__class__ = cls
        param.requires_grad_(requires_grad)
        return param

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (type(self), self.detach(), self.requires_grad))


def _rebuild_parameter(cls, data, requires_grad):
    return cls(data, requires_grad)
