"""Matrix-product speed: mpamp.matmul in fp32, fp16 and bf16 beside NumPy and PyTorch, as
GFLOP/s and as a fraction of this machine's peak measured in the same run.

Sizes are M x N x K (C[M,N] = A[M,K] @ B[K,N], 2MNK flops): 2048^3, the products of a
1024 -> 4096 -> 1024 MLP at batch 256 (256x4096x1024 and 256x1024x4096 forward,
4096x1024x256 a weight gradient) and the tiny model's 32x10x10. Operands are contiguous,
standard-normal fp32 rounded to each dtype; fp16/bf16 products return fp16/bf16 (as torch).
Columns: mpamp fp32/fp16/bf16 matmul, and bf16 F.linear(a, w) as nn.Linear calls it; NumPy
fp32 (OpenBLAS); torch fp32 `a @ b`, and for
bf16/fp16 both `a @ b` and F.linear(a, w) with w = b^T contiguous (nn.Linear's layout,
which torch routes to oneDNN; the two differ by 20-50x on CPUs without bf16 hardware).

Peak: the extension's probe (_C._cpu_peak_gflops) with the same thread count, sampled once
per round between the cases, median. fp32 and fp16 products are held to the fp32 FMA peak
(fp16 has no arithmetic on x86 CPUs: it is widened to fp32); bf16 to the bf16_dot peak when
the CPU has AVX512_BF16, else to the fp32 FMA peak too (bf16 is then widened to fp32).

Cases take turns within each round (median of the rounds); after a NumPy or torch sample
the script sleeps briefly so their spinning pool threads do not slow the next case. A case
whose single call exceeds --budget seconds is timed once (torch's bf16 `a @ b` at 2048^3
takes over a minute on an AVX2 CPU); fewer samples are listed under the tables.

    python benchmarks/bench_gemm.py [--threads N] [--rounds 7] [--sizes 2048x2048x2048,...]
"""
import argparse
import statistics
import sys
import time

import machine

THREADS = machine.thread_count_from_argv()      # before NumPy/torch load their thread pools
machine.use_inplace_build()

import numpy as np  # noqa: E402

import mpamp  # noqa: E402
import mpamp.nn.functional as F  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

SIZES = "2048x2048x2048,256x4096x1024,256x1024x4096,4096x1024x256,32x10x10"
COLUMNS = ("mpamp fp32", "mpamp fp16", "mpamp bf16", "mpamp bf16 linear", "numpy fp32",
           "torch fp32", "torch bf16 @", "torch bf16 linear", "torch fp16 @", "torch fp16 linear")
MIN_SAMPLE_S = 0.05     # small products: repeat the call until one sample takes this long
ONE_SHOT_S = 1.0        # a first call this slow counts as a sample (one-time costs are noise)


