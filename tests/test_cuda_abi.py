"""cuBLASLt without cuBLAS at build time. cuda/gemm.cu dlopens cuBLASLt and calls it through
mpamp's own declarations (cuda/cublaslt_abi.h): here they are checked against a real
cublasLt.h at compile time (tests/cuda_abi/check_cublaslt_abi.cpp), gemm.cu's host side runs
against a fake libcublasLt that logs what it is asked (tests/cuda_abi/fake_cublaslt.cpp,
gemm_host_driver.cpp; no GPU needed), and the helper that finds torch's pip cuBLASLt
(mpamp/cuda/_cublaslt.py) is exercised on a made-up site-packages tree."""
import glob
import os
import shutil
import site
import subprocess
import sys

import pytest

import mpamp
from mpamp.cuda import _cublaslt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABI_DIR = os.path.join(ROOT, "tests", "cuda_abi")
CUDA_DIR = os.path.join(ROOT, "cuda")
needs_sources = pytest.mark.skipif(not os.path.isdir(ABI_DIR), reason="needs the source tree")


def _cuda_home():
    return os.environ.get("CUDA_HOME") or "/usr/local/cuda"


def _site_dirs():
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    return [d for d in dirs if d and os.path.isdir(d)]


def _include_with(header, first=()):
    """The first include folder holding `header`: `first`, the CUDA toolkit's, then the pip
    wheels' (site-packages/nvidia/*/include)."""
    cands = list(first) + [os.path.join(_cuda_home(), "include")]
    for d in _site_dirs():
        cands += sorted(glob.glob(os.path.join(d, "nvidia", "*", "include")))
    for c in cands:
        if c and os.path.isfile(os.path.join(c, header)):
            return c
    return None


def _cxx():
    return shutil.which("g++") or shutil.which("c++")


