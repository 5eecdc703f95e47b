"""Cast bandwidth: mpamp's fp32 <-> fp16/bf16 conversions beside memcpy, NumPy, ml_dtypes and
PyTorch, measured in the same run.

Bandwidth is bytes moved (read + written) over the median time: a cast of n elements moves
6n bytes (4n fp32 + 2n half). The memcpy baseline is np.copyto between two fp32 buffers of n
elements (the fp32 side of the cast): it moves 8n bytes. "x memcpy" is the ratio of the two
bandwidths, so a down-cast that is exactly as fast as that memcpy scores 0.75.

Columns: mpamp conversion allocating its result (t.half(), t.bfloat16(), t.float(); blocks
come from the caching allocator), mpamp dst.copy_(src) into a preallocated tensor, NumPy
astype (allocates) and np.copyto(out, casting="unsafe") (preallocated), ml_dtypes astype for
bfloat16, torch .to(dtype) and dst.copy_(src) with torch's default thread count (timed in a
phase of their own, see measure()). NumPy has no bfloat16, so bf16 rows compare with ml_dtypes
instead. Libraries not installed are "-". Everything else is single-threaded.

    python benchmarks/bench_cast.py [--sizes 256MiB,64KiB] [--repeats 11]
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

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
try:
    import torch
except ImportError:
    torch = None

CASTS = ("fp32->bf16", "fp32->fp16", "bf16->fp32", "fp16->fp32")
COLUMNS = ("memcpy", "mpamp", "mpamp copy_", "numpy astype", "numpy out=", "ml_dtypes",
           "torch .to", "torch copy_")
MIN_SAMPLE_S = 0.02      # small sizes: repeat the call until one sample takes this long


def parse_size(text):
    text = text.strip()
    for suffix, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)):
        if text.endswith(suffix):
            return int(float(text[:-len(suffix)]) * mult)
    return int(text)


def fmt_size(nbytes):
    for suffix, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= mult and nbytes % mult == 0:
            return f"{nbytes // mult} {suffix}"
    return f"{nbytes} B"


def aligned_empty(n, dtype, align=64):
    """An uninitialised array whose data starts on an `align`-byte boundary. NumPy only
    guarantees 16 bytes, and glibc's memcpy (rep movsb) on Zen 3 runs ~13x slower for some
    relative offsets of source and destination (dst - src = 16 mod 4096 at 64 KiB), which
    would make the memcpy baseline meaningless; mpamp and torch allocate 64-byte aligned."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(n * itemsize + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + n * itemsize].view(dtype)


class Case:
    """Inputs and preallocated outputs of one conversion at one size, for every library."""

    def __init__(self, cast, n):
        self.cast, self.n = cast, n
        src, dst = cast.split("->")
        self.down = src == "fp32"
        self.half = "fp16" if "fp16" in cast else "bf16"
        a32 = aligned_empty(n, np.float32)
        a32[...] = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
        self.memcpy_src, self.memcpy_dst = a32, aligned_empty(n, np.float32)
        t32 = mpamp.from_numpy(a32)
        low_dtype = mpamp.float16 if self.half == "fp16" else mpamp.bfloat16
        t_low = t32.to(low_dtype)
        self.mp_src = t32 if self.down else t_low
        self.mp_dst = mpamp.empty(n, dtype=mpamp.float32 if not self.down else low_dtype)
        self.np_src = self.np_dst = self.ml_src = self.torch_src = self.torch_dst = None
        if self.half == "fp16":
            self.np_src = a32 if self.down else a32.astype(np.float16)
            self.np_dst = aligned_empty(n, np.float16 if self.down else np.float32)
        elif ml_dtypes is not None:
            self.ml_src = a32 if self.down else a32.astype(ml_dtypes.bfloat16)
        if torch is not None:
            tt32 = torch.from_numpy(a32)
            tlow = torch.float16 if self.half == "fp16" else torch.bfloat16
            self.torch_src = tt32 if self.down else tt32.to(tlow)
            self.torch_dst = torch.empty(n, dtype=tlow if self.down else torch.float32)

    def functions(self):
        """Column name -> zero-argument callable doing one conversion (or None)."""
        mp_method = {"fp32->bf16": "bfloat16", "fp32->fp16": "half"}.get(self.cast, "float")
        np_to = np.float16 if self.down else np.float32
        f = dict.fromkeys(COLUMNS)
        f["memcpy"] = lambda: np.copyto(self.memcpy_dst, self.memcpy_src)
        if self.down and 4 * self.n >= 32 << 20:   # a memory-bound limit: large sizes only
            f["read fp32"] = self.memcpy_src.view(np.uint32).max
        f["mpamp"] = getattr(self.mp_src, mp_method)
        f["mpamp copy_"] = lambda: self.mp_dst.copy_(self.mp_src)
        if self.np_src is not None:
            f["numpy astype"] = lambda: self.np_src.astype(np_to)
            f["numpy out="] = lambda: np.copyto(self.np_dst, self.np_src, casting="unsafe")
        if self.ml_src is not None:
            ml_to = ml_dtypes.bfloat16 if self.down else np.float32
            f["ml_dtypes"] = lambda: self.ml_src.astype(ml_to)
        if self.torch_src is not None:
            f["torch .to"] = lambda: self.torch_src.to(self.torch_dst.dtype)
            f["torch copy_"] = lambda: self.torch_dst.copy_(self.torch_src)
        return f

    def bytes_moved(self, column):
        return {"memcpy": 8 * self.n, "read fp32": 4 * self.n}.get(column, 6 * self.n)


