"""The GEMM of csrc/cpu/gemm.c called directly (`_C._gemm`): every ISA level this CPU runs,
one and two threads, all input/output dtype pairs, transposes, and the fused epilogue (alpha,
beta, bias, ReLU/GELU, rounding to the output dtype), against a float64 product of the same
rounded inputs with an error bound that grows with K. Shapes are chosen to miss every block
size: 1 x N, N x 1, primes, K odd and past one KC slice."""
import os
import math

import numpy as np
import pytest

import mpamp
from mpamp import _C
from conftest import to_numpy

ISAS = _C._supported_isas()
DTYPES = ["float32", "float16", "bfloat16"]
EPS = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
SHAPES = [(1, 37, 5), (37, 1, 5), (1, 1, 1), (7, 13, 29), (97, 101, 103), (5, 33, 257),
          (13, 50, 513), (150, 17, 300), (6, 16, 256), (200, 3, 1031)]


def rounded(rng, shape, dtype):
    """A tensor of `dtype` and the float64 values it actually holds."""
    t = mpamp.tensor(rng.standard_normal(shape).astype(np.float32)).to(dtype)
    return t, to_numpy(t.float()).astype(np.float64)


def run(a, b, c, ta=False, tb=False, alpha=1.0, beta=0.0, bias=None, act="none", isa=None,
        threads=0, round="float32"):
    _C._gemm(a, b, c, ta, tb, alpha, beta, bias, act, isa or ISAS[-1], threads, round)
    return to_numpy(c.float()).astype(np.float64)


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def check(out, ref, mag, k, out_dtype):
    """|out - ref| <= (K + 2) eps32 * (|A| @ |B|) + rounding of the output."""
    tol = (k + 2) * EPS["float32"] * mag + EPS[out_dtype] * np.abs(ref) + 1e-30
    bad = np.abs(out - ref) > tol
    assert not bad.any(), (np.argwhere(bad)[:5], out[bad][:5], ref[bad][:5])


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_every_isa_matches_float64(rng, isa, m, n, k):
    for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
        a, an = rounded(rng, (k, m) if ta else (m, k), "float32")
        b, bn = rounded(rng, (n, k) if tb else (k, n), "float32")
        opa, opb = (an.T if ta else an), (bn.T if tb else bn)
        c = mpamp.empty(m, n)
        out = run(a, b, c, ta, tb, isa=isa)
        check(out, opa @ opb, np.abs(opa) @ np.abs(opb), k, "float32")


@pytest.mark.parametrize("adt", DTYPES)
@pytest.mark.parametrize("cdt", DTYPES)
def test_input_and_output_dtypes(rng, adt, cdt):
    for isa in ISAS:
        for (m, n, k), ta, tb in [((37, 45, 300), False, True), ((1, 70, 9), False, True),
                                  ((64, 1, 513), False, True), ((37, 45, 300), True, False),
                                  ((50, 33, 21), True, True), ((12, 32, 17), False, False)]:
            a, an = rounded(rng, (k, m) if ta else (m, k), adt)
            b, bn = rounded(rng, (n, k) if tb else (k, n), adt)
            opa, opb = (an.T if ta else an), (bn.T if tb else bn)
            c = mpamp.empty(m, n, dtype=cdt)
            out = run(a, b, c, ta, tb, isa=isa)
            assert c.dtype == getattr(mpamp, cdt)
            check(out, opa @ opb, np.abs(opa) @ np.abs(opb), k, cdt)


