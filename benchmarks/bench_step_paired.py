"""mpamp's own training-step ratios, paired: the fp32, bf16-autocast and fp16+GradScaler steps
of bench_train_step.py's MLP (1024 -> 4096 -> 1024, ReLU, batch 256, MSE, AdamW) built in ONE
process and run in turn, two steps each per round, so a burst of load from elsewhere on a
shared machine hits the three alike. Prints each case's median time and the median over rounds
of the per-round time ratio to the fp32 step (> 1: faster than fp32).

bench_train_step.py gives the numbers for the issue (each case in its own process, with peak
memory and torch); this one is for telling a 5% change from noise.

    python benchmarks/bench_step_paired.py [--threads N] [--rounds 12]
"""
import argparse
import statistics
import time

import machine

THREADS = machine.thread_count_from_argv()
machine.use_inplace_build()

import numpy as np  # noqa: E402

import mpamp  # noqa: E402

from bench_train_step import make_step  # noqa: E402  (the same model, data and step)

CASES = ("mpamp fp32", "mpamp bf16", "mpamp fp16+scaler")
BATCH = 256


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None, help="default: every core")
    p.add_argument("--rounds", type=int, default=12)
    args = p.parse_args()
    mpamp.set_num_threads(THREADS)
    steps = {name: make_step(name, BATCH) for name in CASES}
    for step in steps.values():
        step()
        step()
    times = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            t = time.perf_counter()
            step()
            step()
            times[name].append((time.perf_counter() - t) / 2)
    print("\n".join(machine.header(mpamp, np, None, THREADS)))
    print(f"paired steps in one process, {args.rounds} rounds")
    print("| case | median ms/step | speed vs fp32 (median of per-round ratios) |")
    print("|---|---|---|")
    for name, ts in times.items():
        ratio = statistics.median(f / t for f, t in zip(times[CASES[0]], ts))
        print(f"| {name} | {statistics.median(ts) * 1e3:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
