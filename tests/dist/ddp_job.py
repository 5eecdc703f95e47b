"""DistributedDataParallel and ShardedGradScaler on each rank of an MPI job (started by
tests/test_distributed.py through `python -m mpamp.distributed.run`). Experiments: DDP over N
ranks with batch B/N vs one process on batch B (20 AdamW steps; fp32, bf16 autocast, fp16
autocast + GradScaler; rank 0 also trains the single-process reference), an inf injected into
one rank's loss, ShardedGradScaler without DDP, no_sync accumulation, find_unused_parameters,
bfloat16 parameters, broadcast_buffers, state_dict, misuse. Each rank writes <out>/rank<r>.npz
and .json. Usage: ddp_job.py OUT"""
import json
import os
import sys

import numpy as np

import mpamp
import mpamp.distributed as dist
import mpamp.nn as nn
import mpamp.nn.functional as F
from common import mlp_batch
from mpamp.distributed.fsdp import ShardedGradScaler
from mpamp.nn.parallel import DistributedDataParallel as DDP

out_dir = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
B, STEPS = 12, 20
results, info = {}, {}
AUTOCAST = {"fp32": None, "bf16": mpamp.bfloat16, "fp16": mpamp.float16}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.ln = nn.Linear(12, 32), nn.LayerNorm(32)
        self.fc2, self.fc3 = nn.Linear(32, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(F.gelu(self.fc2(F.gelu(self.ln(self.fc1(x))))))


def mlp(seed):
    mpamp.manual_seed(seed)
    return MLP()


def my_rows(a):
    n = len(a) // world
    return mpamp.tensor(a[rank * n:(rank + 1) * n])


def step(model, opt, scaler, mode, x, y, poison=False):
    ctx = mpamp.autocast("cpu", dtype=AUTOCAST[mode], enabled=AUTOCAST[mode] is not None)
    with ctx:
        loss = F.mse_loss(model(x), y)
    if poison:
        loss = loss * float("inf")
    if scaler is None:
        loss.backward()
        opt.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    opt.zero_grad(set_to_none=True)


def save_params(prefix, module):
    for name, p in module.named_parameters():
        results[f"{prefix}/{name}"] = p.detach().float().numpy()


def equivalence(mode):
    model = mlp(10 + rank)                        # different on every rank before DDP
    ddp = DDP(model, bucket_cap_mb=0.002)
    info["bucket_sizes"] = ddp._reducer.bucket_sizes
    opt = mpamp.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    scaler = mpamp.amp.GradScaler("cpu", init_scale=2.0**10) if mode == "fp16" else None
    for s in range(STEPS):
        x, y = mlp_batch(s, B)
        step(ddp, opt, scaler, mode, my_rows(x), my_rows(y))
    save_params(f"eq/{mode}", model)
    info["bucket_sizes_rebuilt"] = ddp._reducer.bucket_sizes
    info[f"stats/{mode}"] = dict(ddp._reducer.stats)
    if scaler is not None:
        info[f"scaler/{mode}"] = scaler.stats()
    if rank == 0:
        reference(mode, "ref", split=False)
        reference(mode, "split", split=True)


def reference(mode, key, split):
    """One process on the whole batch: in one pass (split=False), or as the N slices the ranks
    get, their gradients averaged (split=True: what DDP computes, up to the float32 order)."""
    ref = mlp(10)
    opt = mpamp.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
    scaler = mpamp.amp.GradScaler("cpu", init_scale=2.0**10) if mode == "fp16" else None
    ctx = mpamp.autocast("cpu", dtype=AUTOCAST[mode], enabled=AUTOCAST[mode] is not None)
    for s in range(STEPS):
        x, y = mlp_batch(s, B)
        if not split:
            step(ref, opt, scaler, mode, mpamp.tensor(x), mpamp.tensor(y))
            continue
        n, total = B // world, None
        for r in range(world):
            with ctx:
                loss = F.mse_loss(ref(mpamp.tensor(x[r * n:(r + 1) * n])),
                                  mpamp.tensor(y[r * n:(r + 1) * n]))
            (scaler.scale(loss) if scaler else loss).backward()
            grads = [p.grad.clone() for p in ref.parameters()]
            total = grads if total is None else [a + g for a, g in zip(total, grads)]
            ref.zero_grad()
        for p, g in zip(ref.parameters(), total):
            p.grad = g / world
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
    save_params(f"{key}/{mode}", ref)
    if scaler is not None:
        info[f"{key}_scaler/{mode}"] = scaler.stats()


def snapshot(model):
    return [p.detach().clone() for p in model.parameters()]


def changed(before, model):
    return any(bool((a != p.detach()).any()) for a, p in zip(before, model.parameters()))


def inf_injection(use_ddp, scaler_cls, key, unscale_first=False):
    """Rank 1's loss is inf at step 2: which ranks step, and what happens to the scale."""
    model = mlp(10)
    net = DDP(model) if use_ddp else model
    opt = mpamp.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = scaler_cls("cpu", init_scale=2.0**10)
    trace = []
    for s in range(4):
        x, y = mlp_batch(s, B)
        before, scale = snapshot(model), scaler.get_scale()
        with mpamp.autocast("cpu", dtype=mpamp.float16):
            loss = F.mse_loss(net(my_rows(x)), my_rows(y))
        if s == 2 and rank == 1:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        if unscale_first:
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        trace.append([scale, scaler.get_scale(), changed(before, model)])
    info[f"inf/{key}"] = trace


def no_sync_accumulation():
    model = mlp(10)
    ddp = DDP(model)
    x, y = mlp_batch(0, B)
    xs, ys = my_rows(x), my_rows(y)
    half = len(xs) // 2
    with ddp.no_sync():
        (F.mse_loss(ddp(xs[:half]), ys[:half]) / 2).backward()
    info["nosync_backwards_inside"] = ddp._reducer.stats["backwards"]
    (F.mse_loss(ddp(xs[half:]), ys[half:]) / 2).backward()
    info["nosync_backwards_after"] = ddp._reducer.stats["backwards"]
    for name, p in model.named_parameters():
        results[f"nosync/{name}"] = p.grad.numpy()
    if rank == 0:
        ref = mlp(10)
        F.mse_loss(ref(mpamp.tensor(x)), mpamp.tensor(y)).backward()
        for name, p in ref.named_parameters():
            results[f"nosync_ref/{name}"] = p.grad.numpy()


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x, use_b):
        y = self.a(x)
        return y + self.b(x) if use_b else y