@pytest.mark.parametrize("adt", ["float16", "bfloat16"])
@pytest.mark.parametrize("k", [3, 8, 10, 15, 23])
def test_half_inputs_pack_to_the_bits_of_their_float32_values(rng, adt, k):
    """fp16/bf16 operands are widened while packing into the fp32 panels: the product is the
    one of the same values given as fp32, bit for bit, whatever the k tail (a depth that is
    not a multiple of 8 re-reads the last 8 k of each row; below 8 the portable packer), the
    layout (contiguous along k or along the panel) and the output dtype. bf16 x bf16 takes its
    own kernel on AVX512_BF16 (tested elsewhere), so that level checks fp16 here."""
    for isa in ISAS:
        if adt == "bfloat16" and _C._gemm_kernel_name(isa, "bf16", "bf16").find("fp32") < 0:
            continue
        for (m, n), ta, tb in [((256, 10), False, True), ((37, 45), True, False),
                               ((13, 33), False, False), ((50, 7), True, True)]:
            a, _ = rounded(rng, (k, m) if ta else (m, k), adt)
            b, _ = rounded(rng, (n, k) if tb else (k, n), adt)
            for cdt in ("float32", adt):
                got = run(a, b, mpamp.empty(m, n, dtype=cdt), ta, tb, isa=isa)
                want = run(a.float(), b.float(), mpamp.empty(m, n, dtype=cdt), ta, tb, isa=isa)
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rdt", ["float16", "bfloat16"])
def test_round_dtype_stores_the_16_bit_values_in_fp32(rng, rdt):
    """round='float16'/'bfloat16' with an fp32 C: each result is the 16-bit C's value,
    widened exactly - one KC slice or several (C then holds the partial sums), full and edge
    tiles, in-place or transposed operands, every level; and it is refused for a 16-bit C
    or with beta."""
    for isa in ISAS:
        for (m, n, k), ta in [((37, 45, 300), False), ((64, 33, 1100), True),
                              ((300, 10, 256), False)]:
            a, _ = rounded(rng, (k, m) if ta else (m, k), rdt)
            b, _ = rounded(rng, (k, n), rdt)
            got = run(a, b, mpamp.empty(m, n), ta, isa=isa, round=rdt)
            want = run(a, b, mpamp.empty(m, n, dtype=rdt), ta, isa=isa)
            np.testing.assert_array_equal(got, want)
    a, b = mpamp.ones(2, 3), mpamp.ones(3, 4)
    with pytest.raises(TypeError):
        _C._gemm(a, b, mpamp.empty(2, 4, dtype=rdt), False, False, 1.0, 0.0, None, "none",
                 "scalar", 0, rdt)
    with pytest.raises(TypeError):
        _C._gemm(a, b, mpamp.empty(2, 4), False, False, 1.0, 1.0, None, "none", "scalar", 0,
                 rdt)
    with pytest.raises(ValueError, match="round must be"):
        _C._gemm(a, b, mpamp.empty(2, 4), False, False, 1.0, 0.0, None, "none", "scalar", 0,
                 "int8")


@pytest.mark.parametrize("k", [1, 100, 700])
@pytest.mark.parametrize("cdt", DTYPES)
@pytest.mark.parametrize("m,n", [(23, 41), (300, 10), (129, 1)])
def test_fused_epilogue(rng, k, cdt, m, n):
    """41 columns: row by row; 10 and 1 (below 16, C's rows contiguous): a 16-bit C takes
    its rows many at a time (300 x 10 fills the 512-value buffer more than once)."""
    a, an = rounded(rng, (m, k), "bfloat16")
    b, bn = rounded(rng, (k, n), "bfloat16")
    bias, biasn = rounded(rng, (n,), "float16")
    prod = an @ bn
    mag = np.abs(an) @ np.abs(bn) * 0.75 + np.abs(biasn)
    for act, f in [("none", lambda x: x), ("relu", lambda x: np.maximum(x, 0)),
                   ("gelu", gelu)]:
        for isa in ISAS:
            c = mpamp.empty(m, n, dtype=cdt)
            out = run(a, b, c, alpha=0.75, bias=bias, act=act, isa=isa)
            ref = f(0.75 * prod + biasn)
            check(out, ref, mag, k, cdt)
        plain = run(a, b, mpamp.empty(m, n, dtype=cdt), isa=ISAS[-1])
        check(plain, prod, np.abs(an) @ np.abs(bn), k, cdt)


def test_beta_accumulates_into_float32_c(rng):
    a, an = rounded(rng, (30, 600), "float16")
    b, bn = rounded(rng, (600, 20), "float16")
    c0 = rng.standard_normal((30, 20)).astype(np.float32)
    for isa in ISAS:
        for alpha, beta in [(1.0, 1.0), (2.0, 1.0), (1.0, -0.5), (0.5, 3.0)]:
            c = mpamp.tensor(c0.copy())
            out = run(a, b, c, alpha=alpha, beta=beta, isa=isa)
            ref = alpha * (an @ bn) + beta * c0
            check(out, ref, abs(alpha) * (np.abs(an) @ np.abs(bn)) + abs(beta) * np.abs(c0),
                  600, "float32")


