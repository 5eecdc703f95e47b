"""python -m mpamp.demo: train two MLPs in fp32, fp16 (autocast + GradScaler) and bf16 and
compare speed, memory and accuracy.

Only public, torch-identical API is used (nn, optim.Adam, amp.autocast, amp.GradScaler,
utils.data, save), so this file doubles as an example. Runs on CUDA when present, else the CPU.
"""
import argparse
import math
import os
import sys
import tempfile
import time

import numpy as np

import mpamp
from mpamp import nn
from mpamp.utils.data import DataLoader, TensorDataset

DTYPES = ("fp32", "fp16", "bf16")
_LIMITS = {"steps": (1, 1_000_000), "width": (1, 65_536), "batch_size": (1, 1_000_000)}
_SAMPLES = 8192
_FEATURES = 10


def build_parser():
    """The command-line options (python -m mpamp.demo --help)."""
    p = argparse.ArgumentParser(
        prog="python -m mpamp.demo",
        description="Train the document's model (Linear(10,10)-ReLU-Linear(10,1)) and a wider "
                    "MLP on a synthetic regression task in fp32, fp16 (autocast + GradScaler) "
                    "and bf16 (autocast), then print time per step, speed-up over fp32, peak "
                    "memory, final loss and its gap to fp32, skipped steps and the final loss "
                    "scale. Writes the checkpoints (and a PNG of the loss curves when "
                    "matplotlib is installed) to --out.")
    p.add_argument("--steps", type=int, default=300,
                   help="optimizer steps per model and dtype (default: %(default)s)")
    p.add_argument("--width", type=int, default=512,
                   help="hidden width of the wide MLP 10-W-W-1 (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=256,
                   help="samples per step (default: %(default)s)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="where to train; auto picks CUDA when present (default: auto)")
    p.add_argument("--out", default="mpamp-demo",
                   help="folder for checkpoints and the plot, created if needed "
                        "(default: ./%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="don't draw progress bars")
    return p


def check_args(parser, args):
    """Validate ranges, the device and the output folder; parser.error() on bad input."""
    for name, (lo, hi) in _LIMITS.items():
        value = getattr(args, name)
        if not lo <= value <= hi:
            parser.error(f"--{name.replace('_', '-')} must be between {lo} and {hi}, "
                         f"got {value}")
    if args.batch_size > _SAMPLES:
        parser.error(f"--batch-size must be at most the {_SAMPLES} samples of the task, got "
                     f"{args.batch_size}")
    if args.device == "auto":
        args.device = "cuda" if mpamp.cuda.is_available() else "cpu"
    elif args.device == "cuda" and not mpamp.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available "
                     f"(mpamp built with CUDA: {mpamp.cuda.is_built()}); use --device cpu")
    args.out = os.path.abspath(args.out)
    try:
        os.makedirs(args.out, exist_ok=True)
        with tempfile.TemporaryFile(dir=args.out):
            pass
    except OSError as exc:
        parser.error(f"--out {args.out}: the folder can't be written ({exc.strerror or exc})")


# ---- the task ----

def make_task(seed):
    """A fixed random teacher y = tanh(x A) b + noise, as float32 tensors."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((_SAMPLES, _FEATURES)).astype(np.float32)
    a = rng.standard_normal((_FEATURES, 16)).astype(np.float32) / math.sqrt(_FEATURES)
    b = rng.standard_normal((16, 1)).astype(np.float32) / 2
    y = np.tanh(x @ a) @ b + 0.05 * rng.standard_normal((_SAMPLES, 1)).astype(np.float32)
    return mpamp.from_numpy(x), mpamp.from_numpy(y.astype(np.float32))


def make_model(kind, width):
    """The document's model or the wide MLP."""
    if kind == "document":
        return nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    return nn.Sequential(nn.Linear(10, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 1))


# ---- progress ----

class _PlainBar:
    """A dependency-free progress bar for a terminal (stderr by default)."""

    def __init__(self, total, desc, stream=None):
        self.total, self.desc, self.n, self._shown = total, desc, 0, -1
        self.postfix = ""
        self.stream = sys.stderr if stream is None else stream

    def update(self, n=1):
        self.n += n
        pct = 100 * self.n // self.total
        if pct != self._shown:
            self._shown = pct
            filled = 30 * self.n // self.total
            self.stream.write(f"\r{self.desc:<16} [{'#' * filled}{'.' * (30 - filled)}] "
                              f"{self.n}/{self.total} {self.postfix}")
            self.stream.flush()

    def set_postfix_str(self, text):
        self.postfix = text

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


class _NoBar(_PlainBar):
    def update(self, n=1):
        self.n += n

    def close(self):
        pass


class _LogBar:
    """Progress for a log (stderr is not a terminal): one plain line every `interval` seconds
    and one at the end, instead of a carriage-return bar that piles up on one line."""

    def __init__(self, total, desc, stream, interval=5.0, clock=time.monotonic):
        self.total, self.desc, self.stream, self.interval = total, desc, stream, interval
        self.clock, self.n, self.postfix = clock, 0, ""
        self.start = self.last = clock()

    def _line(self, note):
        extra = f", {self.postfix}" if self.postfix else ""
        self.stream.write(f"{self.desc}: {self.n}/{self.total} steps{note}{extra}\n")
        self.stream.flush()

    def update(self, n=1):
        self.n += n
        now = self.clock()
        if now - self.last >= self.interval:
            self.last = now
            self._line(f" ({now - self.start:.0f} s)")

    def set_postfix_str(self, text):
        self.postfix = text

    def close(self):
        self._line(f", done in {self.clock() - self.start:.1f} s")


def _is_terminal(stream):
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):       # closed or replaced streams
        return False


