"""Fused Adam/AdamW step over 10M parameters: mpamp vs PyTorch, against memcpy bandwidth.

Cases: fp32 params/grads/moments; bf16 params and grads with fp32 master weights and moments.
Bytes moved per parameter (both cases 28): fp32 reads p, g, m, v and writes p, m, v;
bf16+masters reads master, g(bf16), m, v and writes master, m, v, p(bf16).
memcpy bandwidth = 2 * nbytes / time of np.copyto on a 400 MB buffer (read + write), same run,
single-threaded and split over all cores; the fraction uses the larger (mpamp's step uses
threads above ~1M parameters, as torch's does).
Torch (when installed): the faster of Adam(foreach=True) and Adam(fused=True), same params.

    python benchmarks/bench_optim.py [--params 10000000] [--tensors 40] [--repeat 10]
"""
import argparse
import glob
import os
import sys
import threading
import time

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if glob.glob(os.path.join(_ROOT, "mpamp", "_C*.so")):    # an in-place build: use it
    sys.path.insert(0, _ROOT)
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


def memcpy_bandwidth(repeat, threads=1):
    """(read + write) bytes/s of np.copyto over 400 MB, split over `threads` threads."""
    src = np.ones(100_000_000, dtype=np.float32)
    dst = np.empty_like(src)
    parts = np.array_split(np.arange(src.size), threads)
    bounds = [(int(p[0]), int(p[-1]) + 1) for p in parts]

    def copy():
        if threads == 1:
            np.copyto(dst, src)
            return
        ts = [threading.Thread(target=np.copyto, args=(dst[a:b], src[a:b])) for a, b in bounds]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    t = best_time(copy, repeat)
    return 2 * src.nbytes / t


def split(total, k):
    sizes = [total // k] * k
    sizes[-1] += total - sum(sizes)
    return sizes


def mpamp_step(sizes, cls, low):
    """The step function of an mpamp optimizer over fresh params (bf16 + masters if low)."""
    rng = np.random.default_rng(0)
    params = []
    for n in sizes:
        p = mpamp.nn.Parameter(mpamp.tensor(rng.standard_normal(n, dtype=np.float32)))
        if low:
            p = mpamp.nn.Parameter(p.detach().to(dtype=mpamp.bfloat16))
        g = rng.standard_normal(n, dtype=np.float32) * 1e-3
        p.grad = mpamp.tensor(g).to(dtype=p.dtype)
        params.append(p)
    return cls(params, lr=1e-3, master_weights=low).step


def torch_steps(sizes, cls_name):
    """{impl: step function} for torch's foreach and fused CPU implementations."""
    try:
        import torch
    except ImportError:
        return {}
    rng = np.random.default_rng(0)
    params = []
    for n in sizes:
        p = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(n, dtype=np.float32)))
        p.grad = torch.from_numpy(rng.standard_normal(n, dtype=np.float32) * 1e-3)
        params.append(p)
    steps = {}
    for kw in ({"foreach": True}, {"fused": True}):
        try:
            opt = getattr(torch.optim, cls_name)(params, lr=1e-3, **kw)
            opt.step()
        except (RuntimeError, TypeError):
            continue
        steps[next(iter(kw))] = opt.step
    return steps


def interleaved(fns, repeat):
    """Best time of each function, calls interleaved so load changes hit all alike."""
    best = {k: float("inf") for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, default=10_000_000)
    ap.add_argument("--tensors", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    sizes = split(a.params, a.tensors)
    bw1 = memcpy_bandwidth(a.repeat)
    bwn = memcpy_bandwidth(a.repeat, os.cpu_count() or 1)
    bw = max(bw1, bwn)
    print(f"{a.params:,} params in {a.tensors} tensors; memcpy {bw1 / 1e9:.2f} GB/s on 1 "
          f"thread, {bwn / 1e9:.2f} GB/s on {os.cpu_count()} (read+write); torch threads: "
          f"{_torch_threads()}")
    print(f"{'case':<26}{'mpamp ms':>10}{'GB/s':>8}{'of memcpy':>11}{'torch ms':>10}"
          f"{'torch impl':>12}{'speedup':>9}")
    for cls_name in ("Adam", "AdamW"):
        cls = getattr(mpamp.optim, cls_name)
        fns = {f"torch {k}": f for k, f in torch_steps(sizes, cls_name).items()}
        fns["fp32"] = mpamp_step(sizes, cls, False)
        fns["bf16 + fp32 masters"] = mpamp_step(sizes, cls, True)
        best = interleaved(fns, a.repeat)
        torch_times = {k[6:]: v for k, v in best.items() if k.startswith("torch ")}
        which = min(torch_times, key=torch_times.get) if torch_times else None
        for case in ("fp32", "bf16 + fp32 masters"):
            t = best[case]
            gbs = BYTES_PER_PARAM * a.params / t
            tt = torch_times.get(which)
            cols = f"{tt * 1e3:10.2f}{which:>12}{tt / t:8.2f}x" if tt else \
                f"{'-':>10}{'-':>12}{'-':>9}"
            print(f"{cls_name + ' ' + case:<26}{t * 1e3:10.2f}{gbs / 1e9:8.2f}{gbs / bw:11.2f}"
                  f"{cols}")
    print("(torch column: fp32 params for both rows — its fastest CPU Adam on the same sizes)")


def _torch_threads():
    try:
        import torch
        return torch.get_num_threads()
    except ImportError:
        return "-"


if __name__ == "__main__":
    main()
