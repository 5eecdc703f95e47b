"""einsum, outer and ger, composed from C ops (views, mul, sum and bmm), so autograd comes from
those ops and every product runs on the GEMM. einsum follows torch's equation syntax: letters
a-z A-Z, `...` (broadcast dims, aligned from the right), an explicit `->output` or the implicit
output (the ellipsis dims, then the letters used once, in torch's order: A-Z before a-z), the
sublist form einsum(op, [0, 1], op, [1, 2], [0, 2]), and size-1 broadcasting of a letter.
Operands are contracted left to right: letters used by one operand only are summed first,
each pair becomes one bmm of (batch, rows, contracted) by (batch, contracted, columns). A
letter repeated within an operand (diagonals, traces: 'ii->i', 'ii') is taken by multiplying
with an identity mask and summing, which is exact and differentiable but costs the operand's
size in memory, not a view as in torch."""
import numpy as np

from . import _C
from ._factories import from_numpy
from ._tensor import Tensor, _TORCH_NAMES

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ELL = "..."


def _err(msg):
    return RuntimeError("einsum(): " + msg)


def _parse_term(term, start, what):
    """Labels of one term: letters and at most one '...'; start: its index in the equation."""
    labels, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != _ELL:
                raise _err(f"found '.' for {what} that is not part of any ellipsis (...)")
            if _ELL in labels:
                raise _err(f"found more than one ellipsis ('...') for {what}")
            labels.append(_ELL)
            i += 3
            continue
        if c == " ":
            i += 1
            continue
        if c not in _LETTERS:
            raise _err(f"invalid subscript given at index {start + i} in the equation string, "
                       "subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def _parse(equation, n_ops):
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    terms, pos = [], 0
    for k, t in enumerate(lhs.split(",")):
        terms.append(_parse_term(t, pos, f"operand {k}"))
        pos += len(t) + 1
    if len(terms) > n_ops:
        raise _err("fewer operands were provided than specified in the equation")
    if len(terms) < n_ops:
        raise _err("more operands were provided than specified in the equation")
    out = None if arrow < 0 else _parse_term(equation[arrow + 2:], arrow + 2, "output")
    return terms, out


def _sublist_equation(args):
    """The equation string of einsum(op1, sublist1, op2, sublist2, ..., [out_sublist])."""
    def letters(sub):
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += _ELL
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 52:
                s += _LETTERS[v]
            else:
                raise ValueError("einsum(): expected subscript to be within the range [0, 52), "
                                 f"but got {v}")
        return s
    ops, terms = list(args[0::2]), [letters(s) for s in args[1::2]]
    out = None
    if len(ops) > len(terms):         # the last item was the output sublist
        out = letters(ops.pop())
    return ",".join(terms) + ("" if out is None else "->" + out), ops


def _expand_labels(terms, ops):
    """Per operand: its labels with '...' replaced by ('.', j) for the j-th broadcast dim
    (counted from the right over all operands); returns (labels, number of ellipsis dims)."""
    n_ell, out = 0, []
    for k, (lab, x) in enumerate(zip(terms, ops)):
        named = len(lab) - (_ELL in lab)
        if _ELL not in lab and named != x.ndim:
            raise _err(f"the number of subscripts in the equation ({named}) does not match the "
                       f"number of dimensions ({x.ndim}) for operand {k} and no ellipsis was "
                       "given")
        if _ELL in lab and named > x.ndim:
            raise _err(f"the number of subscripts in the equation ({named}) is more than the "
                       f"number of dimensions ({x.ndim}) for operand {k}")
        n_ell = max(n_ell, x.ndim - named)
    for lab, x in zip(terms, ops):
        if _ELL in lab:
            e = x.ndim - (len(lab) - 1)
            at = lab.index(_ELL)
            lab = lab[:at] + [(".", e - 1 - j) for j in range(e)] + lab[at + 1:]
        out.append(lab)
    return out, n_ell


def _output_labels(terms, out, labels, n_ell):
    if out is None:                   # implicit: ellipsis dims, then letters used once
        counts = {}
        for lab in terms:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        ell = [(".", j) for j in range(n_ell - 1, -1, -1)]
        return ell + sorted((c for c, n in counts.items() if n == 1 and c != _ELL),
                            key=_LETTERS.index)
    seen = set()
    for c in out:
        if c in seen:
            raise _err(f"output subscript {c} appears more than once in the output")
        seen.add(c)
        if c != _ELL and not any(c in lab for lab in terms):
            raise _err(f"output subscript {c} does not appear in the equation for any input "
                       "operand")
    res = []
    for c in out:
        res += [(".", j) for j in range(n_ell - 1, -1, -1)] if c == _ELL else [c]
    return res


def _check_sizes(labels, ops):
    sizes = {}
    for k, (lab, x) in enumerate(zip(labels, ops)):
        mine = {}
        for c, n in zip(lab, x.shape):
            if c in mine and mine[c] != n:
                raise _err(f"subscript {c} is repeated for operand {k} but the sizes don't "
                           f"match, {n} != {mine[c]}")
            mine[c] = n
        for c, n in mine.items():
            seen = sizes.get(c, 1)
            if seen != 1 and n != 1 and n != seen:
                name = c if isinstance(c, str) else "..."
                raise _err(f"subscript {name} has size {n} for operand {k} which does not "
                           f"broadcast with previously seen size {seen}")
            sizes[c] = n if seen == 1 else seen
    return sizes


def _take_diagonals(x, lab):
    """x with every repeated label reduced to its diagonal (mask and sum)."""
    while True:
        dup = next((c for i, c in enumerate(lab) if c in lab[:i]), None)
        if dup is None:
            return x, lab
        p1 = lab.index(dup)
        p2 = lab.index(dup, p1 + 1)
        n = x.shape[p1]
        shape = [1] * x.ndim
        shape[p1] = shape[p2] = n
        eye = from_numpy(np.eye(n, dtype=np.float32).reshape(shape)).to(x.dtype)
        x = (x * eye).sum(p2)
        lab = lab[:p2] + lab[p2 + 1:]


def _sum_out(x, lab, keep):
    """x summed over the labels not in keep."""
    dims = [i for i, c in enumerate(lab) if c not in keep]
    if not dims:
        return x, lab
    return x.sum(tuple(dims)), [c for c in lab if c in keep]


def _permute(x, lab, order):
    perm = [lab.index(c) for c in order]
    return (x if perm == list(range(len(perm))) else x.permute(*perm)), list(order)


def _prod(sizes):
    p = 1
    for s in sizes:
        p *= s
    return p


def _contract(a, la, b, lb, keep, sizes):
    """The pair product over the labels both share and keep does not need."""
    batch = [c for c in la if c in lb and c in keep]
    inner = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    full = {c: sizes[c] for c in batch + inner}
    a, la = _permute(a, la, batch + left + inner)
    b, lb = _permute(b, lb, batch + inner + right)
    ash = [full.get(c, n) for c, n in zip(la, a.shape)]       # broadcast size-1 letters
    bsh = [full.get(c, n) for c, n in zip(lb, b.shape)]
    if list(a.shape) != ash:
        a = a.expand(*ash)
    if list(b.shape) != bsh:
        b = b.expand(*bsh)
    nb, nk = _prod(ash[:len(batch)]), _prod(full[c] for c in inner)
    m, n = _prod(ash[len(batch):len(batch) + len(left)]), _prod(bsh[len(batch) + len(inner):])
    y = _C._bmm(a.reshape(nb, m, nk), b.reshape(nb, nk, n))
    out_shape = ash[:len(batch) + len(left)] + bsh[len(batch) + len(inner):]
    return y.reshape(*out_shape) if out_shape else y.reshape(()), batch + left + right


def _operands(args):
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, ops = args[0], list(args[1:])
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
    else:
        equation, ops = _sublist_equation(args)
    for k, x in enumerate(ops):
        if not isinstance(x, _C.TensorBase):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not {type(x).__name__}")
    return equation, ops


def _check_dtypes(ops):
    autocast = _C._is_autocast_enabled("cpu") or _C._is_autocast_enabled("cuda")
    if len({x.dtype for x in ops}) > 1 and not autocast:
        other = next(x.dtype for x in ops if x.dtype != ops[0].dtype)
        raise RuntimeError(f"expected scalar type {_TORCH_NAMES[str(ops[0].dtype)[6:]]} but "
                           f"found {_TORCH_NAMES[str(other)[6:]]}")


def einsum(*args):
    """Sums of products over the subscripts of an equation, e.g. einsum('bij,bjk->bik', a, b)."""
    equation, ops = _operands(args)
    terms, out = _parse(equation, len(ops))
    labels, n_ell = _expand_labels(terms, ops)
    out_labels = _output_labels(terms, out, labels, n_ell)
    sizes = _check_sizes(labels, ops)
    if len(ops) <= 8:
        ops = list(_C._autocast_cast("einsum", *ops))
    _check_dtypes(ops)
    items = [_take_diagonals(x, list(lab)) for x, lab in zip(ops, labels)]
    for k in range(len(items)):
        others = set(out_labels).union(*(set(lab) for j, (_, lab) in enumerate(items) if j != k))
        items[k] = _sum_out(items[k][0], items[k][1], others)
    x, lab = items[0]
    for k in range(1, len(items)):
        keep = set(out_labels).union(*(set(lab2) for _, lab2 in items[k + 1:]))
        x, lab = _contract(x, lab, items[k][0], items[k][1], keep, sizes)
    x, lab = _sum_out(x, lab, set(out_labels))
    x, lab = _permute(x, lab, out_labels)
    want = [sizes[c] for c in out_labels]
    return x if list(x.shape) == want else x.expand(*want)


def outer(input, vec2):  # noqa: A002 - torch's names
    """The outer product of two 1-D tensors: out[i, j] = input[i] * vec2[j]."""
    for name, v in (("self", input), ("vec2", vec2)):
        if not isinstance(v, _C.TensorBase):
            raise TypeError(f"outer(): argument '{'input' if name == 'self' else name}' must "
                            f"be Tensor, not {type(v).__name__}")
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return input.reshape(-1, 1) * vec2


ger = outer


def _outer_method(self, vec2):
    """The outer product of self and vec2."""
    return outer(self, vec2)


_outer_method.__name__ = _outer_method.__qualname__ = "outer"
Tensor.outer = Tensor.ger = _outer_method

__all__ = ["einsum", "outer", "ger"]
