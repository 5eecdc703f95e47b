"""The 16-lane vector math (csrc/cpu/vmath_avx512.c) on a CPU without AVX-512, through the
SIMDe emulation (tests/avx512_emu/shim.h): every map on a strided sweep of all 2^32 float
patterns and the four reductions at every length 0..80, bit for bit against the scalar oracle
(vmath_scalar.c). On a machine with AVX-512, tests/test_vmath.py runs the real kernels the same
way. Skipped without a C compiler, the SIMDe headers (Debian: libsimde-dev) or AVX2."""
import os
import subprocess

from conftest import emulation_compiler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMU = os.path.join(ROOT, "tests", "avx512_emu")
CPU = os.path.join(ROOT, "csrc", "cpu")
FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-psabi", "-mavx2", "-mf16c", "-mfma",
         "-I", os.path.join(ROOT, "csrc")]


def test_avx512_vector_math_matches_scalar_under_emulation(tmp_path):
    cc = emulation_compiler()
    exe = str(tmp_path / "vmath_emu_check")
    srcs = [os.path.join(EMU, "vmath_check_main.c"), os.path.join(EMU, "vmath_avx512_emu.c"),
            os.path.join(CPU, "vmath_scalar.c")]
    build = subprocess.run([cc, *FLAGS, *srcs, "-lm", "-o", exe], capture_output=True,
                           text=True)
    assert build.returncode == 0, build.stderr
    assert "warning" not in build.stderr, build.stderr
    # a prime stride: 4.2M inputs per function, every exponent and sign
    run = subprocess.run([exe, "1021"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("ok ") == 11, run.stdout
