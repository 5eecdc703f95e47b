"""einsum (explicit and implicit outputs, '...', broadcasting of size-1 letters, diagonals and
traces, several operands, the sublist form), outer and ger: forward against np.einsum and
backward against a NumPy reference built from einsum's linearity (the gradient for element e
of an operand is sum(g * einsum(eq, ..., basis_e, ...))), per dtype; torch's errors; and
against torch where it is installed."""
import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (5,)]),
    ("ij->ji", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ba", [(2, 3)]),
    ("Ab", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("...->", [(2, 3)], "ij->"),           # NumPy refuses to drop '...' in the output
    ("ij,ij->", [(1, 3), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ab,cd,bd->ac", [(2, 3), (4, 5), (3, 5)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
    ("ij,kj->ikj", [(2, 3), (4, 3)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("->", [()]),
    (",i->i", [(), (3,)]),
]


def mk(arr, dtype="float32", requires_grad=False):
    t = mpamp.tensor(np.asarray(arr, np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def np_eq(case):
    return (case[2] if len(case) > 2 else case[0]).replace(" ", "")


def np_grads(eq, arrs, g):
    out = []
    for k, a in enumerate(arrs):
        gk = np.zeros(a.shape, np.float64)
        for e in np.ndindex(*a.shape):
            basis = np.zeros(a.shape)
            basis[e] = 1.0
            ops = [basis if j == k else arrs[j] for j in range(len(arrs))]
            gk[e] = np.sum(g * np.einsum(eq, *ops))
        out.append(gk)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_einsum_forward_backward(rng, dtype, case):
    eq, shapes = case[:2]
    ts = [mk(rng.standard_normal(s), dtype, requires_grad=True) for s in shapes]
    arrs = [to_numpy(t).astype(np.float64) for t in ts]
    y = mpamp.einsum(eq, *ts)
    ref = np.einsum(np_eq(case), *arrs)
    assert tuple(y.shape) == ref.shape and y.dtype == ts[0].dtype
    rtol, atol = TOL[dtype]     # looser: intermediates (partial sums, chain products) round
    np.testing.assert_allclose(to_numpy(y), ref, rtol=rtol * 4, atol=atol * 4 + rtol * 2)
    if y.numel() == 0 or not y.requires_grad:
        return
    g = rng.standard_normal(ref.shape)
    grads = mpamp.autograd.grad(y, ts, mk(g, dtype))
    gr = to_numpy(mk(g, dtype)).astype(np.float64)
    for got, exp in zip(grads, np_grads(np_eq(case), arrs, gr)):
        assert got.dtype == ts[0].dtype
        np.testing.assert_allclose(to_numpy(got), exp, rtol=rtol * 4, atol=atol * 4 + rtol * 4)


def test_einsum_forms_integers_and_noncontiguous(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    ta, tb = mk(a), mk(b)
    ref = a.astype(np.float64) @ b
    np.testing.assert_allclose(to_numpy(mpamp.einsum("ij,jk->ik", [ta, tb])), ref, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(mpamp.einsum(ta, [0, 1], tb, [1, 2], [0, 2])), ref,
                               rtol=1e-5)
    np.testing.assert_allclose(to_numpy(mpamp.einsum(ta, [0, Ellipsis], [Ellipsis])),
                               a.sum(0), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(mpamp.einsum("ji,jk->ik", ta.t(), tb[:, ::2])),
                               ref[:, ::2], rtol=1e-5)
    i = mpamp.tensor(np.arange(6).reshape(2, 3))
    r = mpamp.einsum("ij,kj->ik", i, i)
    assert r.dtype == mpamp.int64 and r.tolist() == (np.arange(6).reshape(2, 3) @
                                                     np.arange(6).reshape(2, 3).T).tolist()
    v = mpamp.einsum("ij->ij", ta)
    assert v.tolist() == ta.tolist()
    y = mpamp.einsum("bij,bjk->bik", mk(rng.standard_normal((2, 3, 4)), requires_grad=True),
                     mk(rng.standard_normal((2, 4, 5))))
    assert y.grad_fn is not None


def test_einsum_errors():
    a = mpamp.zeros(3, 4)
    cases = [
        (("ij,jk->ik", a, a), "subscript j has size 3 for operand 1 which does not broadcast "
                              "with previously seen size 4"),
        (("ij,jk->ik", a), "fewer operands were provided than specified in the equation"),
        (("ij", a, a), "more operands were provided than specified in the equation"),
        (("ijk->i", a), r"the number of subscripts in the equation \(3\) does not match the "
                        r"number of dimensions \(2\) for operand 0 and no ellipsis was given"),
        (("ijk...->i", a), r"the number of subscripts in the equation \(3\) is more than the "
                           r"number of dimensions \(2\) for operand 0"),
        (("ij->k", a), "output subscript k does not appear in the equation for any input "
                       "operand"),
        (("ij->ii", a), "output subscript i appears more than once in the output"),
        (("i1->i", a), r"invalid subscript given at index 1 in the equation string, subscripts "
                       r"must be in \[a-zA-Z\]"),
        (("ij->ij->", a), "invalid subscript given at index 6 in the equation string"),
        (("ii->i", a), "subscript i is repeated for operand 0 but the sizes don't match, "
                       "4 != 3"),
        (("ij->j.", a), r"found '.' for output that is not part of any ellipsis \(...\)"),
        (("i.j", a), r"found '.' for operand 0 that is not part of any ellipsis"),
        (("......", a), r"found more than one ellipsis \('...'\) for operand 0"),
    ]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match="einsum\\(\\): " + msg):
            mpamp.einsum(*args)
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        mpamp.einsum("i,i", mpamp.tensor([1, 2]), mpamp.ones(2))
    with pytest.raises(RuntimeError, match="expected scalar type Half but found Float"):
        mpamp.einsum("i,i", mpamp.ones(2, dtype=mpamp.float16), mpamp.ones(2))
    with pytest.raises(TypeError, match="must specify the equation string"):
        mpamp.einsum()
    with pytest.raises(TypeError, match="operand 1 must be a Tensor, not list"):
        mpamp.einsum("i,i", a[0], [1.0])
    with pytest.raises(ValueError, match=r"expected subscript to be within the range \[0, 52\)"):
        mpamp.einsum(a, [0, 60])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_outer_ger(rng, dtype):
    u = mk(rng.standard_normal(4), dtype, requires_grad=True)
    v = mk(rng.standard_normal(3), dtype, requires_grad=True)
    y = mpamp.outer(u, v)
    ur, vr = to_numpy(u).astype(np.float64), to_numpy(v).astype(np.float64)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(y), np.outer(ur, vr), rtol=rtol, atol=atol)
    np.testing.assert_array_equal(to_numpy(u.outer(v)), to_numpy(y))
    np.testing.assert_array_equal(to_numpy(mpamp.ger(u, v)), to_numpy(u.ger(v)))
    g = rng.standard_normal((4, 3))
    gu, gv = mpamp.autograd.grad(y, [u, v], mk(g, dtype))
    gr = to_numpy(mk(g, dtype)).astype(np.float64)
    # outer is a broadcast mul: the products are rounded to the dtype, then summed
    pu, pv = to_numpy(mk(gr * vr, dtype)), to_numpy(mk(gr * ur[:, None], dtype))
    np.testing.assert_allclose(to_numpy(gu), pu.sum(1), rtol=rtol * 2, atol=atol * 2)
    np.testing.assert_allclose(to_numpy(gv), pv.sum(0), rtol=rtol * 2, atol=atol * 2)


def test_outer_promotion_and_errors():
    r = mpamp.outer(mpamp.arange(3), mpamp.ones(2))
    assert r.dtype == mpamp.float32 and r.tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert mpamp.outer(mpamp.arange(3), mpamp.ones(2, dtype=mpamp.bfloat16)).dtype == \
        mpamp.bfloat16
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        mpamp.outer(mpamp.zeros(2, 2), mpamp.zeros(2))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 0-D"):
        mpamp.outer(mpamp.zeros(2), mpamp.tensor(1.0))
    with pytest.raises(TypeError, match="outer\\(\\): argument 'vec2' must be Tensor, not list"):
        mpamp.outer(mpamp.zeros(2), [1.0])


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    for eq, shapes, *_ in CASES:
        arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        ts = [mk(a, requires_grad=True) for a in arrs]
        tt = [torch.tensor(a, requires_grad=True) for a in arrs]
        y, ty = mpamp.einsum(eq, *ts), torch.einsum(eq, *tt)
        assert tuple(y.shape) == tuple(ty.shape), eq
        np.testing.assert_allclose(to_numpy(y), ty.detach().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=eq)
        if y.numel() and y.requires_grad:
            g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
            gs = mpamp.autograd.grad(y, ts, mk(g))
            tgs = torch.autograd.grad(ty, tt, torch.tensor(g))
            for a, b in zip(gs, tgs):
                np.testing.assert_allclose(to_numpy(a), b.numpy(), rtol=1e-5, atol=1e-5,
                                           err_msg=eq)
