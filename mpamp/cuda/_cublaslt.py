"""Where cuBLASLt is when it is not on the loader's path: torch's CUDA wheels install it from
the nvidia-cublas wheels under site-packages/nvidia/ (cublas/lib/libcublasLt.so.12,
cu13/lib/libcublasLt.so.13). The CUDA matmul (cuda/gemm.cu) dlopens $MPAMP_CUBLASLT_PATH
before the plain sonames, so mpamp.cuda points it at such a file at import when it is unset."""
import glob
import os
import re
import site
import sys


def _search_dirs():
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:              # an old virtualenv's site module
        pass
    return dirs


def _major(path):
    m = re.search(r"\.so\.(\d+)", os.path.basename(path))
    return int(m.group(1)) if m else -1


def _find_cublaslt(dirs=None):
    """Absolute path of a libcublasLt.so* anywhere under <dir>/nvidia/ for the first dir of
    `dirs` (default: sys.path, then the site-packages) that has one, the newest major
    version first; None when none has."""
    for d in _search_dirs() if dirs is None else dirs:
        root = os.path.join(os.path.abspath(d), "nvidia")   # sys.path's "" is the cwd
        if not os.path.isdir(root):
            continue
        found = glob.glob(os.path.join(glob.escape(root), "**", "libcublasLt.so*"),
                          recursive=True)
        if found:
            return min(found, key=lambda p: (-_major(p), p))
    return None


def _set_cublaslt_path(environ=None, dirs=None):
    """Sets MPAMP_CUBLASLT_PATH to _find_cublaslt(dirs) when it is unset or empty and a file
    is found; a value the user set is left alone."""
    environ = os.environ if environ is None else environ
    if not environ.get("MPAMP_CUBLASLT_PATH"):
        path = _find_cublaslt(dirs)
        if path:
            environ["MPAMP_CUBLASLT_PATH"] = path
