"""benchmarks/bench_cuda.py runs to the end: under the simulated GPU with --smoke --no-torch it
prints a number in every row of its parts (GEMM, MLP step, AdamW against copy bandwidth, the
steady-state counters), and without any CUDA device it says so and exits 0. What the numbers
are is the GPU session's business (tools/gpu_check.sh); here only that every path runs."""
import os
import re
import subprocess
import sys

import pytest

import mpamp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_cuda.py")
NUM = r"[0-9][0-9.e+-]*"


def _run(*args, sim=True):
    mp_root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
    env = {**os.environ, "PYTHONPATH": mp_root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("MPAMP_TEST_DEVICE", None)
    env.pop("MPAMP_CUDA_SIM", None)
    if sim:
        env.update(MPAMP_CUDA_SIM="1", MPAMP_CUDA_SIM_MB="2048")
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_smoke_run_on_the_simulated_gpu_prints_every_part():
    r = _run("--smoke", "--no-torch")
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "failed" not in out, out      # the simulator has every kernel
    assert "simulated GPU" in out
    # torch's column is "-" (not run), mpamp's a number
    rows = {
        "gemm": rf"^gemm (bf16|fp16) \d+\^3 +- +{NUM} ",
        "mlp": rf"^mlp (fp16\+scaler|bf16) +- +{NUM} ",
        "copy": rf"^copy_ d2d +- +{NUM} ",
        "adamw": rf"^adamw fused +- +{NUM} ",
        "fraction": rf"^adamw / copy_ bandwidth +- +{NUM}",
    }
    counts = {k: len(re.findall(p, out, re.M)) for k, p in rows.items()}
    assert counts == {"gemm": 4, "mlp": 2, "copy": 1, "adamw": 1, "fraction": 1}, out
    steady = re.search(r"^steady mpamp: (\d+) device allocations past the cache.*?, (\d+) host "
                       r"syncs, (\d+) device-to-host copies, (\d+) host-to-device", out, re.M)
    assert steady, out
    assert out.rstrip().splitlines()[-1].startswith("bench_cuda: done in ")


def test_parts_and_sizes_select_what_runs():
    r = _run("--smoke", "--no-torch", "--parts", "gemm", "--sizes", "32x48x16")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.findall(r"^gemm \S+ 32x48x16 ", r.stdout, re.M) and "(b) MLP" not in r.stdout
    bad = _run("--parts", "gemm,nope")
    assert bad.returncode == 2 and "unknown part" in bad.stderr


def test_without_a_cuda_device_it_says_so_and_exits_0():
    if mpamp.cuda.is_available() and not mpamp.cuda.is_simulated():
        pytest.skip("a CUDA device is present")
    r = _run("--no-torch", sim=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("bench_cuda: no CUDA device: mpamp: no CUDA device"), r.stdout
    assert "Nothing to measure." in r.stdout