def operands(m, n, k):
    """Column -> zero-argument callable computing one product of the given shape."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    ma, mb = mpamp.tensor(a), mpamp.tensor(b)
    mh = (ma.half(), mb.half())
    mbf = (ma.bfloat16(), mb.bfloat16())
    mw = mbf[1].t().contiguous()            # nn.Linear's layout, as torch's linear column
    f = {"mpamp fp32": lambda: mpamp.matmul(ma, mb),
         "mpamp fp16": lambda: mpamp.matmul(*mh),
         "mpamp bf16": lambda: mpamp.matmul(*mbf),
         "mpamp bf16 linear": lambda: F.linear(mbf[0], mw),
         "numpy fp32": lambda: np.matmul(a, b)}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        f["torch fp32"] = lambda: torch.matmul(ta, tb)
        for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
            la, lb = ta.to(dt), tb.to(dt)
            lw = lb.t().contiguous()
            f[f"torch {name} @"] = lambda la=la, lb=lb: torch.matmul(la, lb)
            f[f"torch {name} linear"] = lambda la=la, lw=lw: torch.nn.functional.linear(la, lw)
    return f


def timed(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def measure(fns, peak_kinds, rounds, budget, settle):
    """Seconds per call for each column (lists of samples) and GFLOP/s samples of each peak
    probe, all taking turns within every round."""
    samples, calls, wanted = {}, {}, {}
    for c, fn in fns.items():
        first = timed(fn, 1)                   # warm-up: first touch, caches, lazy init
        samples[c] = [first] if first > ONE_SHOT_S else []
        calls[c] = max(1, int(MIN_SAMPLE_S / max(first, 1e-9)))
        wanted[c] = min(rounds, max(1, int(budget / first)))
        pause(c, settle)
    peaks = {kind: [] for kind in peak_kinds}
    for _ in range(rounds):
        for kind in peak_kinds:
            peaks[kind].append(machine.peak_gflops(mpamp, kind, THREADS))
        for c, fn in fns.items():
            if len(samples[c]) < wanted[c]:
                samples[c].append(timed(fn, calls[c]))
                pause(c, settle)
    return samples, peaks


def pause(column, settle):
    if not column.startswith("mpamp"):
        time.sleep(settle)


def fmt(x, digits=1):
    return f"{x:.{digits}f}" if x is not None else "-"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def gflops_table(rows):
    lines = ["| M×N×K | " + " | ".join(COLUMNS) + " |", "|---" * (1 + len(COLUMNS)) + "|"]
    for size, g in rows:
        lines.append(f"| {size} | " + " | ".join(fmt(g.get(c)) for c in COLUMNS) + " |")
    return "\n".join(lines)


def best_torch(g, dt):
    vals = [g.get(f"torch {dt} @"), g.get(f"torch {dt} linear")]
    vals = [v for v in vals if v]
    return max(vals) if vals else None


RATIO_COLUMNS = ("mpamp fp32 / fp32 peak", "mpamp fp16 / fp32 peak", "mpamp bf16 / bf16 peak",
                 "mpamp fp32 / numpy", "mpamp fp16 / mpamp fp32", "mpamp bf16 / mpamp fp32",
                 "mpamp fp32 / torch fp32", "mpamp bf16 / torch bf16 (best of each)",
                 "mpamp bf16 linear / torch bf16 linear", "mpamp fp16 / torch fp16 (best)")


def best_mpamp_bf16(g):
    vals = [v for v in (g.get("mpamp bf16"), g.get("mpamp bf16 linear")) if v]
    return max(vals) if vals else None


def ratio_row(g, peak32, peak16):
    return [ratio(g["mpamp fp32"], peak32), ratio(g["mpamp fp16"], peak32),
            ratio(g["mpamp bf16"], peak16), ratio(g["mpamp fp32"], g["numpy fp32"]),
            ratio(g["mpamp fp16"], g["mpamp fp32"]), ratio(g["mpamp bf16"], g["mpamp fp32"]),
            ratio(g["mpamp fp32"], g.get("torch fp32")),
            ratio(best_mpamp_bf16(g), best_torch(g, "bf16")),
            ratio(g.get("mpamp bf16 linear"), g.get("torch bf16 linear")),
            ratio(g["mpamp fp16"], best_torch(g, "fp16"))]


def ratio_table(rows, peak32, peak16):
    lines = ["| M×N×K | " + " | ".join(RATIO_COLUMNS) + " |",
             "|---" * (1 + len(RATIO_COLUMNS)) + "|"]
    for size, g in rows:
        lines.append(f"| {size} | " + " | ".join(ratio_row(g, peak32, peak16)) + " |")
    return "\n".join(lines)


def verdict(value, target):
    if value is None:
        return "-"
    return f"{value:.2f} ({'met' if value >= target else 'not met'}; target ≥ {target})"


def targets(g, peak16):
    """The issue's ratios at 2048^3."""
    b_t = best_torch(g, "bf16")
    return ["Targets at 2048³ (issue #6):",
            f"- bf16 GEMM / bf16 peak: {verdict(g['mpamp bf16'] / peak16, 0.85)}",
            f"- bf16 GEMM / torch bf16 (best of @ and linear): "
            f"{ratio(g['mpamp bf16'], b_t)} (@: {ratio(g['mpamp bf16'], g.get('torch bf16 @'))},"
            f" linear: {ratio(g['mpamp bf16'], g.get('torch bf16 linear'))})",
            f"- fp32 GEMM / NumPy: {verdict(g['mpamp fp32'] / g['numpy fp32'], 0.9)}",
            f"- fp16-input GEMM / mpamp fp32: {verdict(g['mpamp fp16'] / g['mpamp fp32'], 0.9)}"]


