"""Scripts written for torch (tests/clients/: our own code in the style of nanoGPT's train.py
and pytorch/examples' mnist) run on mpamp with only their import lines rewritten, as a user
would port them, and learn as torch does: within 0.05 of torch's loss at the same step when
torch is installed, and below a fixed bar either way."""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(HERE, "clients")
ROOT = os.path.dirname(HERE)

try:
    import torch  # noqa: F401 - the reference, when installed
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def rewrite_imports(text):
    """torch -> mpamp on import lines only (`import torch` becomes `import mpamp as torch`)."""
    def line(s):
        m = re.match(r"^(\s*)import torch(\.[\w.]+)?(\s+as\s+\w+)?\s*$", s)
        if m:
            ind, sub, alias = m.group(1), m.group(2) or "", m.group(3)
            if alias:
                return f"{ind}import mpamp{sub}{alias}"
            return f"{ind}import mpamp{sub}; import mpamp as torch" if sub else \
                f"{ind}import mpamp as torch"
        m = re.match(r"^(\s*)from torch(\.[\w.]+)? import (.*)$", s)
        if m:
            return f"{m.group(1)}from mpamp{m.group(2) or ''} import {m.group(3)}"
        return s
    return "\n".join(line(s) for s in text.split("\n"))


def test_rewrite_touches_only_import_lines():
    src = ("import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
           "import torch.nn.functional\nx = torch.zeros(2)  # import torch\n")
    assert rewrite_imports(src).split("\n") == [
        "import mpamp as torch", "import mpamp.nn as nn", "from mpamp.nn import functional as F",
        "import mpamp.nn.functional; import mpamp as torch",
        "x = torch.zeros(2)  # import torch", ""]


def run_client(lib, script, folder, *args):
    """Run tests/clients/<script> under `lib` ("torch" or "mpamp") in `folder`; returns stdout."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(CLIENTS):
        if name.endswith(".py"):
            with open(os.path.join(CLIENTS, name)) as f:
                text = f.read()
            with open(os.path.join(folder, name), "w") as f:
                f.write(rewrite_imports(text) if lib == "mpamp" else text)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if lib == "mpamp":
        # a `torch` that refuses to import, ahead of any real one: a ported script must not
        # reach torch through a missed import or through mpamp itself
        block = os.path.join(folder, "_no_torch", "torch")
        os.makedirs(block, exist_ok=True)
        with open(os.path.join(block, "__init__.py"), "w") as f:
            f.write("raise ImportError('the real torch was imported by a ported script')\n")
        env["PYTHONPATH"] = os.path.dirname(block) + os.pathsep + env["PYTHONPATH"]
    env.setdefault("OMP_NUM_THREADS", "2")
    proc = subprocess.run([sys.executable, script, *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{lib} {script} {args} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


def value(out, key):
    m = re.findall(rf"^{key} ([-0-9.naninf]+)$", out, re.M)
    assert m, f"no '{key}' in:\n{out}"
    return float(m[-1])


GPT_ARGS = ("--max_iters=60", "--eval_iters=10")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_gpt_script_learns_as_torch(tmp_path, dtype):
    out = run_client("mpamp", "train_gpt.py", tmp_path / "mp", *GPT_ARGS, f"--dtype={dtype}")
    val = value(out, "val loss")
    # 40 symbols: ln(40) = 3.69 untrained; the bigram chain's entropy is far lower
    assert val < 3.2, out
    if HAVE_TORCH:
        ref = value(run_client("torch", "train_gpt.py", tmp_path / "pt", *GPT_ARGS,
                               f"--dtype={dtype}"), "val loss")
        assert abs(val - ref) < 0.05, (val, ref)


def test_gpt_script_resumes_from_its_checkpoint(tmp_path):
    folder = tmp_path / "mp"
    first = run_client("mpamp", "train_gpt.py", folder, "--max_iters=20", "--eval_iters=4")
    again = run_client("mpamp", "train_gpt.py", folder, "--max_iters=40", "--eval_iters=4",
                       "--init_from=resume")
    assert value(again, "val loss") < value(first, "val loss") + 0.05
    # the resumed run starts at iteration 20: its first report is at 40
    assert re.findall(r"^iter (\d+):", again, re.M) == ["40"]


def test_gpt_script_with_dropout_and_unfused_attention(tmp_path):
    out = run_client("mpamp", "train_gpt.py", tmp_path / "mp", "--max_iters=40",
                     "--eval_iters=4", "--dropout=0.1", "--flash=False")
    assert value(out, "val loss") < 3.4, out


@pytest.mark.parametrize("amp", ["none", "bfloat16"])
def test_cnn_script_learns_as_torch(tmp_path, amp):
    out = run_client("mpamp", "train_cnn.py", tmp_path / "mp", f"--amp={amp}")
    acc = value(out, "test accuracy")
    # ten classes: chance is 0.1 and ln(10) = 2.30 untrained; torch reaches ~0.64 and ~1.04
    assert acc > 0.5 and value(out, "test loss") < 1.5, out
    if HAVE_TORCH:
        ref = run_client("torch", "train_cnn.py", tmp_path / "pt", f"--amp={amp}")
        assert abs(value(out, "test loss") - value(ref, "test loss")) < 0.05 + \
            0.1 * value(ref, "test loss"), (out, ref)


def test_client_scripts_are_plain_torch_code():
    # the scripts under tests/clients/ are written for torch: mpamp appears in no line of
    # code (only in their docstrings)
    for name in os.listdir(CLIENTS):
        if name.endswith(".py"):
            with open(os.path.join(CLIENTS, name)) as f:
                code = [s for s in f.read().split('"""')[2:] if s]
            assert code and not any("mpamp" in s for s in code), name
