"""The training run of tests/test_resume.py: a dropout MLP with AdamW, OneCycleLR and (for fp16)
a GradScaler, in fp32, bf16 autocast or fp16 autocast, fed by a shuffling DataLoader (8 batches
an epoch, so step 10 is in the middle of the second epoch). Imported by the test and, for the
resumed halves, by a fresh interpreter, so both sides run the same code.
"""
import mpamp
from mpamp import nn
from mpamp.utils.data import DataLoader, TensorDataset

STEPS, HALF = 20, 10
BATCH, FEATURES, HIDDEN, EPOCH = 64, 48, 256, 8
OVERFLOW_STEPS = (4, 13)          # fp16: the batch of these steps overflows fp16 (skipped)


def data():
    """Inputs and targets from a generator of their own (not the stream dropout draws from)."""
    gen = mpamp.Generator().manual_seed(7)
    return TensorDataset(mpamp.randn(EPOCH * BATCH, FEATURES, generator=gen),
                         mpamp.randn(EPOCH * BATCH, 1, generator=gen))


class Run:
    """Model, optimizer, scheduler and scaler of one configuration ('fp32', 'bf16', 'fp16')."""

    def __init__(self, precision, seed=0):
        mpamp.manual_seed(seed)
        self.precision = precision
        self.model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.GELU(), nn.Dropout(0.25),
                                   nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Dropout(0.25),
                                   nn.Linear(HIDDEN, 1))
        self.opt = mpamp.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.01)
        self.sched = mpamp.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=1e-2,
                                                         total_steps=STEPS)
        self.scaler = mpamp.amp.GradScaler("cpu", init_scale=2.0**14, growth_interval=3,
                                           enabled=precision == "fp16")
        # no generator=: each epoch's order is seeded from the default stream, which dropout
        # draws from too
        self.loader = DataLoader(data(), batch_size=BATCH, shuffle=True)
        self.batches = self._endless()

    def _endless(self):
        while True:
            yield from self.loader

    def step(self, i):
        x, y = next(self.batches)
        if self.precision == "fp16" and i in OVERFLOW_STEPS:
            x = x * 1e5                                  # fp16 activations overflow to inf
        self.opt.zero_grad()
        dtype = {"bf16": mpamp.bfloat16, "fp16": mpamp.float16}.get(self.precision)
        with mpamp.autocast("cpu", dtype=dtype or mpamp.bfloat16, enabled=dtype is not None):
            out = self.model(x)
        loss = nn.functional.mse_loss(out.float(), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        self.sched.step()

    def state(self, step):
        """Everything a resume needs, in a form mpamp.save writes."""
        return {"step": step, "model": self.model.state_dict(),
                "optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                "scaler": self.scaler.state_dict(), "loader": self.loader.state_dict(),
                "rng": mpamp.get_rng_state()}

    def load(self, state, restore_rng=True, restore_loader=True):
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
        if restore_loader:
            self.loader.load_state_dict(state["loader"])
        if restore_rng:
            mpamp.set_rng_state(state["rng"])
        return state["step"]


def resume(path, out_path, threads, precision, restore_rng=True, restore_loader=True):
    """Fresh objects (another seed, the stream moved on), the checkpoint loaded, run to the end."""
    mpamp.set_num_threads(threads)
    run = Run(precision, seed=12345)
    mpamp.randn(1000)
    start = run.load(mpamp.load(path), restore_rng, restore_loader)
    for i in range(start, STEPS):
        run.step(i)
    mpamp.save(run.state(STEPS), out_path)