def test_beta_zero_never_reads_c_and_alpha_zero_never_reads_a(rng):
    a, an = rounded(rng, (9, 11), "float32")
    b, bn = rounded(rng, (11, 7), "float32")
    c = mpamp.full((9, 7), float("nan"))
    out = run(a, b, c)
    check(out, an @ bn, np.abs(an) @ np.abs(bn), 11, "float32")
    nan_a = mpamp.full((9, 11), float("nan"))
    c = mpamp.ones(9, 7)
    np.testing.assert_array_equal(run(nan_a, b, c, alpha=0.0, beta=2.0), 2.0)


def test_empty_k_gives_beta_c_plus_bias():
    a, b = mpamp.empty(4, 0), mpamp.empty(0, 3)
    bias = mpamp.tensor([1.0, 2.0, 3.0])
    c = mpamp.full((4, 3), 10.0)
    np.testing.assert_array_equal(run(a, b, c, beta=0.5, bias=bias),
                                  np.tile([6.0, 7.0, 8.0], (4, 1)))


def test_threads_give_bit_identical_results(rng):
    """Pieces split rows or columns; every element is summed in the same order."""
    for m, n, k in [(400, 30, 300), (30, 400, 300), (256, 256, 513)]:
        a, _ = rounded(rng, (m, k), "float32")
        b, _ = rounded(rng, (k, n), "bfloat16")
        outs = []
        for threads in (1, 2, 3):
            c = mpamp.empty(m, n, dtype="bf16")
            outs.append(run(a, b, c, bias=mpamp.ones(n), act="relu", threads=threads))
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])


def test_blocked_shapes_with_every_output_dtype(rng):
    """Past every cache block at once: two MC blocks, two NC blocks of a width that ends in a
    partial cache-line group, two KC passes; fp16/bf16 output goes through the scratch and the
    group epilogue, fp32 with a bias through C itself. Every ISA, 1 and 2 threads."""
    m, n, k = 150, 4100, 400
    a, an = rounded(rng, (m, k), "float16")
    b, bn = rounded(rng, (n, k), "float16")
    bias, biasn = rounded(rng, (n,), "float32")
    ref = an @ bn.T + biasn
    mag = np.abs(an) @ np.abs(bn.T) + np.abs(biasn)
    for cdt in DTYPES:
        for isa in ISAS:
            outs = []
            for threads in (1, 2):
                c = mpamp.empty(m, n, dtype=cdt)
                outs.append(run(a, b, c, tb=True, bias=bias, isa=isa, threads=threads))
                check(outs[-1], ref, mag, k, cdt)
            np.testing.assert_array_equal(outs[0], outs[1])


def test_shared_packing_across_pieces(rng):
    """With several pieces, the operand all of them need is packed once, by whichever threads
    get to each block first: rows split (B shared, past one NC block of columns) and columns
    split (A shared, two MC blocks, two KC slices), bit-identical for 1, 2 and 3 threads."""
    for m, n, k in [(4200, 4100, 24), (150, 2000, 700)]:
        a, an = rounded(rng, (m, k), "bfloat16")
        b, bn = rounded(rng, (k, n), "float32")
        ref, mag = an @ bn, np.abs(an) @ np.abs(bn)
        for isa in ISAS[-1:]:
            outs = []
            for threads in (1, 2, 3):
                c = mpamp.empty(m, n, dtype="float16")
                outs.append(run(a, b, c, isa=isa, threads=threads))
            check(outs[0], ref, mag, k, "float16")
            np.testing.assert_array_equal(outs[0], outs[1])
            np.testing.assert_array_equal(outs[0], outs[2])


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("m,k", [(1, 7), (5, 1), (6, 384), (7, 385), (13, 64), (145, 800),
                                 (300, 33)])
