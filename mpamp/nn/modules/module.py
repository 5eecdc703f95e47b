"""Module: the base class of layers and models, as torch.nn.Module.

Parameters, buffers and child modules live in three ordered dicts that __setattr__ fills and
__getattr__ reads, so traversal, state_dict keys and repr come out in torch's order.
Conversions (to/half/bfloat16/...) rebind each Parameter's data in place (_C._set_data), so
a Parameter keeps its identity and optimizers built before `.half()` still see it.
"""
from collections import OrderedDict

from ... import _C, cuda
from ..._size import device as _device
from ..._tensor import Tensor, _is_dtype_string, _no_cuda_message
from ...autograd import no_grad
from ..parameter import Parameter
from ..utils.hooks import RemovableHandle
from . import _state_dict

__all__ = ["Module"]


def _addindent(s_, num_spaces):
    lines = s_.split("\n")
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    rest = [(num_spaces * " ") + line if line.strip() else "" for line in lines]
    return first + "\n" + "\n".join(rest)


def _typename(obj):
    """torch.typename: 'mpamp.FloatTensor' for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    if cls.__module__ in (None, "builtins"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _forward_unimplemented(self, *input):  # noqa: A002 - torch's name
    """The computation of the module: every subclass defines it."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              f'"forward" function')


def _check_cuda():
    if not cuda.is_available():
        raise RuntimeError(_no_cuda_message())


def _parse_to(args, kwargs):
    """(device, dtype, non_blocking) from Module.to's torch-style arguments."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, _C.TensorBase):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _C.dtype) or _is_dtype_string(a):
            dtype = a
        elif isinstance(a, bool):
            non_blocking = a
        else:
            device = a
    if dtype is not None:
        dtype = _C._empty((0,), dtype).dtype     # the C parser: strings -> dtype objects
    if device is not None:
        device = _device(device)
    return device, dtype, non_blocking


class Module:
    """Base class for all layers and models: subclass it and define forward()."""

    _version = 1
    training: bool

    def __init__(self):
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_modules", {})
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", {})
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", {})

    forward = _forward_unimplemented

    # ---- calling ----

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    def _register_hook(self, hooks, flags, hook, prepend, with_kwargs):
        handle = RemovableHandle(hooks, flags)
        hooks[handle.id] = hook
        if with_kwargs:
            flags[handle.id] = True
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call hook(module, args) (or (module, args, kwargs)) before every forward."""
        return self._register_hook(self._forward_pre_hooks,
                                   self._forward_pre_hooks_with_kwargs, hook, prepend,
                                   with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call hook(module, args, output) (or with kwargs) after every forward."""
        return self._register_hook(self._forward_hooks, self._forward_hooks_with_kwargs, hook,
                                   prepend, with_kwargs)

    # ---- registration ----

    def _check_member_name(self, kind, name, members):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in members:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """Add a tensor to the module's state (saved in state_dict unless persistent=False)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_member_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, _C.TensorBase):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a Parameter (or None) under name."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_member_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (or None) under name."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at a dotted path such as 'encoder.layers.0'."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    # ---- attribute protocol ----

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = d.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers,
                        self._non_persistent_buffers_set)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _C.TensorBase):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            buffers[name] = value
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) +
                list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # ---- traversal ----

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        """Iterator over the parameters (each shared one once)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterator over (dotted name, parameter)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        """Iterator over the buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterator over (dotted name, buffer)."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        """Iterator over the direct child modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """Iterator over (name, direct child module), each module once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        """Iterator over this module and all its descendants."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Iterator over (dotted name, module) for this module and its descendants."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    # ---- modes and gradients ----

    def train(self, mode=True):
        """Set training mode on this module and its descendants; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the parameters' gradients (to None by default, else to zeros)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    # ---- conversions ----

    def _apply(self, fn):
        for module in self.children():
            module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            grad = param.grad
            with no_grad():
                applied = fn(param)
                if applied is not param:
                    _C._set_data(param, applied)
                if grad is not None:
                    grad_applied = fn(grad)
                    if grad_applied is not param.grad:   # dropped: dtype or shape changed
                        param.grad = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Call fn on every descendant, then on self (e.g. for initialisation); returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Convert floating-point parameters and buffers: to(dtype), to(device), to(tensor)."""
        device, dtype, non_blocking = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
        if device is not None and device.type == "cuda":
            _check_cuda()

        def convert(t):
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None,
                        non_blocking=non_blocking)
        return self._apply(convert)

    def cuda(self, device=None):
        """Move to a CUDA device (RuntimeError without one)."""
        _check_cuda()
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        """Move to the CPU (where mpamp tensors already are)."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        """Convert all parameters and buffers to dst_type."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        """Floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def half(self):
        """Floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def double(self):
        """Unsupported: mpamp has no float64."""
        raise TypeError("mpamp has no float64 dtype; use .float() (float32)")

    # ---- state_dict ----

    def get_extra_state(self):
        """Extra (non-tensor) state for state_dict; override together with set_extra_state."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state):
        """Restore what get_extra_state returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if self._has_extra_state():
            destination[prefix + _state_dict.EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of parameters and persistent buffers by dotted name (detached)."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own entries (not its children's); collects problems in lists."""
        _state_dict.load_local(self, state_dict, prefix, local_metadata, strict, missing_keys,
                               unexpected_keys, error_msgs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict; returns (missing, unexpected) keys."""
        return _state_dict.load(self, state_dict, strict, assign)

    # ---- repr ----

    def extra_repr(self):
        """The text inside this module's parentheses in repr (override in layers)."""
        return ""

    def _get_name(self):
        return self.__class__.__name__

    def __repr__(self):
        extra_repr = self.extra_repr()
        extra_lines = extra_repr.split("\n") if extra_repr else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"