def unused_parameters():
    mpamp.manual_seed(3)
    model = Branchy()
    ddp = DDP(model, find_unused_parameters=True)
    plain = Branchy()
    plain.load_state_dict(model.state_dict())
    for it in range(2):
        x = mpamp.full((2, 4), float(rank + 1 + it))
        ddp(x, use_b=rank != 0).pow(2).sum().backward()
        plain(x, use_b=rank != 0).pow(2).sum().backward()
        for name, p in model.named_parameters():
            q = dict(plain.named_parameters())[name]
            local = q.grad.clone() if q.grad is not None else mpamp.zeros(q.shape)
            dist.all_reduce(local, op=dist.ReduceOp.AVG)
            results[f"unused/{it}/{name}"] = (p.grad.numpy() if p.grad is not None
                                              else np.array([np.nan]))
            results[f"unused_ref/{it}/{name}"] = local.numpy()
        model.zero_grad()
        plain.zero_grad()
    strict = DDP(Branchy())
    strict(mpamp.ones(2, 4), use_b=True).sum().backward()
    try:
        strict(mpamp.ones(2, 4), use_b=True)
        info["unused_error"] = None
    except RuntimeError as exc:
        info["unused_error"] = str(exc)


def bf16_parameters():
    model = mlp(10).bfloat16()
    plain = mlp(10).bfloat16()
    ddp = DDP(model, bucket_cap_mb=0.001)
    x, y = mlp_batch(1, B)
    xs, ys = my_rows(x).bfloat16(), my_rows(y).bfloat16()
    F.mse_loss(ddp(xs), ys).backward()
    F.mse_loss(plain(xs), ys).backward()
    for (name, p), q in zip(model.named_parameters(), plain.parameters()):
        expect = q.grad.float()
        dist.all_reduce(expect, op=dist.ReduceOp.AVG)
        results[f"bf16p/{name}"] = p.grad.float().numpy()
        results[f"bf16p_ref/{name}"] = expect.bfloat16().float().numpy()
        info.setdefault("bf16_grad_dtypes", []).append(str(p.grad.dtype))


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("scale", mpamp.full((2,), float(rank)))

    def forward(self, x):
        return self.lin(x) * self.scale


