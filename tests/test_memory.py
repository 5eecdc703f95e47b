"""The caching allocator, lifetime of storages and views, and leak checks for tensor churn."""
import gc
import threading
import tracemalloc

import numpy as np

import mpamp
from conftest import python_runs_during

stats = mpamp.backends.cpu.allocator_stats


def test_repeated_allocations_hit_the_cache():
    mpamp.zeros(1 << 20)                                  # prime the 4 MiB class
    before = stats()
    for _ in range(200):
        t = mpamp.empty(1 << 20)
        del t
    after = stats()
    assert after["allocs"] - before["allocs"] == 200
    assert after["system_allocs"] == before["system_allocs"]   # no malloc/munmap per step
    assert after["cache_hits"] - before["cache_hits"] == 200


def test_in_use_returns_to_baseline():
    gc.collect()
    base = stats()["in_use_bytes"]
    ts = [mpamp.rand(1000 + i) for i in range(50)]
    views = [t[1:].view(-1) for t in ts]
    assert stats()["in_use_bytes"] > base
    del ts
    assert stats()["in_use_bytes"] > base                 # views keep storage alive
    del views
    gc.collect()
    assert stats()["in_use_bytes"] == base


def test_empty_cache_and_alignment():
    for n in (1, 3, 17, 100, 1000, 12345, 1 << 16):
        for dt in ("fp32", "fp16", "bf16"):
            assert mpamp.empty(n, dtype=dt).data_ptr() % 64 == 0
    mpamp.backends.cpu.empty_cache()
    assert stats()["cached_bytes"] == 0


def test_no_python_leaks_in_tensor_churn():
    def churn():
        for _ in range(300):
            t = mpamp.randn(8, 9, dtype="bf16")
            u = t.float().t().contiguous()[1:, ::2].reshape(-1).half()
            u.numpy()
            repr(u.shape)
            t[0] = 1.0
            mpamp.from_numpy(np.ones(5, np.float32)).clone()
            mpamp.tensor([[1, 2], [3, 4]]).tolist()
            try:
                t.view(100)
            except RuntimeError:
                pass
    churn()
    gc.collect()
    tracemalloc.start()
    snap1 = tracemalloc.take_snapshot()
    base = stats()["in_use_bytes"]
    churn()
    gc.collect()
    snap2 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in snap2.compare_to(snap1, "filename"))
    assert growth < 20_000, growth                       # bytes of Python objects
    assert stats()["in_use_bytes"] == base


def test_from_numpy_keeps_array_alive_and_releases_it():
    import sys
    a = np.arange(4, dtype=np.float32)
    rc = sys.getrefcount(a)
    t = mpamp.from_numpy(a)
    assert sys.getrefcount(a) > rc
    del a
    gc.collect()
    assert t.tolist() == [0, 1, 2, 3]
    b = np.arange(4, dtype=np.float32)
    rc = sys.getrefcount(b)
    v = mpamp.from_numpy(b)[1:]
    del v
    gc.collect()
    assert sys.getrefcount(b) == rc


def test_large_casts_release_the_gil():
    # With the GIL held for the whole kernel no Python thread could run inside its window.
    x = mpamp.rand(1 << 26)                               # 256 MiB of float32
    assert python_runs_during(x.bfloat16), "no Python thread ran during a long conversion"


def test_threads_get_identical_results():
    x = mpamp.randn(10_000)
    expected = x.bfloat16().float().tolist()
    results = [None] * 4

    def work(i):
        results[i] = x.bfloat16().float().tolist()

    ths = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert all(r == expected for r in results)
