"""DistributedDataParallel on the wide MLP (1024 -> 4096 -> 1024, ReLU, MSE, AdamW, fp32,
global batch 256): 2 ranks x 1 thread, each on half the batch, against 1 rank x 1 thread on
half the batch (the same per-rank work, no communication). All numbers come from one run,
the two cases alternating round by round so a burst of load elsewhere hits both:

- step: median time of a training step (forward, backward, optimizer) per case; ratio.
- all-reduce: time the buckets' all-reduces ran on the communication thread per step
  (8.4M float32 gradients = 33.6 MB per step), and its share of the 2-rank step;
- hidden: the part of that time that ran before the last gradient was ready, i.e. behind
  backward; exposed: how long the last gradient hook waited for the buckets;
- alone: the same all-reduces with nothing else running (the transport's own cost).

    python benchmarks/bench_ddp.py [--rounds 3] [--steps 8] [--warmup 2] [--bucket-mb 25]

It re-runs itself as the workers: `--role single` (plain process) and `--role ddp` through
`python -m mpamp.distributed.run -n 2 --threads 1`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import machine

machine.use_inplace_build()
WIDTHS = (1024, 4096, 1024)
BATCH = 256


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--role", choices=["single", "ddp"], default=None)
    return p.parse_args(argv)


def _model(mpamp):
    nn = mpamp.nn
    mpamp.manual_seed(0)
    return nn.Sequential(nn.Linear(WIDTHS[0], WIDTHS[1]), nn.ReLU(),
                         nn.Linear(WIDTHS[1], WIDTHS[2]))


def worker(opts):
    """One case: prints one JSON line (rank 0) with per-step timings."""
    import numpy as np
    import mpamp
    import mpamp.distributed as dist
    F = mpamp.nn.functional
    mpamp.set_num_threads(1)
    ddp = opts.role == "ddp"
    if ddp:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if ddp else 0
    model = _model(mpamp)
    net = mpamp.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=opts.bucket_mb) \
        if ddp else model
    opt = mpamp.optim.AdamW(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(rank)
    x = mpamp.tensor(rng.standard_normal((BATCH // 2, WIDTHS[0]), dtype=np.float32))
    y = mpamp.tensor(rng.standard_normal((BATCH // 2, WIDTHS[2]), dtype=np.float32))
    steps, keys = [], ("comm_s", "hidden_s", "exposed_s")
    for i in range(opts.warmup + opts.steps):
        before = dict(net._reducer.stats) if ddp else {}
        t0 = time.perf_counter()
        loss = F.mse_loss(net(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if i >= opts.warmup:
            row = {"step": t3 - t0, "forward": t1 - t0, "backward": t2 - t1, "optim": t3 - t2}
            if ddp:
                row.update({k: net._reducer.stats[k] - before[k] for k in keys})
            steps.append(row)
    out = {"steps": steps}
    if ddp:
        out["buckets"] = net._reducer.bucket_sizes
        out["alone"] = _all_reduce_alone(mpamp, dist, net._reducer.bucket_sizes, opts.steps)
        every = [None] * dist.get_world_size()
        dist.all_gather_object(every, out)
        out = {"ranks": every}
        dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)


def _all_reduce_alone(mpamp, dist, sizes, repeats):
    """Seconds per step's buckets, all-reduced back to back with no computation."""
    flats = [mpamp.ones(n) for n in sizes]
    times = []
    for _ in range(repeats):
        dist.barrier()
        t0 = time.perf_counter()
        works = [dist.all_reduce(f, op=dist.ReduceOp.AVG, async_op=True) for f in flats]
        for w in works:
            w.wait()
        times.append(time.perf_counter() - t0)
    return times


def _run_case(role, opts):
    common = ["--role", role, "--steps", str(opts.steps), "--warmup", str(opts.warmup),
              "--bucket-mb", str(opts.bucket_mb)]
    here = os.path.abspath(__file__)
    cmd = [sys.executable, here, *common] if role == "single" else \
        [sys.executable, "-m", "mpamp.distributed.run", "-n", "2", "--threads", "1", here,
         *common]
    env = dict(os.environ, PYTHONPATH=machine.ROOT + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"{role} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[0][len("RESULT "):])


def _median(values):
    return statistics.median(values) if values else float("nan")


def report(opts):
    import numpy as np
    import mpamp
    print("\n".join(machine.header(mpamp, np, None, 1)))
    print(f"command: python benchmarks/bench_ddp.py --rounds {opts.rounds} --steps "
          f"{opts.steps} --warmup {opts.warmup} --bucket-mb {opts.bucket_mb}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({machine.cores()} cores)")
    single, ddp = [], []
    for _ in range(opts.rounds):
        single += _run_case("single", opts)["steps"]
        ddp.append(_run_case("ddp", opts))
    per_rank = [[row for d in ddp for row in d["ranks"][r]["steps"]] for r in range(2)]
    buckets = ddp[0]["ranks"][0]["buckets"]
    nbytes = 4 * sum(buckets)
    t1 = _median([s["step"] for s in single])
    print(f"\nbuckets: {len(buckets)} ({', '.join(str(b) for b in buckets)} floats), "
          f"{nbytes / 1e6:.1f} MB all-reduced per step")
    print("\n| case | step ms | forward | backward | optimizer | all-reduce ms (share of step)"
          " | hidden behind backward | exposed wait ms | all-reduce alone ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| 1 rank x 1 thread, batch 128 | {t1 * 1e3:.0f} | "
          f"{_median([s['forward'] for s in single]) * 1e3:.0f} | "
          f"{_median([s['backward'] for s in single]) * 1e3:.0f} | "
          f"{_median([s['optim'] for s in single]) * 1e3:.0f} | - | - | - | - |")
    for r, rows in enumerate(per_rank):
        step = _median([s["step"] for s in rows])
        comm = _median([s["comm_s"] for s in rows])
        hidden = sum(s["hidden_s"] for s in rows) / max(1e-12, sum(s["comm_s"] for s in rows))
        alone = _median([t for d in ddp for t in d["ranks"][r]["alone"]])
        print(f"| 2 ranks x 1 thread, batch 128 each: rank {r} | {step * 1e3:.0f} | "
              f"{_median([s['forward'] for s in rows]) * 1e3:.0f} | "
              f"{_median([s['backward'] for s in rows]) * 1e3:.0f} | "
              f"{_median([s['optim'] for s in rows]) * 1e3:.0f} | {comm * 1e3:.0f} "
              f"({comm / step:.0%}) | {hidden:.0%} | "
              f"{_median([s['exposed_s'] for s in rows]) * 1e3:.0f} | {alone * 1e3:.0f} |")
    step2 = _median([s["step"] for s in per_rank[0]])
    slow = _median([s["forward"] for s in per_rank[0]]) / \
        _median([s["forward"] for s in single])
    print(f"\n2-rank step / 1-rank step: {step2 / t1:.2f} (1.00 = perfect data parallelism: "
          f"twice the samples per second); all-reduce alone: "
          f"{nbytes / _median([t for d in ddp for t in d['ranks'][0]['alone']]) / 1e9:.2f} "
          f"GB/s of gradients")
    print(f"compute slowdown from sharing the cores (2-rank forward / 1-rank forward, no "
          f"communication in it): {slow:.2f}; step ratio with that divided out: "
          f"{step2 / t1 / slow:.2f}")


def main(argv=None):
    opts = _parse(sys.argv[1:] if argv is None else argv)
    if opts.role:
        worker(opts)
    else:
        report(opts)


if __name__ == "__main__":
    main()