def parse_size(text):
    m, n, k = (int(x) for x in text.lower().split("x"))
    return m, n, k


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None,
                   help="threads for mpamp, NumPy and torch (default: all cores)")
    p.add_argument("--rounds", type=int, default=7, help="samples per case (median)")
    p.add_argument("--sizes", default=SIZES, help="comma-separated MxNxK list")
    p.add_argument("--budget", type=float, default=15.0,
                   help="seconds of timed calls per case and size at most (>= 1 sample)")
    p.add_argument("--settle", type=float, default=0.3,
                   help="sleep after a NumPy/torch sample, seconds")
    args = p.parse_args()
    machine.set_library_threads(THREADS, mpamp, torch)
    print("\n".join(machine.header(mpamp, np, torch, THREADS)))
    has_bf16 = mpamp._C._cpu_peak_gflops("bf16_dot", 1, 0.01) is not None
    kinds = ("fp32_fma", "bf16_dot") if has_bf16 else ("fp32_fma",)
    rows, all_peaks, notes = [], {k: [] for k in kinds}, []
    for size in args.sizes.split(","):
        m, n, k = parse_size(size)
        samples, peaks = measure(operands(m, n, k), kinds, args.rounds, args.budget,
                                 args.settle)
        for kind in kinds:
            all_peaks[kind] += peaks[kind]
        g = {c: 2 * m * n * k / statistics.median(s) / 1e9 for c, s in samples.items()}
        rows.append((size, g))
        few = [f"{c} {len(s)}" for c, s in samples.items() if len(s) < args.rounds]
        spread = [2 * m * n * k / t / 1e9 for t in samples["mpamp fp32"]]
        notes.append(f"{size}: mpamp fp32 {min(spread):.1f}..{max(spread):.1f} GFLOP/s" +
                     (f"; fewer samples: {', '.join(few)}" if few else ""))
        print(f"... {size} done", file=sys.stderr)
    peak32 = statistics.median(all_peaks["fp32_fma"])
    peak16 = statistics.median(all_peaks["bf16_dot"]) if has_bf16 else peak32
    print(f"peak fp32_fma ({THREADS} threads): {peak32:.1f} GFLOP/s (median of "
          f"{len(all_peaks['fp32_fma'])} probes, {min(all_peaks['fp32_fma']):.1f}.."
          f"{max(all_peaks['fp32_fma']):.1f})")
    if has_bf16:
        print(f"peak bf16_dot ({THREADS} threads): {peak16:.1f} GFLOP/s")
    else:
        print("peak bf16_dot: none (no AVX512_BF16): bf16 is converted to fp32 on this CPU, "
              "so the bf16 peak used below is the fp32 FMA peak")
    print(f"GFLOP/s = 2·M·N·K / median time; {args.rounds} rounds\n")
    print(gflops_table(rows) + "\n")
    print(ratio_table(rows, peak32, peak16) + "\n")
    for size, g in rows:
        if size == "2048x2048x2048":
            print("\n".join(targets(g, peak16)) + "\n")
    print("noise (min..max over the samples): " + "; ".join(notes))


if __name__ == "__main__":
    main()