def _nvcc():
    """As setup.py's find_nvcc: $CUDA_HOME/bin only when CUDA_HOME is set."""
    home = os.environ.get("CUDA_HOME")
    cands = ([os.path.join(home, "bin", "nvcc")] if home else
             [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"])
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


# The compilers and the driver are not sanitized builds: CI's ASan run (.ci/sanitize.sh)
# preloads the sanitizer runtimes, whose leak check would report the compilers' own leaks.
_SANITIZER_VARS = ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")


def _run(cmd, env=None, **kw):
    env = {k: v for k, v in (os.environ if env is None else env).items()
           if k not in _SANITIZER_VARS}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, **kw)
    return proc.returncode, proc.stdout + proc.stderr


# ---- cublaslt_abi.h against the real cublasLt.h ----

def _abi_compile(header_dir):
    lt_inc = _include_with("cublasLt.h", [os.environ.get("MPAMP_CUBLAS_INCLUDE", "")])
    if lt_inc is None:
        pytest.skip("no cublasLt.h found (set MPAMP_CUBLAS_INCLUDE to a folder holding it, "
                    "e.g. the include/ of an nvidia-cublas wheel)")
    rt_inc = _include_with("library_types.h", [lt_inc])
    if rt_inc is None:
        pytest.skip("cublasLt.h needs the CUDA runtime headers (library_types.h): none found")
    if _cxx() is None:
        pytest.skip("no C++ compiler (g++) on PATH")
    return _run([_cxx(), "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                 "-I", lt_inc, "-I", rt_inc, "-I", header_dir,
                 os.path.join(ABI_DIR, "check_cublaslt_abi.cpp")])


@needs_sources
def test_abi_header_matches_cublaslt_h():
    rc, out = _abi_compile(CUDA_DIR)
    assert rc == 0, out


@needs_sources
def test_abi_check_catches_a_wrong_value(tmp_path):
    # the check is not vacuous: one wrong enum value and one wrong parameter type fail it
    src = open(os.path.join(CUDA_DIR, "cublaslt_abi.h")).read()
    bad = src.replace("MP_LT_R_16BF = 14", "MP_LT_R_16BF = 15").replace(
        "uint64_t rows, uint64_t cols", "int64_t rows, uint64_t cols")
    assert bad != src
    (tmp_path / "cublaslt_abi.h").write_text(bad)
    rc, out = _abi_compile(str(tmp_path))
    assert rc != 0
    assert "MP_LT_R_16BF" in out and "cublasLtMatrixLayoutCreate" in out


# ---- cuda/gemm.cu's host side against a fake cuBLASLt ----

@pytest.fixture(scope="module")
def fake_build(tmp_path_factory):
    nvcc, cxx = _nvcc(), _cxx()
    if nvcc is None or cxx is None:
        pytest.skip("needs nvcc and g++ to build cuda/gemm.cu with the fake cuBLASLt")
    out = tmp_path_factory.mktemp("fake_lt")
    fake = os.path.join(ABI_DIR, "fake_cublaslt.cpp")
    lib_flags = ["-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra",
                 "-Wno-unused-parameter", "-Werror", "-I", CUDA_DIR]
    builds = [
        [cxx] + lib_flags + ["-o", str(out / "libfake.so"), fake],
        [cxx] + lib_flags + ["-DFAKE_WITHOUT_MATMUL", "-o", str(out / "libnomatmul.so"), fake],
        # gemm.cu with the extension's host warnings, as errors
        [nvcc, "-std=c++17", "-O1", "-I", os.path.join(ROOT, "csrc"), "-I", CUDA_DIR,
         "-arch=sm_80", "-Xcompiler", "-Wall,-Wextra,-Werror,-Wno-unused-parameter",
         os.path.join(ABI_DIR, "gemm_host_driver.cpp"), os.path.join(CUDA_DIR, "gemm.cu"),
         "-o", str(out / "driver"), "-ldl"],
    ]
    for cmd in builds:
        rc, text = _run(cmd)
        assert rc == 0, " ".join(cmd) + "\n" + text
    return out


def _driver(build, mode, **env):
    full = {k: v for k, v in os.environ.items() if k != "FAKE_LT_CREATE_STATUS"}
    full.update(env)
    return _run([str(build / "driver"), mode], env=full)


@needs_sources
def test_gemm_host_side_against_fake_cublaslt(fake_build):
    # layouts, attributes (with their documented sizes), workspace and alignment
    # preferences, the heuristic cache, error texts and descriptor cleanup
    rc, out = _driver(fake_build, "fake", MPAMP_CUBLASLT_PATH=str(fake_build / "libfake.so"))
    assert rc == 0 and out.strip().endswith("OK"), out


@needs_sources
def test_gemm_reports_a_missing_cublaslt(fake_build):
    rc, out = _driver(fake_build, "missing", MPAMP_CUBLASLT_PATH="/nonexistent/libcublasLt.so")
    assert rc == 0, out
    if out.startswith("SKIP"):
        pytest.skip(out.strip())
    assert out.startswith("status=8\n")     # MP_ERR_CUDA
    assert ("cuBLASLt could not be loaded (tried /nonexistent/libcublasLt.so, "
            "libcublasLt.so.13, libcublasLt.so.12, libcublasLt.so): /nonexistent/") in out
    assert out.rstrip().endswith("; set MPAMP_CUBLASLT_PATH")


@needs_sources
def test_gemm_reports_a_library_without_a_function(fake_build):
    lib = str(fake_build / "libnomatmul.so")
    rc, out = _driver(fake_build, "nosym", MPAMP_CUBLASLT_PATH=lib)
    assert rc == 0 and out.startswith("status=8\n"), out
    assert f"cuBLASLt ({lib}) has no cublasLtMatmul" in out


@needs_sources
def test_gemm_reports_a_failed_cublaslt_create(fake_build):
    rc, out = _driver(fake_build, "create_fails", FAKE_LT_CREATE_STATUS="1",
                      MPAMP_CUBLASLT_PATH=str(fake_build / "libfake.so"))
    assert rc == 0 and out.startswith("status=8\n"), out
    assert "cublasLtCreate failed: FAKE_NAME (1): fake description" in out


# ---- finding torch's pip cuBLASLt ----

def _touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return str(path)


def test_find_cublaslt_prefers_the_newest_major(tmp_path):
    _touch(tmp_path / "a" / "nvidia" / "cublas" / "lib" / "libcublasLt.so.12")
    new = _touch(tmp_path / "a" / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13")
    other = _touch(tmp_path / "b" / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13")
    (tmp_path / "empty" / "nvidia").mkdir(parents=True)
    dirs = [str(tmp_path / "missing"), str(tmp_path / "empty"), str(tmp_path / "a"),
            str(tmp_path / "b")]
    assert _cublaslt._find_cublaslt(dirs) == new
    assert _cublaslt._find_cublaslt(dirs[3:]) == other
    assert _cublaslt._find_cublaslt(dirs[:2]) is None


def test_set_cublaslt_path_leaves_a_user_value(tmp_path):
    lib = _touch(tmp_path / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13")
    env = {}
    _cublaslt._set_cublaslt_path(env, [str(tmp_path)])
    assert env == {"MPAMP_CUBLASLT_PATH": lib}
    env = {"MPAMP_CUBLASLT_PATH": "/mine/libcublasLt.so"}
    _cublaslt._set_cublaslt_path(env, [str(tmp_path)])
    assert env == {"MPAMP_CUBLASLT_PATH": "/mine/libcublasLt.so"}
    env = {}
    _cublaslt._set_cublaslt_path(env, [str(tmp_path / "none")])
    assert env == {}


@pytest.mark.skipif(not mpamp.cuda.is_built(), reason="mpamp was built without CUDA")
def test_import_sets_the_path_from_site_packages(tmp_path):
    lib = _touch(tmp_path / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    env.pop("MPAMP_CUBLASLT_PATH", None)
    rc, out = _run([sys.executable, "-c", "import os, mpamp; "
                    "print(os.environ.get('MPAMP_CUBLASLT_PATH'))"], env=env, cwd=str(tmp_path))
    assert rc == 0, out
    assert out.strip().splitlines()[-1] == lib     # PYTHONPATH precedes site-packages
