"""Thousands of mixed-precision training steps (autocast fp16, GradScaler, Adam) keep the
process's resident memory, Python's allocated blocks and the C allocator's in-use bytes flat.
Bound: RSS may grow by at most 4 MiB over 3,000 steps after a warm-up (allocator and arena
noise); a leak of one small tensor per step would exceed it within the run."""
import gc
import os
import sys

import pytest

import mpamp
import mpamp.nn as nn
import mpamp.nn.functional as F


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_rss_is_flat_over_thousands_of_steps():
    mpamp.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = mpamp.optim.Adam(model.parameters(), lr=1e-3)
    scaler = mpamp.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    x, y = mpamp.randn(64, 10), mpamp.randn(64, 1)

    def steps(n):
        for _ in range(n):
            opt.zero_grad()
            with mpamp.autocast("cpu", dtype=mpamp.float16):
                loss = F.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

    steps(500)
    gc.collect()
    rss0, blocks0 = rss_bytes(), sys.getallocatedblocks()
    in_use0 = mpamp.backends.cpu.allocator_stats()["in_use_bytes"]
    steps(3000)
    gc.collect()
    grew = rss_bytes() - rss0
    # AddressSanitizer keeps freed memory in its quarantine (up to 256 MiB), so RSS says
    # nothing there; the sanitizer run checks leaks itself.
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert grew < 4 << 20, f"RSS grew by {grew / 2**20:.1f} MiB over 3000 steps"
    assert sys.getallocatedblocks() - blocks0 < 500
    assert mpamp.backends.cpu.allocator_stats()["in_use_bytes"] == in_use0
