"""norm, dist, linalg.vector_norm, linalg.matrix_norm and linalg.norm: every ord (2, 1, +-inf, 0,
other p) forward and backward against NumPy float64 references on the rounded inputs, per
float dtype, with zeros and ties in |x|; the torch.norm / linalg.norm dispatch between vector
and matrix norms; torch's errors (non-float input, narrowing dtype=, empty inputs for norms
without an identity). Values against torch are in test_ops_stats.py."""
import numpy as np
import pytest

import mpamp
from conftest import TOL, to_numpy

FLOATS = ["float32", "float16", "bfloat16"]
INF = float("inf")


def mk(arr, dtype="float32", requires_grad=False):
    a = np.asarray(arr)
    if dtype in ("int64", "bool"):
        t = mpamp.tensor(a.astype(np.int64 if dtype == "int64" else bool))
    else:
        t = mpamp.tensor(a.astype(np.float32)).to(getattr(mpamp, dtype))
    return t.requires_grad_() if requires_grad else t


def data(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def rnd(arr, dtype):
    """arr rounded to dtype, as float32 (how the reference sees a result of that dtype)."""
    a = np.asarray(arr, np.float64).astype(np.float32)
    return to_numpy(mk(a, dtype)) if a.ndim else to_numpy(mk(a.reshape(1), dtype)).reshape(())


def close(actual, expected, dtype="float32", factor=1.0):
    rtol, atol = TOL[dtype]
    got = actual if isinstance(actual, np.ndarray) else to_numpy(actual)
    exp = rnd(expected, dtype)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    np.testing.assert_allclose(got, exp, rtol=rtol * factor, atol=atol * factor)


def grad_of(y, x, g):
    (gx,) = mpamp.autograd.grad(y, [x], g)
    return to_numpy(gx)


def axes_of(dim, nd):
    if dim is None or dim == ():
        return tuple(range(nd))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(d % max(nd, 1) for d in dims) if nd else ()


# ---- vector norms ----

ORDS = [2, 1, INF, -INF, 0, 3, 0.5, 1.5, -1]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("shape,dim,keepdim", [((7,), None, False), ((3, 5), 1, True),
                                               ((2, 3, 5), (0, 2), False), ((4, 6), -1, False),
                                               ((), None, True)])
def test_vector_norm_forward_backward(rng, dtype, ord, shape, dim, keepdim):
    arr = data(rng, shape, 2.0)
    if arr.size > 3:
        arr.flat[1] = 0.0
        arr.flat[2] = -arr.flat[3]                               # a tie in |x|
    x = mk(arr, dtype, requires_grad=True)
    xr = to_numpy(x).astype(np.float64)
    y = mpamp.linalg.vector_norm(x, ord, dim, keepdim)
    axes = axes_of(dim, xr.ndim)
    a = np.abs(xr)
    with np.errstate(divide="ignore"):
        if ord == INF:
            ref = a.max(axis=axes, keepdims=True)
        elif ord == -INF:
            ref = a.min(axis=axes, keepdims=True)
        elif ord == 0:
            ref = (xr != 0).sum(axis=axes, keepdims=True).astype(np.float64)
        else:
            ref = (a ** ord).sum(axis=axes, keepdims=True) ** (1.0 / ord)
    close(y, ref.reshape(tuple(y.shape)), dtype, factor=2)
    assert y.dtype == x.dtype
    g = mk(data(rng, tuple(y.shape)), dtype)
    if ord == 0:
        (gx,) = mpamp.autograd.grad(y, [x], g, allow_unused=True)
        assert gx is None                                        # torch: no gradient
        return
    gr = to_numpy(g).astype(np.float64).reshape(ref.shape)
    r = rnd(ref, dtype).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if ord in (INF, -INF):
            mask = (a == r)
            exp = np.sign(xr) * mask * gr / mask.sum(axis=axes, keepdims=True)
        elif ord == 1:
            exp = np.sign(xr) * gr
        elif ord == 2:
            exp = np.where(r == 0, 0.0, gr * xr / r)
        elif ord < 1:
            exp = np.where(xr == 0, 0.0, np.sign(xr) * a ** (ord - 1)) * gr * r ** (1 - ord)
        else:
            exp = np.sign(xr) * a ** (ord - 1) * np.where(r == 0, 0.0, gr / r ** (ord - 1))
    close(grad_of(y, x, g), exp, dtype, factor=4)
    assert y.grad_fn.name() == "LinalgVectorNormBackward0"


def test_norm_forms():
    arr = np.array([[3.0, -4.0, 0.0], [1.0, 2.0, -2.0]], np.float32)
    x = mk(arr, requires_grad=True)
    fro = np.sqrt((arr.astype(np.float64) ** 2).sum())
    np.testing.assert_allclose(x.norm().item(), fro, rtol=1e-6)
    np.testing.assert_allclose(mpamp.norm(x, "fro", (0, 1)).item(), fro, rtol=1e-6)
    np.testing.assert_allclose(mpamp.norm(x, p=None).item(), fro, rtol=1e-6)
    assert mpamp.norm(x, dim=1).tolist() == [5.0, 3.0]
    assert mpamp.norm(x, 1, 1, True).tolist() == [[7.0], [5.0]]
    assert mpamp.norm(x, INF).item() == 4.0 and x.norm(p=-INF).item() == 0.0
    assert x.norm(0).item() == 5.0
    assert mpamp.norm(x, 2, dtype=mpamp.float32).dtype == mpamp.float32
    assert x.norm().grad_fn.name() == "LinalgVectorNormBackward0"
    h = mk(arr, "float16")
    assert mpamp.linalg.vector_norm(h, dtype=mpamp.float32).dtype == mpamp.float32
    assert mpamp.linalg.norm(x).item() == pytest.approx(fro)
    assert mpamp.linalg.norm(x, 1).item() == 6.0                    # max column sum
    assert mpamp.linalg.norm(x, INF).item() == 7.0                  # max row sum
    assert mpamp.linalg.norm(x, -1).item() == 2.0
    assert mpamp.linalg.norm(x, -INF).item() == 5.0
    assert mpamp.linalg.norm(x, "fro").item() == pytest.approx(fro)
    assert mpamp.linalg.norm(x, 3, dim=1).tolist() == pytest.approx(
        list((np.abs(arr.astype(np.float64)) ** 3).sum(1) ** (1 / 3)))
    assert mpamp.linalg.norm(mk([3.0, 4.0]), 1).item() == 7.0
    assert mpamp.linalg.matrix_norm(x, 1, keepdim=True).tolist() == [[6.0]]
    assert mpamp.linalg.matrix_norm(x.unsqueeze(0), INF).tolist() == [7.0]
    assert mpamp.dist(x, mk([1.0, 0.0, 0.0])).item() == pytest.approx(
        np.sqrt(((arr - [1.0, 0.0, 0.0]) ** 2).sum()))
    assert x.dist(mk(arr), 1).item() == 0.0


def test_norm_errors():
    x = mk(np.ones((2, 3)))
    for t, name in ((mpamp.tensor([1, 2]), "Long"), (mpamp.tensor([True]), "Bool")):
        with pytest.raises(RuntimeError, match=r"linalg.vector_norm: Expected a floating point "
                                               f"or complex tensor as input. Got {name}"):
            mpamp.linalg.vector_norm(t)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        mpamp.tensor([3, 4]).norm()
    with pytest.raises(RuntimeError, match=r"linalg.vector_norm: dtype should be floating point "
                                           r"or complex, but got Long"):
        mpamp.linalg.vector_norm(x, dtype=mpamp.int64)
    with pytest.raises(RuntimeError, match=r"the dtype of the input \(Half\) should be "
                                           r"convertible without narrowing to the specified "
                                           r"dtype \(BFloat16\)"):
        mpamp.linalg.vector_norm(x.half(), dtype=mpamp.bfloat16)
    with pytest.raises(RuntimeError, match=r"\(Float\) should be convertible without narrowing "
                                           r"to the specified dtype \(Half\)"):
        mpamp.norm(x, dtype=mpamp.float16)
    with pytest.raises(TypeError, match=r"argument 'ord' must be Number, not str"):
        mpamp.linalg.vector_norm(x, "fro")
    with pytest.raises(TypeError, match=r"argument 'ord' must be Number, not bool"):
        mpamp.linalg.vector_norm(x, True)
    e = mpamp.zeros(0, 2)
    for o, txt in ((INF, "inf"), (-INF, "-inf"), (-1, "-1"), (-1.5, "-1.5")):
        with pytest.raises(RuntimeError, match=f"linalg.vector_norm cannot compute the {txt} "
                                               "norm on an empty tensor because the operation "
                                               "does not have an identity"):
            mpamp.linalg.vector_norm(e, o)
    with pytest.raises(RuntimeError, match=r"cannot compute the inf norm on the dimension "
                                           r"0because this dimension is empty"):
        mpamp.linalg.vector_norm(e, INF, dim=(0, 1))
    assert tuple(mpamp.linalg.vector_norm(e, INF, dim=1).shape) == (0,)
    assert mpamp.linalg.vector_norm(e, 0).item() == 0.0 and e.norm().item() == 0.0
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: Order abc not supported."):
        mpamp.norm(x, "abc")
    with pytest.raises(RuntimeError, match="nuclear norm"):
        mpamp.norm(x, "nuc")
    with pytest.raises(RuntimeError, match=r"dim must be a 2-tuple. Got 0 1 2"):
        mpamp.norm(mk(np.ones((2, 2, 2))), "fro", (0, 1, 2))
    with pytest.raises(TypeError, match="out= is not supported"):
        mpamp.norm(x, out=x)
    with pytest.raises(RuntimeError, match=r"linalg.norm: If dim is not specified but ord is, "
                                           r"the input must be 1D or 2D. Got 3D."):
        mpamp.linalg.norm(mk(np.ones((2, 2, 2))), 2)
    with pytest.raises(RuntimeError, match="needs singular values"):
        mpamp.linalg.norm(x, 2)
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: Order 3 not supported."):
        mpamp.linalg.norm(x, 3, dim=(0, 1))
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dim"):
        mpamp.linalg.norm(mk([1.0, 2.0]), "fro")
    with pytest.raises(RuntimeError, match="If dim is specified, it must be of length 1 or 2"):
        mpamp.linalg.norm(x, dim=(0, 1, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        mpamp.linalg.matrix_norm(x, 1, dim=(0, 2))
