"""Resumable data loading (an mpamp extension in the spirit of torchdata's StatefulDataLoader):
DataLoader/sampler state_dict() saved mid-epoch (with mpamp.save, beside the RNG state) and
loaded into freshly built objects continues with exactly the batches, epochs and epoch ends of
an uninterrupted run: shuffled with and without a generator, sequential, with replacement,
subset and weighted samplers, drop_last, unbatched, custom samplers and iterable datasets
(fast-forwarded, or restoring their own state). Dropout-like draws from the default stream
between batches must not disturb the order either."""
import numpy as np
import pytest

import mpamp
from mpamp.utils.data import (BatchSampler, DataLoader, IterableDataset, RandomSampler, Sampler,
                              SequentialSampler, SubsetRandomSampler, TensorDataset,
                              WeightedRandomSampler)

N, EPOCHS = 23, 3


class Squares(IterableDataset):
    """An iterable dataset without a state of its own (the loader fast-forwards it)."""

    def __iter__(self):
        return iter(mpamp.tensor([i * i]) for i in range(N))

    def __len__(self):
        return N


class Counter(IterableDataset):
    """An iterable dataset that restores its own position."""

    def __init__(self):
        self.pos = 0

    def __iter__(self):
        while self.pos < N:
            self.pos += 1
            yield mpamp.tensor([self.pos * 3])
        self.pos = 0

    def state_dict(self):
        return {"pos": self.pos}

    def load_state_dict(self, state):
        self.pos = state["pos"]


class EvensFirst(Sampler):
    """A custom sampler without state_dict (fast-forwarded)."""

    def __iter__(self):
        return iter(list(range(0, N, 2)) + list(range(1, N, 2)))

    def __len__(self):
        return N


def dataset():
    return TensorDataset(mpamp.arange(N * 2).reshape(N, 2), mpamp.arange(N) * 10)


def gen(seed=5):
    return mpamp.Generator().manual_seed(seed)


LOADERS = {
    "shuffle": lambda: DataLoader(dataset(), batch_size=4, shuffle=True),
    "shuffle_generator": lambda: DataLoader(dataset(), batch_size=4, shuffle=True,
                                            generator=gen()),
    "shuffle_drop_last": lambda: DataLoader(dataset(), batch_size=5, shuffle=True,
                                            drop_last=True),
    "sequential": lambda: DataLoader(dataset(), batch_size=3),
    "replacement": lambda: DataLoader(dataset(), batch_size=6, sampler=RandomSampler(
        dataset(), replacement=True, num_samples=2100, generator=gen())),   # > 2 lazy chunks
    "more_samples": lambda: DataLoader(dataset(), batch_size=7, sampler=RandomSampler(
        dataset(), num_samples=3 * N + 4)),
    "subset": lambda: DataLoader(dataset(), batch_size=2,
                                 sampler=SubsetRandomSampler(list(range(3, 20)))),
    "subset_generator": lambda: DataLoader(dataset(), batch_size=2, sampler=SubsetRandomSampler(
        list(range(3, 20)), generator=gen())),
    "weighted": lambda: DataLoader(dataset(), batch_size=4, sampler=WeightedRandomSampler(
        [1.0 + i % 4 for i in range(N)], 30)),
    "unbatched": lambda: DataLoader(dataset(), batch_size=None,
                                    sampler=RandomSampler(dataset(), generator=gen())),
    "custom_sampler": lambda: DataLoader(dataset(), batch_size=4, sampler=EvensFirst()),
    "custom_batch_sampler": lambda: DataLoader(dataset(), batch_sampler=[[1, 2], [5], [0, 3]]),
    "iterable": lambda: DataLoader(Squares(), batch_size=4),
    "iterable_stateful": lambda: DataLoader(Counter(), batch_size=4),
}


def as_numpy(batch):
    if isinstance(batch, mpamp.Tensor):
        return batch.numpy().tolist()
    return [as_numpy(b) for b in batch]


def run_epochs(loader, epochs, stop_after=None):
    """Batches per epoch (with a default-stream draw after each, as dropout would make);
    stop_after=(epoch, batches): break there and return the state."""
    out = []
    for epoch in range(epochs):
        out.append([])
        for batch in loader:
            out[-1].append(as_numpy(batch))
            mpamp.rand(3)
            if stop_after == (epoch, len(out[-1])):
                return out, {"loader": loader.state_dict(), "rng": mpamp.get_rng_state()}
        if stop_after == (epoch, "end"):            # between epochs
            return out, {"loader": loader.state_dict(), "rng": mpamp.get_rng_state()}
    return out, None


