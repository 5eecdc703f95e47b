"""mm, bmm, matmul, addmm, linear and @: forward and backward against NumPy per dtype.

Inputs are rounded to the dtype first and the reference is the float64 product of the rounded
values. The bound scales with the contraction length, as an fp32 accumulation error does:
|out - ref| <= (K + 2) * 2**-24 * (|A| @ |B|) + one rounding to the output dtype."""
import threading

import numpy as np
import pytest

import mpamp
from conftest import python_runs_during, run_python, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]
ROUND = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
TINY = {"float32": 1e-40, "float16": 2.0 ** -24, "bfloat16": 1e-38}


def make(rng, shape, dtype, requires_grad=False):
    """A tensor of dtype and its rounded values as float64."""
    t = mpamp.tensor(rng.standard_normal(shape).astype(np.float32)).to(getattr(mpamp, dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t, to_numpy(t).astype(np.float64)


def assert_product(out, ref, absprod, k, dtype):
    """out matches the float64 reference within the K-scaled accumulation bound."""
    assert out.dtype == getattr(mpamp, dtype)
    got = to_numpy(out).astype(np.float64)
    assert got.shape == ref.shape
    tol = (k + 2) * 2.0 ** -24 * absprod + ROUND[dtype] * np.abs(ref) + TINY[dtype]
    err = np.abs(got - ref)
    assert (err <= tol).all(), f"max excess {np.max(err - tol)} (K={k}, {dtype})"


def np_matmul_grads(a, b, g):
    """Gradients of torch.matmul(a, b) for upstream g, in float64 (1-D and broadcasting)."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    out_shape = np.matmul(a2, b2).shape
    g2 = g.reshape(out_shape)
    ga = np.matmul(g2, np.swapaxes(b2, -1, -2))
    gb = np.matmul(np.swapaxes(a2, -1, -2), g2)
    return _sum_to(ga, a2.shape).reshape(a.shape), _sum_to(gb, b2.shape).reshape(b.shape)


def _sum_to(x, shape):
    lead = x.ndim - len(shape)
    x = x.sum(axis=tuple(range(lead))) if lead else x
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return x.sum(axis=axes, keepdims=True) if axes else x


MM_SHAPES = [(1, 5, 7), (7, 5, 1), (1, 1, 1), (3, 1, 4), (13, 17, 11), (64, 129, 33),
             (97, 300, 70), (2, 0, 3), (0, 3, 4)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", MM_SHAPES)
def test_mm_forward_backward(rng, dtype, m, k, n):
    a, an = make(rng, (m, k), dtype, True)
    b, bn = make(rng, (k, n), dtype, True)
    out = mpamp.mm(a, b)
    assert_product(out, an @ bn, np.abs(an) @ np.abs(bn), k, dtype)
    assert out.grad_fn.name() == "MmBackward0"
    g, gn = make(rng, (m, n), dtype)
    out.backward(g)
    assert a.grad.dtype == a.dtype and b.grad.dtype == b.dtype
    assert_product(a.grad, gn @ bn.T, np.abs(gn) @ np.abs(bn.T), n, dtype)
    assert_product(b.grad, an.T @ gn, np.abs(an.T) @ np.abs(gn), m, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mm_transposed_and_strided_views(rng, dtype):
    big, bign = make(rng, (30, 40), dtype)
    cases = [
        (big[:7, :9], big[2:11, 5:12]),                     # row-major with ld > cols
        (big[:9, :7].T, big[:9, 10:15]),                    # column-major A
        (big[:7, :9], big[:5, 20:29].T),                    # column-major B
        (big[::2, 1::3][:6, :5], big[1::3, ::2][:5, :4]),   # no unit stride at all
        (big[:1, :9], big[:9, :1]),                         # 1xK @ Kx1
    ]
    for a, b in cases:
        an, bn = to_numpy(a).astype(np.float64), to_numpy(b).astype(np.float64)
        a.requires_grad_(True)
        b.requires_grad_(True)
        out = a @ b
        assert_product(out, an @ bn, np.abs(an) @ np.abs(bn), an.shape[1], dtype)
        g, gn = make(rng, out.shape, dtype)
        out.backward(g)
        assert_product(a.grad, gn @ bn.T, np.abs(gn) @ np.abs(bn.T), bn.shape[1], dtype)
        assert_product(b.grad, an.T @ gn, np.abs(an.T) @ np.abs(gn), an.shape[0], dtype)
    np.testing.assert_array_equal(to_numpy(big), bign.astype(np.float32))   # inputs untouched


@pytest.mark.parametrize("dtype", DTYPES)
def test_expanded_operands(rng, dtype):
    row, rown = make(rng, (1, 6), dtype)
    col, coln = make(rng, (6, 1), dtype)
    a = row.expand(4, 6)                                    # stride 0 along rows
    b = col.expand(6, 3)
    an, bn = np.broadcast_to(rown, (4, 6)), np.broadcast_to(coln, (6, 3))
    assert_product(a @ b, an @ bn, np.abs(an) @ np.abs(bn), 6, dtype)
    m, mn = make(rng, (1, 5, 7), dtype)                     # stride-0 batch dim
    v, vn = make(rng, (3, 7, 2), dtype)
    mb = np.broadcast_to(mn, (3, 5, 7))
    assert_product(m.expand(3, 5, 7) @ v, mb @ vn, np.abs(mb) @ np.abs(vn), 7, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_forward_backward(rng, dtype):
    a, an = make(rng, (3, 5, 7), dtype)
    b, bn = make(rng, (7, 3, 4), dtype)
    b = b.permute(1, 0, 2)                                  # non-contiguous batch
    bn = bn.transpose(1, 0, 2)
    a.requires_grad_(True)
    leaf_b = b.detach().requires_grad_(True)
    out = mpamp.bmm(a, leaf_b)
    assert out.grad_fn.name() == "BmmBackward0"
    assert_product(out, an @ bn, np.abs(an) @ np.abs(bn), 7, dtype)
    g, gn = make(rng, (3, 5, 4), dtype)
    out.backward(g)
    assert_product(a.grad, gn @ bn.transpose(0, 2, 1), np.abs(gn) @ np.abs(bn.transpose(0, 2, 1)),
                   4, dtype)
    assert_product(leaf_b.grad, an.transpose(0, 2, 1) @ gn,
                   np.abs(an.transpose(0, 2, 1)) @ np.abs(gn), 5, dtype)
    assert_product(a.bmm(leaf_b).detach(), an @ bn, np.abs(an) @ np.abs(bn), 7, dtype)


MATMUL_CASES = [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((2, 3, 5), (5,)),
                ((5,), (2, 5, 4)), ((4, 1, 3, 5), (2, 5, 6)), ((2, 3, 5), (5, 4)),
                ((3, 5), (2, 5, 4)), ((1, 3, 5), (2, 5, 4)), ((2, 1, 3, 5), (1, 4, 5, 2)),
                ((3, 5), (5, 4))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_CASES)
def test_matmul_broadcasting_forward_backward(rng, dtype, sa, sb):
    a, an = make(rng, sa, dtype, True)
    b, bn = make(rng, sb, dtype, True)
    out = mpamp.matmul(a, b)
    ref = np.matmul(an, bn)
    k = sa[-1]
    assert out.shape == ref.shape
    assert_product(out, ref, np.matmul(np.abs(an), np.abs(bn)), k, dtype)
    g, gn = make(rng, ref.shape, dtype)
    out.backward(g)
    ga, gb = np_matmul_grads(an, bn, gn)
    aga, agb = np_matmul_grads(np.abs(an), np.abs(bn), np.abs(gn))
    # the contraction of a gradient runs over N (for a) or M times broadcast batch (for b)
    big_k = int(np.prod(ref.shape)) if ref.ndim else 1
    assert_product(a.grad, ga, aga, big_k, dtype)
    assert_product(b.grad, gb, agb, big_k, dtype)


def test_matmul_grad_fn_names():
    v = mpamp.ones(3, requires_grad=True)
    m = mpamp.ones(3, 3, requires_grad=True)
    assert (v @ v).grad_fn.name() == "DotBackward0"
    assert (m @ v).grad_fn.name() == "MvBackward0"
    assert (m @ m).grad_fn.name() == "MmBackward0"
    assert (v @ m).grad_fn.name() == "MatmulBackward0"
    assert (v @ v).shape == ()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias_shape", [(6,), (4, 1), (1, 1), (4, 6), ()])
def test_addmm_forward_backward(rng, dtype, bias_shape):
    bias, cn = make(rng, bias_shape, dtype, True)
    a, an = make(rng, (4, 9), dtype, True)
    b, bn = make(rng, (9, 6), dtype, True)
    beta, alpha = 0.5, -2.0
    out = mpamp.addmm(bias, a, b, beta=beta, alpha=alpha)
    assert out.grad_fn.name() == "AddmmBackward0"
    ref = beta * cn + alpha * (an @ bn)
    absprod = (abs(beta) * np.abs(np.broadcast_to(cn, ref.shape))
               + abs(alpha) * (np.abs(an) @ np.abs(bn)))
    assert_product(out, ref, absprod, 10, dtype)
    g, gn = make(rng, (4, 6), dtype)
    out.backward(g)
    assert_product(a.grad, alpha * gn @ bn.T, 2 * np.abs(gn) @ np.abs(bn.T), 6, dtype)
    assert_product(b.grad, alpha * an.T @ gn, 2 * np.abs(an.T) @ np.abs(gn), 4, dtype)
    gbias = beta * _sum_to(gn, bias_shape).reshape(bias_shape)
    assert_product(bias.grad, gbias, 0.5 * _sum_to(np.abs(gn), bias_shape).reshape(bias_shape),
                   24, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias_shape", [(6,), (4, 1), (3, 4, 6), (1, 4, 6), ()])
def test_baddbmm_forward_backward(rng, dtype, bias_shape):
    bias, cn = make(rng, bias_shape, dtype, True)
    a, an = make(rng, (3, 4, 9), dtype, True)
    b, bn = make(rng, (3, 9, 6), dtype, True)
    beta, alpha = 0.5, -2.0
    out = mpamp.baddbmm(bias, a, b, beta=beta, alpha=alpha)
    assert out.grad_fn.name() == "BaddbmmBackward0"
    ref = beta * cn + alpha * (an @ bn)
    absprod = (abs(beta) * np.abs(np.broadcast_to(cn, ref.shape))
               + abs(alpha) * (np.abs(an) @ np.abs(bn)))
    assert_product(out, ref, absprod, 10, dtype)
    g, gn = make(rng, (3, 4, 6), dtype)
    out.backward(g)
    bt, at = np.swapaxes(bn, 1, 2), np.swapaxes(an, 1, 2)
    assert_product(a.grad, alpha * gn @ bt, 2 * np.abs(gn) @ np.abs(bt), 6, dtype)
    assert_product(b.grad, alpha * at @ gn, 2 * np.abs(at) @ np.abs(gn), 4, dtype)
    padded = (1,) * (3 - len(bias_shape)) + bias_shape
    gbias = beta * _sum_to(gn, padded).reshape(bias_shape)
    assert_product(bias.grad, gbias, beta * _sum_to(np.abs(gn), padded).reshape(bias_shape), 72,
                   dtype)


def test_baddbmm_errors():
    x = mpamp.ones(2, 3, 4)
    with pytest.raises(RuntimeError, match="baddbmm: batch1 must be a 3D tensor, got 2-D"):
        mpamp.baddbmm(mpamp.zeros(3, 5), mpamp.ones(3, 4), mpamp.ones(2, 4, 5))
    with pytest.raises(RuntimeError, match=r"baddbmm: Expected size for first two dimensions "
                       r"of batch2 tensor to be: \[2, 4\] but got: \[3, 4\]"):
        mpamp.baddbmm(mpamp.zeros(3, 5), x, mpamp.ones(3, 4, 5))
    with pytest.raises(RuntimeError, match="baddbmm: expected m1 and m2 to have the same dtype"):
        mpamp.baddbmm(mpamp.zeros(3, 5), x, mpamp.ones(2, 4, 5).half())
    with pytest.raises(RuntimeError, match="baddbmm: The expanded size"):
        mpamp.baddbmm(mpamp.zeros(7), x, mpamp.ones(2, 4, 5))
    with pytest.raises(TypeError, match="argument 'beta' must be a number"):
        mpamp.baddbmm(mpamp.zeros(5), x, mpamp.ones(2, 4, 5), beta="x")


def test_addmm_beta_zero_ignores_bias_and_defaults(rng):
    a, an = make(rng, (3, 4), "float32")
    b, bn = make(rng, (4, 2), "float32")
    nan = mpamp.full((3, 2), float("nan"))
    out = mpamp.addmm(nan, a, b, beta=0)
    assert_product(out, an @ bn, np.abs(an) @ np.abs(bn), 4, "float32")
    c, cn = make(rng, (2,), "float32")
    assert_product(mpamp.addmm(c, a, b), cn + an @ bn, np.abs(cn) + np.abs(an) @ np.abs(bn), 5,
                   "float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("xshape", [(3,), (4, 3), (2, 4, 3), (2, 1, 5, 3)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_forward_backward(rng, dtype, xshape, with_bias):
    x, xn = make(rng, xshape, dtype, True)
    w, wn = make(rng, (5, 3), dtype, True)
    bias, bn = make(rng, (5,), dtype, True) if with_bias else (None, 0.0)
    out = mpamp.linear(x, w, bias)
    ref = xn @ wn.T + bn
    absprod = np.abs(xn) @ np.abs(wn.T) + np.abs(bn)
    assert_product(out, ref, absprod, 4, dtype)
    g, gn = make(rng, ref.shape, dtype)
    out.backward(g)
    g2, x2 = gn.reshape(-1, 5), xn.reshape(-1, 3)
    assert_product(x.grad, (g2 @ wn).reshape(xshape), (np.abs(g2) @ np.abs(wn)).reshape(xshape),
                   5, dtype)
    rows = x2.shape[0]
    assert_product(w.grad, g2.T @ x2, np.abs(g2.T) @ np.abs(x2), rows, dtype)
    if with_bias:
        assert_product(bias.grad, g2.sum(0), np.abs(g2).sum(0), rows, dtype)


def test_linear_noncontiguous_input_and_vector_weight(rng):
    x, xn = make(rng, (6, 4, 3), "float32", True)
    xt = x.transpose(0, 1)                                  # (4, 6, 3), not contiguous
    w, wn = make(rng, (3,), "float32", True)
    out = mpamp.linear(xt, w)
    ref = xn.transpose(1, 0, 2) @ wn
    assert out.shape == (4, 6)
    assert_product(out, ref, np.abs(xn.transpose(1, 0, 2)) @ np.abs(wn), 3, "float32")
    out.backward(mpamp.ones(4, 6))
    np.testing.assert_allclose(to_numpy(x.grad), np.broadcast_to(wn, (6, 4, 3)), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(w.grad), xn.sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_int64_products_are_exact():
    a = mpamp.tensor([[3_000_001, -2, 5], [7, 11, 4_000_003]])
    b = mpamp.tensor([[1_000_003, 2], [3, 4], [5, 6_000_007]])
    ref = np.array(a.tolist(), dtype=np.int64) @ np.array(b.tolist(), dtype=np.int64)
    for out in (mpamp.mm(a, b), a @ b, mpamp.matmul(a[0], b)):
        assert out.dtype == mpamp.int64
    np.testing.assert_array_equal(mpamp.mm(a, b).cpu().numpy(), ref)
    np.testing.assert_array_equal(mpamp.matmul(a[0], b).cpu().numpy(), ref[0])
    c = mpamp.tensor([1, 2])
    np.testing.assert_array_equal(mpamp.addmm(c, a, b, beta=2, alpha=3).cpu().numpy(),
                                  2 * np.array([1, 2]) + 3 * ref)


def test_no_grad_and_partial_requires_grad(rng):
    a, an = make(rng, (3, 4), "float32", True)
    b, bn = make(rng, (4, 2), "float32")
    with mpamp.no_grad():
        assert (a @ b).grad_fn is None and not (a @ b).requires_grad
    out = a @ b
    out.backward(mpamp.ones(3, 2))
    assert b.grad is None
    np.testing.assert_allclose(to_numpy(a.grad), np.ones((3, 2)) @ bn.T, rtol=1e-6)
    out = a @ b
    out.backward(mpamp.ones(3, 2))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward(mpamp.ones(3, 2))


def test_large_product_matches_numpy_fp32(rng):
    a, an = make(rng, (300, 517), "float32")
    b, bn = make(rng, (517, 1030), "float32")
    out = a @ b
    assert_product(out, an @ bn, np.abs(an) @ np.abs(bn), 517, "float32")


def test_scalar_isa_gives_the_same_products():
    code = ("import numpy as np, mpamp\n"
            "r = np.random.default_rng(5)\n"
            "a = r.standard_normal((37, 300)).astype(np.float32)\n"
            "b = r.standard_normal((300, 29)).astype(np.float32)\n"
            "out = mpamp.tensor(a) @ mpamp.tensor(b)\n"
            "ref = a.astype(np.float64) @ b.astype(np.float64)\n"
            "tol = 302 * 2.0**-24 * (np.abs(a) @ np.abs(b))\n"
            "assert (np.abs(out.cpu().numpy() - ref) <= tol).all()\n"
            "print(mpamp.backends.cpu.get_cpu_capability())\n")
    res = run_python(code, MPAMP_CPU_ISA="scalar")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "scalar"


def test_threads_share_the_gemm(rng):
    a, an = make(rng, (200, 200), "float32")
    results = [None] * 4

    def work(i):
        results[i] = to_numpy(a @ a)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, results[0])
    assert_product(mpamp.tensor(results[0]), an @ an, np.abs(an) @ np.abs(an), 200, "float32")


def test_large_products_release_the_gil():
    a = mpamp.rand(1000, 1000)
    assert python_runs_during(lambda: a @ a), "no Python thread ran during the product"


# ---- autocast ----

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_products_under_autocast(rng, dtype):
    x, xn = make(rng, (4, 6), "float32")
    w, wn = make(rng, (5, 6), "float32", True)
    b, bn = make(rng, (5,), "float32", True)
    low = getattr(mpamp, dtype)
    rx, rw, rb = (to_numpy(t.detach().to(low)).astype(np.float64) for t in (x, w, b))
    with mpamp.autocast(dtype=dtype):
        outs = [mpamp.linear(x, w, b), mpamp.addmm(b, x, w.T), x @ w.T, mpamp.mm(x, w.T),
                x.matmul(w.T)]
        mixed = mpamp.matmul(x.to(low), w.T)                      # no dtype error here
        bmm = mpamp.bmm(x.unsqueeze(0), w.T.unsqueeze(0))
        ints = mpamp.ones(2, 2).long() @ mpamp.ones(2, 2).long()
    ref = rx @ rw.T
    for out in outs[:2]:
        assert_product(out, ref + rb, np.abs(rx) @ np.abs(rw.T) + np.abs(rb), 7, dtype)
    for out in outs[2:] + [bmm[0]]:
        assert_product(out, ref, np.abs(rx) @ np.abs(rw.T), 6, dtype)
    assert ints.dtype == mpamp.int64
    np.testing.assert_array_equal(to_numpy(mixed), to_numpy(outs[2]))
    outs[0].float().backward(mpamp.ones(4, 5))
    assert w.grad.dtype == mpamp.float32 and b.grad.dtype == mpamp.float32
    np.testing.assert_allclose(to_numpy(b.grad), np.full(5, 4.0))
    with mpamp.autocast(dtype=dtype):
        assert mpamp.cat([outs[0], mpamp.ones(1, 5)]).dtype == mpamp.float32    # promote
        assert mpamp.stack([outs[0], outs[1]]).dtype == low
    assert mpamp.mm(x, w.T).dtype == mpamp.float32                # outside the region


# ---- errors ----

def test_dtype_errors():
    f, h = mpamp.ones(2, 3), mpamp.ones(3, 4).half()
    with pytest.raises(RuntimeError, match=r"mm: expected m1 and m2 to have the same dtype, "
                                           r"but got: float32 != float16"):
        mpamp.mm(f, h)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        f @ h
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        mpamp.bmm(mpamp.ones(1, 2, 3), mpamp.ones(1, 3, 4).bfloat16())
    with pytest.raises(RuntimeError, match="expected m1 and m2 .* int64 != float32"):
        mpamp.matmul(mpamp.ones(2, 3).long(), mpamp.ones(3, 2))
    with pytest.raises(RuntimeError, match=r"addmm: self and mat2 must have the same dtype, "
                                           r"but got float16 and float32"):
        mpamp.addmm(mpamp.ones(4).half(), f, mpamp.ones(3, 4))
    with pytest.raises(RuntimeError, match="linear: self and mat2 must have the same dtype"):
        mpamp.linear(f, mpamp.ones(5, 3), mpamp.ones(5).half())
    with pytest.raises(TypeError, match="not implemented for 'Bool'"):
        mpamp.mm(mpamp.ones(2, 2).bool(), mpamp.ones(2, 2).bool())


def test_shape_errors():
    with pytest.raises(RuntimeError, match=r"mm: mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        mpamp.mm(mpamp.ones(2, 3), mpamp.ones(4, 5))
    with pytest.raises(RuntimeError, match="mm: self must be a matrix, got 1-D"):
        mpamp.mm(mpamp.ones(3), mpamp.ones(3, 2))
    with pytest.raises(RuntimeError, match="mm: mat2 must be a matrix, got 3-D"):
        mpamp.ones(2, 3).mm(mpamp.ones(1, 3, 2))
    with pytest.raises(RuntimeError, match="bmm: batch1 must be a 3D tensor"):
        mpamp.bmm(mpamp.ones(2, 3), mpamp.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 3\] but got: \[3, 4\]"):
        mpamp.bmm(mpamp.ones(2, 2, 3), mpamp.ones(3, 4, 5))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, "
                                           "but they are 0D and 2D"):
        mpamp.matmul(mpamp.tensor(1.0), mpamp.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] "
                                           r"and src \[4\]"):
        mpamp.matmul(mpamp.ones(3), mpamp.ones(4))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(5\), mat \(5x2\), "
                                           r"vec \(4\)"):
        mpamp.matmul(mpamp.ones(5, 2), mpamp.ones(4))
    with pytest.raises(RuntimeError, match=r"\(1x4 and 5x2\)"):
        mpamp.matmul(mpamp.ones(4), mpamp.ones(5, 2))
    with pytest.raises(RuntimeError, match=r"matmul: batch dimensions of \[2, 2, 3\] and "
                                           r"\[3, 3, 4\] do not broadcast"):
        mpamp.matmul(mpamp.ones(2, 2, 3), mpamp.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match=r"addmm: The expanded size .* Target sizes: "
                                           r"\[2, 4\].  Tensor sizes: \[3\]"):
        mpamp.addmm(mpamp.ones(3), mpamp.ones(2, 3), mpamp.ones(3, 4))
    with pytest.raises(RuntimeError, match="addmm: mat1 must be a matrix"):
        mpamp.addmm(mpamp.ones(3), mpamp.ones(3), mpamp.ones(3, 3))
    with pytest.raises(RuntimeError, match=r"linear: mat1 and mat2 shapes cannot be multiplied "
                                           r"\(8x3 and 4x5\)"):
        mpamp.linear(mpamp.ones(4, 2, 3), mpamp.ones(5, 4))
    with pytest.raises(RuntimeError, match="linear: The expanded size"):
        mpamp.linear(mpamp.ones(2, 3), mpamp.ones(5, 3), mpamp.ones(4))


def test_argument_type_errors():
    with pytest.raises(TypeError, match=r"mm\(\): argument 'mat2' \(position 1\) must be "
                                        r"Tensor, not int"):
        mpamp.mm(mpamp.ones(2, 2), 3)
    with pytest.raises(TypeError, match="unsupported operand"):
        mpamp.ones(2, 2) @ 3
    with pytest.raises(TypeError, match="unsupported operand"):
        3 @ mpamp.ones(2, 2)
    with pytest.raises(TypeError, match="must be Tensor"):
        mpamp.linear([1.0], mpamp.ones(1, 1))
    with pytest.raises(TypeError, match="beta"):
        mpamp.addmm(mpamp.ones(2), mpamp.ones(2, 2), mpamp.ones(2, 2), beta="x")


def test_rmatmul_with_tensor_subclass_operand(rng):
    a, an = make(rng, (2, 3), "float32")
    b, bn = make(rng, (3, 2), "float32")
    assert_product(b.__rmatmul__(a), an @ bn, np.abs(an) @ np.abs(bn), 3, "float32")


# ---- cross-check with torch (skipped without it) ----

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_against_torch(rng, dtype):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 7, 33)).astype(np.float32)
    w = rng.standard_normal((5, 33)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    g = rng.standard_normal((2, 7, 5)).astype(np.float32)
    tdt = getattr(torch, dtype)
    tx, tw, tb = (torch.tensor(v).to(tdt).requires_grad_() for v in (x, w, bias))
    tout = torch.nn.functional.linear(tx, tw, tb)
    tout.backward(torch.tensor(g).to(tdt))
    mdt = getattr(mpamp, dtype)
    mx, mw, mb = (mpamp.tensor(v).to(mdt).requires_grad_() for v in (x, w, bias))
    mout = mpamp.linear(mx, mw, mb)
    mout.backward(mpamp.tensor(g).to(mdt))
    rtol = 2e-2 if dtype == "bfloat16" else 2e-3
    for m, t in ((mout, tout), (mx.grad, tx.grad), (mw.grad, tw.grad), (mb.grad, tb.grad)):
        np.testing.assert_allclose(to_numpy(m), t.detach().float().cpu().numpy(), rtol=rtol,
                                   atol=rtol * 4)
    ta, tb2 = torch.tensor(x[0]).to(tdt), torch.tensor(w.T).to(tdt)
    np.testing.assert_allclose(to_numpy(mpamp.tensor(x[0]).to(mdt) @ mpamp.tensor(w.T).to(mdt)),
                               (ta @ tb2).float().cpu().numpy(), rtol=rtol, atol=rtol * 4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m,k,n", [(1, 1031, 9), (9, 1031, 1), (37, 385, 53), (131, 7, 257)])
def test_low_precision_products_round_once(rng, dtype, m, k, n):
    """fp16/bf16 operands go to the GEMM as they are (converted while packing) and the result
    is rounded once to the output dtype, bias included: the same values as the fp32 product of
    the same inputs, rounded."""
    x, xn = make(rng, (m, k), dtype)
    w, wn = make(rng, (n, k), dtype)
    b, bn = make(rng, (n,), dtype)
    out = mpamp.nn.functional.linear(x, w, b)
    ref = xn @ wn.T + bn
    assert_product(out, ref, np.abs(xn) @ np.abs(wn.T) + np.abs(bn), k, dtype)
    f32 = mpamp.nn.functional.linear(x.float(), w.float(), b.float()).to(dtype)
    diff = np.abs(to_numpy(out).astype(np.float64) - to_numpy(f32).astype(np.float64))
    assert (diff <= 2 * ROUND[dtype] * np.abs(ref) + TINY[dtype]).all()


def test_addmm_bias_shapes_take_the_same_values(rng):
    """A row-vector bias is fused into the GEMM's store; other shapes are added first. Both
    must give the product plus bias."""
    a, an = make(rng, (20, 30), "bfloat16")
    b, bn = make(rng, (30, 40), "bfloat16")
    row, rown = make(rng, (40,), "bfloat16")
    col, coln = make(rng, (20, 1), "bfloat16")
    for bias, biasn in [(row, rown), (row[None, :], rown[None, :]), (col, coln),
                        (row.expand(20, 40), rown)]:
        out = mpamp.addmm(bias, a, b, beta=0.5, alpha=2.0)
        ref = 0.5 * biasn + 2.0 * (an @ bn)
        assert_product(out, ref, 2.0 * (np.abs(an) @ np.abs(bn)) + 0.5 * np.abs(biasn), 30,
                       "bfloat16")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed batch", "column-major rows"])
def test_batch_summed_weight_gradients(rng, dtype, layout):
    """A weight gradient sums one product per batch entry into one output. Where both operands
    continue along K across the batch (contiguous (B, T, K) inputs), the batch becomes part of
    K: one product big enough to use the threads. Other layouts sum product by product. Both
    give the float64 reference within the bound for the whole contraction, and the same bits
    on 1 and 2 threads."""
    x, xn = make(rng, (32, 32, 64), dtype)
    g, gn = make(rng, (32, 32, 96), dtype)
    if layout == "transposed batch":                        # (T, B, K) views: no K fold
        x, g = x.transpose(0, 1), g.transpose(0, 1)
        xn, gn = xn.transpose(1, 0, 2), gn.transpose(1, 0, 2)
    elif layout == "column-major rows":                     # each (T, K) slice transposed
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    w, wn = make(rng, (96, 64), dtype, True)
    got, before = [], mpamp.get_num_threads()
    try:
        for threads in (1, 2):
            mpamp.set_num_threads(threads)
            w.grad = None
            mpamp.linear(x, w).backward(g)
            got.append(to_numpy(w.grad))
    finally:
        mpamp.set_num_threads(before)
    np.testing.assert_array_equal(got[0], got[1])
    g2, x2 = gn.reshape(-1, 96), xn.reshape(-1, 64)
    assert_product(w.grad, g2.T @ x2, np.abs(g2.T) @ np.abs(x2), 1024, dtype)
