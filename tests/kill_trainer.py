"""A trainer that checkpoints after every step, for tests/test_kill_save.py.

Run as a zygote (`python kill_trainer.py FOLDER PAYLOAD_ELEMENTS`) it imports mpamp once and
forks one trainer per command read from stdin, so the test can SIGKILL dozens of trainers in
seconds. Each trainer resumes from FOLDER/ckpt.pth (model, Adam state, step and a payload tensor
whose values encode the step), trains, and saves after every step. The test imports the same
functions to compute the uninterrupted reference run.
"""
import os
import sys
import time
import traceback

import mpamp
from mpamp import nn
from mpamp.serialization import _common

CKPT = "ckpt.pth"


def build():
    """The model and optimizer every trainer starts from (same bits in every process)."""
    mpamp.manual_seed(0)
    model = nn.Linear(16, 16)
    return model, mpamp.optim.Adam(model.parameters(), lr=1e-2)


def train_step(model, opt, step):
    """One deterministic Adam step on the batch of `step`."""
    gen = mpamp.Generator().manual_seed(1000 + step)
    x = mpamp.randn(32, 16, generator=gen)
    y = mpamp.randn(32, 16, generator=gen)
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()


def payload(step, elements):
    """int64 values step, step + 1, ...: a checkpoint mixing two saves can't pass check()."""
    return mpamp.arange(elements, dtype=mpamp.int64) + step


def checkpoint(model, opt, step, elements):
    return {"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "payload": payload(step, elements)}


def resume(folder):
    """(model, optimizer, step) from the folder's checkpoint, or a fresh start."""
    model, opt = build()
    path = os.path.join(folder, CKPT)
    if not os.path.exists(path):
        return model, opt, 0
    state = mpamp.load(path)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return model, opt, state["step"]


def say(text):
    """One line to the test in a single write(2), so a kill can't leave half a line."""
    os.write(1, (text + "\n").encode())


def _pause_at(threshold):
    """A write hook that, once `threshold` bytes are written, flushes and sleeps until killed."""
    def hook(fh, written):
        if written >= threshold:
            fh.flush()
            say(f"paused {os.getpid()}")
            while True:
                time.sleep(60)
    return hook


def trainer(folder, elements, mode, arg):
    """mode 'pause': `arg` full saves, then pause halfway through the next save.
    mode 'free': save after every step until killed. mode 'finish': run to step `arg`."""
    model, opt, step = resume(folder)
    saves = 0
    while not (mode == "finish" and step >= arg):
        train_step(model, opt, step)
        step += 1
        if mode == "pause" and saves == arg:
            _common._test_write_hook = _pause_at(elements * 8 // 2)
        mpamp.save(checkpoint(model, opt, step, elements), os.path.join(folder, CKPT))
        saves += 1
        say(f"saved {os.getpid()} {step}")


def zygote(folder, elements):
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                trainer(folder, elements, cmd[0], int(cmd[1]))
            except BaseException:       # noqa: BLE001 - reported to the test, then exit
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        say(f"pid {pid}")
        _, status = os.waitpid(pid, 0)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        say(f"exit {pid} {code} {sig}")


if __name__ == "__main__":
    zygote(sys.argv[1], int(sys.argv[2]))
