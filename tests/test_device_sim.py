"""The device seam under the simulated GPU (MPAMP_CUDA_SIM=1): tensors on "cuda", copies
both ways, the maps on the device bit-identical to the CPU, autograd across devices, the
same-device and not-yet-on-CUDA errors, mpamp.cuda's queries and memory counters, OOM, fork,
the simulator's pointer check and the fault a host read of device memory causes. Each check
runs in its own process (tests/sim/sim_checks.py): the variable is read once per process and
a fault must fail one test, not the run."""
import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "sim", "sim_checks.py")
ROOT = os.path.dirname(HERE)


def run_check(name, mb="1024"):
    env = dict(os.environ, MPAMP_CUDA_SIM="1", MPAMP_CUDA_SIM_MB=mb,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, SCRIPT, name], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("name", ["check_roundtrip", "check_maps_bit_identical",
                                  "check_autograd_across_devices", "check_errors",
                                  "check_queries", "check_out_of_memory", "check_fork_refuses",
                                  "check_host_pointer_refused"])
def test_sim(name):
    r = run_check(name)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_simulator_without_memory_has_no_device():
    r = run_check("check_arena_that_cannot_map", mb=str(1 << 40))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="under AddressSanitizer (CI's second run) the intended fault is "
                           "logged as a sanitizer error; the plain run checks it")
def test_host_read_of_device_memory_faults():
    r = run_check("fault_host_read")
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr[-2000:])


def test_without_the_simulator_cuda_is_refused():
    import mpamp
    if mpamp.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="CUDA not available"):
        mpamp.zeros(2).cuda()
    with pytest.raises(RuntimeError, match="CUDA not available"):
        mpamp.zeros(2, device="cuda")
    assert mpamp.cuda.memory_allocated() == 0
    from mpamp import _C
    with pytest.raises(RuntimeError, match="CUDA not available"):
        _C._cuda_synchronize()
    with pytest.raises(RuntimeError, match="CUDA not available"):
        _C._empty((2,), None, 1)
    with pytest.raises(RuntimeError, match="needs the simulated GPU"):
        mpamp.cuda.sim_stats()
