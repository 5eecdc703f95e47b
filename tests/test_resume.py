"""Bit-exact resume: a run checkpointed at step 10 and resumed in a fresh interpreter ends with
exactly the bits of the uninterrupted 20-step run — parameters, AdamW state, OneCycleLR and
GradScaler state, the shuffling DataLoader's position (mid-epoch), the random stream — in
fp32, bf16 autocast and fp16 autocast + GradScaler (with two overflowing steps skipped),
dropout on, at 1 and at 2 threads (each against the uninterrupted run at the same thread
count). mpamp can promise this because its kernels are
deterministic and its random streams counter-based (torch does not promise it).
"""
import os

import pytest

import mpamp
from conftest import run_python

import resume_trainer as rt

CONFIGS = [(p, t) for p in ("fp32", "bf16", "fp16") for t in (1, 2)]
HERE = os.path.dirname(os.path.abspath(__file__))


def bits(obj):
    """obj with every tensor replaced by (dtype, shape, raw bytes): equal means bit-equal."""
    if isinstance(obj, mpamp.Tensor):
        t = obj.detach().contiguous()
        raw = bytes(mpamp._C._memoryview(t).cast("B")) if t.numel() else b""
        return (str(t.dtype), tuple(t.shape), raw)
    if isinstance(obj, dict):
        return {k: bits(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(bits(v) for v in obj)
    return obj


@pytest.fixture
def threads():
    old = mpamp.get_num_threads()
    yield mpamp.set_num_threads
    mpamp.set_num_threads(old)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Per config: the uninterrupted run's final state and a step-10 checkpoint on disk."""
    folder = tmp_path_factory.mktemp("resume")
    old = mpamp.get_num_threads()
    out = {}
    try:
        for precision, n in CONFIGS:
            mpamp.set_num_threads(n)
            full = rt.Run(precision)
            for i in range(rt.STEPS):
                full.step(i)
            final = bits(full.state(rt.STEPS))      # before `half` moves the stream on
            half = rt.Run(precision)
            for i in range(rt.HALF):
                half.step(i)
            path = folder / f"{precision}-{n}.pth"
            mpamp.save(half.state(rt.HALF), path)
            out[precision, n] = (final, path, full)
    finally:
        mpamp.set_num_threads(old)
    return folder, out


def _resume_in_fresh_process(jobs):
    code = "import sys; sys.path.insert(0, %r)\nimport resume_trainer as rt\n" % HERE
    code += "".join(f"rt.resume({str(job[0])!r}, {str(job[1])!r}, *{job[2:]!r})\n"
                    for job in jobs)
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr


def test_resumed_runs_are_bit_identical_to_uninterrupted_ones(checkpoints):
    folder, runs = checkpoints
    jobs = [(path, folder / f"final-{p}-{n}.pth", n, p, True)
            for (p, n), (_, path, _) in runs.items()]
    _resume_in_fresh_process(jobs)
    for (precision, n), (want, _, full) in runs.items():
        got = bits(mpamp.load(folder / f"final-{precision}-{n}.pth"))
        for part in ("model", "optimizer", "scheduler", "scaler", "loader", "rng", "step"):
            assert got[part] == want[part], f"{precision} at {n} threads: {part} differs"
        if precision == "fp16":        # the scaler did skip and regrow inside the run
            assert full.scaler.stats()["skipped_steps"] == len(rt.OVERFLOW_STEPS)
            assert want["scaler"]["scale"] != 2.0**14
    print(f"{len(runs)} runs x {rt.STEPS - rt.HALF} steps resumed bit-exact")


def test_results_do_not_depend_on_the_thread_count(checkpoints):
    _, runs = checkpoints
    for precision in ("fp32", "bf16", "fp16"):
        assert runs[precision, 1][0]["model"] == runs[precision, 2][0]["model"], precision


def test_a_resume_without_the_random_state_differs(checkpoints, tmp_path):
    """The check above can fail: without set_rng_state, dropout draws other masks."""
    folder, runs = checkpoints
    want, path, _ = runs["fp32", 1]
    _resume_in_fresh_process([(path, tmp_path / "norng.pth", 1, "fp32", False)])
    assert bits(mpamp.load(tmp_path / "norng.pth"))["model"] != want["model"]


def test_a_resume_without_the_loader_state_differs(checkpoints, tmp_path):
    """Without loader.load_state_dict, the epoch restarts: other batches, other weights."""
    folder, runs = checkpoints
    want, path, _ = runs["fp32", 1]
    _resume_in_fresh_process([(path, tmp_path / "noloader.pth", 1, "fp32", True, False)])
    assert bits(mpamp.load(tmp_path / "noloader.pth"))["model"] != want["model"]


def test_in_process_resume_restores_the_stream(checkpoints, threads):
    folder, runs = checkpoints
    want, path, _ = runs["fp16", 2]
    rt.resume(path, folder / "inproc.pth", 2, "fp16")
    assert bits(mpamp.load(folder / "inproc.pth")) == want
