"""Fused Adam/AdamW step over 10M parameters: mpamp vs PyTorch, against memcpy bandwidth.

Cases: fp32 params/grads/moments; bf16 params and grads with fp32 master weights and moments.
Bytes moved per parameter (both cases 28): fp32 reads p, g, m, v and writes p, m, v;
bf16+masters reads master, g(bf16), m, v and writes master, m, v, p(bf16).
memcpy bandwidth = 2 * nbytes / time of np.copyto on a 400 MB buffer (read + write), same run.
Torch (when installed): the faster of Adam(foreach=True) and Adam(fused=True), same params.

    python benchmarks/bench_optim.py [--params 10000000] [--tensors 40] [--repeat 10]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import mpamp  # noqa: E402

BYTES_PER_PARAM = 28


def best_time(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def memcpy_bandwidth(repeat):
    src = np.ones(100_000_000, dtype=np.float32)
    dst = np.empty_like(src)
    t = best_time(lambda: np.copyto(dst, src), repeat)
    return 2 * src.nbytes / t


def split(total, k):
    sizes = [total // k] * k
    sizes[-1] += total - sum(sizes)
    return sizes


def mpamp_case(sizes, cls, low, repeat):
    rng = np.random.default_rng(0)
    params = []
    for n in sizes:
        p = mpamp.nn.Parameter(mpamp.tensor(rng.standard_normal(n, dtype=np.float32)))
        if low:
            p = mpamp.nn.Parameter(p.detach().to(dtype=mpamp.bfloat16))
        g = rng.standard_normal(n, dtype=np.float32) * 1e-3
        p.grad = mpamp.tensor(g).to(dtype=p.dtype)
        params.append(p)
    opt = cls(params, lr=1e-3, master_weights=low)
    return best_time(opt.step, repeat)


def torch_case(sizes, cls_name, repeat):
    try:
        import torch
    except ImportError:
        return None, None
    rng = np.random.default_rng(0)
    params = []
    for n in sizes:
        p = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(n, dtype=np.float32)))
        p.grad = torch.from_numpy(rng.standard_normal(n, dtype=np.float32) * 1e-3)
        params.append(p)
    best, which = float("inf"), None
    for kw in ({"foreach": True}, {"fused": True}):
        try:
            opt = getattr(torch.optim, cls_name)(params, lr=1e-3, **kw)
            t = best_time(opt.step, repeat)
        except (RuntimeError, TypeError):
            continue
        if t < best:
            best, which = t, next(iter(kw))
    return best, which


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, default=10_000_000)
    ap.add_argument("--tensors", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    sizes = split(a.params, a.tensors)
    bw = memcpy_bandwidth(a.repeat)
    print(f"{a.params:,} params in {a.tensors} tensors; memcpy {bw / 1e9:.2f} GB/s "
          f"(read+write); torch threads: {_torch_threads()}")
    print(f"{'case':<26}{'mpamp ms':>10}{'GB/s':>8}{'of memcpy':>11}{'torch ms':>10}"
          f"{'torch impl':>12}{'speedup':>9}")
    for cls_name in ("Adam", "AdamW"):
        cls = getattr(mpamp.optim, cls_name)
        t_torch, which = torch_case(sizes, cls_name, a.repeat)
        for low in (False, True):
            t = mpamp_case(sizes, cls, low, a.repeat)
            gbs = BYTES_PER_PARAM * a.params / t
            label = f"{cls_name} " + ("bf16 + fp32 masters" if low else "fp32")
            tt = f"{t_torch * 1e3:10.2f}{which:>12}{t_torch / t:8.2f}x" if t_torch else \
                f"{'-':>10}{'-':>12}{'-':>9}"
            print(f"{label:<26}{t * 1e3:10.2f}{gbs / 1e9:8.2f}{gbs / bw:11.2f}{tt}")
    print("(torch column: fp32 params for both rows — its fastest CPU Adam on the same sizes)")


def _torch_threads():
    try:
        import torch
        return torch.get_num_threads()
    except ImportError:
        return "-"


if __name__ == "__main__":
    main()
