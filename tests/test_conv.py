"""conv1d / conv2d and nn.Conv1d / nn.Conv2d: forward and every backward (input, weight, bias)
against a direct NumPy reference (float64 loops over kernel taps and groups, on inputs rounded
to the tested dtype) in fp32/fp16/bf16, odd sizes, stride/padding/dilation/groups, 'same' with
asymmetric padding, the four padding modes, non-contiguous inputs; torch's messages for
misuse; modules against torch with copied weights; init, repr, state_dict; autocast."""
import math

import numpy as np
import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F
from conftest import TOL, to_numpy

DTYPES = ["float32", "float16", "bfloat16"]
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def rounded(a, dtype):
    """a as the tested dtype would hold it, in float64."""
    return to_numpy(mpamp.tensor(np.asarray(a, np.float32)).to(dtype)).astype(np.float64)


def pad_index(h, w, lo, hi, mode):
    """Source index (into the flattened h*w plane) of every padded position; -1 for zeros."""
    idx = np.arange(h * w).reshape(h, w)
    widths = ((lo[0], hi[0]), (lo[1], hi[1]))
    if mode == "zeros":
        return np.pad(idx, widths, constant_values=-1)
    return np.pad(idx, widths, mode=NP_MODE[mode])


def conv_ref(x, w, b, stride, lo, hi, dil, groups, mode="zeros", gy=None):
    """2-d conv of x (N, C, H, W) by w (O, C/G, KH, KW) in float64; with gy also returns the
    gradients (gx, gw, gb) by the same tap loop run backwards."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    idx = pad_index(h, wd, lo, hi, mode)
    flat = np.concatenate([x.reshape(n, c, h * wd), np.zeros((n, c, 1))], axis=2)
    xp = flat[:, :, idx]
    oh = (idx.shape[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (idx.shape[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    y = np.zeros((n, o, oh, ow))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)

    def taps():
        for g in range(groups):
            for i in range(kh):
                for j in range(kw):
                    sl = (slice(None), slice(g * cg, (g + 1) * cg),
                          slice(i * dil[0], i * dil[0] + (oh - 1) * stride[0] + 1, stride[0]),
                          slice(j * dil[1], j * dil[1] + (ow - 1) * stride[1] + 1, stride[1]))
                    yield g, i, j, sl

    for g, i, j, sl in taps():
        y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", xp[sl],
                                               w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        y += b[None, :, None, None]
    if gy is None:
        return y
    for g, i, j, sl in taps():
        gyg = gy[:, g * og:(g + 1) * og]
        gxp[sl] += np.einsum("nohw,oc->nchw", gyg, w[g * og:(g + 1) * og, :, i, j])
        gw[g * og:(g + 1) * og, :, i, j] = np.einsum("nohw,nchw->oc", gyg, xp[sl])
    gx = np.zeros((n, c, h * wd + 1))
    np.add.at(gx, (slice(None), slice(None), idx.ravel() % (h * wd + 1)),
              gxp.reshape(n, c, -1))
    gx = gx[:, :, :h * wd].reshape(n, c, h, wd)
    return y, gx, gw, gy.sum((0, 2, 3))


def same_pads(k, dil):
    total = [d * (kk - 1) for d, kk in zip(dil, k)]
    return [t // 2 for t in total], [t - t // 2 for t in total]


def check_conv(rng, dtype, xs, ws, bias=True, stride=(1, 1), padding=(0, 0), dil=(1, 1),
               groups=1, make_input=None, nsp=2):
    """Runs F.conv2d/conv1d forward and backward and compares with conv_ref."""
    x = rounded(rng.standard_normal(xs), dtype)
    w = rounded(rng.standard_normal(ws) * 0.5, dtype)
    b = rounded(rng.standard_normal(ws[0]), dtype) if bias else None
    if padding == "same":
        k = ws[2:] if nsp == 2 else (1, ws[2])
        d4 = dil if nsp == 2 else (1, dil[0])
        lo, hi = same_pads(k, d4)
    else:
        lo = hi = padding if nsp == 2 else (0, padding[0])
    x4 = x if nsp == 2 else x[..., None, :]
    w4 = w if nsp == 2 else w[:, :, None, :]
    unbatched = len(xs) == nsp + 1
    x4 = x4[None] if unbatched else x4
    s4, d4 = (stride, dil) if nsp == 2 else ((1, stride[0]), (1, dil[0]))
    y0 = conv_ref(x4, w4, b, s4, lo, hi, d4, groups)
    gy = rounded(rng.standard_normal(y0.shape), dtype)
    yr, gxr, gwr, gbr = conv_ref(x4, w4, b, s4, lo, hi, d4, groups, gy=gy)
    tx = make_input(x) if make_input else mpamp.tensor(x.astype(np.float32)).to(dtype)
    tx.requires_grad_()
    tw = mpamp.tensor(w.astype(np.float32)).to(dtype).requires_grad_()
    tb = mpamp.tensor(b.astype(np.float32)).to(dtype).requires_grad_() if bias else None
    fn = F.conv2d if nsp == 2 else F.conv1d
    pad_arg = padding if padding == "same" else tuple(padding)
    y = fn(tx, tw, tb, tuple(stride), pad_arg, tuple(dil), groups)
    yr_s = yr.reshape(y.shape)
    assert y.dtype is getattr(mpamp, dtype) and y.grad_fn.name() == "ConvolutionBackward0"
    rtol, atol = TOL[dtype]
    k = np.prod(ws[1:])
    scale = 4 if dtype == "float32" else 1      # fp32: K-long fp32 sums vs float64
    np.testing.assert_allclose(to_numpy(y), yr_s, rtol=rtol * scale, atol=atol * k)
    y.backward(mpamp.tensor(gy.reshape(y.shape).astype(np.float32)).to(dtype))
    assert tx.grad.dtype is getattr(mpamp, dtype) and tw.grad.dtype is tx.grad.dtype
    np.testing.assert_allclose(to_numpy(tx.grad), gxr.reshape(tx.shape), rtol=rtol * scale,
                               atol=atol * k)
    np.testing.assert_allclose(to_numpy(tw.grad), gwr.reshape(ws), rtol=rtol * scale,
                               atol=atol * y0.size / ws[0])
    if bias:
        np.testing.assert_allclose(to_numpy(tb.grad), gbr, rtol=rtol * scale,
                                   atol=atol * y0.size / ws[0])


CONV2D = [
    # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 3, 7, 9), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((3, 4, 11, 6), (6, 2, 3, 2), (2, 1), (1, 2), (2, 1), 2),
    ((2, 5, 9, 8), (5, 1, 3, 3), (2, 2), (1, 1), (1, 1), 5),          # depthwise
    ((1, 3, 5, 5), (7, 3, 1, 1), (1, 1), (0, 0), (1, 1), 1),          # 1x1 reads x directly
    ((2, 6, 6, 7), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 2),          # 1x1 with groups
    ((2, 3, 8, 8), (2, 3, 2, 3), (3, 2), (1, 0), (1, 1), 1),
    ((3, 7, 9), (4, 3, 3, 2), (1, 2), (2, 1), (1, 2), 1),             # unbatched
    ((2, 3, 4, 5), (3, 3, 4, 5), (1, 1), (0, 0), (1, 1), 1),          # kernel == input
    ((2, 2, 1, 1), (3, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1),          # all but the centre pad
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV2D, ids=lambda c: f"{c[0]}x{c[1]}")
def test_conv2d_forward_backward(cfg, dtype, rng):
    xs, ws, stride, padding, dil, groups = cfg
    check_conv(rng, dtype, xs, ws, True, stride, padding, dil, groups)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k,dil", [((2, 3), (1, 2)), ((4, 1), (1, 1)), ((3, 3), (2, 3))])
def test_conv2d_same_padding_is_asymmetric_for_even_totals(k, dil, dtype, rng):
    check_conv(rng, dtype, (2, 3, 7, 6), (4, 3) + k, False, (1, 1), "same", dil, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", [((2, 3, 10), (4, 3, 3), (2,), (1,), (1,), 1),
                                 ((3, 4, 9), (6, 2, 2), (1,), (0,), (3,), 2),
                                 ((4, 7), (2, 4, 5), (3,), (2,), (1,), 1),
                                 ((2, 3, 5), (2, 3, 1), (1,), (0,), (1,), 1)],
                         ids=str)
def test_conv1d_forward_backward(cfg, dtype, rng):
    xs, ws, stride, padding, dil, groups = cfg
    check_conv(rng, dtype, xs, ws, True, stride, padding, dil, groups, nsp=1)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_conv1d_same(k, rng):
    check_conv(rng, "float32", (2, 3, 9), (5, 3, k), True, (1,), "same", (2,), 1, nsp=1)


def test_conv2d_valid_padding_string(rng):
    x, w = mpamp.randn(2, 3, 6, 6), mpamp.randn(4, 3, 3, 3)
    assert F.conv2d(x, w, padding="valid").tolist() == F.conv2d(x, w).tolist()


def nhwc(dtype):
    def make(x):
        t = mpamp.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)).astype(np.float32))
        return t.to(dtype).permute(0, 3, 1, 2).detach()
    return make


def strided(dtype):
    def make(x):
        big = np.zeros(x.shape[:2] + (x.shape[2] * 2, x.shape[3] * 3), np.float32)
        big[:, :, ::2, ::3] = x
        return mpamp.tensor(big).to(dtype)[:, :, ::2, ::3].detach()
    return make


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("maker", [nhwc, strided])
def test_non_contiguous_inputs(maker, dtype, rng):
    tx = maker(dtype)(np.zeros((2, 3, 5, 4)))
    assert not tx.is_contiguous()
    check_conv(rng, dtype, (2, 3, 5, 4), (4, 3, 3, 2), True, (1, 2), (1, 1), (1, 1), 1,
               make_input=maker(dtype))
    check_conv(rng, dtype, (2, 4, 5, 4), (6, 4, 1, 1), True, (1, 1), (0, 0), (1, 1), 1,
               make_input=maker(dtype))


def test_expanded_input_and_non_contiguous_weight(rng):
    x = rng.standard_normal((1, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    tx = mpamp.tensor(x).expand(4, 3, 6, 5)
    tw = mpamp.tensor(np.ascontiguousarray(w.transpose(0, 1, 3, 2))).transpose(2, 3)
    tw.requires_grad_()
    y = F.conv2d(tx, tw, padding=1)
    ref = conv_ref(np.repeat(x, 4, 0).astype(np.float64), w.astype(np.float64), None, (1, 1),
                   (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(to_numpy(y), ref, rtol=1e-5, atol=1e-4)
    y.sum().backward()
    gw = conv_ref(np.repeat(x, 4, 0).astype(np.float64), w.astype(np.float64), None, (1, 1),
                  (1, 1), (1, 1), (1, 1), 1, gy=np.ones(ref.shape))[2]
    np.testing.assert_allclose(to_numpy(tw.grad), gw, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [(2, 1), "same"])
def test_padding_modes(mode, padding, rng):
    conv = nn.Conv2d(3, 4, (3, 4), padding=padding, padding_mode=mode, dilation=(1, 1))
    x = rng.standard_normal((2, 3, 5, 6))
    tx = mpamp.tensor(x.astype(np.float32), requires_grad=True)
    y = conv(tx)
    w = to_numpy(conv.weight.detach()).astype(np.float64)
    b = to_numpy(conv.bias.detach()).astype(np.float64)
    lo, hi = same_pads((3, 4), (1, 1)) if padding == "same" else (padding, padding)
    gy = rng.standard_normal(tuple(y.shape))
    yr, gx, gw, gb = conv_ref(x, w, b, (1, 1), lo, hi, (1, 1), 1, mode, gy=gy)
    np.testing.assert_allclose(to_numpy(y), yr, rtol=1e-5, atol=1e-5)
    y.backward(mpamp.tensor(gy.astype(np.float32)))
    np.testing.assert_allclose(to_numpy(tx.grad), gx, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(to_numpy(conv.weight.grad), gw, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(to_numpy(conv.bias.grad), gb, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes_conv1d_unbatched(mode, rng):
    conv = nn.Conv1d(2, 3, 3, padding=2, padding_mode=mode)
    x = rng.standard_normal((2, 5))
    tx = mpamp.tensor(x.astype(np.float32), requires_grad=True)
    y = conv(tx)
    w = to_numpy(conv.weight.detach()).astype(np.float64)[:, :, None, :]
    gy = rng.standard_normal(tuple(y.shape))
    yr, gx, _, _ = conv_ref(x[None, :, None, :], w, to_numpy(conv.bias.detach()), (1, 1),
                            (0, 2), (0, 2), (1, 1), 1, mode, gy=gy[None, :, None, :])
    np.testing.assert_allclose(to_numpy(y), yr[0, :, 0], rtol=1e-5, atol=1e-5)
    y.backward(mpamp.tensor(gy.astype(np.float32)))
    np.testing.assert_allclose(to_numpy(tx.grad), gx[0, :, 0], rtol=1e-5, atol=1e-4)


def test_only_some_gradients_and_empty_batch(rng):
    x = mpamp.randn(2, 3, 5, 5, requires_grad=True)
    w = mpamp.randn(4, 3, 3, 3)
    F.conv2d(x, w).sum().backward()                       # input only
    ref = conv_ref(to_numpy(x.detach()).astype(np.float64), to_numpy(w).astype(np.float64),
                   None, (1, 1), (0, 0), (0, 0), (1, 1), 1, gy=np.ones((2, 4, 3, 3)))[1]
    np.testing.assert_allclose(to_numpy(x.grad), ref, rtol=1e-5, atol=1e-4)
    w.requires_grad_()
    b = mpamp.zeros(4, requires_grad=True)
    y = F.conv2d(mpamp.randn(0, 3, 5, 5), w, b)
    assert tuple(y.shape) == (0, 4, 3, 3)
    y.sum().backward()
    assert to_numpy(w.grad).tolist() == np.zeros((4, 3, 3, 3)).tolist()
    assert to_numpy(b.grad).tolist() == [0.0] * 4
    z = F.conv2d(mpamp.randn(2, 0, 4, 4), mpamp.randn(3, 0, 2, 2), mpamp.ones(3))
    assert to_numpy(z).tolist() == np.ones((2, 3, 3, 3)).tolist()


def test_results_do_not_depend_on_the_thread_count(rng):
    x = mpamp.tensor(rng.standard_normal((6, 16, 20, 20)).astype(np.float32),
                     requires_grad=True)
    w = mpamp.tensor(rng.standard_normal((32, 16, 3, 3)).astype(np.float32),
                     requires_grad=True)
    b = mpamp.zeros(32, requires_grad=True)
    old = mpamp.get_num_threads()
    runs = []
    try:
        for n in (1, 2, 3):
            mpamp.set_num_threads(n)
            for t in (x, w, b):
                t.grad = None
            y = F.conv2d(x, w, b, padding=1)
            (y * y).sum().backward()
            runs.append([to_numpy(t) for t in (y.detach(), x.grad, w.grad, b.grad)])
    finally:
        mpamp.set_num_threads(old)
    for other in runs[1:]:
        for a, c in zip(runs[0], other):
            assert np.array_equal(a, c)


def test_backward_keeps_no_im2col_buffer_alive():
    x = mpamp.randn(8, 16, 24, 24, requires_grad=True)
    w = mpamp.randn(32, 16, 3, 3, requires_grad=True)
    base = mpamp._C._alloc_stats()["in_use_bytes"]
    y = F.conv2d(x, w)
    held = mpamp._C._alloc_stats()["in_use_bytes"] - base
    cols = 8 * 16 * 9 * 22 * 22 * 4
    assert held < 4 * y.numel() + 64 * 1024 < cols       # the output (+ the weight copy)
    y.sum().backward()


# ---- errors (torch's types and messages) ----

ERRORS = [
    (lambda: F.conv2d(mpamp.randn(5, 5), mpamp.randn(4, 3, 3, 3)), RuntimeError,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: "
     r"\[5, 5\]"),
    (lambda: F.conv1d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3)), RuntimeError,
     r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d, but got input of size: "
     r"\[2, 3, 5, 5\]"),
    (lambda: F.conv2d(mpamp.randn(2, 2, 5, 5), mpamp.randn(4, 3, 3, 3)), RuntimeError,
     r"Given groups=1, weight of size \[4, 3, 3, 3\], expected input\[2, 2, 5, 5\] to have 3 "
     r"channels, but got 2 channels instead"),
    (lambda: F.conv1d(mpamp.randn(2, 3), mpamp.randn(4, 3, 3)), RuntimeError,
     r"expected input\[1, 2, 3\] to have 3 channels, but got 2 channels instead"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 2, 2), mpamp.randn(4, 3, 3, 3)), RuntimeError,
     r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\). Kernel "
     r"size can't be greater than actual input size"),
    (lambda: F.conv1d(mpamp.randn(2, 3, 4), mpamp.randn(4, 3, 3), dilation=2), RuntimeError,
     r"Calculated padded input size per channel: \(4\). Kernel size: \(5\)"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), groups=2),
     RuntimeError, r"Given groups=2, weight of size \[4, 3, 3, 3\], expected input\[2, 3, 5, 5\] "
     r"to have 6 channels, but got 3 channels instead"),
    (lambda: F.conv2d(mpamp.randn(2, 4, 5, 5), mpamp.randn(3, 2, 3, 3), groups=2),
     RuntimeError, r"Given groups=2, expected weight to be divisible by 2 at dimension 0, but "
     r"got weight of size \[\[3, 2, 3, 3\]\] instead"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(0, 3, 3, 3)), RuntimeError,
     r"Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size "
     r"\[0, 3, 3, 3\] instead"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), stride=2,
                      padding="same"), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), padding="foo"),
     RuntimeError, "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), padding=-1),
     RuntimeError, "negative padding is not supported"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), stride=0),
     RuntimeError, "non-positive stride is not supported"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), dilation=0),
     RuntimeError, "non-positive dilation is not supported"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), groups=0),
     RuntimeError, "non-positive groups is not supported"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3)), RuntimeError,
     r"expected stride to be a single integer value or a list of 1 values to match the "
     r"convolution dimensions, but got stride=\[1, 1\]"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3)), RuntimeError,
     "weight should have at least three dimensions"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 0, 3)), RuntimeError,
     r"Given weight of size \[4, 3, 0, 3\], expected every kernel size to be at least 1"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), mpamp.randn(3)),
     RuntimeError, r"Given weight of size \[4, 3, 3, 3\], expected bias to be 1-dimensional "
     r"with 4 elements, but got bias of size \[3\] instead"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), padding=(1, 2, 3)),
     RuntimeError, r"expected padding to be a single integer value or a list of 2 values to "
     r"match the convolution dimensions, but got padding=\[1, 2, 3\]"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), padding=1.5),
     TypeError, r"conv2d\(\): argument 'padding' must be an int or a tuple of ints, not float"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), stride=(1, 2.0)),
     TypeError, r"conv2d\(\): argument 'stride' must be int, not float"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5, dtype="fp16"), mpamp.randn(4, 3, 3, 3)),
     RuntimeError, r"Input type \(torch.HalfTensor\) and weight type \(torch.FloatTensor\) "
     "should be the same"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5, dtype="bf16"), mpamp.randn(4, 3, 3, 3,
                                                                         dtype="bf16"),
                      mpamp.randn(4)), RuntimeError,
     r"Input type \(c10::BFloat16\) and bias type \(float\) should be the same"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), mpamp.randn(4,
                                                                                   dtype="fp16")),
     RuntimeError, r"Input type \(float\) and bias type \(c10::Half\) should be the same"),
    (lambda: F.conv2d(mpamp.ones(2, 3, 5, 5, dtype=mpamp.int64),
                      mpamp.ones(4, 3, 3, 3, dtype=mpamp.int64)), NotImplementedError,
     "\"slow_conv2d_cpu\" not implemented for 'Long'"),
    (lambda: F.conv2d("x", mpamp.randn(4, 3, 3, 3)), TypeError,
     r"conv2d\(\): argument 'input' \(position 1\) must be Tensor, not str"),
    (lambda: F.conv2d(mpamp.randn(2, 3, 5, 5), mpamp.randn(4, 3, 3, 3), bias=3), TypeError,
     r"conv2d\(\): argument 'bias' must be Tensor or None, not int"),
    (lambda: nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect")(mpamp.randn(1, 1, 3, 3)),
     RuntimeError, r"Argument #4: Padding size should be less than the corresponding input "
     r"dimension, but got: padding \(3, 3\) at dimension 3 of input \[1, 1, 3, 3\]"),
    (lambda: nn.Conv1d(1, 1, 3, padding=2, padding_mode="reflect")(mpamp.randn(1, 2)),
     RuntimeError, r"padding \(2, 2\) at dimension 1 of input \[1, 2\]"),
    (lambda: nn.Conv2d(1, 1, 3, padding=4, padding_mode="circular")(mpamp.randn(1, 1, 3, 3)),
     RuntimeError, "Padding value causes wrapping around more than once."),
    (lambda: nn.Conv2d(3, 4, 3, padding_mode="foo"), ValueError,
     r"padding_mode must be one of \{.*\}, but got padding_mode='foo'"),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError,
     "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 3, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(4, 4, 3, padding="bad"), ValueError,
     r"Invalid padding string 'bad', should be one of \{.*\}"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_binding_argument_errors():
    x, w = mpamp.randn(1, 1, 3, 3), mpamp.randn(1, 1, 1, 1)
    with pytest.raises(TypeError, match=r"_conv\(\) takes 9 positional arguments"):
        mpamp._C._conv(x, w)
    with pytest.raises(ValueError, match="nsp must be 1 or 2"):
        mpamp._C._conv(x, w, None, 1, 0, 1, 1, 3, 0)


# ---- modules ----

def test_conv_modules_init_repr_state_dict():
    mpamp.manual_seed(0)
    c = nn.Conv2d(6, 8, (3, 5), groups=2)
    fan_in = 3 * 3 * 5
    bound = 1 / math.sqrt(fan_in)
    w, b = to_numpy(c.weight.detach()), to_numpy(c.bias.detach())
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.15 * bound
    assert list(c.state_dict()) == ["weight", "bias"]
    assert tuple(c.weight.shape) == (8, 3, 3, 5)
    assert repr(c) == "Conv2d(6, 8, kernel_size=(3, 5), stride=(1, 1), groups=2)"
    c1 = nn.Conv1d(2, 3, 4, bias=False, padding="same", padding_mode="circular")
    assert c1.bias is None and list(c1.state_dict()) == ["weight"]
    assert c1._reversed_padding_repeated_twice == [1, 2]
    assert repr(c1) == ("Conv1d(2, 3, kernel_size=(4,), stride=(1,), padding=same, bias=False, "
                        "padding_mode=circular)")
    assert nn.Conv2d(1, 1, 2, dtype=mpamp.bfloat16).weight.dtype is mpamp.bfloat16


def test_conv2d_module_matches_torch():
    torch = pytest.importorskip("torch")
    for kw in [dict(stride=2, padding=1), dict(padding="same", dilation=2, groups=3),
               dict(padding=(2, 1), padding_mode="reflect"), dict(padding=1,
                                                                  padding_mode="circular")]:
        tc = torch.nn.Conv2d(6, 9, (3, 2), **kw)
        mc = nn.Conv2d(6, 9, (3, 2), **kw)
        mc.load_state_dict({k: mpamp.tensor(v.detach().numpy())
                            for k, v in tc.state_dict().items()})
        assert repr(mc) == repr(tc)
        x = np.random.default_rng(3).standard_normal((2, 6, 9, 8)).astype(np.float32)
        tx, mx = torch.tensor(x, requires_grad=True), mpamp.tensor(x, requires_grad=True)
        ty, my = tc(tx), mc(mx)
        np.testing.assert_allclose(to_numpy(my), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
        (ty ** 2).sum().backward()
        (my * my).sum().backward()
        np.testing.assert_allclose(to_numpy(mx.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(to_numpy(mc.weight.grad), tc.weight.grad.numpy(),
                                   rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(to_numpy(mc.bias.grad), tc.bias.grad.numpy(), rtol=1e-4,
                                   atol=1e-3)


def test_conv1d_module_matches_torch():
    torch = pytest.importorskip("torch")
    tc = torch.nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)
    mc = nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)
    mc.load_state_dict({k: mpamp.tensor(v.detach().numpy()) for k, v in tc.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((3, 4, 13)).astype(np.float32)
    np.testing.assert_allclose(to_numpy(mc(mpamp.tensor(x))),
                               tc(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert [(k, tuple(v.shape)) for k, v in mc.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tc.state_dict().items()]


# ---- autocast ----

def test_autocast_policy_rows():
    pol = mpamp._C._autocast_policy
    for op in ("conv1d", "conv2d"):
        assert pol(op, "cpu") == "lower" and pol(op, "cuda") == "lower"
    assert pol("group_norm", "cpu") is None and pol("group_norm", "cuda") == "fp32"


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("nsp", [1, 2])
def test_conv_runs_in_lower_precision_under_autocast(low, nsp, rng):
    shape = (2, 3, 6, 5) if nsp == 2 else (2, 3, 7)
    conv = (nn.Conv2d if nsp == 2 else nn.Conv1d)(3, 4, 3, padding=1)
    x = mpamp.tensor(rng.standard_normal(shape).astype(np.float32))
    with mpamp.autocast(dtype=low):
        y = conv(x)
    assert y.dtype is getattr(mpamp, low)
    lx = x.to(low)
    lw, lb = conv.weight.detach().to(low), conv.bias.detach().to(low)
    plain = (F.conv2d if nsp == 2 else F.conv1d)(lx, lw, lb, 1, 1)
    assert np.array_equal(to_numpy(y), to_numpy(plain))
    y.float().sum().backward()
    assert conv.weight.grad.dtype is mpamp.float32 and conv.bias.grad.dtype is mpamp.float32
    assert (F.conv2d if nsp == 2 else F.conv1d)(x, conv.weight, conv.bias, 1, 1).dtype \
        is mpamp.float32


def test_second_backward_needs_retain_graph():
    y = F.conv2d(mpamp.randn(1, 2, 4, 4, requires_grad=True), mpamp.randn(3, 2, 3, 3)).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
