"""The AVX-512 GEMM micro-kernels on a CPU without AVX-512, through an emulation.

csrc/cpu/gemm_avx512.c (fp32, FMA) and gemm_avx512bf16.c (bf16 pairs, vdpbf16ps) are compiled
after tests/avx512_emu/shim.h, which maps the AVX-512 intrinsics onto SIMDe's portable versions
and vdpbf16ps onto a lane loop with the SDM's order and DAZ/FTZ (SIMDe's own differs). They run
under the real driver (csrc/cpu/gemm.c, packing, epilogue, threads) through a stand-in for the
dispatch table; gemm_check_main.c checks every product against a float64 product of the same
rounded inputs (K-scaled bound; integer data exactly) and against the scalar kernel, over odd
shapes, K past the blocking, transposes, every input/output dtype, epilogues and 1 or 2 threads,
plus which kernel each level picks and the emulated flushing against the host's MXCSR.DAZ|FTZ.
This tests the kernels' logic, not the silicon or its speed; on a machine with AVX-512 the
matmul tests run the real thing. Skipped without a C compiler, the SIMDe headers (Debian:
libsimde-dev) or AVX2 (the emulation runs on it).
"""
import os
import subprocess

from conftest import emulation_compiler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMU = os.path.join(ROOT, "tests", "avx512_emu")
CPU = os.path.join(ROOT, "csrc", "cpu")
SOURCES = [os.path.join(EMU, f) for f in ("gemm_check_main.c", "gemm_avx512_emu.c",
                                          "gemm_avx512bf16_emu.c", "gemm_pack_avx512_emu.c",
                                          "cast_avx512_emu.c")] + [
    os.path.join(CPU, f) for f in ("gemm.c", "gemm_epilogue.c", "gemm_pack.c", "gemm_pack_avx2.c",
                                   "gemm_ref.c",
                                   "gemm_avx2.c",
                                   "cast_scalar.c", "cast_avx2.c", "cast_avx512bf16.c",
                                   "parallel.c")]
FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-psabi", "-mavx2", "-mf16c", "-mfma",
         "-I", os.path.join(ROOT, "csrc")]



def build(cc, tmp_path):
    """Compiles the sources in parallel (SIMDe's headers make each emulated file slow)."""
    jobs = []
    for src in SOURCES:
        obj = str(tmp_path / (os.path.basename(src) + ".o"))
        jobs.append((obj, subprocess.Popen([cc, *FLAGS, "-c", src, "-o", obj],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True)))
    errors = ""
    for obj, p in jobs:
        out, err = p.communicate()
        assert p.returncode == 0, err
        errors += err
    exe = str(tmp_path / "gemm_emu_check")
    link = subprocess.run([cc, *[o for o, _ in jobs], "-lpthread", "-lm", "-o", exe],
                          capture_output=True, text=True)
    assert link.returncode == 0, link.stderr
    assert "warning" not in errors + link.stderr, errors + link.stderr
    return exe


def test_avx512_gemm_kernels_under_emulation(tmp_path):
    cc = emulation_compiler()
    exe = build(cc, tmp_path)
    run = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    fails = [line for line in run.stdout.splitlines() if line.startswith("FAIL")]
    assert not fails, "\n".join(fails[:20])
    fields = {line.split()[0]: line.split()[1:] for line in run.stdout.splitlines()
              if line.strip()}
    # the emulated vdpbf16ps flushes exactly as the host's FMA under DAZ|FTZ, on inputs where
    # that matters
    bad, flushed = map(int, fields["ftz_emulation"])
    assert bad == 0 and flushed > 1000, out
    assert fields["kernel_checks"] == ["0"], out
    bad_packs, pack_cases = map(int, fields["pack_checks"])    # AVX-512 bf16-pair packing
    assert bad_packs == 0 and pack_cases > 500, out           # == portable, byte for byte
    summaries = [line.split()[1:] for line in run.stdout.splitlines()
                 if line.startswith("summary")]
    assert [s[0] for s in summaries] == ["scalar", "avx512", "avx512bf16"], out
    for level, products, failures, worst in summaries:
        assert int(products) > 300 and int(failures) == 0, out
        assert float(worst) <= 1.0, out
    assert run.returncode == 0, out
