"""ParameterList and ParameterDict (torch.nn's): containers whose members are registered
parameters, named "0", "1", ... (or by key) in parameters() and state_dict(). Plain tensors
put in become Parameters, as torch's; other objects are kept as plain attributes."""
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from ..._tensor import Tensor
from ..parameter import Parameter
from .container import _abs_index
from .module import Module

__all__ = ["ParameterList", "ParameterDict"]


def _as_member(value):
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value, type_name):
    """torch's one-line description of a member in the containers' repr."""
    if not isinstance(value, Tensor):
        return "Object of type: " + type(value).__name__
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    size = "x".join(str(s) for s in value.shape)
    device = f" ({value.device})" if value.is_cuda else ""
    return f"{kind} containing: [{type_name(value)} of size {size}{device}]"


class ParameterList(Module):
    """A list of parameters registered with the module (no forward of its own)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(len(self))[idx]:
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(self, idx)))

    def __setitem__(self, idx, param):
        setattr(self, str(_abs_index(self, idx)), _as_member(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")

    def append(self, value):
        """Add value at the end; returns self."""
        index = len(self)
        self._size += 1
        setattr(self, str(index), _as_member(value))
        return self

    def extend(self, values):
        """Append every value of an iterable; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " +
                            type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({i}): " + _describe(p, lambda t: str(t.dtype))
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters registered with the module (no forward of its own)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = OrderedDict()
        if parameters is not None:
            self.update(parameters)

    def _key(self, key):
        if not isinstance(key, str):
            raise TypeError(f"keys of a ParameterDict must be str, got {type(key).__name__}")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key(key))

    def __setitem__(self, key, value):
        self._keys[self._key(key)] = None
        setattr(self, key, _as_member(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

    def copy(self):
        """A new ParameterDict holding the same members."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        """self[key], set to default first when absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        """Remove every member."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        """Remove key and return its member."""
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Remove and return the last (key, member) pair."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = next(reversed(self._keys))
        val = self[k]
        del self[k]
        return k, val

    def get(self, key, default=None):
        """self[key] if present, else default."""
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        """A new ParameterDict with each key set to default."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self):
        """(key, member) pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """The members, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Add or overwrite from a mapping or an iterable of (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be "
                                    f"Iterable; is{type(p).__name__}")
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length "
                                     f"{len(p)}; 2 is required")
                pairs.append(tuple(p))
        for k, v in pairs:
            self[k] = v

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): " + _describe(p, lambda t: t.type())
                         for k, p in self.items())
