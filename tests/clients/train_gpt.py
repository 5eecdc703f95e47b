"""Trains tests/clients/gpt.py the way nanoGPT's train.py does (our own code, written for
torch): synthetic tokens from a fixed Markov chain, random batches, warmup + cosine lr,
autocast + GradScaler(enabled=...), grad clipping, estimate_loss under no_grad, a checkpoint
with the RNG state, resuming from it, top-k sampling. Options as --key=value.
Prints "val loss <x>" at the end."""
import math
import os
import sys
import time
from contextlib import nullcontext

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: F401 - as real scripts
from torch.distributed import init_process_group, destroy_process_group  # noqa: F401

from gpt import GPT, GPTConfig

out_dir = "out"
max_iters = 60
eval_iters = 10
batch_size = 16
block_size = 32
n_layer, n_head, n_embd = 2, 4, 64
dropout = 0.0
flash = True
learning_rate, min_lr, warmup_iters = 3e-3, 3e-4, 10
weight_decay, beta1, beta2, grad_clip = 0.1, 0.9, 0.95, 1.0
dtype = "float32"                # 'float32', 'bfloat16' or 'float16'
init_from = "scratch"            # or 'resume'
seed = 1337
for arg in sys.argv[1:]:
    key, val = arg[2:].split("=", 1)
    old = globals()[key]
    globals()[key] = type(old)(val) if not isinstance(old, bool) else val == "True"

torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if dtype == "float32" else \
    torch.amp.autocast(device_type=device_type, dtype=ptdtype)

V = 40
chain = np.random.default_rng(0)
bigram = chain.dirichlet(np.full(V, 0.1), size=V)
cdf = np.cumsum(bigram, axis=-1)


def make_tokens(n, s):
    u, x, a = np.random.default_rng(s).random(n), np.empty(n, dtype=np.uint16), 0
    for i in range(n):
        a = x[i] = min(int(np.searchsorted(cdf[a], u[i])), V - 1)
    return x


data = {"train": make_tokens(40_000, 1), "val": make_tokens(8_000, 2)}


def get_batch(split):
    d = data[split]
    ix = torch.randint(len(d) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(d[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(d[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    if device_type == "cuda":
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device)
    return x, y


cfg = GPTConfig(block_size=block_size, vocab_size=V, n_layer=n_layer, n_head=n_head,
                n_embd=n_embd, dropout=dropout, flash=flash)
iter_num = 0
ckpt_path = os.path.join(out_dir, "ckpt.pt")
if init_from == "resume":
    checkpoint = torch.load(ckpt_path, map_location=device)
    model = GPT(GPTConfig(**checkpoint["model_args"]))
    model.load_state_dict(checkpoint["model"])
    iter_num = checkpoint["iter_num"]
    torch.set_rng_state(checkpoint["rng"])
else:
    model = GPT(cfg)
model.to(device)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16")) if device_type == "cuda" \
    else torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2))
if init_from == "resume":
    optimizer.load_state_dict(checkpoint["optimizer"])
    checkpoint = None
model = torch.compile(model) if False else model


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    ratio = (it - warmup_iters) / max(1, max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * min(ratio, 1.0))) * (learning_rate - min_lr)


X, Y = get_batch("train")
t0 = time.time()
while iter_num < max_iters:
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    with ctx:
        logits, loss = model(X, Y)
    X, Y = get_batch("train")
    scaler.scale(loss).backward()
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num % 20 == 0:
        print(f"iter {iter_num}: loss {loss.item():.4f}, {(time.time() - t0) * 1000:.0f}ms")

losses = estimate_loss()
os.makedirs(out_dir, exist_ok=True)
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "model_args": cfg.__dict__, "iter_num": iter_num, "rng": torch.get_rng_state()},
           ckpt_path)
model.eval()
start = torch.tensor([[1, 2, 3]], dtype=torch.long, device=device)
sample = model.generate(start, 20, temperature=0.8, top_k=10)
assert sample.shape == (1, 23) and int(sample.max()) < V and int(sample.min()) >= 0
print("sample", sample[0].tolist())
print(f"train loss {losses['train']:.4f}")
print(f"val loss {losses['val']:.4f}")