def calls_per_sample(fn):
    t = time.perf_counter()
    fn()
    one = time.perf_counter() - t
    return max(1, int(MIN_SAMPLE_S / max(one, 1e-9)))


def sample_round_robin(fns, repeats):
    """Seconds per call for each callable, one sample per repeat. Columns take turns within
    each repeat, so a burst of noise from other processes hits all of them alike."""
    loops = {}
    for c, fn in fns.items():
        fn()                                  # warm-up: first touch, allocator cache
        loops[c] = calls_per_sample(fn)
    samples = {c: [] for c in fns}
    for _ in range(repeats):
        for c, fn in fns.items():
            k = loops[c]
            t = time.perf_counter()
            for _ in range(k):
                fn()
            samples[c].append((time.perf_counter() - t) / k)
    return samples


def measure(case, repeats):
    """Median GB/s per column. torch runs in a phase of its own: its OpenMP workers keep
    spinning after each parallel op and, on a small machine, slow down whatever runs next."""
    fns = {c: fn for c, fn in case.functions().items() if fn is not None}
    own = {c: fn for c, fn in fns.items() if not c.startswith("torch")}
    theirs = {c: fn for c, fn in fns.items() if c.startswith("torch")}
    samples = sample_round_robin(own, repeats)
    if theirs:
        samples.update(sample_round_robin(theirs, repeats))
        time.sleep(0.5)                       # let the spinning workers go to sleep
    gbs = {c: case.bytes_moved(c) / statistics.median(t) / 1e9 for c, t in samples.items()}
    spread = [case.bytes_moved("memcpy") / t / 1e9 for t in samples["memcpy"]]
    return gbs, (min(spread), max(spread))


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
    versions = [f"numpy {np.__version__}",
                f"ml_dtypes {ml_dtypes.__version__}" if ml_dtypes else "ml_dtypes -",
                f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch
                else "torch -"]
    return [f"date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
            f"machine: {cpu_model()}, {os.cpu_count()} CPUs; mpamp ISA: "
            f"{mpamp.backends.cpu.get_isa()} (detected {mpamp.backends.cpu.detected_isa()})",
            "versions: " + ", ".join(versions)]


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def table(rows):
    """Markdown: GB/s per column, then mpamp's ratios."""
    ratio_cols = ("mpamp / memcpy", "copy_ / memcpy", "mpamp / (numpy or ml_dtypes astype)",
                  "mpamp / torch .to")
    lines = ["| size (fp32 side) | cast | " + " | ".join(COLUMNS) + " | " +
             " | ".join(ratio_cols) + " |",
             "|" + "---|" * (2 + len(COLUMNS) + len(ratio_cols))]
    for size, cast, gbs, _ in rows:
        cells = [f"{gbs[c]:.1f}" if gbs.get(c) else "-" for c in COLUMNS]
        ref = gbs.get("numpy astype") or gbs.get("ml_dtypes")
        ratios = [ratio(gbs["mpamp"], gbs["memcpy"]), ratio(gbs["mpamp copy_"], gbs["memcpy"]),
                  ratio(gbs["mpamp"], ref), ratio(gbs["mpamp"], gbs.get("torch .to"))]
        lines.append(f"| {size} | {cast} | " + " | ".join(cells) + " | " +
                     " | ".join(ratios) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="256MiB,64KiB", help="sizes of the fp32 side")
    p.add_argument("--repeats", type=int, default=11, help="samples per column (median)")
    p.add_argument("--casts", default=",".join(CASTS),
                   help="comma-separated subset; quote it, '>' is special to the shell")
    args = p.parse_args()
    print("\n".join(header()))
    print("GB/s = (bytes read + bytes written) / median time; memcpy = np.copyto of the fp32 "
          "buffer (8 bytes moved per element, a cast moves 6)\n")
    rows = []
    for size in (parse_size(s) for s in args.sizes.split(",")):
        for cast in args.casts.split(","):
            case = Case(cast, size // 4)
            gbs, spread = measure(case, args.repeats)
            rows.append((fmt_size(size), cast, gbs, spread))
            del case
    print(table(rows))
    print("\nnoise: memcpy GB/s over the samples of each row (min..max): " +
          ", ".join(f"{size} {cast} {lo:.1f}..{hi:.1f}" for size, cast, _, (lo, hi) in rows))
    print("read-bound ceiling of the down-casts (they read as many bytes as the memcpy): "
          "reading the fp32 buffer alone (NumPy max over it) at R GB/s caps a down-cast at "
          "1.5 R, i.e. this many x memcpy: " +
          ", ".join(f"{size} {cast} {1.5 * g['read fp32'] / g['memcpy']:.2f}"
                    for size, cast, g, _ in rows if "read fp32" in g))


if __name__ == "__main__":
    main()
