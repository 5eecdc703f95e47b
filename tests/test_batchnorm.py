"""batch_norm / BatchNorm1d / BatchNorm2d and group_norm / GroupNorm: forward and backward
(input, weight, bias) against NumPy in fp32/fp16/bf16 with fp32 or same-dtype parameters,
training and eval, running statistics over several steps (momentum and the cumulative
average), state_dict layout and torch checkpoints, against torch where installed, errors."""
import io

import numpy as np
import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F
from conftest import TOL, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]


def rounded(a, dtype):
    return to_numpy(mpamp.tensor(np.asarray(a, np.float32)).to(dtype)).astype(np.float64)


def norm_ref(x, axes, w, b, gy, mean=None, var=None, eps=1e-5, wshape=None):
    """Normalisation of x over `axes` (given mean/var: treated as constants), its gradients."""
    if mean is None:
        mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
        batch = True
    else:
        batch = False
    rstd = 1 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    wb = np.ones(wshape) if w is None else w.reshape(wshape)
    y = xhat * wb + (0 if b is None else b.reshape(wshape))
    dxhat = gy * wb
    if batch:
        m = np.prod([x.shape[a] for a in axes])
        dx = rstd / m * (m * dxhat - dxhat.sum(axes, keepdims=True)
                         - xhat * (dxhat * xhat).sum(axes, keepdims=True))
    else:
        dx = dxhat * rstd
    red = tuple(i for i in range(x.ndim) if wshape[i] == 1)
    return y, dx, (gy * xhat).sum(red), gy.sum(red)


