"""Checkpoints survive SIGKILL: trainers saving after every step are killed (half of them
paused halfway through a save, so a partial temporary file exists, the rest at random moments);
after every kill the checkpoint loads and holds exactly the last or the next step (model,
optimizer and payload all of one step), leftover temporary files are counted and removed by the
next save, and the resumed runs end bit-identical to an uninterrupted one.

Fast by default (22 kills, a 4 MiB payload); MPAMP_LONG_FAULTS=1 runs 200 kills with a 48 MiB
payload (about a minute).
"""
import os
import queue
import random
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import mpamp
from mpamp.serialization import _common

import kill_trainer as kt

LONG = os.environ.get("MPAMP_LONG_FAULTS") == "1"
PAUSED_KILLS, RANDOM_KILLS = (100, 100) if LONG else (12, 10)
ELEMENTS = (48 << 20) // 8 if LONG else (4 << 20) // 8      # int64 payload
TIMEOUT = 60


class Zygote:
    """The kill_trainer zygote and a reader thread queueing its output lines."""

    def __init__(self, folder):
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
        env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(here, "kill_trainer.py"), str(folder), str(ELEMENTS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(folder))
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.split())
        self.lines.put(["eof"])

    def start(self, mode, arg):
        self.proc.stdin.write(f"{mode} {arg}\n")
        self.proc.stdin.flush()

    def next(self):
        try:
            words = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError("the trainer zygote stopped answering") from None
        assert words[0] != "eof", "the trainer zygote exited"
        return words

    def wait_for(self, kind, state):
        """Read lines until one of `kind`; 'saved' lines update state['saved']."""
        while True:
            words = self.next()
            if words[0] == "pid":
                state["pid"] = int(words[1])
            elif words[0] == "saved":
                state["saved"] = int(words[2])
            if words[0] == kind:
                return words

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


class Reference:
    """The uninterrupted run, step by step: parameter and Adam-state bytes after each step."""

    def __init__(self):
        self.model, self.opt = kt.build()
        self.states = [self._bits(self.model.state_dict(), None)]

    @staticmethod
    def _bits(model_sd, opt_sd):
        out = {k: v.numpy().tobytes() for k, v in model_sd.items()}
        if opt_sd is not None:
            for i, st in opt_sd["state"].items():
                out.update({f"{i}.{k}": v.numpy().tobytes() for k, v in st.items()})
        return out

    def at(self, step):
        while len(self.states) <= step:
            kt.train_step(self.model, self.opt, len(self.states) - 1)
            self.states.append(self._bits(self.model.state_dict(), self.opt.state_dict()))
        return self.states[step]


def check_checkpoint(path, reference, allowed):
    """The checkpoint loads, is one of the allowed steps, and every part is of that step."""
    state = mpamp.load(path)
    step = state["step"]
    assert step in allowed, (step, allowed)
    assert np.array_equal(state["payload"].numpy(), np.arange(ELEMENTS) + step), step
    got = Reference._bits(state["model"], state["optimizer"] if step else None)
    assert got == reference.at(step), f"checkpoint of step {step} differs from the reference"
    return step


def own_temp_files(folder, pid):
    return [n for n in os.listdir(folder) if n.endswith(".tmp") and f"-{pid}-" in n]


def kill_round(zyg, folder, reference, state, paused, rng):
    """One trainer, killed; returns the number of temporary files it left behind."""
    before = state["saved"]
    if paused:
        zyg.start("pause", rng.randrange(3))
        zyg.wait_for("paused", state)
        tmp = own_temp_files(folder, state["pid"])
        assert len(tmp) == 1, tmp                  # the partial file of the save in progress
        size = os.path.getsize(os.path.join(folder, tmp[0]))
        assert 0 < size < os.path.getsize(os.path.join(folder, kt.CKPT))
    else:
        zyg.start("free", 0)
        zyg.wait_for("saved", state)
        if rng.random() < 0.5:                     # a few saves in: mid-run, maybe mid-write
            for _ in range(rng.randrange(1, 4)):
                zyg.wait_for("saved", state)
        threading.Event().wait(rng.uniform(0.0, 0.05))
    os.kill(state["pid"], signal.SIGKILL)
    words = zyg.wait_for("exit", state)
    assert int(words[3]) == signal.SIGKILL, words   # killed, not exited on its own
    allowed = {state["saved"]} if paused else {state["saved"], state["saved"] + 1}
    assert state["saved"] >= before
    state["saved"] = check_checkpoint(os.path.join(folder, kt.CKPT), reference, allowed)
    left = own_temp_files(folder, state["pid"])
    assert _common.stale_temp_files(os.path.join(folder, kt.CKPT)) == \
        sorted(os.path.join(folder, n) for n in left)
    return len(left)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the trainer zygote forks")
