"""The document's two programs run end to end (in a temporary folder) and write checkpoints
that load back into the same model; skipped until mpamp.optim and GradScaler exist."""
import os
import subprocess
import sys

import pytest

import mpamp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_training = pytest.mark.skipif(
    not hasattr(mpamp, "optim") or not hasattr(mpamp.amp, "GradScaler"),
    reason="needs mpamp.optim and mpamp.amp.GradScaler")


def _run(script, cwd):
    mp_root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
    env = {**os.environ, "PYTHONPATH": mp_root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", script)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


@needs_training
@pytest.mark.parametrize("script,checkpoint", [("train_fp16.py", "model_fp16.pth"),
                                               ("train_bf16.py", "model_bfloat16.pth")])
def test_example_trains_and_saves(tmp_path, script, checkpoint):
    proc = _run(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    epochs = [line for line in proc.stdout.splitlines() if line.startswith("Epoch ")]
    assert len(epochs) == 10
    losses = [float(line.rsplit(" ", 1)[1]) for line in epochs]
    assert all(x == x and x < 10 for x in losses)          # finite, sane
    assert os.listdir(tmp_path) == [checkpoint]
    sd = mpamp.load(tmp_path / checkpoint)
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    model = mpamp.nn.Sequential(mpamp.nn.Linear(10, 10), mpamp.nn.ReLU(),
                                mpamp.nn.Linear(10, 1))
    model.load_state_dict(sd)
    if script == "train_bf16.py":
        assert "CPU native bf16 instructions" in proc.stdout


@needs_training
def test_example_checkpoint_loads_in_torch(tmp_path):
    torch = pytest.importorskip("torch")
    assert _run("train_fp16.py", tmp_path).returncode == 0
    sd = torch.load(tmp_path / "model_fp16.pth", weights_only=True)
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(),
                                torch.nn.Linear(10, 1))
    model.load_state_dict(sd)


def test_examples_are_short_and_documented():
    for script in ("train_fp16.py", "train_bf16.py"):
        with open(os.path.join(ROOT, "examples", script)) as f:
            src = f.read()
        compile(src, script, "exec")
        assert src.startswith('"""') and "autocast(" in src and "scaler.step(optimizer)" in src