def test_unpacked_a_gives_the_packed_bits(rng, isa, m, k):
    """An fp32 A that few columns reuse is read in place instead of packed (up to 512 columns
    of C, and a transposed A at most 512 floats wide): the same multiply-adds in the same
    order, so the same bits as the packed product whose columns (or rows) it is - a wider B
    (or a wider transposed A) takes the packed path. Full and edge tiles, one and several KC
    slices, C in place, the group epilogue (alpha, beta, bias) and the scratch (fp16 C)."""
    n_small, n_wide = 17, 600
    for ta in (False, True):
        a_wide, _ = rounded(rng, (k, n_wide) if ta else (m, k), "float32")
        b_wide, _ = rounded(rng, (k, n_wide), "float32")
        # the operands of the unpacked product, as contiguous tensors
        a = a_wide[:, :m].contiguous() if ta else a_wide
        b = b_wide[:, :n_small].contiguous()
        bias, _ = rounded(rng, (n_wide,), "float32")
        for cdt, extra in (("float32", {}), ("float32", dict(alpha=0.5, bias=bias)),
                           ("float16", dict(alpha=2.0))):
            kw = dict(extra)
            if "bias" in kw:
                kw["bias"] = bias[:n_small].contiguous()
            small = run(a, b, mpamp.empty(m, n_small, dtype=cdt), ta=ta, isa=isa, **kw)
            if ta:                                          # packed: A^T 600 floats wide
                kw_w = dict(extra)
                if "bias" in kw_w:
                    kw_w["bias"] = bias[:n_small].contiguous()
                wide = run(a_wide, b, mpamp.empty(n_wide, n_small, dtype=cdt), ta=True,
                           isa=isa, **kw_w)[:m]
            else:                                           # packed: 600 columns of C
                wide = run(a, b_wide, mpamp.empty(m, n_wide, dtype=cdt), isa=isa,
                           **extra)[:, :n_small]
            np.testing.assert_array_equal(small, wide)


def test_vector_kernels_agree_with_scalar(rng):
    """Not bit-equal (FMA rounds once, the portable kernel twice), but both within the bound
    of the float64 product, and close to each other."""
    a, an = rounded(rng, (61, 333), "float32")
    b, bn = rounded(rng, (333, 47), "float32")
    ref = an @ bn
    scalar = run(a, b, mpamp.empty(61, 47), isa="scalar")
    for isa in ISAS:
        out = run(a, b, mpamp.empty(61, 47), isa=isa)
        check(out, ref, np.abs(an) @ np.abs(bn), 333, "float32")
        np.testing.assert_allclose(out, scalar, rtol=1e-4, atol=1e-4)


def test_kernel_names():
    assert _C._gemm_kernel_name("scalar", "fp32", "fp32").startswith("scalar")
    for isa in ISAS:
        name = _C._gemm_kernel_name(isa, "bf16", "bf16")
        assert isa.split("bf16")[0] in name or (isa == "avx512bf16" and name.startswith("amx"))


def test_hook_argument_errors():
    a, b, c = mpamp.ones(2, 3), mpamp.ones(3, 4), mpamp.empty(2, 4)
    with pytest.raises(ValueError, match="shapes do not match"):
        _C._gemm(a, a, c, False, False, 1.0, 0.0, None, "none", "scalar", 0)
    with pytest.raises(ValueError, match="'relu' or 'gelu'"):
        _C._gemm(a, b, c, False, False, 1.0, 0.0, None, "tanh", "scalar", 0)
    with pytest.raises(ValueError, match="not supported"):
        _C._gemm(a, b, c, False, False, 1.0, 0.0, None, "none", "sse9", 0)
    with pytest.raises(TypeError, match="float32 c"):
        _C._gemm(a, b, mpamp.empty(2, 4, dtype="bf16"), False, False, 1.0, 1.0, None, "none",
                 "scalar", 0)
    with pytest.raises(ValueError, match="contiguous 2-D"):
        _C._gemm(a.t(), b, c, False, False, 1.0, 0.0, None, "none", "scalar", 0)
    with pytest.raises(TypeError, match="must be a tensor"):
        _C._gemm(a, [1], c, False, False, 1.0, 0.0, None, "none", "scalar", 0)
    if mpamp.cuda.is_available():          # a simulated or real GPU: device memory refused
        with pytest.raises(ValueError, match="b must be a CPU tensor"):
            _C._gemm(a, b.cuda(), c, False, False, 1.0, 0.0, None, "none", "scalar", 0)


