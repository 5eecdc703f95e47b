"""Builds mpamp._C from csrc/ (and cuda/*.cu when nvcc is found).

ISA-specific files (``*_avx2.c``, ``*_avx512.c``, ``*_avx512bf16.c``) get their own target
flags so one build runs on any x86-64; the kernel table picks a level at run time.
MPAMP_CUDA=0 skips CUDA, MPAMP_CUDA=1 requires it. MPAMP_SANITIZE=address,undefined builds
with sanitizers (see README).
"""
import glob
import os
import platform
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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
}


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
    candidates = [os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "nvcc"),
                  "/usr/local/cuda/bin/nvcc", shutil.which("nvcc") or ""]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    if mode == "1":
        raise RuntimeError("MPAMP_CUDA=1 but nvcc was not found (set CUDA_HOME or PATH)")
    return None


def cuda_lib_dir(nvcc):
    """The toolkit's lib64 (nvcc may be a wrapper script outside the toolkit)."""
    for root in (os.environ.get("CUDA_HOME", ""), os.path.dirname(os.path.dirname(nvcc)),
                 "/usr/local/cuda"):
        lib = os.path.join(root, "lib64")
        if root and os.path.isfile(os.path.join(lib, "libcudart_static.a")):
            return lib
    raise RuntimeError(f"found {nvcc} but not libcudart_static.a next to it; set CUDA_HOME")


def sanitize_flags():
    kinds = os.environ.get("MPAMP_SANITIZE", "").strip()
    if not kinds:
        return []
    return ["-fsanitize=" + kinds, "-fno-omit-frame-pointer", "-g", "-O1"]


class BuildExt(build_ext):
    """Compiles ISA files and CUDA files with their own flags, then links everything."""

    def build_extension(self, ext):
        san = sanitize_flags()
        objects = []
        plain = []
        isa_sources = []
        for src in ext.sources:
            flags = isa_flags(src)
            if flags is None:
                plain.append(src)
            elif IS_X86_64:
                isa_sources.append(src)
                objects += self.compiler.compile(
                    [src], output_dir=self.build_temp, include_dirs=ext.include_dirs,
                    extra_postargs=BASE_FLAGS + flags + san)
        ext.sources = plain
        # build_ext relinks only when something in sources + depends is newer than the .so:
        # list the ISA and CUDA files (compiled here, outside `sources`) and every header, so
        # that editing only a kernel or a header is not silently left out of the build.
        ext.depends = list(ext.depends or []) + isa_sources + \
            sorted(glob.glob(os.path.join("csrc", "**", "*.h"), recursive=True)) + \
            sorted(glob.glob(os.path.join("cuda", "*.cu")))
        nvcc = find_nvcc() if glob.glob(os.path.join("cuda", "*.cu")) else None
        if nvcc:
            objects += self.compile_cuda(nvcc, ext)
            ext.sources = [s for s in ext.sources if not s.endswith("cuda_stub.c")]
            ext.library_dirs.append(cuda_lib_dir(nvcc))
            ext.libraries += ["cudart_static", "dl", "rt", "pthread"]
            ext.define_macros.append(("MPAMP_WITH_CUDA", "1"))
        ext.extra_objects = objects + list(ext.extra_objects or [])
        ext.extra_compile_args = BASE_FLAGS + san
        ext.extra_link_args = list(ext.extra_link_args or []) + san
        super().build_extension(ext)

    def compile_cuda(self, nvcc, ext):
        arch = os.environ.get("MPAMP_CUDA_ARCH", "80")
        out = []
        os.makedirs(self.build_temp, exist_ok=True)
        for src in sorted(glob.glob(os.path.join("cuda", "*.cu"))):
            obj = os.path.join(self.build_temp, os.path.basename(src) + ".o")
            cmd = [nvcc, "-c", src, "-o", obj, "-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                   "-I", "csrc", f"-gencode=arch=compute_{arch},code=[sm_{arch},compute_{arch}]"]
            print(" ".join(cmd))
            subprocess.check_call(cmd)
            out.append(obj)
        return out


def sources():
    files = sorted(glob.glob(os.path.join("csrc", "**", "*.c"), recursive=True))
    return [f for f in files if IS_X86_64 or isa_flags(f) is None]


setup(
    ext_modules=[Extension("mpamp._C", sources=sources(), include_dirs=["csrc"])],
    cmdclass={"build_ext": BuildExt},
)
