"""One training step of an MLP 1024 -> 4096 -> 1024 (ReLU, batch 256, MSE loss, AdamW) in
mpamp and PyTorch: time per step, GFLOP/s, fraction of this machine's fp32 peak, and peak
memory, all from one run.

Cases: mpamp fp32; mpamp autocast(dtype="bf16") (no scaler); mpamp autocast(dtype="fp16")
+ GradScaler; torch fp32; torch CPU autocast bf16. Same initial data (NumPy), same sizes.

How it is measured. Each case lives in its own worker process (this script re-run with
--case NAME), so memory is per case and torch's OpenMP threads never share a process with
mpamp. The parent asks the workers in turn for one sample per round (interleaved: a burst
of load from elsewhere hits every case alike), sleeps briefly after a torch sample so its
spinning pool threads go idle, and runs the fp32 FMA peak probe (_C._cpu_peak_gflops) once
per round between them. After 2 warm-up steps a sample is the mean time of enough steps to
last ~1 s; the table shows the median over the rounds. A case slower than --budget seconds
per round gets fewer samples (listed under the table).

FLOPs per step = 6 * batch * (weights of the two linears) = 12.9 GFLOP, the usual
forward + backward count (the first layer's input needs no gradient, so the products do
5/6 of that; the count is the same for every case, so ratios are unaffected).

Memory: peak RSS of the worker (getrusage ru_maxrss) at the end, and its increase over the
RSS after imports, model, optimizer and data were created (the training-time memory:
activations, gradients, optimizer state, cast weights, workspaces and allocator caches).
The total includes each library's own footprint (torch's is hundreds of MiB); the increase
compares what training costs.

    python benchmarks/bench_train_step.py [--threads N] [--rounds 5] [--budget 90]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import machine

THREADS = machine.thread_count_from_argv()      # before NumPy/torch load their thread pools
machine.use_inplace_build()

import numpy as np  # noqa: E402

CASES = {                      # name -> (library, autocast dtype or None, GradScaler)
    "mpamp fp32": ("mpamp", None, False),
    "mpamp bf16": ("mpamp", "bf16", False),
    "mpamp fp16+scaler": ("mpamp", "fp16", True),
    "torch fp32": ("torch", None, False),
    "torch bf16": ("torch", "bf16", False),
}
WIDTHS = (1024, 4096, 1024)
WARMUP_STEPS = 2
SAMPLE_S = 1.0


# ----- worker: one case, driven over stdin/stdout -----

def make_step(case, batch):
    """The zero-argument training step of one case (model, data, optimizer built here)."""
    lib_name, low, scaled = CASES[case]
    lib = __import__(lib_name)             # a torch worker never imports mpamp, and back
    lib.set_num_threads(THREADS)
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(WIDTHS[0], WIDTHS[1]), nn.ReLU(),
                          nn.Linear(WIDTHS[1], WIDTHS[2]))
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((batch, WIDTHS[0]), dtype=np.float32))
    y = lib.tensor(rng.standard_normal((batch, WIDTHS[-1]), dtype=np.float32))
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    if lib_name == "mpamp":           # mpamp picks the device (CPU here) by itself
        autocast_args = ((), {"dtype": low or "bf16", "enabled": low is not None})
        scaler = lib.amp.GradScaler() if scaled else None
    else:
        dt = {"bf16": lib.bfloat16, "fp16": lib.float16}.get(low, lib.bfloat16)
        autocast_args = (("cpu",), {"dtype": dt, "enabled": low is not None})
        scaler = lib.amp.GradScaler("cpu") if scaled else None

    def step():
        opt.zero_grad(set_to_none=True)
        with lib.autocast(*autocast_args[0], **autocast_args[1]):
            loss = nn.functional.mse_loss(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return step


def current_rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker(case, batch):
    """Commands on stdin, one JSON line back for each: 'run N' -> seconds per step over N
    steps; 'mem' -> RSS figures in KiB; 'quit'."""
    step = make_step(case, batch)
    baseline = current_rss_kib()
    reply({"ready": True})
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "run":
            n = int(cmd[1])
            t = time.perf_counter()
            for _ in range(n):
                step()
            reply({"seconds": (time.perf_counter() - t) / n})
        elif cmd[0] == "mem":
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            reply({"baseline_kib": baseline, "peak_kib": peak})
        else:
            return


# ----- parent: starts the workers, interleaves their samples, prints the tables -----

class Worker:
    def __init__(self, case, args):
        cmd = [sys.executable, os.path.abspath(__file__), "--case", case, "--threads",
               str(THREADS), "--batch", str(args.batch)]
        self.case = case
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.ask(None)                         # wait for "ready"

    def ask(self, command):
        if command is not None:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"worker {self.case!r} exited (code {self.proc.wait()})")

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait()


def run_cases(cases, args, mpamp):
    """Per case: seconds-per-step samples, memory; plus the fp32 peak samples."""
    workers = {c: Worker(c, args) for c in cases}
    steps, wanted, samples, peaks = {}, {}, {c: [] for c in cases}, []
    for c, w in workers.items():
        first = w.ask(f"run {WARMUP_STEPS}")["seconds"]
        steps[c] = max(1, round(SAMPLE_S / first))
        wanted[c] = min(args.rounds, max(1, int(args.budget / (first * steps[c]))))
        settle(c, args.settle)
    for _ in range(args.rounds):
        peaks.append(machine.peak_gflops(mpamp, "fp32_fma", THREADS))
        for c, w in workers.items():
            if len(samples[c]) < wanted[c]:
                samples[c].append(w.ask(f"run {steps[c]}")["seconds"])
                settle(c, args.settle)
    memory = {c: w.ask("mem") for c, w in workers.items()}
    for w in workers.values():
        w.close()
    return samples, memory, peaks


def settle(case, seconds):
    if case.startswith("torch"):
        time.sleep(seconds)


def flops_per_step(batch):
    weights = sum(WIDTHS[i] * WIDTHS[i + 1] for i in range(len(WIDTHS) - 1))
    return 6 * batch * weights


def table(cases, samples, memory, peak, batch):
    lines = ["| case | ms/step | GFLOP/s | of fp32 peak | peak RSS MiB | RSS increase in "
             "training MiB | samples |", "|---|---|---|---|---|---|---|"]
    for c in CASES:
        if c not in cases:                 # torch not installed
            lines.append(f"| {c} | - | - | - | - | - | 0 |")
            continue
        t = statistics.median(samples[c])
        g = flops_per_step(batch) / t / 1e9
        m = memory[c]
        lines.append(f"| {c} | {t * 1e3:.0f} | {g:.1f} | {g / peak:.2f} | "
                     f"{m['peak_kib'] / 1024:.0f} | "
                     f"{(m['peak_kib'] - m['baseline_kib']) / 1024:.0f} | {len(samples[c])} |")
    return "\n".join(lines)


def verdict(value, target, higher_is_better=True):
    ok = value >= target if higher_is_better else value <= target
    sign = "≥" if higher_is_better else "≤"
    return f"{value:.2f} ({'met' if ok else 'not met'}; target {sign} {target})"


def targets(samples, memory):
    med = {c: statistics.median(s) for c, s in samples.items()}
    out = ["Targets (issue #6), speed-ups as time ratios:",
           f"- mpamp bf16 step vs mpamp fp32 step: "
           f"{verdict(med['mpamp fp32'] / med['mpamp bf16'], 1.6)}",
           f"- mpamp fp16+scaler step vs mpamp fp32 step: "
           f"{verdict(med['mpamp fp32'] / med['mpamp fp16+scaler'], 1.0)}"]
    if "torch bf16" in med:
        mb, tb = memory["mpamp bf16"], memory["torch bf16"]
        grow = (mb["peak_kib"] - mb["baseline_kib"]) / max(1, tb["peak_kib"] - tb["baseline_kib"])
        out += [f"- mpamp bf16 step vs torch bf16 autocast step: "
                f"{verdict(med['torch bf16'] / med['mpamp bf16'], 1.5)}",
                f"- mpamp bf16 / torch bf16 peak RSS: "
                f"{verdict(mb['peak_kib'] / tb['peak_kib'], 1.0, False)}; increase in "
                f"training: {verdict(grow, 1.0, False)}",
                f"- (mpamp fp32 vs torch fp32 step: {med['torch fp32'] / med['mpamp fp32']:.2f}x)"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None,
                   help="threads for mpamp and torch (default: all cores)")
    p.add_argument("--rounds", type=int, default=5, help="samples per case (median)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--budget", type=float, default=90.0,
                   help="seconds one case may take in all its samples (>= 1 sample)")
    p.add_argument("--settle", type=float, default=0.3,
                   help="sleep after a torch sample, seconds")
    p.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)   # worker mode
    args = p.parse_args()
    if args.case:
        return worker(args.case, args.batch)
    import mpamp
    try:
        import torch
    except ImportError:
        torch = None
    machine.set_library_threads(THREADS, mpamp, torch)
    print("\n".join(machine.header(mpamp, np, torch, THREADS)))
    cases = [c for c in CASES if torch is not None or not c.startswith("torch")]
    samples, memory, peaks = run_cases(cases, args, mpamp)
    peak = statistics.median(peaks)
    print(f"MLP {'->'.join(map(str, WIDTHS))}, ReLU, batch {args.batch}, MSE, AdamW; "
          f"{flops_per_step(args.batch) / 1e9:.1f} GFLOP per step (6·batch·weights)")
    print(f"peak fp32_fma ({THREADS} threads): {peak:.1f} GFLOP/s (median of {len(peaks)} "
          f"probes, {min(peaks):.1f}..{max(peaks):.1f})\n")
    print(table(cases, samples, memory, peak, args.batch) + "\n")
    if torch is None:
        print("torch is not installed: its rows are '-' and the comparisons with it are "
              "left out\n")
    print("\n".join(targets(samples, memory)) + "\n")
    print("noise (ms/step, min..max over the samples): " + "; ".join(
        f"{c} {min(s) * 1e3:.0f}..{max(s) * 1e3:.0f}" for c, s in samples.items()))


if __name__ == "__main__":
    main()
