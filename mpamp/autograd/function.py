"""autograd.Function: user-defined ops with Python forward/backward, recorded as one node of
the C tape whose backward calls back into Python."""
from .. import _C
from .grad_mode import no_grad


class FunctionCtx:
    """The ctx passed to forward/backward: save_for_backward, saved_tensors, needs_input_grad,
    mark_non_differentiable, set_materialize_grads."""

    def __init__(self):
        self._saved = ()
        self.needs_input_grad = ()
        self._non_diff = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward."""
        for i, t in enumerate(tensors):     # by position: tensors == t would compare values
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._saved = tuple(None if t is None else t.detach() for t in tensors)

    @property
    def saved_tensors(self):
        """The tensors given to save_for_backward."""
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient."""
        self._non_diff.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        """When True (default), None output gradients reach backward as zeros."""
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_name = f"{name}Backward"


class Function(metaclass=_FunctionMeta):
    """Subclass with @staticmethod forward(ctx, *args) and backward(ctx, *grad_outputs);
    call with .apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs (runs without recording)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Gradients of the inputs from gradients of the outputs."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward and record one node whose backward is cls.backward."""
        ctx = FunctionCtx()
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, _C.TensorBase)]
        ctx.needs_input_grad = tuple(isinstance(a, _C.TensorBase) and a.requires_grad
                                     for a in args)
        with no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        inputs = [args[i] for i in tensor_pos]
        # An input returned as is becomes a new view, so the input keeps its own history.
        outs = tuple(o.view_as(o) if any(o is a for a in inputs) else o for o in outs)
        diff_outs = [o if isinstance(o, _C.TensorBase) and id(o) not in ctx._non_diff and
                     o.dtype.is_floating_point else None for o in outs]
        shapes = [None if o is None else tuple(o.shape) for o in diff_outs]
        dtypes = [None if o is None else o.dtype for o in diff_outs]

        def backward_callback(*grads):
            if ctx.materialize_grads:
                grads = tuple(_zeros(shapes[i], dtypes[i]) if g is None and shapes[i] is
                              not None else g for i, g in enumerate(grads))
            res = cls.backward(ctx, *grads)
            res = res if isinstance(res, tuple) else (res,)
            if len(res) != len(args):
                raise RuntimeError(f"function {cls._backward_name} returned an incorrect "
                                   f"number of gradients (expected {len(args)}, got "
                                   f"{len(res)})")
            return tuple(res[i] for i in tensor_pos)

        _C._record_function(cls._backward_name, backward_callback, inputs, diff_outs)
        return outs[0] if single else outs


def _zeros(shape, dtype):
    return _C._full(shape, 0, dtype)
