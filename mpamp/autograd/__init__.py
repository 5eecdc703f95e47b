"""mpamp.autograd: reverse-mode differentiation. The tape and the engine are C; this module
parses arguments the way torch.autograd does."""
from .. import _C
from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                        set_grad_enabled)

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled"]


def _as_tuple(x, name):
    if x is None:
        return None
    if isinstance(x, _C.TensorBase):
        return (x,)
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{name} must be a Tensor or a sequence of Tensors, got "
                        f"{type(x).__name__}") from None


def _grads_for(outputs, grad_outputs):
    if grad_outputs is None:
        return [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_tensors has {len(grad_outputs)} elements but tensors has "
                           f"{len(outputs)}")
    return list(grad_outputs)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into every leaf's .grad (torch.autograd.backward)."""
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not "
                                  "supported by mpamp")
    tensors = _as_tuple(tensors, "tensors")
    grads = _grads_for(tensors, _as_tuple(grad_tensors, "grad_tensors"))
    if inputs is not None:
        inputs = _as_tuple(inputs, "inputs")
        found = _C._grad(tensors, grads, inputs, bool(retain_graph))
        for leaf, g in zip(inputs, found):
            if g is not None:
                with no_grad():
                    leaf.grad = g.to(leaf.dtype, copy=True) if leaf.grad is None else \
                        leaf.grad + g
        return
    _C._backward(tensors, grads, bool(retain_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Gradients of outputs with respect to inputs, returned (not accumulated)."""
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not "
                                  "supported by mpamp")
    outputs = _as_tuple(outputs, "outputs")
    inputs = _as_tuple(inputs, "inputs")
    grads = _grads_for(outputs, _as_tuple(grad_outputs, "grad_outputs"))
    res = _C._grad(outputs, grads, inputs, bool(retain_graph))
    if materialize_grads:
        res = tuple(g if g is not None else _C._full(tuple(i.shape), 0, i.dtype)
                    for g, i in zip(res, inputs))
    elif not allow_unused and any(g is None for g in res):
        raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                           "in the graph. Set allow_unused=True if this is the desired "
                           "behavior.")
    return res
