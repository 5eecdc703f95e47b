"""The persistent worker pool behind every parallel kernel (csrc/cpu/parallel.c): regions use
the pool's threads, cover every item once, and settle the awkward cases - several Python
threads calling in at once, a region opened inside another, set_num_threads growing and
shrinking the pool, a forked child, and MPI ranks sharing a machine's cores."""
import os
import threading

import numpy as np
import pytest

import mpamp
from conftest import run_python

probe = mpamp._C._parallel_probe


@pytest.fixture
def threads():
    old = mpamp.get_num_threads()
    yield mpamp.set_num_threads
    mpamp.set_num_threads(old)


def test_a_region_runs_on_the_pool_and_covers_every_item(threads):
    threads(2)
    used, covered, workers = probe(10_000, 1, 0)
    assert covered == 10_000 and used == 2 and workers >= 1
    for _ in range(200):                      # back-to-back regions reuse the same workers
        assert probe(1000, 1, 0)[1] == 1000
    assert probe(1000, 1, 0)[2] == workers
    assert probe(10, 100, 0)[:2] == (1, 10)   # below the grain: inline, one thread


def test_resizing_grows_and_shrinks(threads):
    for n in (4, 1, 3, 2, 4):
        threads(n)
        used, covered, _ = probe(4096, 1, 0)
        assert covered == 4096 and 1 <= used <= n
    threads(1)
    assert probe(4096, 1, 0)[:2] == (1, 4096)


def test_a_region_inside_a_region_runs_inline(threads):
    threads(3)
    for _ in range(50):
        used, covered, _ = probe(600, 1, 1)   # every range opens a region of its own
        assert covered == 600 and used <= 3


def test_python_threads_calling_in_at_once(threads):
    threads(2)
    results, errors = [], []

    def work():
        try:
            for _ in range(300):
                results.append(probe(2000, 1, 0)[1])
            a = mpamp.randn(300, 200)
            b = mpamp.randn(200, 100)
            np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-4,
                                       atol=1e-3)
        except Exception as e:        # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in ts)
    assert results == [2000] * 1200


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_computes_with_threads():
    code = r"""
import os, sys, numpy as np, mpamp
mpamp.set_num_threads(2)
a, b = mpamp.randn(512, 256), mpamp.randn(256, 384)
want = (a @ b).numpy()                       # the parent's pool has run regions
pid = os.fork()
if pid == 0:
    used, covered, workers = mpamp._C._parallel_probe(10000, 1, 0)
    ok = used == 2 and covered == 10000 and workers == 1
    ok = ok and np.array_equal((a @ b).numpy(), want)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
print("parent", mpamp._C._parallel_probe(10000, 1, 0)[:2])
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert "child 0" in proc.stdout and "parent (2, 10000)" in proc.stdout, proc.stdout


def test_mpi_ranks_share_the_cores_by_default():
    cores = len(os.sched_getaffinity(0))
    code = "import mpamp; print(mpamp.get_num_threads())"
    env = {"MPAMP_NUM_THREADS": "", "OMP_NUM_THREADS": ""}      # empty: not set
    for var in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"):
        proc = run_python(code, **{**env, var: "2"})
        assert proc.returncode == 0, proc.stderr
        assert int(proc.stdout) == max(1, cores // 2), (var, proc.stdout)
    proc = run_python(code, **{**env, "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MPAMP_NUM_THREADS": "1"})
    assert int(proc.stdout) == 1
