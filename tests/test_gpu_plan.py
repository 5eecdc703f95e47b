"""The GPU backend's host plans (csrc/gpu/), checked against their definitions on any machine:
multi-tensor chunking covers every element once within the kernel-parameter limit, launch
shapes, and the row-major -> column-major GEMM layout against cuBLAS's column-major semantics
(the simulated GPU computes every product through that layout: tests/test_device_suite.py)."""
import random

import numpy as np
import pytest

from mpamp import _C

CHUNK, MAX_BLOCKS = 65536, 320
MAX_TENSORS = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30, 6: 24, 7: 20}


@pytest.mark.parametrize("depth", sorted(MAX_TENSORS))
def test_multi_tensor_plan_covers_every_chunk_once(depth):
    rng = random.Random(depth)
    for trial in range(30):
        numels = [rng.choice([0, 1, 7, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5,
                              rng.randrange(1, 40 * CHUNK)]) for _ in range(rng.randrange(0, 300))]
        seen = []
        for tensors, blocks in _C._gpu_mt_plan(numels, depth):
            assert 1 <= len(tensors) <= MAX_TENSORS[depth]
            assert 1 <= len(blocks) <= MAX_BLOCKS
            assert len(set(tensors)) == len(tensors)
            assert {s for s, _ in blocks} == set(range(len(tensors)))   # every slot used
            seen += [(tensors[s], c) for s, c in blocks]
        want = [(t, c) for t, n in enumerate(numels) for c in range(-(-n // CHUNK))]
        assert seen == want            # each chunk once, in order; empty tensors skipped


def test_multi_tensor_launch_parameters_fit_4k():
    # the kernels' parameter block: `depth` address lists, numels, one more per-tensor word
    # from depth 2 (the optimizers' Philox offsets), the block tables (uint8 tensor + int32
    # chunk) and a start index
    for depth, t in MAX_TENSORS.items():
        extra = t * 8 if depth >= 2 else 0
        assert depth * t * 8 + t * 8 + extra + MAX_BLOCKS * 5 + 8 <= 4096


def test_multi_tensor_plan_refuses_bad_depth():
    with pytest.raises(ValueError, match="depth must be 1..7"):
        _C._gpu_mt_plan([1], 0)
    with pytest.raises(ValueError, match="depth must be 1..7"):
        _C._gpu_mt_plan([1], 8)


def test_launch_shape():
    assert _C._gpu_launch_shape(0, 1, 132) == (1, 256, 1)
    assert _C._gpu_launch_shape(1, 4, 132) == (1, 256, 4)
    assert _C._gpu_launch_shape(1024, 4, 132) == (1, 256, 4)
    assert _C._gpu_launch_shape(1025, 4, 132) == (2, 256, 4)
    assert _C._gpu_launch_shape(10 ** 9, 4, 132) == (132 * 8, 256, 4)
    assert _C._gpu_launch_shape(10 ** 9, 1, 0) == (8, 256, 1)


def test_vector_width():
    assert _C._gpu_vector_width(64, 4, 128, 4) == 4
    assert _C._gpu_vector_width(64, 2, 128, 2) == 8
    assert _C._gpu_vector_width(64, 4, 128, 2) == 4        # the widest item decides
    assert _C._gpu_vector_width(64, 4, 130, 2) == 1        # one misaligned address
    assert _C._gpu_vector_width(64, 8, 16, 8) == 2


def colmajor_product(cm, a_flat, b_flat, c_len):
    """cuBLAS's definition: C[i + j*ldc] = sum_l op(X)[i, l] * op(Y)[l, j], X = B, Y = A."""
    x, y = b_flat, a_flat
    c = np.zeros(c_len)
    for i in range(cm["rows"]):
        for j in range(cm["cols"]):
            s = 0.0
            for l in range(cm["inner"]):
                xv = x[l + i * cm["ldx"]] if cm["trans_x"] else x[i + l * cm["ldx"]]
                yv = y[j + l * cm["ldy"]] if cm["trans_y"] else y[l + j * cm["ldy"]]
                s += xv * yv
            c[i + j * cm["ldc"]] = s
    return c


@pytest.mark.parametrize("ta", [0, 1])
@pytest.mark.parametrize("tb", [0, 1])
def test_gemm_layout_is_cublas_semantics(ta, tb):
    rng = np.random.default_rng(10 * ta + tb)
    for m, n, k in [(3, 4, 5), (1, 6, 2), (5, 1, 3), (4, 4, 1), (2, 3, 7)]:
        pad = int(rng.integers(0, 3))
        a_rows, a_cols = (k, m) if ta else (m, k)
        b_rows, b_cols = (n, k) if tb else (k, n)
        lda, ldb, ldc = a_cols + pad, b_cols + pad, n + pad
        a_flat = rng.standard_normal(a_rows * lda)
        b_flat = rng.standard_normal(b_rows * ldb)
        a = a_flat.reshape(a_rows, lda)[:, :a_cols]
        b = b_flat.reshape(b_rows, ldb)[:, :b_cols]
        want = (a.T if ta else a) @ (b.T if tb else b)
        cm = _C._gpu_gemm_colmajor(ta, tb, m, n, k, lda, ldb, ldc, 1, 1, 0, 0, 0, 1, 1.0, 0)
        c = colmajor_product(cm, a_flat, b_flat, m * ldc).reshape(m, ldc)[:, :n]
        np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)


def layout(**kw):
    args = dict(ta=0, tb=0, m=4, n=4, k=4, lda=4, ldb=4, ldc=4, adt=0, bdt=0, cdt=0,
                bias=0, bias_dt=0, bias_stride=1, bias_scale=1.0, act=0)
    args.update(kw)
    return _C._gpu_gemm_colmajor(*args.values())


def test_gemm_layout_epilogues():
    DEFAULT, BIAS, RELU_BIAS, RELU, SEPARATE = range(5)
    assert layout()["epilogue"] == DEFAULT
    assert layout(act=1)["epilogue"] == RELU
    assert layout(bias=1)["epilogue"] == BIAS
    assert layout(bias=1, act=1)["epilogue"] == RELU_BIAS
    assert layout(act=2)["epilogue"] == SEPARATE                  # exact GELU: not cuBLASLt's
    assert layout(bias=1, bias_stride=2)["epilogue"] == SEPARATE
    assert layout(bias=1, bias_scale=0.5)["epilogue"] == SEPARATE
    assert layout(adt=2, bdt=2, cdt=2, bias=1, bias_dt=0)["epilogue"] == SEPARATE
    assert layout(adt=2, bdt=2, cdt=2, bias=1, bias_dt=2)["epilogue"] == BIAS


def test_gemm_layout_refusals():
    with pytest.raises(ValueError, match="no cuBLASLt kernel for float16 x bfloat16"):
        layout(adt=1, bdt=2, cdt=0)
    with pytest.raises(ValueError, match="no cuBLASLt kernel for float32 x float32 into float16"):
        layout(cdt=1)
    with pytest.raises(NotImplementedError, match="int64"):
        layout(adt=3, bdt=3, cdt=3)
    with pytest.raises(ValueError, match="leading dimension"):
        layout(lda=3)
    with pytest.raises(ValueError, match="leading dimension"):
        layout(ldc=2)


def test_gemm_workspace(monkeypatch):
    monkeypatch.delenv("MPAMP_CUBLASLT_WORKSPACE_MB", raising=False)
    assert _C._gpu_gemm_workspace(9, 0) == 32 << 20
    assert _C._gpu_gemm_workspace(8, 0) == 4 << 20
    monkeypatch.setenv("MPAMP_CUBLASLT_WORKSPACE_MB", "64")
    assert _C._gpu_gemm_workspace(8, 0) == 64 << 20
    monkeypatch.setenv("MPAMP_CUBLASLT_WORKSPACE_MB", "lots")     # ignored: the default
    assert _C._gpu_gemm_workspace(9, 0) == 32 << 20
