"""Out of memory: mpamp.OutOfMemoryError (a RuntimeError and a MemoryError, also
mpamp.cuda.OutOfMemoryError) names the request and what the cache held; before failing, the
caching allocator's cache (tensors and the GEMM's packing buffers, which come from it) is
released and the allocation retried once; a training step after a caught OOM succeeds and leaks nothing.

The real failures run in a subprocess under RLIMIT_AS (an address-space limit a little above
what it already uses), so the test can't take the machine down. Skipped under AddressSanitizer,
which reserves terabytes of address space up front (an address-space limit can't work there).
"""
import os

import pytest

import mpamp
from conftest import run_python


def _under_asan():
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return True
    try:
        with open("/proc/self/maps") as fh:
            return "libasan" in fh.read()
    except OSError:
        return False


needs_rlimit = pytest.mark.skipif(
    _under_asan() or not os.path.exists("/proc/self/status"),
    reason="needs RLIMIT_AS and /proc (Linux) without AddressSanitizer: ASan reserves huge "
           "shadow memory, so an address-space limit fails everything, not one allocation")

PRELUDE = r"""
import gc, resource, sys
import numpy as np
import mpamp
from mpamp import nn

stats = mpamp._C._alloc_stats
MiB = 1 << 20
SOFT, HARD = resource.getrlimit(resource.RLIMIT_AS)

def vm_bytes():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

def limit(headroom):
    # a little above what the process has mapped now: the next big mmap fails
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + headroom, HARD))

def unlimit():
    resource.setrlimit(resource.RLIMIT_AS, (SOFT, HARD))

mpamp.set_num_threads(2)
mpamp.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256))
opt = mpamp.optim.Adam(model.parameters(), lr=1e-3)
x, y = mpamp.randn(512, 256), mpamp.randn(512, 256)

def step(inputs=x, targets=y):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    opt.step()
    return loss.item()

step(); step()          # threads started, optimizer state and caches in place
"""


def _run(body):
    proc = run_python(PRELUDE + body)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_class_is_both_errors_and_torchs_names():
    assert issubclass(mpamp.OutOfMemoryError, RuntimeError)
    assert issubclass(mpamp.OutOfMemoryError, MemoryError)
    assert mpamp.cuda.OutOfMemoryError is mpamp.OutOfMemoryError
    assert mpamp.OutOfMemoryError.__module__ == "mpamp"
    with pytest.raises(mpamp.OutOfMemoryError, match=r"failed to allocate 140737488355328 "
                       r"bytes \(128\.00 TiB\), even after releasing the cache and retrying; "
                       r"the cache held \d+ bytes.* \(tensors and GEMM packing buffers\); in "
                       r"use: \d+ bytes"):
        mpamp.empty(1 << 45)
    with pytest.raises(mpamp.OutOfMemoryError, match="Storage size calculation overflowed"):
        mpamp.empty(2**40, 2**40)


@needs_rlimit
def test_release_and_retry_turns_a_failure_into_success():
    out = _run(r"""
held = mpamp.empty(64 * MiB)                    # 256 MiB, then kept by the allocator's cache
del held
assert stats()["cached_bytes"] >= 256 * MiB
limit(64 * MiB)
t = mpamp.empty(32 * MiB)                       # 128 MiB: fits only once the cache is released
assert stats()["cached_bytes"] == 0
t.fill_(1.0)
assert t.sum().item() == 32 * MiB
print("retried", stats()["system_allocs"])
""")
    assert "retried" in out


@needs_rlimit
def test_a_caught_oom_names_the_caches_and_training_goes_on_leaking_nothing():
    out = _run(r"""
huge = mpamp.randn(65536, 256)                  # a batch whose activations (256 MiB) can't fit
spare = mpamp.empty(4 * MiB); del spare         # 16 MiB in the allocator's cache
gc.collect()
base = stats()["in_use_bytes"]
cached = stats()["cached_bytes"]              # the spare block and the GEMM's buffers
assert cached >= 16 * MiB
limit(96 * MiB)
try:
    mpamp.empty(1 << 30)                        # 4 GiB
except mpamp.OutOfMemoryError as exc:
    msg = str(exc)
    assert isinstance(exc, RuntimeError) and isinstance(exc, MemoryError), type(exc).__mro__
    assert "failed to allocate 4294967296 bytes (4.00 GiB)" in msg, msg
    assert f"the cache held {cached} bytes" in msg, msg
else:
    raise AssertionError("no OutOfMemoryError")
assert stats()["cached_bytes"] == 0
step()                                          # warm again under the limit

def failing_step():
    try:
        step(huge, huge)                        # OOM inside a training step's forward
    except mpamp.OutOfMemoryError:
        return 1
    return 0

caught = failing_step()                         # (zero_grad freed the grads)
gc.collect()
blocks, in_use = sys.getallocatedblocks(), stats()["in_use_bytes"]
for _ in range(19):
    caught += failing_step()
    assert stats()["in_use_bytes"] == in_use, "the failed step left tensors behind"
gc.collect()
assert caught == 20
losses = [step() for _ in range(5)]             # and training goes on
assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
assert stats()["in_use_bytes"] == base, (stats()["in_use_bytes"], base)
assert sys.getallocatedblocks() - blocks < 200, sys.getallocatedblocks() - blocks
unlimit()
print("recovered", caught)
""")
    assert "recovered 20" in out


@needs_rlimit
def test_a_gemm_buffer_that_fails_releases_the_allocators_cache_too():
    out = _run(r"""
mpamp._C._empty_cache()
a, b = mpamp.randn(1280, 4096), mpamp.randn(4096, 1024)
mpamp.set_num_threads(1)
want = a @ b                                    # 1 thread: no shared 16 MiB panel of b
mpamp.set_num_threads(2)
spare = mpamp.empty_like(want); del spare       # the output's block, ready in the cache
held = mpamp.empty(64 * MiB); del held          # 256 MiB the GEMM's retry can only get back
assert stats()["cached_bytes"] >= 256 * MiB
limit(8 * MiB)
got = a @ b                                     # 2 threads pack b once: 16 MiB, after release
unlimit()
# the 256 MiB block was released for the 16 MiB panel, which went back into the cache
assert 16 * MiB <= stats()["cached_bytes"] < 256 * MiB, stats()
assert np.array_equal(got.numpy(), want.numpy())
print("gemm retried")
""")
    assert "gemm retried" in out