def bn_ref(x, w, b, gy, rm=None, rv=None, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    m = None if rm is None else rm.reshape(shape)
    v = None if rv is None else rv.reshape(shape)
    return norm_ref(x, axes, w, b, gy, m, v, eps, shape)


def gn_ref(x, g, w, b, gy, eps=1e-5):
    n, c = x.shape[:2]
    xs = x.reshape(n, g, -1)
    mean, var = xs.mean(2, keepdims=True), xs.var(2, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xhat = ((xs - mean) * rstd).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    wb = np.ones(shape) if w is None else w.reshape(shape)
    y = xhat * wb + (0 if b is None else b.reshape(shape))
    dxh = (gy * wb).reshape(n, g, -1)
    xh = xhat.reshape(n, g, -1)
    dx = rstd * (dxh - dxh.mean(2, keepdims=True) - xh * (dxh * xh).mean(2, keepdims=True))
    red = (0,) + tuple(range(2, x.ndim))
    return y, dx.reshape(x.shape), (gy * xhat).sum(red), gy.sum(red)


def tensors(arrays, dtype, grad=True):
    return [None if a is None else
            mpamp.tensor(a.astype(np.float32)).to(dtype).requires_grad_(grad) for a in arrays]


def close(actual, expected, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(actual), expected, rtol=rtol * scale,
                               atol=max(atol, 1e-4) * scale)


DTYPE_PAIRS = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"),
               ("float16", "float32"), ("bfloat16", "float32")]     # (input, parameters)


@pytest.mark.parametrize("dtype,p", DTYPE_PAIRS)
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 7), (3, 4, 5, 6), (2, 3, 1, 1)], ids=str)
def test_batch_norm_training(shape, dtype, p, rng):
    c = shape[1]
    x = rounded(rng.standard_normal(shape) * 2 + 1, dtype)
    w, b = rounded(rng.standard_normal(c), p), rounded(rng.standard_normal(c), p)
    gy = rounded(rng.standard_normal(shape), dtype)
    tx, = tensors([x], dtype)
    tw, tb = tensors([w, b], p)
    rm, rv = mpamp.zeros(c, dtype=p), mpamp.ones(c, dtype=p)
    y = F.batch_norm(tx, rm, rv, tw, tb, training=True, momentum=0.2)
    assert y.dtype is getattr(mpamp, dtype) and y.grad_fn.name() == "NativeBatchNormBackward0"
    yr, dxr, dwr, dbr = bn_ref(x, w, b, gy)
    close(y, yr, dtype, 2)
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    assert tw.grad.dtype is tw.dtype and tx.grad.dtype is tx.dtype
    m = x.size // c
    close(tx.grad, dxr, dtype, 4)
    close(tw.grad, dwr, p, 4 * np.sqrt(m))
    close(tb.grad, dbr, p, 4 * np.sqrt(m))
    axes = (0,) + tuple(range(2, x.ndim))
    np.testing.assert_allclose(to_numpy(rm), 0.2 * x.mean(axes), *TOL[p])
    np.testing.assert_allclose(to_numpy(rv), 0.8 + 0.2 * x.var(axes, ddof=1), rtol=TOL[p][0],
                               atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_eval_uses_running_stats(dtype, rng):
    x = rounded(rng.standard_normal((4, 3, 5)), dtype)
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    gy = rounded(rng.standard_normal(x.shape), dtype)
    tx, = tensors([x], dtype)
    tw, tb = tensors([w, b], "float32")
    trm, trv = tensors([rm, rv], "float32", grad=False)
    y = F.batch_norm(tx, trm, trv, tw, tb, training=False, eps=1e-3)
    yr, dxr, dwr, dbr = bn_ref(x, w, b, gy, rm, rv, eps=1e-3)
    close(y, yr, dtype, 2)
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    close(tx.grad, dxr, dtype, 2)
    close(tw.grad, dwr, "float32", 4)
    close(tb.grad, dbr, "float32", 4)
    assert to_numpy(trm).tolist() == rm.astype(np.float32).tolist()        # untouched


def test_batch_norm_without_affine_or_stats_and_partial_grads(rng):
    x = rng.standard_normal((6, 4, 3))
    tx = mpamp.tensor(x.astype(np.float32), requires_grad=True)
    y = F.batch_norm(tx, None, None, training=True)
    gy = rng.standard_normal(x.shape)
    yr, dxr, _, _ = bn_ref(x, None, None, gy)
    close(y, yr, "float32", 2)
    y.backward(mpamp.tensor(gy.astype(np.float32)))
    close(tx.grad, dxr, "float32", 4)
    w = mpamp.ones(4, requires_grad=True)
    F.batch_norm(mpamp.tensor(x.astype(np.float32)), None, None, w, None, True).sum().backward()
    assert w.grad.shape == (4,) and np.abs(to_numpy(w.grad)).max() < 1e-4    # sum(xhat) = 0
    e = mpamp.randn(0, 4, 3, requires_grad=True)
    rm, rv = mpamp.zeros(4), mpamp.ones(4)
    out = F.batch_norm(e, rm, rv, training=True)
    out.sum().backward()
    assert tuple(out.shape) == (0, 4, 3) and rm.tolist() == [0.0] * 4 and rv.tolist() == [1.0] * 4


def test_batch_norm_non_contiguous_input(rng):
    base = rng.standard_normal((4, 5, 6, 3)).astype(np.float32)
    x = mpamp.tensor(base).permute(0, 3, 1, 2)
    xc = mpamp.tensor(np.ascontiguousarray(base.transpose(0, 3, 1, 2)))
    assert not x.is_contiguous()
    a = F.batch_norm(x, None, None, training=True)
    b = F.batch_norm(xc, None, None, training=True)
    assert to_numpy(a).tolist() == to_numpy(b).tolist()


def test_batchnorm_modules_match_torch_over_steps(rng):
    torch = pytest.importorskip("torch")
    for name, shape, kw in [("BatchNorm2d", (4, 3, 5, 6), {}),
                            ("BatchNorm1d", (8, 3), {"momentum": None}),
                            ("BatchNorm1d", (4, 3, 7), {"affine": False, "eps": 1e-3})]:
        tm, mm = getattr(torch.nn, name)(3, **kw), getattr(nn, name)(3, **kw)
        if tm.weight is not None:
            with torch.no_grad():
                tm.weight.copy_(torch.tensor(rng.standard_normal(3)))
                tm.bias.copy_(torch.tensor(rng.standard_normal(3)))
        mm.load_state_dict({k: mpamp.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        for step in range(4):
            x = (rng.standard_normal(shape) * (step + 1) + step).astype(np.float32)
            tx, mx = torch.tensor(x, requires_grad=True), mpamp.tensor(x, requires_grad=True)
            ty, my = tm(tx), mm(mx)
            np.testing.assert_allclose(to_numpy(my), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
            (ty * ty).sum().backward()
            (my * my).sum().backward()
            np.testing.assert_allclose(to_numpy(mx.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
        for k, v in tm.state_dict().items():
            np.testing.assert_allclose(to_numpy(mm.state_dict()[k]), v.numpy(), rtol=1e-5,
                                       atol=1e-6)
        if tm.weight is not None:
            np.testing.assert_allclose(to_numpy(mm.weight.grad), tm.weight.grad.numpy(),
                                       rtol=1e-4, atol=1e-3)
        tm.eval()
        mm.eval()
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(to_numpy(mm(mpamp.tensor(x))),
                                   tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
        assert repr(mm) == repr(tm)


def test_momentum_none_is_the_cumulative_average(rng):
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [rng.standard_normal((5, 2)).astype(np.float32) * (i + 1) for i in range(3)]
    for x in xs:
        bn(mpamp.tensor(x))
    assert bn.num_batches_tracked.dtype is mpamp.int64 and bn.num_batches_tracked.item() == 3
    np.testing.assert_allclose(to_numpy(bn.running_mean), np.mean([x.mean(0) for x in xs], 0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(bn.running_var),
                               np.mean([x.var(0, ddof=1) for x in xs], 0), rtol=1e-5, atol=1e-6)


def test_track_running_stats_false_and_eval_without_stats(rng):
    bn = nn.BatchNorm1d(3, track_running_stats=False)
    assert bn.running_mean is None and list(bn.state_dict()) == ["weight", "bias"]
    bn.eval()
    y = bn(mpamp.tensor(rng.standard_normal((6, 3)).astype(np.float32)))
    np.testing.assert_allclose(to_numpy(y).mean(0), 0, atol=1e-5)     # batch statistics
    bn2 = nn.BatchNorm2d(3)
    bn2.eval()
    x = mpamp.randn(2, 3, 4, 4)
    assert to_numpy(bn2(x)).tolist() == to_numpy(x / (1 + 1e-5) ** 0.5).tolist()
    assert bn2.num_batches_tracked.item() == 0


def test_state_dict_layout_and_torch_checkpoints(tmp_path):
    torch = pytest.importorskip("torch")
    for kw in [{}, {"affine": False}, {"bias": False}, {"track_running_stats": False}]:
        tm, mm = torch.nn.BatchNorm2d(4, **kw), nn.BatchNorm2d(4, **kw)
        assert [(k, str(v.dtype).split(".")[1], tuple(v.shape))
                for k, v in mm.state_dict().items()] == \
            [(k, str(v.dtype).split(".")[1], tuple(v.shape)) for k, v in tm.state_dict().items()]
    tm = torch.nn.BatchNorm2d(4)
    tm(torch.randn(3, 4, 2, 2) * 3)
    path = tmp_path / "bn.pt"
    torch.save(tm.state_dict(), path)
    mm = nn.BatchNorm2d(4)
    mm.load_state_dict(mpamp.load(path))
    assert mm.num_batches_tracked.dtype is mpamp.int64 and mm.num_batches_tracked.item() == 1
    np.testing.assert_allclose(to_numpy(mm.running_var), tm.running_var.numpy(), rtol=1e-6)
    buf = io.BytesIO()
    mpamp.save(mm.state_dict(), buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=True)
    assert back["num_batches_tracked"].dtype == torch.int64
    tm.load_state_dict(back)


def test_old_checkpoints_without_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    bn.num_batches_tracked.fill_(7)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                           '"num_batches_tracked"'):
        nn.BatchNorm1d(3).load_state_dict(sd)
    sd._metadata[""]["version"] = 1                 # written before the buffer existed
    fresh = nn.BatchNorm1d(3)
    fresh.load_state_dict(sd)
    assert fresh.num_batches_tracked.item() == 0
    seq = nn.Sequential(nn.BatchNorm1d(3))
    seq.load_state_dict({"0." + k: v for k, v in sd.items()})   # no metadata at all


def test_module_to_bfloat16_keeps_the_counter_int64(rng):
    bn = nn.BatchNorm2d(3).bfloat16()
    assert bn.running_mean.dtype is mpamp.bfloat16 and bn.num_batches_tracked.dtype is mpamp.int64
    y = bn(mpamp.randn(2, 3, 4, 4, dtype="bf16"))
    assert y.dtype is mpamp.bfloat16 and bn.num_batches_tracked.item() == 1


# ---- group norm ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pdtype", ["same", "float32", None])
@pytest.mark.parametrize("shape,g", [((3, 6, 5, 4), 3), ((2, 6), 2), ((2, 4, 7), 4),
                                     ((2, 6, 3, 3), 1)], ids=str)
def test_group_norm(shape, g, dtype, pdtype, rng):
    c = shape[1]
    p = dtype if pdtype == "same" else "float32"
    x = rounded(rng.standard_normal(shape) * 3 - 1, dtype)
    w = rounded(rng.standard_normal(c), p) if pdtype else None
    b = rounded(rng.standard_normal(c), p) if pdtype else None
    gy = rounded(rng.standard_normal(shape), dtype)
    tx, = tensors([x], dtype)
    tw, tb = tensors([w, b], p)
    y = F.group_norm(tx, g, tw, tb, eps=1e-4)
    assert y.dtype is getattr(mpamp, dtype) and y.grad_fn.name() == "NativeGroupNormBackward0"
    yr, dxr, dwr, dbr = gn_ref(x, g, w, b, gy, eps=1e-4)
    close(y, yr, dtype, 2)
    y.backward(mpamp.tensor(gy.astype(np.float32)).to(dtype))
    close(tx.grad, dxr, dtype, 4)
    if pdtype:
        n = x.size // c
        close(tw.grad, dwr, p, 4 * np.sqrt(n))
        close(tb.grad, dbr, p, 4 * np.sqrt(n))


def test_group_norm_module_matches_torch(rng):
    torch = pytest.importorskip("torch")
    tm, mm = torch.nn.GroupNorm(2, 6), nn.GroupNorm(2, 6)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(rng.standard_normal(6)))
        tm.bias.copy_(torch.tensor(rng.standard_normal(6)))
    mm.load_state_dict({k: mpamp.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = rng.standard_normal((3, 6, 4, 5)).astype(np.float32)
    tx, mx = torch.tensor(x, requires_grad=True), mpamp.tensor(x, requires_grad=True)
    ty, my = tm(tx), mm(mx)
    np.testing.assert_allclose(to_numpy(my), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    (ty * ty).sum().backward()
    (my * my).sum().backward()
    np.testing.assert_allclose(to_numpy(mx.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_numpy(mm.weight.grad), tm.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-3)
    assert repr(mm) == repr(tm) and list(mm.state_dict()) == list(tm.state_dict())
    assert repr(nn.GroupNorm(3, 6, affine=False)) == repr(torch.nn.GroupNorm(3, 6, affine=False))


def test_group_norm_large_input_is_thread_count_independent(rng):
    x = mpamp.tensor(rng.standard_normal((4, 32, 40, 40)).astype(np.float32),
                     requires_grad=True)
    w = mpamp.ones(32, requires_grad=True)
    old = mpamp.get_num_threads()
    runs = []
    try:
        for n in (1, 2):
            mpamp.set_num_threads(n)
            x.grad = w.grad = None
            y = F.group_norm(x, 8, w)
            (y * y).sum().backward()
            z = F.batch_norm(x, None, None, w, None, True)
            runs.append([to_numpy(t) for t in (y.detach(), x.grad, w.grad, z.detach())])
    finally:
        mpamp.set_num_threads(old)
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


def test_autocast_leaves_the_norms_alone():
    x = mpamp.randn(4, 6, 3)
    with mpamp.autocast(dtype="bf16"):
        assert F.group_norm(x, 3).dtype is mpamp.float32
        assert F.batch_norm(x, None, None, training=True).dtype is mpamp.float32
        assert F.group_norm(x.bfloat16(), 3, mpamp.ones(6)).dtype is mpamp.bfloat16
        assert nn.BatchNorm1d(6)(x.bfloat16()).dtype is mpamp.bfloat16


# ---- errors ----

X = mpamp.randn(4, 3, 5)
RM, RV = mpamp.zeros(3), mpamp.ones(3)
ERRORS = [
    (lambda: F.batch_norm(X, None, None), RuntimeError,
     "running_mean must be defined in evaluation mode"),
    (lambda: F.batch_norm(X, RM, None, training=True), ValueError,
     "running_mean and running_var must either both be None or neither be None"),
    (lambda: F.batch_norm(X, mpamp.zeros(4), RV, training=True), RuntimeError,
     "running_mean should contain 3 elements not 4"),
    (lambda: F.batch_norm(X, RM, mpamp.ones(2), training=True), RuntimeError,
     "running_var should contain 3 elements not 2"),
    (lambda: F.batch_norm(X, RM, RV, mpamp.ones(4)), RuntimeError,
     "weight should contain 3 elements not 4"),
    (lambda: F.batch_norm(X, RM, RV, None, mpamp.ones(4)), RuntimeError,
     "bias should contain 3 elements not 4"),
    (lambda: F.batch_norm(X, RM, RV, RM.long()), TypeError,
     "batch_norm: weight must be a floating point tensor, got Long"),
    (lambda: F.batch_norm(mpamp.randn(1, 3), RM, RV, training=True), ValueError,
     r"Expected more than 1 value per channel when training, got input size "
     r"mpamp.Size\(\[1, 3\]\)"),
    (lambda: F.batch_norm(mpamp.randn(3), RM, RV), RuntimeError,
     r"batch_norm: expected an input of at least 2 dimensions \(N, C, ...\), but got input of "
     r"size \[3\]"),
    (lambda: F.batch_norm(X.bfloat16(), RM, RV, mpamp.ones(3, dtype="bf16"), training=True),
     RuntimeError, "expected scalar type BFloat16 but found Float"),
    (lambda: F.batch_norm(X, RM.bfloat16(), RV.bfloat16(), training=True), RuntimeError,
     r"mixed dtype \(CPU\): expect parameter to have scalar type of Float"),
    (lambda: F.batch_norm(X.half(), RM.bfloat16(), RV.bfloat16(), training=True), RuntimeError,
     r"mixed dtype \(CPU\): expect parameter to have scalar type of Float"),
    (lambda: F.batch_norm(X.long(), RM, RV), NotImplementedError,
     "\"batch_norm\" not implemented for 'Long'"),
    (lambda: F.batch_norm(X, RM, RV, momentum=None), TypeError,
     r"batch_norm\(\): argument 'momentum' must be float, not NoneType"),
    (lambda: nn.BatchNorm2d(3)(mpamp.randn(2, 3, 4)), ValueError,
     r"expected 4D input \(got 3D input\)"),
    (lambda: nn.BatchNorm1d(3)(mpamp.randn(2, 3, 4, 4)), ValueError,
     r"expected 2D or 3D input \(got 4D input\)"),
    (lambda: F.group_norm(mpamp.randn(2, 6, 3), 4), RuntimeError,
     r"Expected number of channels in input to be divisible by num_groups, but got input of "
     r"shape \[2, 6, 3\] and num_groups=4"),
    (lambda: F.group_norm(mpamp.randn(2, 6, 3), -3), RuntimeError,
     r"Expected number of channels in input to be divisible by num_groups, but got input of "
     r"shape \[2, 6, 3\] and num_groups=-3"),
    (lambda: F.group_norm(mpamp.randn(2, 6, 3), 3, mpamp.ones(5)), RuntimeError,
     r"Expected weight to be a vector of size equal to the number of channels in input, but "
     r"got weight of shape \[5\] and input of shape \[2, 6, 3\]"),
    (lambda: F.group_norm(mpamp.randn(2, 6, 3), 3, None, mpamp.ones(2, 3)), RuntimeError,
     r"Expected bias to be a vector of size equal to the number of channels in input, but got "
     r"bias of shape \[2, 3\]"),
    (lambda: F.group_norm(mpamp.randn(6), 3), RuntimeError,
     "Expected at least 2 dimensions for input tensor but received 1"),
    (lambda: mpamp._C._group_norm(mpamp.randn(6), 3, None, None, 1e-5), RuntimeError,
     "Expected at least 2 dimensions for input tensor but received 1"),
    (lambda: F.group_norm(mpamp.randn(1, 3), 3), ValueError,
     "Expected more than 1 value per channel when training"),
    (lambda: F.group_norm(mpamp.randn(2, 6), 0), ZeroDivisionError, "division or modulo by zero"),
    (lambda: F.group_norm(mpamp.randn(2, 6, 3), 3, mpamp.ones(6, dtype="bf16")), RuntimeError,
     r"mixed dtype \(CPU\): expect parameter to have scalar type of Float"),
    (lambda: F.group_norm(mpamp.ones(2, 6, 3).long(), 3), NotImplementedError,
     "\"group_norm\" not implemented for 'Long'"),
    (lambda: nn.GroupNorm(4, 6), ValueError, r"num_channels \(6\) must be divisible by "
     r"num_groups \(4\)"),
    (lambda: mpamp._C._batch_norm(X), TypeError, r"_batch_norm\(\) takes 8 positional"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("op", ["batch_norm", "group_norm"])
def test_second_backward_needs_retain_graph(op):
    x = mpamp.randn(4, 2, 3, requires_grad=True)
    y = (F.batch_norm(x, None, None, training=True) if op == "batch_norm"
         else F.group_norm(x, 2)).pow(2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
