"""Row-wise and pointwise ops on large tensors: softmax, log_softmax, cross_entropy (forward,
and forward + backward) and the exp-based unary ops, mpamp beside NumPy and PyTorch in the
same run.

Times are medians over all samples, in ms per call. Columns take turns within each round
(round-robin), and rounds alternate between the mpamp/NumPy phase and the torch phase: torch's
OpenMP workers keep spinning for a while after each parallel op and would slow down whatever
runs next on a small machine, so torch never runs in the middle of the other columns, and a
short pause follows it. torch runs with its default thread count and again with 1 thread
("torch 1T"); mpamp's row ops run on one thread. NumPy has no bfloat16, so NumPy columns
are for float32 only (a float32 NumPy formula: max-subtracted exp and sum for the softmaxes).
Ratios above 1 mean mpamp is faster.

    python benchmarks/bench_pointwise.py [--shapes 256x4096,4096x4096] [--dtypes fp32,bf16]
                                         [--ops softmax,log_softmax,...] [--rounds 5]
"""
import argparse
import datetime
import glob
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if glob.glob(os.path.join(ROOT, "mpamp", "_C*.so")):    # an in-place build: use it
    sys.path.insert(0, ROOT)

import mpamp  # noqa: E402
import mpamp.nn.functional as F  # noqa: E402

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

OPS = ("softmax", "log_softmax", "cross_entropy", "cross_entropy+bwd", "softmax+bwd", "exp",
       "sigmoid", "tanh", "gelu", "silu", "log")
COLUMNS = ("mpamp", "numpy", "torch", "torch 1T")
MIN_SAMPLE_S = 0.02      # repeat a call until one sample takes about this long


def np_log_softmax(x):
    s = x - x.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


NUMPY = {
    "softmax": np_softmax,
    "log_softmax": np_log_softmax,
    "exp": np.exp,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "silu": lambda x: x / (1 + np.exp(-x)),
    "log": np.log,
}


class Case:
    """Inputs of one op at one shape and dtype for every library."""

    def __init__(self, op, shape, dtype):
        self.op, self.shape, self.dtype = op, shape, dtype
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, dtype=np.float32) * 3
        if op == "log":
            x = np.abs(x) + 0.01
        self.xn = x
        self.cls = rng.integers(0, shape[1], size=shape[0])
        low = dtype == "bf16"
        self.xm = mpamp.from_numpy(x)
        self.tm = mpamp.from_numpy(self.cls)
        if low:
            self.xm = self.xm.bfloat16()
        if torch is not None:
            self.xt = torch.from_numpy(x)
            self.tt = torch.from_numpy(self.cls)
            if low:
                self.xt = self.xt.bfloat16()

    def _mpamp(self):
        x, t, op = self.xm, self.tm, self.op
        if op in ("softmax", "log_softmax"):
            return lambda: getattr(F, op)(x, 1)
        if op == "cross_entropy":
            return lambda: F.cross_entropy(x, t)
        if op.endswith("+bwd"):
            leaf = x.detach().requires_grad_()
            if op == "softmax+bwd":
                g = mpamp.ones(*self.shape, dtype=x.dtype)
                return lambda: F.softmax(leaf, 1).backward(g)
            return lambda: F.cross_entropy(leaf, t).backward()
        if op in ("gelu", "silu"):
            return lambda: getattr(F, op)(x)
        return getattr(x, op)

    def _torch(self):
        x, t, op = self.xt, self.tt, self.op
        if op in ("softmax", "log_softmax"):
            return lambda: getattr(TF, op)(x, 1)
        if op == "cross_entropy":
            return lambda: TF.cross_entropy(x, t)
        if op.endswith("+bwd"):
            leaf = x.detach().requires_grad_()
            if op == "softmax+bwd":
                g = torch.ones(*self.shape, dtype=x.dtype)
                return lambda: TF.softmax(leaf, 1).backward(g)
            return lambda: TF.cross_entropy(leaf, t).backward()
        if op in ("gelu", "silu"):
            return lambda: getattr(TF, op)(x)
        return getattr(x, op)

    def functions(self):
        """Column name -> zero-argument callable (or None), split into phases."""
        own = {"mpamp": self._mpamp()}
        if self.dtype == "fp32" and self.op in NUMPY:
            fn, xn = NUMPY[self.op], self.xn
            own["numpy"] = lambda: fn(xn)
        theirs = {}
        if torch is not None:
            f, nthreads = self._torch(), torch.get_num_threads()

            def one_thread():
                torch.set_num_threads(1)
                try:
                    f()
                finally:
                    torch.set_num_threads(nthreads)
            theirs = {"torch": f, "torch 1T": one_thread}
        return own, theirs


def calls_per_sample(fn):
    t = time.perf_counter()
    fn()
    one = time.perf_counter() - t
    return max(1, int(MIN_SAMPLE_S / max(one, 1e-9)))


def sample(fns, loops, samples):
    for c, fn in fns.items():
        k = loops[c]
        t = time.perf_counter()
        for _ in range(k):
            fn()
        samples[c].append((time.perf_counter() - t) / k)


def measure(case, rounds, per_round):
    """Median ms per column over rounds x per_round samples."""
    own, theirs = case.functions()
    loops = {}
    for c, fn in {**own, **theirs}.items():
        fn()                                  # warm-up: first touch, allocator cache
        loops[c] = calls_per_sample(fn)
    samples = {c: [] for c in {**own, **theirs}}
    for _ in range(rounds):
        for _ in range(per_round):
            sample(own, loops, samples)
        if theirs:
            for _ in range(per_round):
                sample(theirs, loops, samples)
            time.sleep(0.3)                   # let the spinning workers go to sleep
    return {c: 1e3 * statistics.median(t) for c, t in samples.items()}


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def header():
    tv = f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else "torch -"
    return [f"date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
            f"machine: {cpu_model()}, {os.cpu_count()} CPUs; mpamp ISA: "
            f"{mpamp.backends.cpu.get_isa()} (detected {mpamp.backends.cpu.detected_isa()}); "
            f"mpamp from {os.path.dirname(mpamp.__file__)}",
            f"versions: numpy {np.__version__}, {tv}"]


def ratio(other, mine):
    return f"{other / mine:.2f}" if other is not None and mine else "-"


def table(rows):
    ratio_cols = ("torch / mpamp", "torch 1T / mpamp", "numpy / mpamp")
    lines = ["| op | shape | dtype | " + " | ".join(f"{c} ms" for c in COLUMNS) + " | " +
             " | ".join(ratio_cols) + " |",
             "|" + "---|" * (3 + len(COLUMNS) + len(ratio_cols))]
    for op, shape, dtype, ms in rows:
        cells = [f"{ms[c]:.3f}" if ms.get(c) else "-" for c in COLUMNS]
        mine = ms["mpamp"]
        ratios = [ratio(ms.get("torch"), mine), ratio(ms.get("torch 1T"), mine),
                  ratio(ms.get("numpy"), mine)]
        lines.append(f"| {op} | {shape[0]}x{shape[1]} | {dtype} | " + " | ".join(cells) +
                     " | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="256x4096,4096x4096", help="rows x classes, comma list")
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--rounds", type=int, default=5, help="alternations of the two phases")
    p.add_argument("--per-round", type=int, default=3, help="samples per column per round")
    args = p.parse_args()
    print("\n".join(header()) + "\n")
    rows = []
    for shape in (tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")):
        for dtype in args.dtypes.split(","):
            for op in args.ops.split(","):
                case = Case(op, shape, dtype)
                rows.append((op, shape, dtype, measure(case, args.rounds, args.per_round)))
                del case
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
