"""python -m mpamp.demo: option errors (no optimizer needed) and a short run (needs mpamp.optim
and mpamp.amp.GradScaler; skipped until they exist)."""
import os

import pytest

import mpamp
from mpamp import demo
from conftest import run_python

needs_training = pytest.mark.skipif(
    not hasattr(mpamp, "optim") or not hasattr(mpamp.amp, "GradScaler"),
    reason="needs mpamp.optim and mpamp.amp.GradScaler")


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as info:
        demo.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--steps", "--width", "--batch-size", "--device", "--out", "fp16", "GradScaler"):
        assert opt in out


@pytest.mark.parametrize("argv,match", [
    (["--steps", "0"], "--steps must be between 1 and"),
    (["--steps", "many"], "invalid int value"),
    (["--width", "-3"], "--width must be between 1 and"),
    (["--batch-size", "0"], "--batch-size must be between 1 and"),
    (["--batch-size", "100000"], "--batch-size must be at most the 8192 samples"),
    (["--device", "tpu"], "invalid choice: 'tpu'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_options_are_clear_errors(tmp_path, capsys, argv, match):
    with pytest.raises(SystemExit) as info:
        demo.main(argv + ["--out", str(tmp_path)])
    assert info.value.code == 2
    assert match in capsys.readouterr().err


def test_cuda_requested_without_cuda(tmp_path, capsys):
    if mpamp.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(SystemExit):
        demo.main(["--device", "cuda", "--out", str(tmp_path)])
    assert "no CUDA device is available" in capsys.readouterr().err


def test_unwritable_output_folder(tmp_path, capsys):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    with pytest.raises(SystemExit) as info:
        demo.main(["--out", str(blocker / "sub")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--out" in err and "can't be written" in err


def test_unwritable_folder_permissions(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        with pytest.raises(SystemExit):
            demo.main(["--out", str(ro)])
        assert "can't be written" in capsys.readouterr().err
    finally:
        ro.chmod(0o700)


@pytest.mark.skipif(hasattr(mpamp, "optim") and hasattr(mpamp.amp, "GradScaler"),
                    reason="optim and GradScaler exist")
def test_without_optimizers_says_so(tmp_path, capsys):
    assert demo.main(["--out", str(tmp_path)]) == 1
    assert "needs mpamp.optim and mpamp.amp.GradScaler" in capsys.readouterr().err


@needs_training
def test_short_run_writes_tables_and_checkpoints(tmp_path, capsys):
    assert demo.main(["--steps", "12", "--width", "16", "--batch-size", "32", "--out",
                      str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "document MLP 10-10-1" in out and "wide MLP 10-16-16-1" in out
    for col in ("time/step", "speed-up", "peak mem", "final loss", "gap vs fp32", "skipped",
                "loss scale"):
        assert col in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:4] in DTYPE_PREFIX]
    assert [r[0] for r in rows] == ["fp32", "fp16", "bf16"] * 2
    assert str(tmp_path) in out
    names = sorted(os.listdir(tmp_path))
    assert [n for n in names if n.endswith(".pth")] == sorted(
        f"{k}_{d}.pth" for k in ("document", "wide") for d in ("fp32", "fp16", "bf16"))
    sd = mpamp.load(tmp_path / "wide_fp16.pth")
    model = demo.make_model("wide", 16)
    model.load_state_dict(sd)


DTYPE_PREFIX = ("fp32", "fp16", "bf16")


def test_speed_note_gives_the_reason_low_precision_is_not_faster(monkeypatch):
    monkeypatch.setattr(mpamp.cpu, "is_bf16_supported", lambda: False)
    note = demo.speed_note("cpu")
    assert "no bf16 arithmetic" in note and "no fp16 arithmetic" in note
    monkeypatch.setattr(mpamp.cpu, "is_bf16_supported", lambda: True)
    note = demo.speed_note("cpu")
    assert "bf16" not in note.split("fp16")[0] and "no fp16 arithmetic" in note
    assert demo.speed_note("cuda") is None
    assert all(line.startswith("note: ") for line in note.splitlines())


@needs_training
def test_module_entry_point_with_plain_progress_bar(tmp_path):
    proc = run_python("import runpy, sys; sys.argv = ['mpamp.demo', '--steps', '5', "
                      "'--width', '8', '--batch-size', '16', '--out', %r]; "
                      "runpy.run_module('mpamp.demo', run_name='__main__')" % str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "Checkpoints (6)" in proc.stdout and "5/5" in proc.stderr


def test_plot_without_matplotlib_says_so(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    rows = [{"dtype": "fp32", "curve": [1.0, 0.5]}]
    assert demo.plot([("m", rows)], tmp_path / "x.png") is False
    assert not (tmp_path / "x.png").exists()


def test_plot_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [{"dtype": d, "curve": [1.0, 0.5, 0.25]} for d in ("fp32", "fp16", "bf16")]
    assert demo.plot([("a", rows), ("b", rows)], tmp_path / "x.png") is True
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"


def test_table_format():
    rows = [{"dtype": "fp32", "step_s": 0.002, "peak": 3 * 2**20, "loss": 0.5, "skipped": 0,
             "scale": None},
            {"dtype": "fp16", "step_s": 0.001, "peak": 2048, "loss": 0.51, "skipped": 2,
             "scale": 32768.0}]
    text = demo.format_table("model", rows)
    assert "2.00x" in text and "+2.00%" in text and "3.00 MiB" in text and "2.0 KiB" in text
    assert "32768" in text


def test_readme_first_command_works_from_the_project_root():
    # `pip install . && python -m mpamp.demo` runs in the checkout, where `python -m` imports
    # the source folder first: setup.py places the built extension there too.
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(os.path.join(root, "setup.py")):
        pytest.skip("not running from a project checkout")
    out = subprocess.run([sys.executable, "-m", "mpamp.demo", "--help"], cwd=root,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--steps" in out.stdout


# ---- the first minute: the PNG and a log-friendly progress display ----

class _Stream:
    def __init__(self, tty):
        self.tty, self.parts = tty, []

    def isatty(self):
        return self.tty

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass

    @property
    def text(self):
        return "".join(self.parts)


def test_progress_in_a_log_is_a_plain_line_every_few_seconds():
    now = [0.0]
    out = _Stream(tty=False)
    bar = demo.progress(3000, "wide fp16", True, stream=out)
    assert isinstance(bar, demo._LogBar)
    bar.clock = lambda: now[0]
    bar.start = bar.last = 0.0
    for step in range(3000):
        now[0] = step * 0.01                      # 30 s of training, 10 ms a step
        bar.update()
        if step % 20 == 0:
            bar.set_postfix_str(f"loss {1 / (step + 1):.4f}")
    bar.close()
    lines = out.text.splitlines()
    assert "\r" not in out.text and out.text.endswith("\n")
    assert 5 <= len(lines) <= 8                   # one per 5 s, plus the last one
    assert lines[0].startswith("wide fp16: ") and "/3000 steps (5 s), loss" in lines[0]
    assert lines[-1].startswith("wide fp16: 3000/3000 steps, done in 30.0 s, loss")


def test_progress_on_a_terminal_draws_a_bar(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm", None)           # the dependency-free bar
    out = _Stream(tty=True)
    bar = demo.progress(50, "doc fp32", True, stream=out)
    assert isinstance(bar, demo._PlainBar)
    for _ in range(50):
        bar.update()
    bar.close()
    assert out.text.count("\r") == 50 and "50/50" in out.text
    assert isinstance(demo.progress(5, "x", False, stream=out), demo._NoBar)
    assert isinstance(demo.progress(5, "x", True, stream=object()), demo._LogBar)


def test_progress_uses_tqdm_on_a_terminal_when_installed():
    tqdm = pytest.importorskip("tqdm")
    bar = demo.progress(5, "x", True, stream=_Stream(tty=True))
    assert isinstance(bar, tqdm.tqdm)
    bar.close()


@needs_training
def test_demo_log_has_no_carriage_returns(tmp_path):
    proc = run_python("import runpy, sys; sys.argv = ['mpamp.demo', '--steps', '40', "
                      "'--width', '8', '--batch-size', '16', '--out', %r]; "
                      "runpy.run_module('mpamp.demo', run_name='__main__')" % str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "\r" not in proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if "steps" in ln]
    assert len(lines) == 6 and all("40/40 steps, done in" in ln for ln in lines)


@needs_training
def test_demo_on_a_terminal_draws_bars(tmp_path):
    import pty
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
    import fcntl
    import struct
    import termios
    leader, follower = pty.openpty()
    # a terminal 24x80 (a fresh pty is 0 columns wide, and tqdm draws nothing in 0 columns)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    chunks = []
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mpamp.demo", "--steps", "20", "--width", "8",
             "--batch-size", "16", "--out", str(tmp_path)],
            stdout=subprocess.DEVNULL, stderr=follower, cwd="/",
            env={**os.environ, "PYTHONPATH": root})
        os.close(follower)
        follower = None
        while True:                     # read while it runs: a full pty would block it
            try:
                data = os.read(leader, 65536)
            except OSError:             # EIO once the child has closed its end
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=300)
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0
    assert b"\r" in b"".join(chunks), b"".join(chunks)[:500]


@needs_training
def test_demo_writes_the_png_when_matplotlib_is_installed(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert demo.main(["--steps", "12", "--width", "8", "--batch-size", "16", "--out",
                      str(tmp_path), "--no-progress"]) == 0
    assert (tmp_path / "loss_curves.png").read_bytes()[:4] == b"\x89PNG"
    assert f"Loss curves: {tmp_path / 'loss_curves.png'}" in capsys.readouterr().out


def test_readme_first_command_installs_the_demo_extra():
    import tomllib
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    readme = os.path.join(root, "README.md")
    if not os.path.exists(readme):
        pytest.skip("not running from a project checkout")
    text = open(readme, encoding="utf-8").read()
    first = text.split("```bash\n", 1)[1].split("\n", 1)[0]
    assert first == 'pip install ".[demo]" && python -m mpamp.demo'
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert any(dep.startswith("matplotlib") for dep in extras["demo"])
    assert any(dep.startswith("tqdm") for dep in extras["demo"])
