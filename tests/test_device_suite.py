"""The suites of ops, autograd, in-place autograd, GradScaler, AMP training, optimizers, nn,
serialization and data run once more with every factory defaulting to "cuda" on the simulated
GPU (MPAMP_CUDA_SIM=1, MPAMP_TEST_DEVICE=cuda: see tests/conftest.py), in a subprocess because
both variables are process-wide. Tests whose op has no device kernel yet are reported as
skipped naming the op ("host-only on cuda: max_dim"); every other failure fails here.

Not rerun on the device: the autocast policy suites (test_autocast_ops/_state test the CPU
policy table and the default-device choice; the CUDA policy is checked against CPU tensors by
tests/sim/sim_checks.py), and the kernel, threading, allocator and interop suites (host code
by nature). Under AddressSanitizer (CI's second run) a smaller set runs, to keep CI short."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MODULES = [
    "test_ops_compare", "test_ops_logic", "test_ops_loss", "test_ops_math", "test_ops_matmul",
    "test_ops_minmax", "test_ops_norms", "test_ops_pointwise", "test_ops_reduce",
    "test_ops_shape", "test_ops_sort", "test_ops_stats", "test_losses_extra", "test_masking",
    "test_shape_ops", "test_views", "test_autograd", "test_autograd_hooks",
    "test_inplace_autograd", "test_grad_scaler", "test_grad_scaler_user_optimizer",
    "test_amp_training", "test_optim", "test_optim_extra", "test_lr_scheduler",
    "test_nn_layers", "test_nn_module", "test_nn_utils", "test_nn_init",
    "test_transformer_modules", "test_serialization", "test_data",
]
UNDER_ASAN = ["test_ops_pointwise", "test_autograd", "test_inplace_autograd", "test_optim"]


def test_the_suites_pass_with_tensors_on_the_simulated_gpu():
    asan = "libasan" in os.environ.get("LD_PRELOAD", "")
    mods = UNDER_ASAN if asan else MODULES
    env = dict(os.environ, MPAMP_CUDA_SIM="1", MPAMP_CUDA_SIM_MB="2048",
               MPAMP_TEST_DEVICE="cuda",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                        *[os.path.join(HERE, m + ".py") for m in mods]],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    tail = r.stdout[-6000:] + r.stderr[-3000:]
    assert r.returncode == 0, tail
    summary = r.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, summary
    # the run did put tensors on the device: most tests pass there, none is skipped for
    # a reason other than a host-only op or what it already skips on the CPU
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed > (200 if asan else 1500), summary


BY_OP = ["test_ops_pointwise", "test_ops_math", "test_autograd", "test_nn_layers",
         "test_amp_training", "test_pow_scalar", "test_nn_utils"]


def test_maps_by_op_id_as_a_gpu_runs_them():
    """MPAMP_SIM_MAP_BY_OP=1: the simulator computes every map that carries an op id with the
    shared bodies cuda/map.cu runs (not the CPU's functions), so the ids, arguments and operand
    order the core hands a GPU are checked against NumPy."""
    env = dict(os.environ, MPAMP_CUDA_SIM="1", MPAMP_CUDA_SIM_MB="2048",
               MPAMP_TEST_DEVICE="cuda", MPAMP_SIM_MAP_BY_OP="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *[os.path.join(HERE, m + ".py") for m in BY_OP]],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, summary
    # and the path did run: gelu by the scalar body is not the CPU vector kernel's bits
    code = ("import mpamp, numpy as np\n"
            "x = mpamp.tensor(np.random.default_rng(0).standard_normal(4096).astype('float32'))\n"
            "a = mpamp.nn.functional.gelu(x).numpy()\n"
            "b = mpamp.nn.functional.gelu(x.cuda()).cpu().numpy()\n"
            "np.testing.assert_allclose(b, a, rtol=1e-2, atol=1e-6)\n"
            "print(int((a.view('u4') != b.view('u4')).sum()))\n")
    for by_op, differ in (("1", True), ("0", False)):
        env["MPAMP_SIM_MAP_BY_OP"] = by_op
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert (int(r.stdout) > 0) == differ, (by_op, r.stdout)


@pytest.mark.parametrize("device", [None, "cpu"])
def test_default_device_round_trip(device):
    import mpamp
    assert mpamp.get_default_device() == mpamp.device("cpu")
    mpamp.set_default_device(device)
    try:
        assert mpamp.zeros(1).device.type == "cpu"
    finally:
        mpamp.set_default_device(None)


def test_default_device_needs_the_device():
    import mpamp
    if mpamp.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="CUDA not available"):
        mpamp.set_default_device("cuda")
    with pytest.raises(ValueError, match="Expected one of cpu, cuda"):
        mpamp.set_default_device("tpu")
    assert mpamp.get_default_device() == mpamp.device("cpu")
