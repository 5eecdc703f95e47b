"""Per-call fixed cost from Python: a small elementwise op, a small sum, softmax and
cross_entropy, a small linear with autograd recording, the same under autocast, and a full training step of the tiny model
Linear(10,10) -> ReLU -> Linear(10,1) (batch 32, MSE, Adam),
beside PyTorch's eager CPU figures measured in the same run.

Run: python benchmarks/bench_overhead.py [--repeat 7]
Prints median time per call (interleaved runs, so machine noise hits both libraries alike).
"""
import argparse
import statistics
import time

import machine

machine.use_inplace_build()          # this checkout's build, not an installed copy

import mpamp  # noqa: E402

try:
    import torch
except ImportError:      # the comparison columns are left empty
    torch = None


def per_call(fn, calls):
    fn()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def median_interleaved(fns, calls, repeat):
    """Median seconds per call of each fn, alternating them within each round."""
    samples = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            samples[i].append(per_call(fn, calls))
    return [statistics.median(s) for s in samples]


def tiny_model(lib, nn):
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    x, y = lib.randn(32, 10), lib.randn(32, 1)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)   # torch: its default (foreach) Adam

    def step():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return step


def cases(lib, nn, autocast):
    a, b = lib.ones(16), lib.ones(16)
    x = lib.randn(32, 10)
    w = lib.randn(10, 10, requires_grad=True)
    bias = lib.zeros(10, requires_grad=True)
    lin = nn.functional.linear

    def linear_autocast():
        with autocast:
            lin(x, w, bias)

    def linear_plain_in_ctx():
        lin(x, w, bias)

    t = lib.randint(0, 10, (32,))
    F = nn.functional
    return {
        "elementwise a + b (16 floats)": lambda: a + b,
        "sum of 16 floats": lambda: a.sum(),
        "softmax 32x10 rows": lambda: F.softmax(x, -1),
        "cross_entropy 32x10": lambda: F.cross_entropy(x, t),
        "linear 32x10 @ 10x10, records grad": lambda: lin(x, w, bias),
        "same, entering autocast(bf16) each call": linear_autocast,
        "tiny-model training step": tiny_model(lib, nn),
    }, linear_plain_in_ctx, autocast


def autocast_delta(lib, nn, ac, calls, repeat):
    """The cost of the policy check and a weight-cast cache hit: a bf16 activation through a
    linear with an fp32 weight inside an active bf16 region, minus the same call with the
    weight already bf16 and autocast off (so both run the same bf16 product)."""
    x = lib.randn(32, 10).to(lib.bfloat16)
    w = lib.randn(10, 10, requires_grad=True)
    w_low = w.detach().to(lib.bfloat16).requires_grad_()
    lin = nn.functional.linear
    off = median_interleaved([lambda: lin(x, w_low)], calls, repeat)[0]
    ac.__enter__()
    try:
        lin(x, w)
        on = median_interleaved([lambda: lin(x, w)], calls, repeat)[0]
    finally:
        ac.__exit__(None, None, None)
    return on - off


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    mp_cases, _, mp_ac = cases(mpamp, mpamp.nn, mpamp.autocast(dtype="bf16"))
    if torch is not None:
        torch.set_num_threads(1)
        t_cases, _, t_ac = cases(torch, torch.nn, torch.autocast("cpu", dtype=torch.bfloat16))
    print(f"{'case':44s} {'mpamp':>10s} {'torch':>10s} {'torch/mpamp':>12s}")
    for name in mp_cases:
        calls = args.calls if "step" not in name else max(1, args.calls // 10)
        fns = [mp_cases[name]] + ([t_cases[name]] if torch is not None else [])
        res = median_interleaved(fns, calls, args.repeat)
        tt = f"{res[1] * 1e6:8.2f}us" if torch is not None else "-"
        ratio = f"{res[1] / res[0]:11.1f}x" if torch is not None else "-"
        print(f"{name:44s} {res[0] * 1e6:8.2f}us {tt:>10s} {ratio:>12s}")
    d = autocast_delta(mpamp, mpamp.nn, mpamp.autocast(dtype="bf16"), args.calls, args.repeat)
    line = f"{'autocast-on minus autocast-off, small linear':44s} {d * 1e6:8.2f}us"
    if torch is not None:
        td = autocast_delta(torch, torch.nn, torch.autocast("cpu", dtype=torch.bfloat16),
                            args.calls, args.repeat)
        line += f" {td * 1e6:8.2f}us"
    print(line)
    print(pool_overhead(args.calls, args.repeat))


def pool_overhead(calls, repeat):
    """The thread pool's cost per parallel region: an empty region split over two threads
    minus the same region run inline (one thread), both through the _parallel_probe hook,
    with the workers warm (regions back to back, as in a training step)."""
    if mpamp.get_num_threads() < 2:
        return "parallel region overhead: skipped (one thread)"
    probe = mpamp._C._parallel_probe
    one, two = median_interleaved([lambda: probe(1, 1, 0), lambda: probe(2, 1, 0)], calls,
                                  repeat)
    return (f"{'parallel region overhead (warm pool, 2 thr)':44s} {(two - one) * 1e6:8.2f}us"
            f"   (inline {one * 1e6:.2f}us, 2-thread region {two * 1e6:.2f}us)")


if __name__ == "__main__":
    main()
