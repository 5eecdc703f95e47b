"""Builds mpamp._C from csrc/ (and cuda/*.cu when nvcc is found).

ISA-specific files (``*_avx2.c``, ``*_avx512.c``, ``*_avx512bf16.c``) get their own target
flags so one build runs on any x86-64; the kernel table picks a level at run time.
MPAMP_SANITIZE=address,undefined builds with sanitizers (see README); MPAMP_COVERAGE=1 builds
with gcov instrumentation at -O0 (tools/audit_error_paths.py).

CUDA (cuda/*.cu, compiled by nvcc, linked against the static CUDA runtime):
  MPAMP_CUDA=0 never builds it; MPAMP_CUDA=1 requires it (the build stops with an error when
  nvcc is not found); unset builds it whenever nvcc is found.
  nvcc is looked for in $CUDA_HOME/bin when CUDA_HOME is set, and only there (an explicit
  toolkit wins: a CUDA_HOME without nvcc builds without CUDA, with a warning, or fails under
  MPAMP_CUDA=1); otherwise on PATH, then /usr/local/cuda/bin. So
  `MPAMP_CUDA=1 CUDA_HOME=/nonexistent` is how to check the "nvcc missing" failure on a
  machine that has a toolkit.
  MPAMP_CUDA_ARCH lists compute capabilities, ";" or "," separated (default "80;90": SASS
  for each, plus PTX of the last so newer GPUs JIT). CUDA 13 supports 75 and up.
Switching MPAMP_CUDA between builds in place needs `build_ext --inplace --force`.
"""
import glob
import os
import platform
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, PlatformError

try:
    from setuptools.modified import newer_group
except ImportError:                     # setuptools < 69
    from distutils.dep_util import newer_group

ROOT = os.path.dirname(os.path.abspath(__file__))
IS_X86_64 = platform.machine().lower() in ("x86_64", "amd64")

BASE_FLAGS = ["-std=c11", "-O3", "-fno-strict-aliasing", "-Wall", "-Wextra",
              "-Wno-unused-parameter", "-Wno-missing-field-initializers",
              "-fvisibility=hidden"]
