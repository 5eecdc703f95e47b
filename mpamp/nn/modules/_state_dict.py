"""Loading a state_dict into a Module tree, with torch's checks and messages: missing and
unexpected keys, size mismatches, and the _IncompatibleKeys result. Saving is short and stays
in module.py."""
import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C
from ...autograd import no_grad
from ..parameter import Parameter

EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict(strict=False) could not match."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _local_state(module):
    """The module's own parameters and persistent buffers, by name (None skipped)."""
    buffers = ((k, v) for k, v in module._buffers.items()
               if k not in module._non_persistent_buffers_set)
    return {k: v for k, v in itertools.chain(module._parameters.items(), buffers)
            if v is not None}


def _assign(module, name, param, value):
    if isinstance(param, Parameter):
        if not isinstance(value, Parameter):
            value = Parameter(value, requires_grad=param.requires_grad)
        else:
            value.requires_grad_(param.requires_grad)
    setattr(module, name, value)


def _check_value(key, param, value, error_msgs):
    """value ready to copy into param, or None after recording why not."""
    if not isinstance(value, _C.TensorBase):
        error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                          f"or Tensor-like object from checkpoint but received {type(value)}")
        return None
    if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
        value = value[0]                        # a torch 0.3 checkpoint's 0-d tensor
    if value.shape != param.shape:
        error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} "
                          f"from checkpoint, the shape in current model is {param.shape}.")
        return None
    return value


def load_local(module, state_dict, prefix, local_metadata, strict, missing_keys,
               unexpected_keys, error_msgs):
    """Module._load_from_state_dict: this module's own entries, not its children's (key
    problems are collected only when strict, as torch; load() always passes True)."""
    local_state = _local_state(module)
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, param in local_state.items():
        key = prefix + name
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            continue
        value = _check_value(key, param, state_dict[key], error_msgs)
        if value is None:
            continue
        try:
            with no_grad():
                if assign:
                    _assign(module, name, param, value)
                else:
                    param.copy_(value)
        except Exception as ex:  # noqa: BLE001 - reported with the others, as torch does
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                              f"in the model are {param.size()} and whose dimensions in the "
                              f"checkpoint are {value.size()}, an exception occurred : "
                              f"{ex.args}.")
    extra_key = prefix + EXTRA_STATE_KEY_SUFFIX
    if module._has_extra_state():
        if extra_key in state_dict:
            module.set_extra_state(state_dict[extra_key])
        elif strict:
            missing_keys.append(extra_key)
    elif strict and extra_key in state_dict:
        unexpected_keys.append(extra_key)
    if not strict:
        return
    for key in state_dict:
        if key.startswith(prefix) and key != extra_key:
            head = key[len(prefix):].split(".", 1)
            known = module._modules if len(head) > 1 else local_state
            if head[0] not in known:
                unexpected_keys.append(key)


def load(root, state_dict, strict, assign):
    """Module.load_state_dict."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing_keys, unexpected_keys, error_msgs = [], [], []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)

    def visit(module, local_state_dict, prefix):
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                     missing_keys, unexpected_keys, error_msgs)
        for name, child in module._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                visit(child, {k: v for k, v in local_state_dict.items()
                              if k.startswith(child_prefix)}, child_prefix)

    visit(root, state_dict, "")
    if strict:
        if unexpected_keys:
            error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected_keys)))
        if missing_keys:
            error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing_keys)))
    if error_msgs:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            root.__class__.__name__, "\n\t".join(error_msgs)))
    return _IncompatibleKeys(missing_keys, unexpected_keys)