def progress(total, desc, enabled, stream=None):
    """tqdm (or a plain bar) on a terminal; a line every few seconds in a log; nothing with
    --no-progress."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        return _NoBar(total, desc)
    if not _is_terminal(stream):
        return _LogBar(total, desc, stream)
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainBar(total, desc, stream)
    return tqdm(total=total, desc=desc, leave=False, file=stream)


# ---- training ----

def _batches(loader):
    while True:
        yield from loader


def train(kind, dtype, args, data):
    """Train one model in one dtype; a dict of measurements and the model."""
    from mpamp import optim
    from mpamp.amp import GradScaler, autocast
    device = args.device
    base = _in_use(device)
    mpamp.manual_seed(args.seed)
    model = make_model(kind, args.width).to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    scaler = GradScaler(device, enabled=dtype == "fp16")
    criterion = nn.MSELoss()
    loader = DataLoader(TensorDataset(*data), batch_size=args.batch_size, shuffle=True,
                        drop_last=True, generator=mpamp.Generator().manual_seed(args.seed))
    low = {"fp16": mpamp.float16, "bf16": mpamp.bfloat16}.get(dtype)
    warmup = min(5, args.steps // 10)
    losses, skipped, peak = [], 0, 0
    bar = progress(args.steps, f"{kind} {dtype}", not args.no_progress)
    start = time.perf_counter()
    for step, (x, y) in zip(range(args.steps), _batches(loader)):
        if step == warmup:
            start = time.perf_counter()
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        with autocast(device_type=device, dtype=low, enabled=low is not None):
            loss = criterion(model(x), y)
            peak = max(peak, _in_use(device) - base)
        scale = scaler.get_scale()
        scaler.scale(loss).backward()
        peak = max(peak, _in_use(device) - base)
        scaler.step(optimizer)
        scaler.update()
        if scaler.is_enabled() and scaler.get_scale() < scale:
            skipped += 1
        losses.append(loss.item())
        bar.update()
        if step % 20 == 0:
            bar.set_postfix_str(f"loss {losses[-1]:.4f}")
    elapsed = time.perf_counter() - start
    bar.close()
    tail = losses[-max(1, len(losses) // 10):]
    return {"dtype": dtype, "step_s": elapsed / max(1, args.steps - warmup),
            "peak": peak, "loss": float(np.mean(tail)), "skipped": skipped,
            "scale": scaler.get_scale() if scaler.is_enabled() else None,
            "curve": losses}, model


def _in_use(device):
    """Bytes the allocator of the training device holds in use."""
    if str(device).startswith("cuda"):
        return mpamp.cuda.memory_allocated()
    return mpamp.backends.cpu.allocator_stats().get("in_use_bytes", 0)


# ---- report ----

def _mib(n):
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def format_table(title, rows):
    """The per-model table as text."""
    fp32 = next(r for r in rows if r["dtype"] == "fp32")
    head = ("dtype", "time/step", "speed-up", "peak mem", "final loss", "gap vs fp32",
            "skipped", "loss scale")
    lines = [title, "  " + "  ".join(f"{h:>11}" for h in head)]
    for r in rows:
        gap = "-" if r is fp32 else f"{100 * (r['loss'] - fp32['loss']) / fp32['loss']:+.2f}%"
        cells = (r["dtype"], f"{1e3 * r['step_s']:.3f} ms", f"{fp32['step_s'] / r['step_s']:.2f}x",
                 _mib(r["peak"]), f"{r['loss']:.5f}", gap,
                 str(r["skipped"]) if r["scale"] is not None else "-",
                 f"{r['scale']:g}" if r["scale"] is not None else "-")
        lines.append("  " + "  ".join(f"{c:>11}" for c in cells))
    return "\n".join(lines)


def speed_note(device):
    """Why a low-precision step is not faster than fp32 on this CPU, or None."""
    if str(device).startswith("cuda"):
        return None
    lines = []
    if not mpamp.cpu.is_bf16_supported():
        lines.append("note: this CPU has no bf16 arithmetic (AVX512_BF16 or AMX), so bf16 "
                     "products widen to fp32 while packing and run the fp32 kernel: bf16 saves "
                     "memory, not time, and its casts can make the step slower than fp32.")
    lines.append("note: CPUs have no fp16 arithmetic, so fp16 products run the fp32 kernel "
                 "too; autocast's casts and GradScaler's unscale and inf check are the extra "
                 "cost of an fp16 step.")
    return "\n".join(lines)


def plot(results, path):
    """Loss curves per model as a PNG; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False)
    for ax, (title, rows) in zip(axes[0], results):
        for r in rows:
            ax.plot(r["curve"], label=r["dtype"], linewidth=1)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel("MSE loss")
        ax.set_yscale("log")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _params(model):
    return sum(p.numel() for p in model.parameters())