ISA_FLAGS = {
    "_avx2.c": ["-mavx2", "-mf16c", "-mfma"],
    "_avx512.c": ["-mavx2", "-mf16c", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512vl"],
    "_avx512bf16.c": ["-mavx2", "-mf16c", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512vl",
                      "-mavx512bf16"],
    "_amx.c": ["-mavx2", "-mf16c", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512vl",
               "-mavx512bf16", "-mamx-tile", "-mamx-bf16"],
}

NVCC_HOST_FLAGS = ["-fPIC", "-fvisibility=hidden", "-fno-strict-aliasing", "-Wall", "-Wextra",
                   "-Wno-unused-parameter", "-Werror"]


def isa_flags(path):
    for suffix in sorted(ISA_FLAGS, key=len, reverse=True):
        if path.endswith(suffix):
            return ISA_FLAGS[suffix]
    return None


def find_nvcc():
    """Path of nvcc, honouring MPAMP_CUDA (0: never, 1: required, unset: when found)."""
    mode = os.environ.get("MPAMP_CUDA", "")
    if mode == "0":
        return None
    home = os.environ.get("CUDA_HOME", "")
    if home:
        candidates = [os.path.join(home, "bin", "nvcc")]
    else:
        candidates = [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    if mode == "1":
        if home:
            raise PlatformError(f"MPAMP_CUDA=1 but nvcc was not found: CUDA_HOME={home} has "
                                "no bin/nvcc; point CUDA_HOME at a CUDA toolkit")
        raise PlatformError("MPAMP_CUDA=1 but nvcc was not found on PATH or in "
                            "/usr/local/cuda/bin; install the CUDA toolkit or set CUDA_HOME")
    if home:
        print(f"warning: CUDA_HOME={home} has no bin/nvcc; building without CUDA")
    return None


def cuda_archs():
    """Compute capabilities from MPAMP_CUDA_ARCH, e.g. ["80", "90"]."""
    raw = os.environ.get("MPAMP_CUDA_ARCH", "80;90")
    archs = [a.strip() for a in re.split(r"[;,\s]+", raw) if a.strip()]
    if not archs or not all(re.fullmatch(r"\d{2,3}[af]?", a) for a in archs):
        raise PlatformError(f"MPAMP_CUDA_ARCH={raw!r}: expected compute capabilities "
                            "like '80;90'")
    return archs


def cuda_lib_dir(nvcc):
    """The toolkit's lib64 (nvcc may be a wrapper script outside the toolkit)."""
    for root in (os.environ.get("CUDA_HOME", ""), os.path.dirname(os.path.dirname(nvcc)),
                 "/usr/local/cuda"):
        lib = os.path.join(root, "lib64")
        if root and os.path.isfile(os.path.join(lib, "libcudart_static.a")):
            return lib
    raise RuntimeError(f"found {nvcc} but not libcudart_static.a next to it; set CUDA_HOME")


def sanitize_flags():
    """Sanitizer flags (MPAMP_SANITIZE), then gcov's (MPAMP_COVERAGE=1): both come after
    BASE_FLAGS, so their -O level wins."""
    kinds = os.environ.get("MPAMP_SANITIZE", "").strip()
    flags = ["-fsanitize=" + kinds, "-fno-omit-frame-pointer", "-g", "-O1"] if kinds else []
    if os.environ.get("MPAMP_COVERAGE", "") == "1":
        flags += ["--coverage", "-O0"]      # -O0: line counts that match the source
    return flags


class BuildExt(build_ext):
    """Compiles ISA files and CUDA files with their own flags, then links everything."""

    def run(self):
        super().run()
        if self.inplace:
            return
        # Also place the extension beside the sources, as `build_ext --inplace` does: commands
        # run from the project root (`python -m mpamp.demo`, `python -m pytest`) import the
        # source folder before the installed package, and must find _C there too.
        for ext in self.extensions:
            built = self.get_ext_fullpath(ext.name)
            dest = os.path.join(ROOT, self.get_ext_filename(ext.name))
            if os.path.exists(built) and os.path.isdir(os.path.dirname(dest)):
                shutil.copyfile(built, dest)

    def build_extension(self, ext):
        ext_path = self.get_ext_fullpath(ext.name)
        if not (self.force or newer_group(ext.sources + ext.depends, ext_path, "newer")):
            print(f"skipping {ext.name} (up to date; use --force after changing MPAMP_* "
                  "settings)")
            return
        # Decide about CUDA first: a required-but-missing nvcc should fail before compiling.
        nvcc = find_nvcc() if glob.glob(os.path.join("cuda", "*.cu")) else None
        san = sanitize_flags()
        objects = []
        plain = []
        isa_sources = []
        for src in ext.sources:
            flags = isa_flags(src)
            if flags is None:
                plain.append(src)
            elif IS_X86_64:
                objects += self.compiler.compile(
                    [src], output_dir=self.build_temp, include_dirs=ext.include_dirs,
                    extra_postargs=BASE_FLAGS + flags + san, depends=ext.depends)
        ext.sources = plain
        if nvcc:
            objects += self.compile_cuda(nvcc, ext)
            ext.sources = [s for s in ext.sources if not s.endswith("cuda_stub.c")]
            ext.library_dirs.append(cuda_lib_dir(nvcc))
            # nvcc host code is C++ (personality routine, static-init guards): link libstdc++.
            ext.libraries += ["cudart_static", "stdc++", "dl", "rt", "pthread"]
            ext.define_macros.append(("MPAMP_WITH_CUDA", "1"))
        ext.extra_objects = objects + list(ext.extra_objects or [])
        ext.extra_compile_args = BASE_FLAGS + san
        ext.extra_link_args = list(ext.extra_link_args or []) + san
        super().build_extension(ext)

    def compile_cuda(self, nvcc, ext):
        """Compiles every cuda/*.cu with nvcc, in parallel; returns the object files."""
        archs = cuda_archs()
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs[:-1]]
        gencode.append(f"-gencode=arch=compute_{archs[-1]},code=[sm_{archs[-1]},"
                       f"compute_{archs[-1]}]")
        os.makedirs(self.build_temp, exist_ok=True)
        jobs = []
        for src in sorted(glob.glob(os.path.join("cuda", "*.cu"))):
            obj = os.path.join(self.build_temp, os.path.basename(src) + ".o")
            # No --use_fast_math: it would delete the inf/NaN checks loss scaling relies on.
            # --fmad=false: the shared bodies round as on the CPU (no contracted a*b+c).
            cmd = [nvcc, "-c", src, "-o", obj, "-O3", "-std=c++17", "--fmad=false", "-I", "csrc",
                   "-Xcompiler", ",".join(NVCC_HOST_FLAGS)] + gencode
            print(" ".join(cmd))
            jobs.append((obj, cmd, subprocess.Popen(cmd)))
        failed = [cmd for obj, cmd, p in jobs if p.wait() != 0]
        if failed:
            raise CompileError("nvcc failed: " + "; ".join(" ".join(c) for c in failed))
        return [obj for obj, cmd, p in jobs]


def sources():
    files = sorted(glob.glob(os.path.join("csrc", "**", "*.c"), recursive=True))
    return [f for f in files if IS_X86_64 or isa_flags(f) is None]


def depends():
    """Files whose change must rebuild the extension besides the plain C sources (setuptools
    only checks ext.sources + ext.depends before relinking)."""
    pats = [os.path.join("csrc", "**", "*.h"), os.path.join("csrc", "**", "*.c"),
            os.path.join("cuda", "*.cu"), os.path.join("cuda", "*.cuh")]
    return sorted(f for p in pats for f in glob.glob(p, recursive=True))


setup(
    ext_modules=[Extension("mpamp._C", sources=sources(), include_dirs=["csrc"],
                           depends=depends())],
    cmdclass={"build_ext": BuildExt},
)
