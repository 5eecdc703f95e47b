"""mpamp against PyTorch on one CUDA device, in one process: bf16/fp16 GEMM (TFLOP/s), the
wide MLP training step under autocast fp16 + GradScaler and bf16 (ms per step), fused AdamW
over 100M fp32 parameters (GB/s at 28 B/param, beside the device-to-device copy bandwidth it
measures) and whether a steady-state AMP step allocates device memory or syncs with the host.
The CUDA backend is being written: a case mpamp cannot run yet prints "mpamp: failed: ..."
beside torch's number and the script goes on. Ratios are speed ratios (above 1: mpamp faster).

    python benchmarks/bench_cuda.py [--parts gemm,mlp,adamw,steady] [--sizes 4096,8192]
        [--rounds 10] [--smoke] [--no-torch]
"""
import argparse
import statistics
import sys
import time

import machine

machine.use_inplace_build()          # this checkout's build, not an installed copy

import numpy as np  # noqa: E402

import mpamp  # noqa: E402
from mpamp import _C  # noqa: E402

PARTS = ("gemm", "mlp", "adamw", "steady")
BYTES_PER_PARAM = 28     # AdamW fp32: reads p, g, m, v (16) and writes p, m, v (12)
# the targets, printed beside the rows they apply to (a report, not a check)
TARGETS = {"gemm bf16 8192^3": 0.95, "mlp fp16+scaler": 1.0}
ADAMW_COPY_TARGET = 0.7


class Failed(Exception):
    """A library could not run a case; str() is the line to print."""


def first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


# ---- the two libraries behind one small interface ----

class Lib:
    """A library and the device its cases run on ("cuda"; the device is a field only so the
    torch code paths can be exercised against a CPU build of torch by hand)."""

    def __init__(self, name, mod, sync, device="cuda"):
        self.name, self.mod, self._sync, self.device = name, mod, sync, device

    def sync(self):
        self._sync()


def load_libs(want_torch):
    """{name: Lib} for the libraries that have a CUDA device, and a note per missing one."""
    libs, notes = {}, []
    torch = None
    if want_torch:
        try:
            import torch
        except ImportError:
            notes.append("torch: not installed")
    if torch is not None:
        if torch.cuda.is_available():
            libs["torch"] = Lib("torch", torch, torch.cuda.synchronize)
        else:
            notes.append(f"torch {torch.__version__}: no CUDA device")
    if mpamp.cuda.is_available():
        sync = mpamp.cuda.synchronize
        if "torch" in libs and not mpamp.cuda.is_simulated():
            # mpamp's real-GPU synchronize returns at once (its calls were synchronous), but a
            # device-to-device cudaMemcpy is not: torch's cudaDeviceSynchronize waits for
            # mpamp's work too (one context, the legacy default stream)
            def sync():
                mpamp.cuda.synchronize()
                torch.cuda.synchronize()
            notes.append("mpamp's samples also end with torch.cuda.synchronize()")
        libs["mpamp"] = Lib("mpamp", mpamp, sync)
    else:
        notes.append(f"mpamp: no CUDA device (built with CUDA: {mpamp.cuda.is_built()}; "
                     f"MPAMP_CUDA_SIM=1 gives the simulated one)")
    return libs, notes


def device_line(libs):
    parts = []
    for name, lib in libs.items():
        try:
            dev = lib.mod.cuda.get_device_name()
        except Exception as e:      # mpamp's real-GPU backend does not query properties yet
            dev = f"? ({first_line(e)})"
        parts.append(f"{name} {getattr(lib.mod, '__version__', '')}: {dev}".replace("  ", " "))
    return "; ".join(parts)


# ---- timing ----

def measure(makers, libs, a):
    """Median seconds per call for each library: makers[name](lib) builds the zero-argument
    function to time (and may raise). Returns {name: seconds or Failed}.

    No CUDA events (mpamp has none yet): a sample is a batch of calls between two
    synchronisations, sized so it lasts --min-sample seconds; the median of --rounds samples
    after --warmup calls, the libraries' samples interleaved so clock changes hit both alike.
    Under the simulated GPU (MPAMP_CUDA_SIM=1) the kernels are the CPU's: its numbers say the
    paths run, not how fast (--smoke shrinks every size so that takes seconds)."""
    fns, out = {}, {}
    for name, make in makers.items():
        if name not in libs:
            continue
        lib = libs[name]
        try:
            fn = make(lib)
            for _ in range(a.warmup):
                fn()
            lib.sync()
            t0 = time.perf_counter()
            fn()
            lib.sync()
            one = time.perf_counter() - t0
            # calls per sample: the two synchronisations must be small beside the work
            reps = max(1, min(10_000, int(a.min_sample / max(one, 1e-9))))
            fns[name] = (fn, lib, reps)
            out[name] = []
        except Exception as e:
            out[name] = Failed(first_line(e))
    for _ in range(a.rounds):
        for name, (fn, lib, reps) in list(fns.items()):
            try:
                lib.sync()
                t0 = time.perf_counter()
                for _ in range(reps):
                    fn()
                lib.sync()
                out[name].append((time.perf_counter() - t0) / reps)
            except Exception as e:
                out[name] = Failed(first_line(e))
                del fns[name]
    return {k: (statistics.median(v) if isinstance(v, list) else v) for k, v in out.items()}