def buffers_and_state():
    for flag in (True, False):
        m = WithBuffer()
        ddp = DDP(m, broadcast_buffers=flag)
        seen = [m.scale.tolist()]
        with mpamp.no_grad():
            m.scale.fill_(rank + 5.0)
        ddp(mpamp.ones(1, 2))
        seen.append(m.scale.tolist())
        info[f"buffers/{flag}"] = seen
    model = mlp(10 + rank)
    ddp = DDP(model)
    keys = list(ddp.state_dict())
    plain = MLP()
    plain.load_state_dict(ddp.module.state_dict())
    ddp.load_state_dict(ddp.state_dict())
    info["state_keys"] = keys
    info["plain_loads"] = all(bool((a == b).all()) for a, b in
                              zip(plain.parameters(), model.parameters()))
    info["module_is_model"] = ddp.module is model


def overlap():
    """A small last layer (the first bucket) and a large first layer (most of backward): the
    first bucket's all-reduce starts, and given a free core finishes, while backward runs."""
    mpamp.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 4))
    ddp = DDP(model, bucket_cap_mb=0.017)             # [last layer], [first layer]
    info["overlap_buckets"] = ddp._reducer.bucket_sizes
    x = mpamp.randn(512, 1024)
    ddp(x).sum().backward()                      # the first backward rebuilds the buckets
    started, done = [], []
    for _ in range(3):
        ddp(x).sum().backward()
        reducer = ddp._reducer
        first, last = reducer._buckets[0], reducer._t_last_grad
        started.append([first.launched_at < last - 0.001, first.work._span[0] < last - 0.001])
        done.append(reducer._buckets[0].work._span[1] < reducer._t_last_grad)
    info["overlap_first_bucket_started_early"] = started
    info["overlap_first_bucket_done_early"] = done
    info["overlap_stats"] = dict(ddp._reducer.stats)
    info["overlap_buckets_rebuilt"] = ddp._reducer.bucket_sizes


def misuse():
    def record(name, fn):
        try:
            fn()
            info[f"err/{name}"] = None
        except Exception as exc:
            info[f"err/{name}"] = [type(exc).__name__, str(exc)]
    record("device_ids", lambda: DDP(mlp(1), device_ids=[0]))
    frozen = mlp(1).requires_grad_(False)
    record("no_params", lambda: DDP(frozen))
    record("mismatch", lambda: DDP(MLP() if rank == 0 else nn.Linear(3, 3)))


for mode in ("fp32", "bf16", "fp16"):
    equivalence(mode)
inf_injection(True, mpamp.amp.GradScaler, "ddp")
inf_injection(False, ShardedGradScaler, "sharded")
inf_injection(False, ShardedGradScaler, "sharded_unscale", unscale_first=True)
inf_injection(False, mpamp.amp.GradScaler, "plain")
no_sync_accumulation()
unused_parameters()
bf16_parameters()
buffers_and_state()
misuse()
overlap()
info["threads"] = mpamp.get_num_threads()
dist.destroy_process_group()
np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **results)
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
    json.dump(info, fh)