def main(argv=None):
    """Entry point; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    if not hasattr(mpamp, "optim") or not hasattr(mpamp.amp, "GradScaler"):
        print("mpamp.demo needs mpamp.optim and mpamp.amp.GradScaler, which this build of "
              "mpamp does not have yet.", file=sys.stderr)
        return 1
    print(f"mpamp {mpamp.__version__} on {args.device} (CPU kernels: "
          f"{mpamp.backends.cpu.get_isa()}, native bf16: {mpamp.cpu.is_bf16_supported()}, "
          f"threads: {os.cpu_count()}); {args.steps} steps, batch {args.batch_size}")
    data = make_task(args.seed)
    results, written = [], []
    for kind in ("document", "wide"):
        rows = []
        for dtype in DTYPES:
            row, model = train(kind, dtype, args, data)
            rows.append(row)
            path = os.path.join(args.out, f"{kind}_{dtype}.pth")
            mpamp.save(model.state_dict(), path)
            written.append(path)
        size = "10-10-1" if kind == "document" else f"10-{args.width}-{args.width}-1"
        title = f"\n{'document' if kind == 'document' else 'wide'} MLP {size} " \
                f"({_params(model):,} parameters)"
        print(format_table(title, rows))
        results.append((title.strip(), rows))
    print("\ntime/step excludes the first steps (warm-up); peak mem is the allocator's bytes in "
          "use for the model, its gradients, optimizer state and activations, sampled after "
          "forward and backward; final loss is the mean of the last 10% of steps.")
    note = speed_note(args.device)
    if note:
        print(note)
    print(f"\nCheckpoints ({len(written)}): {args.out}{os.sep}"
          f"{{document,wide}}_{{fp32,fp16,bf16}}.pth")
    png = os.path.join(args.out, "loss_curves.png")
    if plot(results, png):
        print(f"Loss curves: {png}")
    else:
        print('Loss curves: not plotted (matplotlib is not installed: pip install ".[demo]" '
              'or pip install matplotlib)')
    print(f"Process peak RSS: {_max_rss_mib():.0f} MiB")
    return 0


def _max_rss_mib():
    try:
        import resource
    except ImportError:      # Windows
        return float("nan")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


if __name__ == "__main__":
    sys.exit(main())
