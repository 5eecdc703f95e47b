"""A process forked after kernels ran (the thread pool busy, the GEMM's buffers and the
allocator's cache filled) trains with 2 threads and gets the parent's bits exactly: fp32 and
bf16 autocast steps with dropout, AdamW, and an fp16 GradScaler step. (tests/test_thread_pool.py
covers the pool itself after fork.) Runs in a fresh interpreter, so pytest never forks."""
import os

import pytest

from conftest import run_python

CODE = r"""
import os, sys
import mpamp
from mpamp import nn

mpamp.set_num_threads(2)

def build():
    mpamp.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Dropout(0.1), nn.Linear(512, 64))
    return model, mpamp.optim.AdamW(model.parameters(), lr=1e-3), mpamp.amp.GradScaler("cpu")

def train(model, opt, scaler, steps, seed):
    gen = mpamp.Generator().manual_seed(seed)
    for i in range(steps):
        x, y = mpamp.randn(128, 256, generator=gen), mpamp.randn(128, 64, generator=gen)
        opt.zero_grad()
        kind = ("fp32", "bf16", "fp16")[i % 3]
        dtype = mpamp.float16 if kind == "fp16" else mpamp.bfloat16
        with mpamp.autocast("cpu", dtype=dtype, enabled=kind != "fp32"):
            loss = nn.functional.mse_loss(model(x).float(), y)
        if kind == "fp16":
            scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        else:
            loss.backward(); opt.step()

def state_bytes(model, opt):
    out = b""
    for t in list(model.state_dict().values()) + [
            v for st in opt.state_dict()["state"].values() for v in st.values()]:
        out += bytes(mpamp._C._memoryview(t.detach().contiguous()).cast("B"))
    return out + repr(mpamp.get_rng_state()).encode()

model, opt, scaler = build()
train(model, opt, scaler, 4, 1)              # kernels, threads and caches all used
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read)
    used = mpamp._C._parallel_probe(10000, 1, 0)[0]
    train(model, opt, scaler, 3, 2)
    data = (b"%d " % used) + state_bytes(model, opt)
    with os.fdopen(write, "wb") as fh:
        fh.write(data)
    os._exit(0)
os.close(write)
train(model, opt, scaler, 3, 2)
want = state_bytes(model, opt)
with os.fdopen(read, "rb") as fh:
    got = fh.read()
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
used, _, got = got.partition(b" ")
print("child threads", int(used), "same bits", got == want, len(want))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_trains_with_threads_to_the_parents_bits():
    proc = run_python(CODE)
    assert proc.returncode == 0, proc.stderr
    assert "child threads 2 same bits True" in proc.stdout, proc.stdout