def release(libs):
    """Give cached device memory back between parts (the AdamW part needs several GiB)."""
    import gc
    gc.collect()
    for lib in libs.values():
        try:
            lib.mod.cuda.empty_cache()
        except Exception:
            pass


# ---- table ----

COLS = f"{'case':<26}{'torch':>14}{'mpamp':>14}{'mpamp/torch':>13}{'target':>9}"


def cell(v, unit_fmt):
    if v is None:
        return f"{'-':>14}"
    return f"{unit_fmt(v):>14}"


def row(case, values, unit_fmt, higher_is_better, libs, target=None):
    """One table line; a failed mpamp prints its error in place of its number and ratio."""
    t, m = values.get("torch"), values.get("mpamp")
    tcol = f"{'failed':>14}" if isinstance(t, Failed) else cell(t, unit_fmt)
    line = f"{case:<26}{tcol}"
    if isinstance(m, Failed):
        line += f"  mpamp: failed: {m}"
        if isinstance(t, Failed):
            line += f"; torch: failed: {t}"
        print(line, flush=True)
        return
    line += cell(m, unit_fmt)
    ok_t, ok_m = isinstance(t, float), isinstance(m, float)
    if ok_t and ok_m and t > 0 and m > 0:
        ratio = m / t if higher_is_better else t / m
        line += f"{ratio:12.2f}x"
        if target is not None:
            line += f"{'>=%.2gx' % target:>9} {'ok' if ratio >= target else 'MISS'}"
    else:
        line += f"{'-':>13}"
        if target is not None:
            line += f"{'>=%.2gx' % target:>9}"
    if isinstance(t, Failed):
        line += f"  torch: failed: {t}"
    print(line, flush=True)


def fmt(v):
    return f"{v:.4g}"


# ---- (a) GEMM ----

def parse_sizes(text):
    out = []
    for s in text.split(","):
        dims = [int(x) for x in s.lower().split("x")]
        out.append(tuple(dims * 3) if len(dims) == 1 else tuple(dims))
    return out


def part_gemm(libs, a):
    print(f"\n(a) GEMM C = A @ B, 2MNK flops, TFLOP/s\n{COLS}")
    rng = np.random.default_rng(0)
    for m, n, k in parse_sizes(a.sizes):
        host_a = rng.standard_normal((m, k), dtype=np.float32)
        host_b = rng.standard_normal((k, n), dtype=np.float32)
        for dt in ("bf16", "fp16"):
            def maker(lib, dt=dt):
                lm = lib.mod
                dtype = {"bf16": lm.bfloat16, "fp16": lm.float16}[dt]
                x = lm.from_numpy(host_a).to(lib.device).to(dtype)
                y = lm.from_numpy(host_b).to(lib.device).to(dtype)
                return lambda: x @ y
            secs = measure({"torch": maker, "mpamp": maker}, libs, a)
            flops = 2.0 * m * n * k
            vals = {k_: (flops / v / 1e12 if isinstance(v, float) else v)
                    for k_, v in secs.items()}
            case = f"gemm {dt} {m}^3" if m == n == k else f"gemm {dt} {m}x{n}x{k}"
            row(case, vals, fmt, True, libs, TARGETS.get(case))
        release(libs)


# ---- (b) wide MLP step ----

