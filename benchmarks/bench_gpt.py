"""A nanoGPT-style training step in mpamp and PyTorch, in one process: the GPT of
tests/clients/gpt.py (our own code in nanoGPT's shape: token + position embeddings, causal
self-attention through scaled_dot_product_attention, GELU MLP, LayerNorm, weight tying) with
AdamW over decay/no-decay groups and grad clipping, run once as written for torch and once
with its imports rewritten to mpamp (as tests/test_clients.py does). Sizes: tiny (2 layers x 64,
4 heads, block 32, batch 32, vocab 64) and small (6 x 384, 6 heads, block 256, batch 8, vocab
512); modes fp32 and bf16 autocast. Steps alternate between the libraries (paired rounds),
median ms per step; torch's OpenMP threads get --settle seconds to stop spinning.

Run: python benchmarks/bench_gpt.py [--threads N] [--sizes tiny,small] [--modes fp32,bf16]
     [--steps 10] [--rounds 5]
"""
import argparse
import os
import re
import statistics
import sys
import time
import types

import machine

THREADS = machine.thread_count_from_argv()
machine.use_inplace_build()

import numpy as np  # noqa: E402

import mpamp  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

GPT_SRC = os.path.join(machine.ROOT, "tests", "clients", "gpt.py")
SIZES = {"tiny": dict(n_layer=2, n_embd=64, n_head=4, block_size=32, vocab_size=64, batch=32),
         "small": dict(n_layer=6, n_embd=384, n_head=6, block_size=256, vocab_size=512,
                       batch=8)}


def load_gpt(lib_name):
    """tests/clients/gpt.py as a module bound to torch or (imports rewritten) to mpamp."""
    text = open(GPT_SRC).read()
    if lib_name == "mpamp":
        text = re.sub(r"^import torch$", "import mpamp as torch", text, flags=re.M)
        text = re.sub(r"^import torch\.", "import mpamp.", text, flags=re.M)
        text = re.sub(r"^from torch", "from mpamp", text, flags=re.M)
    mod = types.ModuleType(f"gpt_{lib_name}")
    mod.__file__ = GPT_SRC
    sys.modules[mod.__name__] = mod           # dataclasses look their module up
    exec(compile(text, GPT_SRC, "exec"), mod.__dict__)
    return mod


def make_step(lib, gpt, size, mode):
    cfg = dict(SIZES[size])
    batch = cfg.pop("batch")
    lib.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig(dropout=0.0, bias=True, **cfg))
    opt = model.configure_optimizers(0.1, 3e-4, (0.9, 0.95))
    rng = np.random.default_rng(0)
    idx = rng.integers(0, cfg["vocab_size"], (batch, cfg["block_size"] + 1))
    x = lib.from_numpy(idx[:, :-1].copy())
    y = lib.from_numpy(idx[:, 1:].copy())

    def step():
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=mode == "bf16"):
            _, loss = model(x, y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def timed(step, steps):
    step()                                   # warm up: caches, packing buffers, pools
    t = time.perf_counter()
    for _ in range(steps):
        loss = step()
    float(loss.item())
    return (time.perf_counter() - t) / steps * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--sizes", default="tiny,small")
    p.add_argument("--modes", default="fp32,bf16")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--settle", type=float, default=0.3)
    a = p.parse_args()
    machine.set_library_threads(THREADS, mpamp, torch)
    print("\n".join(machine.header(mpamp, np, torch, THREADS)))
    libs = [("mpamp", mpamp, load_gpt("mpamp"))]
    if torch is not None:
        libs.append(("torch", torch, load_gpt("torch")))
    rows = []
    for size in a.sizes.split(","):
        for mode in a.modes.split(","):
            steps = {name: make_step(lib, gpt, size, mode) for name, lib, gpt in libs}
            samples = {name: [] for name in steps}
            for _ in range(a.rounds):
                for name, step in steps.items():
                    samples[name].append(timed(step, a.steps))
                    if name == "torch":
                        time.sleep(a.settle)
            med = {k: statistics.median(v) for k, v in samples.items()}
            rows.append((size, mode, med, {k: (min(v), max(v)) for k, v in samples.items()}))
            print(f"... {size} {mode} done", file=sys.stderr)
    print("\n| model | mode | mpamp ms/step | torch ms/step | torch / mpamp |")
    print("|---|---|---|---|---|")
    for size, mode, med, _ in rows:
        m, t = med["mpamp"], med.get("torch")
        tcol = "-" if t is None else f"{t:.2f}"
        ratio = "-" if t is None else f"{t / m:.2f}x"
        print(f"| {size} | {mode} | {m:.2f} | {tcol} | {ratio} |")
    print(f"\nmedian of {a.rounds} rounds of {a.steps} steps; noise (min..max ms): " +
          "; ".join(f"{s} {m} " + ", ".join(f"{k} {lo:.1f}..{hi:.1f}" for k, (lo, hi) in
                                            rng.items()) for s, m, _, rng in rows))


if __name__ == "__main__":
    main()
