"""The products of the wide-MLP bf16 step alone, against the bf16 peak: the five matrix
products autograd runs in one step of bench_train_step.py's model (1024 -> 4096 -> 1024, ReLU,
batch 256, bf16 autocast; the input needs no gradient, so layer 1 has no dX product), each with
the operands and layouts the step gives it:

    forward   F.linear(x, W1, b1)        256 x 4096 x 1024   (W as nn.Linear holds it, N x K)
              F.linear(h, W2, b2)        256 x 1024 x 4096
    backward  dH  = dY @ W2              256 x 4096 x 1024
              dW2 = dY^T @ H (a view)    1024 x 4096 x 256
              dW1 = dH^T @ X (a view)    4096 x 1024 x 256

timed in turn in one process (median over rounds of each), then their summed time as GFLOP/s
and as a fraction of the vdpbf16ps peak probe measured in the same run (issue #15: "the step's
products at >= 0.75 of the measured bf16 peak over their own time"), and the share of one
paired bf16 training step that the products take. On a CPU without AVX512_BF16 the bf16
products are widened to the fp32 kernel and the fraction is reported against the fp32 peak.

    python benchmarks/bench_step_products.py [--threads N] [--rounds 15]
"""
import argparse
import statistics
import time

import machine

THREADS = machine.thread_count_from_argv()
machine.use_inplace_build()

import numpy as np  # noqa: E402

import mpamp  # noqa: E402
import mpamp.nn.functional as F  # noqa: E402

from bench_train_step import make_step  # noqa: E402  (the same model, data and step)

BATCH, D_IN, D_HID = 256, 1024, 4096


def products():
    """name -> (flops, zero-argument callable), bf16 operands of the step's shapes."""
    rng = np.random.default_rng(0)

    def bf(*shape):
        return mpamp.tensor(rng.standard_normal(shape, dtype=np.float32)).bfloat16()

    x, h, dy = bf(BATCH, D_IN), bf(BATCH, D_HID), bf(BATCH, D_IN)
    dh = bf(BATCH, D_HID)
    w1, b1, w2, b2 = bf(D_HID, D_IN), bf(D_HID), bf(D_IN, D_HID), bf(D_IN)
    f = 2 * BATCH * D_IN * D_HID
    return {"fwd linear 1": (f, lambda: F.linear(x, w1, b1)),
            "fwd linear 2": (f, lambda: F.linear(h, w2, b2)),
            "dH = dY @ W2": (f, lambda: dy @ w2),
            "dW2 = dY^T @ H": (f, lambda: dy.t() @ h),
            "dW1 = dH^T @ X": (f, lambda: dh.t() @ x)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None, help="default: every core")
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    mpamp.set_num_threads(THREADS)
    prods = products()
    step = make_step("mpamp bf16", BATCH)
    for _, fn in prods.values():
        fn()
    step()
    times = {name: [] for name in prods}
    steps, peaks = [], []
    kind = "bf16_dot" if machine.peak_gflops(mpamp, "bf16_dot", THREADS) else "fp32_fma"
    for _ in range(args.rounds):
        peaks.append(machine.peak_gflops(mpamp, kind, THREADS))
        for name, (_, fn) in prods.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
        t = time.perf_counter()
        step()
        steps.append(time.perf_counter() - t)
    peak = statistics.median(peaks)
    print("\n".join(machine.header(mpamp, np, None, THREADS)))
    print(f"peak {kind} ({THREADS} threads): {peak:.1f} GFLOP/s (median of {len(peaks)} "
          f"probes, {min(peaks):.1f}..{max(peaks):.1f}); {args.rounds} rounds\n")
    print("| product | M x N x K | ms | GFLOP/s | of peak |")
    print("|---|---|---|---|---|")
    shapes = {"fwd linear 1": "256 x 4096 x 1024", "fwd linear 2": "256 x 1024 x 4096",
              "dH = dY @ W2": "256 x 4096 x 1024", "dW2 = dY^T @ H": "1024 x 4096 x 256",
              "dW1 = dH^T @ X": "4096 x 1024 x 256"}
    total_t = total_f = 0.0
    for name, (flops, _) in prods.items():
        t = statistics.median(times[name])
        total_t, total_f = total_t + t, total_f + flops
        print(f"| {name} | {shapes[name]} | {t * 1e3:.2f} | {flops / t / 1e9:.1f} | "
              f"{flops / t / 1e9 / peak:.2f} |")
    g = total_f / total_t / 1e9
    s = statistics.median(steps)
    print(f"| all five | | {total_t * 1e3:.2f} | {g:.1f} | **{g / peak:.2f}** |\n")
    print(f"bf16 training step (same process): {s * 1e3:.1f} ms; the products alone take "
          f"{total_t * 1e3:.1f} ms of it ({total_t / s:.0%})")
    print(f"target (issue #15, AVX512_BF16 CPUs): products >= 0.75 of the bf16 peak: "
          f"{g / peak:.2f} ({'met' if g / peak >= 0.75 else 'not met'})"
          + ("" if kind == "bf16_dot" else " - no bf16 dot product on this CPU: fp32 peak"))


if __name__ == "__main__":
    main()
