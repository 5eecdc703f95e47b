"""What a benchmark ran on, and the setup bench_gemm.py and bench_train_step.py share: the
in-place build, one thread count for every library, the header lines (date, machine,
versions, which BLAS kernel NumPy uses) and the in-process peak probes of the extension.

Import this before NumPy or torch: `thread_count_from_argv()` exports the thread count to
the environment variables their thread pools read once, when the library is loaded.
"""
import argparse
import ctypes
import datetime
import glob
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREAD_VARS = ("MPAMP_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PEAK_SECONDS = 0.2


def use_inplace_build():
    """Import mpamp from this checkout when it has been built in place (an installed copy in
    site-packages would otherwise win for scripts run from benchmarks/)."""
    if glob.glob(os.path.join(ROOT, "mpamp", "_C*.so")):
        sys.path.insert(0, ROOT)


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def thread_count_from_argv(argv=None):
    """--threads N from the command line (default: every core this process may use),
    exported to MPAMP/OMP/OPENBLAS/MKL_NUM_THREADS so NumPy's OpenBLAS and torch start with
    the same count as mpamp (threadpoolctl may not be installed to change it later)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--threads", type=int, default=None)
    n = p.parse_known_args(argv)[0].threads or cores()
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    return n


def set_library_threads(n, mpamp, torch):
    """The same count once the libraries are loaded (mpamp and torch can change it)."""
    mpamp.set_num_threads(n)
    if torch is not None:
        torch.set_num_threads(n)


def openblas_info(np):
    """'OpenBLAS 0.3.31 ..., kernel Haswell, 2 threads' for NumPy's bundled OpenBLAS (the
    kernel it picked decides its speed), or what NumPy reports when that is not found."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                  "*openblas*"))
    for prefix, suffix in (("scipy_openblas_", "64_"), ("scipy_openblas_", ""), ("openblas_", "")):
        try:
            lib = ctypes.CDLL(libs[0]) if libs else ctypes.CDLL(None)
            corename = getattr(lib, f"{prefix}get_corename{suffix}")
            config = getattr(lib, f"{prefix}get_config{suffix}")
            nthreads = getattr(lib, f"{prefix}get_num_threads{suffix}")
        except (OSError, AttributeError, IndexError):
            continue
        corename.restype = config.restype = ctypes.c_char_p
        version = config().decode().split("  ")[0]
        return f"{version}, kernel {corename().decode()}, {nthreads()} threads"
    return "BLAS unknown (not NumPy's bundled OpenBLAS)"


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def header(mpamp, np, torch, threads):
    """Lines saying when, where and with what a benchmark ran."""
    torch_v = f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch \
        else "torch - (not loaded)"
    return [f"date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
            f"machine: {cpu_model()}, {os.cpu_count()} CPUs; mpamp ISA: "
            f"{mpamp.backends.cpu.get_isa()} (detected {mpamp.backends.cpu.detected_isa()})",
            f"mpamp: {os.path.dirname(mpamp.__file__)} ({mpamp.get_num_threads()} threads)",
            f"versions: Python {platform.python_version()}, numpy {np.__version__} "
            f"({openblas_info(np)}), {torch_v}",
            f"threads: {threads} for every library"]


def peak_gflops(mpamp, kind, threads, seconds=PEAK_SECONDS):
    """GFLOP/s of the extension's peak probe ('fp32_fma' or 'bf16_dot') on `threads`
    threads; None when this CPU (at mpamp's ISA level) lacks the instruction."""
    return mpamp._C._cpu_peak_gflops(kind, threads, seconds)
