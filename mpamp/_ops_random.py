"""Random ops beyond the factories: multinomial, randperm, bernoulli, normal and the in-place
fills Tensor.normal_/uniform_/exponential_/bernoulli_/random_. Arguments are checked here (with
torch's messages); the draws happen in C (csrc/core/ops/random_dist.c) on the generator's Philox
stream, so they are reproducible from manual_seed or generator=, but are not torch's numbers.
"""
from . import _C
from ._random import default_generator
from ._tensor import Tensor, _TORCH_NAMES

# the largest n whose values the dtype holds exactly (2^mantissa + 1), with torch's name
_LIMITS = {name: (2 ** bits + 1, _TORCH_NAMES[name])
           for name, bits in (("float16", 11), ("bfloat16", 8), ("float32", 24))}
# random_() without 'to': torch's ranges ([0, 2^mantissa] for floats, the dtype's range else).
_RANDOM_TO = {"float32": 2 ** 24 + 1, "float16": 2 ** 11 + 1, "bfloat16": 2 ** 8 + 1,
              "int64": 2 ** 63 - 1, "uint8": 256, "bool": 2}
_INT_BOUNDS = {"uint8": (0, 255, "unsigned char"), "bool": (0, 1, "bool")}


def _gen(generator):
    return default_generator if generator is None else generator


def _name(dtype):
    return repr(dtype).split(".")[-1]


def _fmt(x):
    """A number as torch's messages print it (C++ stream style: 2, 0.5, -1.5)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _check_int_arg(fname, arg, pos, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{type(v).__name__}")


def _check_tensor(fname, v):
    if not isinstance(v, _C.TensorBase):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(v).__name__}")


def _fill(t, kind, a, b, name, generator):
    return _gen(generator)._draw(_C._random_inplace_, t, kind, a, b, name)


def _float_only(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_TORCH_NAMES[_name(t.dtype)]}'")




# ---- in-place fills (Tensor methods) ----

def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal draws N(mean, std^2) in place."""
    _float_only(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
    return _fill(self, "normal", mean, std, "normal_", generator)


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with uniform draws in [from, to) in place."""
    from_ = kwargs.pop("from", from_)
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    _float_only(self, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt(from_)} > to={_fmt(to)}")
    return _fill(self, "uniform", from_, to, "uniform_", generator)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential draws of rate lambd in place."""
    return _fill(self, "exponential", lambd, 0, "exponential_", generator)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 draws, 1 with probability p (a number or a broadcastable tensor)."""
    return _fill(self, "bernoulli", p, 0, "bernoulli_", generator)


def random_(self, *args, generator=None, **kwargs):
    """random_(to), random_(from, to) or random_(): integers uniform in [from, to) in place
    (without 'to': [0, 2^mantissa] for floats, the dtype's range for integers, except that
    int64 stops at 2^63 - 2)."""
    bad = set(kwargs) - {"from", "to"}
    if bad or len(args) > 2:
        raise TypeError(f"random_() got an unexpected keyword argument '{min(bad)}'" if bad
                        else f"random_() takes at most 2 arguments ({len(args)} given)")
    if len(args) == 1 and not kwargs:
        from_, to = 0, args[0]
    else:
        vals = dict(zip(("from", "to"), args))
        for k, v in kwargs.items():
            if k in vals:
                raise TypeError(f"random_() got multiple values for argument '{k}'")
            vals[k] = v
        from_, to = vals.get("from", 0), vals.get("to")
    name = _name(self.dtype)
    if to is None:
        to = _RANDOM_TO[name]
    _check_int_arg("random_", "from", 1, from_)
    _check_int_arg("random_", "to", 2, to)
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={from_} >= to={to}")
    if name in _INT_BOUNDS:
        lo, hi, cname = _INT_BOUNDS[name]
        if not lo <= from_ <= hi:
            raise RuntimeError(f"from is out of bounds for {cname}")
        if not lo <= to - 1 <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {cname}")
    return _fill(self, "int", from_, to, "random_", generator)


# ---- functions ----

def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):  # noqa: A002
    """num_samples category indices per row of input (unnormalised probabilities), int64."""
    _check_tensor("multinomial", input)
    _check_int_arg("multinomial", "num_samples", 2, num_samples)
    if out is not None:
        raise TypeError("multinomial(): out= is not supported by mpamp")
    return _gen(generator)._draw(_C._multinomial, input, num_samples, bool(replacement))


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """A random permutation of 0..n-1 (int64 unless dtype says otherwise)."""
    from ._factories import _check_device
    dev = _check_device(device)
    _check_int_arg("randperm", "n", 1, n)
    if out is not None:
        raise TypeError("randperm(): out= is not supported by mpamp")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = _C.int64 if dtype is None else _C._empty((0,), dtype).dtype
    name = _name(dt)
    if name == "bool":
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if name == "uint8" and n > 256:
        raise RuntimeError("value cannot be converted to type uint8_t without overflow")
    if name in _LIMITS and n > _LIMITS[name][0]:
        limit, cname = _LIMITS[name]
        shown = "2^24+1" if name == "float32" else str(limit)
        raise RuntimeError(f"n cannot be greater than {shown} for {cname} type.")
    t = _gen(generator)._draw(_C._randperm, n, dt)
    if dev is not None:
        t = t._to_device(1)
    if requires_grad:
        t.requires_grad_(True)
    return t


def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002
    """0/1 draws shaped like input: 1 with probability input[i] (or p when given)."""
    _check_tensor("bernoulli", input)
    if out is not None:
        raise TypeError("bernoulli(): out= is not supported by mpamp")
    result = _C._empty(tuple(input.shape), input.dtype)
    if p is None:
        if not input.dtype.is_floating_point:
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{_TORCH_NAMES[_name(input.dtype)]}'")
        p = input.detach()
    return _fill(result, "bernoulli", p, 0, "bernoulli", generator)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False):
    """Normal draws: normal(mean, std, size) for numbers, or per element for tensor mean/std
    (differentiable in mean and std: the result is mean + std * z)."""
    from ._factories import _check_device, randn
    dev = _check_device(device)
    if out is not None:
        raise TypeError("normal(): out= is not supported by mpamp")
    tm, ts = isinstance(mean, _C.TensorBase), isinstance(std, _C.TensorBase)
    if not tm and not ts:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: with "
                            "a number mean and std, size is required: normal(mean, std, size)")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
        z = randn(size, generator=generator, dtype=dtype, device=device)
        res = z * std + mean if (std != 1 or mean != 0) else z
        return res.requires_grad_(True) if requires_grad else res
    if size is not None:
        raise TypeError("normal(): size is only accepted with a number mean and std")
    if ts:
        if (std.detach() < 0).any().item():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
    m0 = mean if tm else _C._full((), mean, _C.float32)
    s0 = std if ts else _C._full((), std, _C.float32)
    both = m0.detach() * s0.detach()          # the broadcast shape and the result dtype
    z = randn(tuple(both.shape), generator=generator, dtype=both.dtype, device=both.device)
    return z * std + mean


# ---- Tensor methods ----

def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    """multinomial(self, ...)."""
    return multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli_method(self, p=None, *, generator=None):
    """bernoulli(self, p)."""
    return bernoulli(self, p, generator=generator)


for _n, _f in (("normal_", normal_), ("uniform_", uniform_), ("exponential_", exponential_),
               ("bernoulli_", bernoulli_), ("random_", random_),
               ("multinomial", _multinomial_method), ("bernoulli", _bernoulli_method)):
    setattr(Tensor, _n, _f)
del _n, _f

__all__ = ["multinomial", "randperm", "bernoulli", "normal"]
