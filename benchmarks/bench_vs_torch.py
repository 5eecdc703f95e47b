"""The same training loops in mpamp and PyTorch, in one run: the document's model
(Linear(10,10) -> ReLU -> Linear(10,1)) and a wide MLP (10 -> 512 -> 512 -> 1), each in fp32,
fp16 (autocast + GradScaler) and bf16 (autocast), Adam, MSE, batch 256 on synthetic data.
Prints median ms per step (interleaved rounds) and torch/mpamp ratios; PyTorch columns are
skipped with a note when it is not installed. After each torch sample the script sleeps
--settle seconds: torch's OpenMP threads keep spinning for a while after a parallel region,
and on a 2-core machine they took a core from the mpamp sample that followed (the wide fp32
step measured 11 ms instead of 7).

Run: python benchmarks/bench_vs_torch.py [--steps 30] [--rounds 5] [--settle 0.3]
"""
import argparse
import statistics
import time

import numpy as np

import machine

machine.use_inplace_build()          # this checkout's build, not an installed copy

import mpamp  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

MODES = ("fp32", "fp16", "bf16")


def make_loop(lib, widths, mode, batch):
    """A step function for lib (mpamp or torch) that trains one model in one mode."""
    lib.manual_seed(0)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(lib.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(lib.nn.ReLU())
    model = lib.nn.Sequential(*layers)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.normal(size=(batch, widths[0])).astype(np.float32))
    y = lib.tensor(rng.normal(size=(batch, 1)).astype(np.float32))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    dtype = {"fp16": lib.float16, "bf16": lib.bfloat16}.get(mode)
    scaler = lib.amp.GradScaler("cpu") if mode == "fp16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        with lib.autocast("cpu", dtype=dtype or lib.bfloat16, enabled=dtype is not None):
            loss = lib.nn.functional.mse_loss(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return step


def time_steps(step, steps):
    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds to sleep after a torch sample (its pool threads spin)")
    args = ap.parse_args()
    if torch is None:
        print("note: PyTorch is not installed; only mpamp's times are printed")
    else:
        torch.set_num_threads(mpamp.get_num_threads())
    models = {"document 10-10-1": (10, 10, 1), "wide 10-512-512-1": (10, 512, 512, 1)}
    print(f"{'model':20s} {'mode':5s} {'mpamp ms':>9s} {'torch ms':>9s} {'torch/mpamp':>12s}")
    for name, widths in models.items():
        for mode in MODES:
            loops = [make_loop(mpamp, widths, mode, args.batch)]
            if torch is not None:
                loops.append(make_loop(torch, widths, mode, args.batch))
            samples = [[] for _ in loops]
            for _ in range(args.rounds):
                for i, loop in enumerate(loops):
                    samples[i].append(time_steps(loop, args.steps))
                    if i == 1:
                        time.sleep(args.settle)
            med = [statistics.median(s) * 1e3 for s in samples]
            tms = f"{med[1]:9.3f}" if torch is not None else f"{'-':>9s}"
            ratio = f"{med[1] / med[0]:11.2f}x" if torch is not None else f"{'-':>12s}"
            print(f"{name:20s} {mode:5s} {med[0]:9.3f} {tms} {ratio}")


if __name__ == "__main__":
    main()