def stops(n_batches):
    return [(0, n_batches), (0, "end"), (1, 1), (1, n_batches // 2), (1, n_batches - 1),
            (1, n_batches)]


@pytest.mark.parametrize("name", list(LOADERS))
def test_a_resumed_loader_continues_with_the_same_batches(name, tmp_path):
    mpamp.manual_seed(3)
    want, _ = run_epochs(LOADERS[name](), EPOCHS)
    if not name.startswith(("sequential", "custom", "iterable")):
        assert want[0] != want[1], f"{name}: epochs should be shuffled differently"
    for stop in stops(len(want[1])):
        mpamp.manual_seed(3)
        got, state = run_epochs(LOADERS[name](), EPOCHS, stop)
        mpamp.save(state, tmp_path / "s.pth")
        mpamp.manual_seed(999)                      # a fresh process: other seeds, fresh objects
        mpamp.rand(17)
        loader = LOADERS[name]()
        saved = mpamp.load(tmp_path / "s.pth")
        loader.load_state_dict(saved["loader"])
        mpamp.set_rng_state(saved["rng"])
        if stop[1] == "end":
            got += run_epochs(loader, EPOCHS - stop[0] - 1)[0]
        else:
            rest, _ = run_epochs(loader, EPOCHS - stop[0])
            got[-1] += rest[0]
            got += rest[1:]
        assert got == want, f"{name}: resumed after {stop} differs"


def test_state_dict_layout_and_epoch_end():
    loader = DataLoader(dataset(), batch_size=4, shuffle=True, generator=gen())
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    assert state["batches_yielded"] == 1 and state["epoch_finished"] is False
    inner = state["source"]["sampler"]
    assert inner["yielded"] == 4 and inner["pass_state"].dtype == mpamp.uint8
    for _ in range(len(loader) - 1):
        next(it)
    state = loader.state_dict()              # the last batch is out, the loop hasn't ended
    assert state["source_exhausted"] is True and state["epoch_finished"] is False
    assert list(it) == []
    state = loader.state_dict()
    assert state["epoch_finished"] is True and state["batches_yielded"] == len(loader)


def test_samplers_resume_on_their_own():
    s = RandomSampler(range(10), generator=gen())
    want = list(s) + list(s)
    s2 = RandomSampler(range(10), generator=gen())
    it = iter(s2)
    head = [next(it) for _ in range(4)]
    state = s2.state_dict()
    s3 = RandomSampler(range(10), generator=gen(77))
    s3.load_state_dict(state)
    assert head + list(s3) + list(s3) == want
    b = BatchSampler(SequentialSampler(range(7)), 3, False)
    it = iter(b)
    next(it)
    b2 = BatchSampler(SequentialSampler(range(7)), 3, False)
    b2.load_state_dict(b.state_dict())
    assert list(b2) == [[3, 4, 5], [6]] and list(b2) == [[0, 1, 2], [3, 4, 5], [6]]


def test_bad_states_are_refused_clearly():
    loader = DataLoader(dataset(), batch_size=4, shuffle=True)
    with pytest.raises(ValueError, match=r"DataLoader.load_state_dict expected a dict with keys "
                                         r"\['batches_yielded', 'epoch_finished', 'source_exhausted', 'source'\]"):
        loader.load_state_dict({"batches_yielded": 1})
    with pytest.raises(ValueError, match="RandomSampler.load_state_dict expected a dict"):
        loader.sampler.load_state_dict([])
    with pytest.raises(ValueError, match="BatchSampler.load_state_dict expected a dict"):
        loader.batch_sampler.load_state_dict({})
    fast = DataLoader(dataset(), batch_size=4, sampler=EvensFirst())
    with pytest.raises(ValueError, match="saved by a loader whose sampler or dataset had a "
                                         "state of its own; build the loader the same way"):
        fast.load_state_dict(loader.state_dict())
    with pytest.raises(ValueError, match="sampler or dataset had no state of its own"):
        loader.load_state_dict(fast.state_dict())
