"""The ops of the nanoGPT-style tiny step (bench_gpt.py: 2 layers x 64, 4 heads, block 32,
batch 32) one at a time, at its shapes, in mpamp and torch in one process: forward and
forward+backward microseconds (min over samples; each sample a loop of calls), and torch's
time over mpamp's. For finding which op a step loses time in; bench_gpt.py times the step.

    python benchmarks/bench_gpt_ops.py [--threads N] [--select substring]
"""
import argparse
import time

import machine

THREADS = machine.thread_count_from_argv()
machine.use_inplace_build()

import numpy as np  # noqa: E402

import mpamp  # noqa: E402

B, T, C, H = 32, 32, 64, 4


def cases():
    """name -> builder(lib) -> a callable that runs the op once."""
    out = {}

    def rand(lib, shape, seed=0, grad=True):
        t = lib.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
        return t.requires_grad_(True) if grad else t

    for k, n in ((C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)):
        def fwd(lib, k=k, n=n):
            x, w, b = rand(lib, (B, T, k), 0, False), rand(lib, (n, k), 1, False), \
                rand(lib, (n,), 2, False)
            return lambda: lib.nn.functional.linear(x, w, b)

        def both(lib, k=k, n=n):
            x, w, b = rand(lib, (B, T, k)), rand(lib, (n, k), 1), rand(lib, (n,), 2)
            g = lib.ones(B, T, n)
            return lambda: lib.nn.functional.linear(x, w, b).backward(g)
        out[f"linear {k}->{n} fwd"] = fwd
        out[f"linear {k}->{n} fwd+bwd"] = both

    def gelu(lib, std=1.0):
        x = lib.from_numpy((np.random.default_rng(0).standard_normal((B, T, 4 * C)) *
                            std).astype(np.float32)).requires_grad_(True)
        g = lib.ones(B, T, 4 * C)
        return lambda: lib.nn.functional.gelu(x).backward(g)

    def layer_norm(lib):
        x, w, b = rand(lib, (B, T, C)), lib.ones(C).requires_grad_(True), \
            lib.zeros(C).requires_grad_(True)
        g = lib.ones(B, T, C)
        return lambda: lib.nn.functional.layer_norm(x, (C,), w, b, 1e-5).backward(g)

    def sdpa(lib):
        q, k, v = (rand(lib, (B, H, T, C // H), s) for s in range(3))
        g = lib.ones(B, H, T, C // H)
        return lambda: lib.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True).backward(g)

    def attention_block(lib):
        x, g = rand(lib, (B, T, 3 * C)), lib.ones(B, T, C)

        def run():
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in x.split(C, dim=2))
            y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            y.transpose(1, 2).contiguous().view(B, T, C).backward(g)
        return run

    def cross_entropy(lib):
        x = rand(lib, (B * T, C))
        t = lib.from_numpy(np.random.default_rng(0).integers(0, C, B * T))
        return lambda: lib.nn.functional.cross_entropy(x, t, ignore_index=-1).backward()

    def bias_grad(lib):
        g = rand(lib, (B, T, 3 * C), grad=False)
        return lambda: g.sum((0, 1))

    out.update({"gelu (exact) fwd+bwd, N(0, 1)": gelu,
                "gelu (exact) fwd+bwd, std 0.2 (the tiny step's pre-activations)":
                    lambda lib: gelu(lib, 0.2),
                "layer_norm fwd+bwd": layer_norm,
                "sdpa causal fwd+bwd": sdpa,
                "split/view/transpose + sdpa + contiguous fwd+bwd": attention_block,
                "cross_entropy fwd+bwd": cross_entropy,
                "bias gradient (sum over 32x32 rows of 192)": bias_grad})
    return out


def timed(fn, reps, samples):
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t) / reps * 1e6)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--select", default="", help="only the cases whose name contains this")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--samples", type=int, default=7)
    args = p.parse_args()
    import torch
    threads = THREADS or machine.cores()
    mpamp.set_num_threads(threads)
    torch.set_num_threads(threads)
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"mpamp ISA {mpamp.backends.cpu.get_isa()}, torch {torch.__version__}, "
          f"{threads} threads for both")
    print("| op | mpamp us | torch us | torch / mpamp |\n|---|---|---|---|")
    for name, build in cases().items():
        if args.select not in name:
            continue
        m = timed(build(mpamp), args.reps, args.samples)
        t = timed(build(torch), args.reps, args.samples)
        print(f"| {name} | {m:.1f} | {t:.1f} | {t / m:.2f} |")


if __name__ == "__main__":
    main()
