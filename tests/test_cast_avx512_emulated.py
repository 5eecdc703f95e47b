"""The AVX-512 cast kernels on a CPU without AVX-512, through an emulation.

csrc/cpu/cast_avx512.c is compiled after tests/avx512_emu/shim.h (cast_avx512_emu.c), which maps
the AVX-512 intrinsics onto SIMDe's portable versions (the fp16 conversions onto the host's F16C),
and checked against the scalar kernels by csrc/testing/cast_check.c: every up-cast pattern, every
16th chunk of 64Ki fp32 patterns for the down-casts (MPAMP_EMU_FULL=1: all 2^32), plus large
arrays on the streaming-store path. This tests the kernels' logic (lanes, masks, tails,
offsets, NaN fix-ups), not the silicon; on a machine with AVX-512, test_cast_kernels.py runs
the real thing. Skipped without a C compiler, the SIMDe headers (Debian: libsimde-dev) or
F16C.
"""
import os
import subprocess

from conftest import emulation_compiler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMU = os.path.join(ROOT, "tests", "avx512_emu")
SOURCES = [os.path.join(EMU, "check_main.c"), os.path.join(EMU, "cast_avx512_emu.c")] + [
    os.path.join(ROOT, "csrc", d, f) for d, f in (("cpu", "cast_scalar.c"),
                                                  ("testing", "cast_check.c"))]



def test_avx512_kernels_match_scalar_under_emulation(tmp_path):
    cc = emulation_compiler()
    exe = str(tmp_path / "avx512_emu_check")
    cmd = [cc, "-std=c11", "-O2", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wno-psabi",
           "-mavx2", "-mf16c", "-mfma", "-I", os.path.join(ROOT, "csrc"), *SOURCES,
           "-lpthread", "-o", exe]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    assert "warning" not in build.stderr, build.stderr
    step = "1" if os.environ.get("MPAMP_EMU_FULL") == "1" else "16"
    run = subprocess.run([exe, step], capture_output=True, text=True, timeout=600)
    lines = run.stdout.split("\n")
    results = {name: (int(count), first) for name, count, first in
               (line.split() for line in lines if line.strip())}
    assert len(results) == 8, run.stdout + run.stderr
    bad = {name: r for name, r in results.items() if r[0] != 0}
    assert not bad and run.returncode == 0, bad
