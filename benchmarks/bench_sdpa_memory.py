"""Peak memory of causal attention, forward + backward: mpamp's fused
F.scaled_dot_product_attention against the unfused composition nanoGPT falls back to
(q @ k.transpose(-2, -1) * scale, masked_fill with a (1, 1, T, T) mask, softmax, @ v).

Memory, not time, is measured (no timings: they mean little on a shared machine). The numbers
are mpamp's caching allocator's bytes in use (every tensor, and the fused kernel's scratch):
`peak` is the most in use at any moment of forward + backward, `saved` what the forward
leaves alive for the backward (its output included), both above what was in use before
(q, k, v and the mask). GEMM packing buffers (a few MiB, from the same allocator since
2026-12-03, used by both variants alike) are counted while a product runs. Each variant runs in its own process.

    python benchmarks/bench_sdpa_memory.py [--batch 8] [--heads 8] [--seq 1024] [--dim 64]
                                           [--dtype float32]
"""
import argparse
import gc
import json
import subprocess
import sys

import machine

machine.use_inplace_build()

import numpy as np  # noqa: E402


def measure(variant, b, h, t, d, dtype):
    import mpamp
    import mpamp.nn.functional as F
    stats = mpamp.backends.cpu.allocator_stats
    rng = np.random.default_rng(0)
    q, k, v = (mpamp.tensor(rng.normal(size=(b, h, t, d)).astype(np.float32)).to(dtype)
               .requires_grad_() for _ in range(3))
    above = mpamp.tensor(~np.tril(np.ones((t, t), bool)))[None, None]   # True where j > i
    gc.collect()
    mpamp.backends.cpu.reset_peak_stats()
    base = stats()["in_use_bytes"]
    if variant == "fused":
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        att = (q @ k.transpose(-2, -1)) * (1.0 / np.sqrt(d))
        att = att.masked_fill(above, float("-inf"))
        out = F.softmax(att, dim=-1) @ v
        del att
    saved = stats()["in_use_bytes"] - base
    out.sum().backward()
    del out
    gc.collect()
    s = stats()
    return {"peak": s["peak_in_use_bytes"] - base, "saved": saved,
            "after": s["in_use_bytes"] - base}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.variant:
        print(json.dumps(measure(a.variant, a.batch, a.heads, a.seq, a.dim, a.dtype)))
        return
    args = [f"--batch={a.batch}", f"--heads={a.heads}", f"--seq={a.seq}", f"--dim={a.dim}",
            f"--dtype={a.dtype}"]
    res = {}
    for variant in ("fused", "unfused"):
        out = subprocess.run([sys.executable, __file__, f"--variant={variant}"] + args,
                             capture_output=True, text=True, check=True)
        res[variant] = json.loads(out.stdout.strip().splitlines()[-1])
    mib = 1 << 20
    scores = a.batch * a.heads * a.seq * a.seq * 4
    print(f"B={a.batch} H={a.heads} T={a.seq} D={a.dim} {a.dtype}, causal; MiB of mpamp's "
          f"allocator above q, k, v (one fp32 B*H*T*T score matrix = {scores / mib:.0f} MiB)")
    print("| variant | peak, forward + backward | saved for backward | left after (grads) |")
    print("|---|---|---|---|")
    for variant, r in res.items():
        print(f"| {variant} | {r['peak'] / mib:.1f} | {r['saved'] / mib:.1f} | "
              f"{r['after'] / mib:.1f} |")
    print(f"fused / unfused peak: {res['fused']['peak'] / res['unfused']['peak']:.3f}")


if __name__ == "__main__":
    main()