def test_sigkilled_trainers_never_lose_a_checkpoint(tmp_path):
    rng = random.Random(16)
    reference = Reference()
    zyg = Zygote(tmp_path)
    state = {"saved": 0, "pid": None}
    try:
        zyg.start("finish", 1)                      # a first checkpoint to protect
        assert zyg.wait_for("exit", state)[2:] == ["0", "0"]
        kinds = [True] * PAUSED_KILLS + [False] * RANDOM_KILLS
        rng.shuffle(kinds)
        leftovers = []
        for paused in kinds:
            leftovers.append(kill_round(zyg, tmp_path, reference, state, paused, rng))
            if leftovers[-1]:
                # the next save to the path removes them (the next trainer's first save)
                zyg.start("finish", state["saved"] + 1)
                assert zyg.wait_for("exit", state)[2:] == ["0", "0"]
                assert _common.stale_temp_files(tmp_path / kt.CKPT) == []
        target = state["saved"] + 3
        zyg.start("finish", target)
        assert zyg.wait_for("exit", state)[2:] == ["0", "0"]
    finally:
        zyg.close()
    paused_left = [n for n, p in zip(leftovers, kinds) if p]
    assert len(kinds) >= 20 and paused_left == [1] * PAUSED_KILLS   # >= 10 with a partial file
    print(f"{len(kinds)} kills survived, {sum(leftovers)} partial temp files left and cleaned")
    assert check_checkpoint(tmp_path / kt.CKPT, reference, {target}) == target
    assert sorted(os.listdir(tmp_path)) == [kt.CKPT]


def test_next_save_removes_only_dead_processes_temp_files(tmp_path):
    target = tmp_path / "c.pth"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    tag = _common._HOST_TAG
    names = {
        "dead": f".c.pth.{tag}-{dead}-{'a' * 12}.tmp",              # killed: removed
        "live": f".c.pth.{tag}-{os.getppid()}-{'b' * 12}.tmp",     # a live process: kept
        "other_host": f".c.pth.{'0' * 8 if tag != '0' * 8 else '1' * 8}-{dead}-{'c' * 12}.tmp",
        "other_file": f".d.pth.{tag}-{dead}-{'d' * 12}.tmp",       # another target: kept
        "unrelated": "notes.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"partial")
    assert _common.stale_temp_files(target) == [str(tmp_path / names["dead"])]
    mpamp.save({"x": mpamp.ones(3)}, target)
    assert sorted(os.listdir(tmp_path)) == sorted(["c.pth"] + [names[k] for k in names
                                                               if k != "dead"])
    assert mpamp.load(target)["x"].tolist() == [1.0, 1.0, 1.0]
    # a file of this process that no save is writing any more is stale too
    mine = tmp_path / f".c.pth.{tag}-{os.getpid()}-{'e' * 12}.tmp"
    mine.write_bytes(b"partial")
    mpamp.save_safetensors({"x": mpamp.ones(2)}, target)
    assert not mine.exists()


def _raise_halfway(threshold):
    def hook(fh, written):
        if written >= threshold:
            raise KeyboardInterrupt("simulated interrupt halfway")
    return hook


def test_interrupted_path_save_keeps_the_old_file_and_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "c.pth"
    mpamp.save({"v": mpamp.zeros(1 << 20)}, target)
    before = target.read_bytes()
    monkeypatch.setattr(_common, "_test_write_hook", _raise_halfway(2 << 20))
    with pytest.raises(KeyboardInterrupt, match="halfway"):
        mpamp.save({"v": mpamp.ones(1 << 20)}, target)
    assert target.read_bytes() == before and os.listdir(tmp_path) == ["c.pth"]


def test_interrupted_file_object_save_leaves_a_truncated_archive(tmp_path, monkeypatch):
    """A save to a file object can't be atomic: what was written stays, and load refuses it."""
    monkeypatch.setattr(_common, "_test_write_hook", _raise_halfway(2 << 20))
    with open(tmp_path / "f.pth", "wb") as fh:
        with pytest.raises(KeyboardInterrupt):
            mpamp.save({"v": mpamp.ones(1 << 20)}, fh)
    assert 0 < os.path.getsize(tmp_path / "f.pth") < 4 << 20
    with pytest.raises(RuntimeError, match=r"f\.pth: checkpoint is corrupted or truncated"):
        mpamp.load(tmp_path / "f.pth")