def build_step(lib, mode, a):
    """One training step of Linear(d, h) -> ReLU -> Linear(h, d), MSE, AdamW (fused where the
    library accepts it) on the device, under autocast fp16 + GradScaler or bf16. No host read
    (no loss.item()): the step is what a steady-state training loop runs."""
    lm = lib.mod
    d, h, batch = a.mlp
    lm.manual_seed(0)
    model = lm.nn.Sequential(lm.nn.Linear(d, h), lm.nn.ReLU(), lm.nn.Linear(h, d)).to(lib.device)
    rng = np.random.default_rng(0)
    x = lm.from_numpy(rng.standard_normal((batch, d), dtype=np.float32)).to(lib.device)
    y = lm.from_numpy(rng.standard_normal((batch, d), dtype=np.float32)).to(lib.device)
    try:
        opt = lm.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    except (TypeError, ValueError, RuntimeError):
        opt = lm.optim.AdamW(model.parameters(), lr=1e-3)
    dtype = lm.float16 if mode == "fp16" else lm.bfloat16
    scaler = lm.amp.GradScaler(lib.device) if mode == "fp16" else None
    mse = lm.nn.functional.mse_loss

    def step():
        opt.zero_grad(set_to_none=True)
        with lm.autocast(lib.device, dtype=dtype):
            loss = mse(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return step


def part_mlp(libs, a):
    d, h, batch = a.mlp
    print(f"\n(b) MLP {d}->{h}->{d}, batch {batch}, MSE, AdamW (fused): ms per step\n{COLS}")
    for mode, case in (("fp16", "mlp fp16+scaler"), ("bf16", "mlp bf16")):
        maker = lambda lib, mode=mode: build_step(lib, mode, a)  # noqa: E731
        secs = measure({"torch": maker, "mpamp": maker}, libs, a)
        vals = {k: (v * 1e3 if isinstance(v, float) else v) for k, v in secs.items()}
        row(case, vals, fmt, False, libs, TARGETS.get(case))
        release(libs)


# ---- (c) fused AdamW against copy bandwidth ----

def part_adamw(libs, a):
    total, tensors = a.adamw_params, a.adamw_tensors
    sizes = [total // tensors] * tensors
    sizes[-1] += total - sum(sizes)
    copy_bytes = a.copy_mib << 20
    print(f"\n(c) AdamW(fused) over {total:,} fp32 params in {tensors} tensors, "
          f"{BYTES_PER_PARAM} B/param; copy_ of {a.copy_mib} MiB (2 B moved per byte): GB/s"
          f"\n{COLS}")

    def copy_maker(lib):
        lm = lib.mod
        src = lm.empty(copy_bytes // 4, device=lib.device)
        dst = lm.empty(copy_bytes // 4, device=lib.device)
        return lambda: dst.copy_(src)
    secs = measure({"torch": copy_maker, "mpamp": copy_maker}, libs, a)
    copy_bw = {k: (2.0 * copy_bytes / v / 1e9 if isinstance(v, float) else v)
               for k, v in secs.items()}
    row("copy_ d2d", copy_bw, fmt, True, libs)
    release(libs)

    host = {n: (np.full(n, 0.5, np.float32), np.full(n, 1e-3, np.float32)) for n in set(sizes)}

    def adamw_maker(lib):
        lm = lib.mod
        params = []
        for n in sizes:
            p = lm.nn.Parameter(lm.from_numpy(host[n][0]).to(lib.device))
            p.grad = lm.from_numpy(host[n][1]).to(lib.device)
            params.append(p)
        try:
            opt = lm.optim.AdamW(params, lr=1e-3, fused=True)
        except (TypeError, ValueError, RuntimeError):
            opt = lm.optim.AdamW(params, lr=1e-3)
        return opt.step
    secs = measure({"torch": adamw_maker, "mpamp": adamw_maker}, libs, a)
    gbs = {k: (BYTES_PER_PARAM * total / v / 1e9 if isinstance(v, float) else v)
           for k, v in secs.items()}
    row("adamw fused", gbs, fmt, True, libs)
    # the hardware's copy rate: the faster of the two libraries' copy_ (the same memcpy)
    ref = max((v for v in copy_bw.values() if isinstance(v, float)), default=None)
    frac = {k: v / ref for k, v in gbs.items() if ref and isinstance(v, float)}
    line = f"{'adamw / copy_ bandwidth':<26}" + "".join(
        f"{frac[k]:14.2f}" if k in frac else f"{'-':>14}" for k in ("torch", "mpamp"))
    line += f"{'':>13}{'>=%.2g' % ADAMW_COPY_TARGET:>9}"
    if "mpamp" in frac:
        line += f" {'ok' if frac['mpamp'] >= ADAMW_COPY_TARGET else 'MISS'}"
    print(line, flush=True)
    release(libs)


# ---- (d) steady state: device allocations and host syncs in a step ----

def mpamp_counters():
    st = _C._cuda_memory_stats()
    return {k: st[k] for k in ("alloc_calls", "cache_hits", "h2d", "d2h", "d2d", "syncs")}


def steady_mpamp(lib, a):
    step = build_step(lib, "fp16", a)
    for _ in range(max(3, a.warmup)):
        step()
    lib.sync()
    before = mpamp_counters()
    for _ in range(a.steady_steps):
        step()
    after = mpamp_counters()
    lib.sync()
    delta = {k: after[k] - before[k] for k in after}
    if after["alloc_calls"] == 0:
        # the allocator counters are the backend's: the real-GPU backend keeps none yet
        # (csrc/core/backend.c gpu_stats), so a zero there means "not counted"
        return ("not measured: this CUDA backend keeps no allocator/copy/sync counters "
                "(memory_stats() is all zeros)")
    fresh = delta["alloc_calls"] - delta["cache_hits"]
    # a blocking cudaMemcpy from pageable memory waits for the stream in either direction,
    # so host-to-device copies count as host syncs too
    return (f"{fresh} device allocations past the cache (cudaMalloc), "
            f"{delta['syncs']} host syncs, {delta['d2h']} device-to-host copies, "
            f"{delta['h2d']} host-to-device copies ({delta['alloc_calls']} allocator requests, "
            f"{delta['cache_hits']} from the cache)")


def steady_torch(lib, a):
    torch = lib.mod
    step = build_step(lib, "fp16", a)
    for _ in range(max(3, a.warmup)):
        step()
    torch.cuda.synchronize()

    def mallocs():
        st = torch.cuda.memory_stats()
        return st.get("num_device_alloc", st.get("segment.all.allocated", 0))
    before = mallocs()
    # sync debug mode "error" raises on any synchronising call (item(), a blocking copy)
    prev = torch.cuda.get_sync_debug_mode()
    synced = "none"
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(a.steady_steps):
            step()
    except RuntimeError as e:
        synced = f"yes ({first_line(e)})"
    finally:
        torch.cuda.set_sync_debug_mode(prev)
    torch.cuda.synchronize()
    return f"{mallocs() - before} cudaMalloc, host sync: {synced}"


def part_steady(libs, a):
    print(f"\n(d) steady state: {a.steady_steps} fp16+scaler MLP steps after warm-up "
          f"(no synchronize inside)")
    for name, fn in (("torch", steady_torch), ("mpamp", steady_mpamp)):
        if name not in libs:
            print(f"steady {name}: - (not run)")
            continue
        try:
            print(f"steady {name}: {fn(libs[name], a)}", flush=True)
        except Exception as e:
            print(f"steady {name}: failed: {first_line(e)}", flush=True)
    release(libs)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default=",".join(PARTS), help="comma list of " + ",".join(PARTS))
    ap.add_argument("--sizes", default=None,
                    help="GEMM sizes, comma list of N (N^3) or MxNxK (default 4096,8192)")
    ap.add_argument("--rounds", type=int, default=None, help="timed samples per case (median)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed calls before timing")
    ap.add_argument("--min-sample", type=float, default=None,
                    help="seconds one sample lasts at least (calls between two syncs)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes: seconds under the simulated GPU")
    ap.add_argument("--torch", action=argparse.BooleanOptionalAction, default=True,
                    help="compare with torch on the same device (default on)")
    a = ap.parse_args(argv)
    parts = [p for p in a.parts.split(",") if p]
    bad = [p for p in parts if p not in PARTS]
    if bad:
        ap.error(f"unknown part(s) {bad}; choose from {','.join(PARTS)}")
    # full sizes are the issue's; the smoke ones only prove every path runs
    small = a.smoke
    a.sizes = a.sizes or ("64,96" if small else "4096,8192")
    a.rounds = a.rounds or (3 if small else 10)
    a.warmup = a.warmup if a.warmup is not None else (1 if small else 3)
    a.min_sample = a.min_sample if a.min_sample is not None else (0.0 if small else 0.05)
    a.mlp = (64, 256, 32) if small else (1024, 4096, 256)
    a.adamw_params, a.adamw_tensors = (100_000, 10) if small else (100_000_000, 10)
    a.copy_mib = 4 if small else 1024
    a.steady_steps = 3
    a.parts = parts
    return a


def main(argv=None):
    a = parse_args(argv)
    libs, notes = load_libs(a.torch)
    if not libs:
        print("bench_cuda: no CUDA device: " + "; ".join(notes) + ". Nothing to measure.")
        return 0
    print("bench_cuda: " + device_line(libs))
    for n in notes:
        print("note: " + n)
    if "mpamp" in libs and mpamp.cuda.is_simulated():
        print("note: mpamp runs on the simulated GPU (CPU kernels): its numbers prove the "
              "paths run, not their speed")
    print(f"rounds {a.rounds} (median), warm-up {a.warmup}, sample >= {a.min_sample} s"
          f"{', smoke sizes' if a.smoke else ''}")
    t0 = time.perf_counter()
    for p in a.parts:
        {"gemm": part_gemm, "mlp": part_mlp, "adamw": part_adamw, "steady": part_steady}[p](
            libs, a)
    print(f"\nbench_cuda: done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