def test_repeated_products_reuse_the_packing_buffers(rng):
    """A training step runs the same products every step: after the first, the GEMM's
    multi-MiB packing buffers (from the caching allocator, as tensors) come from its cache,
    not the system. empty_cache returns them."""
    x = mpamp.tensor(rng.standard_normal((256, 512)).astype(np.float32))
    w = mpamp.tensor(rng.standard_normal((768, 512)).astype(np.float32))
    system = lambda: _C._alloc_stats()["system_allocs"]      # noqa: E731
    for threads in (1, 2):
        mpamp.set_num_threads(threads)
        try:
            for _ in range(3):                                     # warm-up
                mpamp.nn.functional.linear(x, w)
                mpamp.nn.functional.linear(x.bfloat16(), w.bfloat16())
            before = system()
            for _ in range(5):
                mpamp.nn.functional.linear(x, w)
                mpamp.nn.functional.linear(x.bfloat16(), w.bfloat16())
            assert system() == before
        finally:
            mpamp.set_num_threads(_default_threads)
    mpamp.backends.cpu.empty_cache()
    assert _C._alloc_stats()["cached_bytes"] == 0
    before = system()
    mpamp.nn.functional.linear(x, w)
    assert system() > before


_default_threads = mpamp.get_num_threads()


def test_bf16_products_take_the_faster_kernel_and_the_override():
    """On AVX512_BF16 CPUs bf16 x bf16 products use AMX tiles where the process may (Intel
    Xeons since Sapphire Rapids), else vdpbf16ps on AMD and the widening fp32 kernel on Intel
    (where vdpbf16ps runs at half the FMA rate); MPAMP_GEMM_BF16=amx|dot|fp32 overrides it,
    and every kernel gives products within the bf16 rounding bound, edges and transposes
    included."""
    import subprocess
    import sys
    script = (
        "import itertools, numpy as np, mpamp\n"
        "from mpamp import _C\n"
        "rng = np.random.default_rng(0)\n"
        "for (m, n, k), (ta, tb) in itertools.product(\n"
        "        [(1, 1, 1), (33, 31, 17), (100, 70, 300), (200, 96, 513)],\n"
        "        itertools.product([False, True], repeat=2)):\n"
        "    a = mpamp.tensor(rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32))\n"
        "    b = mpamp.tensor(rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32))\n"
        "    a, b = a.bfloat16(), b.bfloat16()\n"
        "    a, b = (a.t() if ta else a), (b.t() if tb else b)\n"
        "    an, bn = a.float().numpy().astype(np.float64), b.float().numpy().astype(np.float64)\n"
        "    bound = 2.0 ** -8 * (np.abs(an) @ np.abs(bn)) + 1e-6\n"
        "    assert (np.abs((a @ b).float().numpy() - an @ bn) <= bound).all(), (m, n, k, ta, tb)\n"
        "    # linear with a bias: the epilogue's path\n"
        "    bias = mpamp.tensor(rng.standard_normal(n).astype(np.float32)).bfloat16()\n"
        "    lin = mpamp.nn.functional.linear(a, b.t(), bias).float().numpy()\n"
        "    want = an @ bn + bias.float().numpy()\n"
        "    assert (np.abs(lin - want) <= bound + 2.0 ** -7 * np.abs(want)).all()\n"
        "print(_C._gemm_kernel_name(mpamp.backends.cpu.get_cpu_capability(), 'bf16', 'bf16'))\n")
    names = {}
    for mode in ("amx", "dot", "fp32", ""):
        env = dict(os.environ, MPAMP_GEMM_BF16=mode)
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        names[mode] = run.stdout.strip()
    with open("/proc/cpuinfo") as f:
        cpuinfo = f.read()
    if names["dot"].startswith("avx512bf16"):          # the CPU (and MPAMP_CPU_ISA) allow it
        assert names["fp32"].startswith("avx512 fp32")
        if names["amx"].startswith("amx"):
            assert names[""] == names["amx"]
        else:
            intel = "GenuineIntel" in cpuinfo
            assert names[""] == (names["fp32"] if intel else names["dot"])
    else:
        assert names["dot"] == names["fp32"] == names[""] == names["amx"]
