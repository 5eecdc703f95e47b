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
                                  "check_host_pointer_refused",
                                  "check_device_kernels_bit_identical",
                                  "check_amp_training_matches_cpu",
                                  "check_fused_amp_step_makes_no_device_to_host_copy",
                                  "check_optimizer_state_follows_parameters",
                                  "check_device_kernel_errors",
                                  "check_serialization_of_cuda_tensors",
                                  "check_dlpack_of_cuda_tensors",
                                  "check_like_and_new_factories_follow_the_input",
                                  "check_transformer_ops_bit_identical",
                                  "check_gpt_training_matches_cpu"])
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


def _run_example(script, cwd, sim):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MPAMP_CUDA_SIM", None)
    if sim:
        env["MPAMP_CUDA_SIM"] = "1"
    os.makedirs(cwd)
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", script)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("script,checkpoint", [("train_fp16.py", "model_fp16.pth"),
                                               ("train_bf16.py", "model_bfloat16.pth")])
def test_document_programs_run_unmodified_on_the_simulated_gpu(tmp_path, script, checkpoint):
    """The document's programs (.cuda(), torch.cuda.amp spellings, is_bf16_supported()) pick
    the simulated GPU, train there, and print the CPU run's losses digit for digit: the same
    dtypes and casts run on the device's kernels."""
    import mpamp
    sim = _run_example(script, str(tmp_path / "sim"), True)
    cpu = _run_example(script, str(tmp_path / "cpu"), False)
    assert sim.returncode == 0 and cpu.returncode == 0, sim.stderr + cpu.stderr
    assert "Training on cuda" in sim.stdout and "Training on cpu" in cpu.stdout
    assert "Warning" not in sim.stderr, sim.stderr     # autocast and GradScaler are enabled
    epochs = [line for line in sim.stdout.splitlines() if line.startswith("Epoch ")]
    assert len(epochs) == 10
    assert epochs == [line for line in cpu.stdout.splitlines() if line.startswith("Epoch ")]
    saved = mpamp.load(tmp_path / "sim" / checkpoint, map_location="cpu")
    want = mpamp.load(tmp_path / "cpu" / checkpoint)
    assert list(saved) == list(want)
    for k in want:
        assert saved[k].numpy().tobytes() == want[k].numpy().tobytes(), k
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        mpamp.load(tmp_path / "sim" / checkpoint)        # saved on cuda, no GPU here


def test_demo_picks_the_simulated_gpu(tmp_path):
    env = dict(os.environ, MPAMP_CUDA_SIM="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "mpamp.demo", "--steps", "12", "--width", "16",
                        "--batch-size", "32", "--no-progress", "--out", str(tmp_path)],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " on cuda (" in r.stdout.splitlines()[0], r.stdout
    assert "fp16" in r.stdout and "bf16" in r.stdout
