"""A nanoGPT-style DDP training script (our own code, written the way nanoGPT's train.py is:
torch's calls only, with the import changed). Under `python -m mpamp.distributed.run -n N` it
reads RANK / LOCAL_RANK / WORLD_SIZE before init_process_group, divides the gradient
accumulation steps by the world size, syncs gradients only on the last micro-step
(require_backward_grad_sync), clips after scaler.unscale_, and the master process evaluates and
saves the checkpoint. Every micro-batch of an iteration is a fixed slice of one global batch,
so N ranks compute what one process computes. Options as --key=value; prints "val loss <x>"."""
import math
import os
import sys
from contextlib import nullcontext

import numpy as np

import mpamp as torch
import mpamp.nn as nn
from mpamp.nn import functional as F
from mpamp.distributed import destroy_process_group, init_process_group
from mpamp.nn.parallel import DistributedDataParallel as DDP

out_dir = "out"
max_iters, eval_iters = 8, 2
gradient_accumulation_steps = 2 * 3       # divisible by 1, 2 and 3 ranks
batch_size, block_size = 2, 16
n_layer, n_head, n_embd, vocab = 2, 2, 32, 40
learning_rate, min_lr, warmup_iters = 3e-3, 3e-4, 2
weight_decay, beta1, beta2, grad_clip = 0.1, 0.9, 0.95, 1.0
dtype = "float32"
fail_at = -1                              # tests: rank 1 raises at this iteration
for arg in sys.argv[1:]:
    key, val = arg[2:].split("=", 1)
    globals()[key] = type(globals()[key])(val)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        # no bias on q/k/v: softmax ignores the key bias, so its gradient is rounding noise
        # that AdamW turns into +-lr steps, which no two summation orders agree on
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.fc, self.proj = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block() for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight           # weight tying, as nanoGPT

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, vocab), targets.view(-1))


ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="gloo")
    ddp_rank, ddp_world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    master_process = ddp_rank == 0
    assert gradient_accumulation_steps % ddp_world_size == 0
    gradient_accumulation_steps //= ddp_world_size
else:
    ddp_rank, ddp_world_size, master_process = 0, 1, True
torch.manual_seed(1337 + ddp_rank)                     # DDP broadcasts rank 0's weights
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if dtype == "float32" else torch.amp.autocast("cpu", dtype=ptdtype)
tokens = np.random.default_rng(0).integers(0, vocab, 20_000)


def get_batch(it, micro):
    """Micro-batch `micro` (of the global accumulation) of iteration it."""
    ix = np.random.default_rng(it * 1000 + micro).integers(0, len(tokens) - block_size - 1,
                                                           batch_size)
    x = torch.stack([torch.from_numpy(tokens[i:i + block_size].copy()) for i in ix])
    y = torch.stack([torch.from_numpy(tokens[i + 1:i + 1 + block_size].copy()) for i in ix])
    return x, y


model = GPT()
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                               {"params": no_decay, "weight_decay": 0.0}],
                              lr=learning_rate, betas=(beta1, beta2))
scaler = torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
if ddp:
    model = DDP(model)
raw_model = model.module if ddp else model


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    ratio = (it - warmup_iters) / max(1, max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = torch.zeros(eval_iters)
    for k in range(eval_iters):
        with ctx:
            _, loss = model(*get_batch(10_000 + k, 0))
        losses[k] = loss.item()
    model.train()
    return losses.mean()


for iter_num in range(max_iters):
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        X, Y = get_batch(iter_num, ddp_rank * gradient_accumulation_steps + micro_step)
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        if iter_num == fail_at and ddp_rank == 1:
            raise RuntimeError(f"rank 1 fails on purpose at iteration {iter_num}")
        scaler.scale(loss).backward()
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

if master_process:
    val = estimate_loss()
    os.makedirs(out_dir, exist_ok=True)
    torch.save({"model": raw_model.state_dict(), "iter_num": max_iters},
               os.path.join(out_dir, "ckpt.pt"))
    print(f"val loss {val.item():.6f}")
if ddp:
    destroy_process_group()
