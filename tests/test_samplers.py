"""Samplers: RandomSampler draws lazily (a huge num_samples iterates without allocating), the
indices for a seed do not depend on the chunk size, replacement=False repeats permutations as
torch; SubsetRandomSampler, WeightedRandomSampler; DataLoader with any iterable sampler and
with samplers that have set_epoch; torch's errors."""
import tracemalloc

import numpy as np
import pytest

import mpamp
from mpamp.utils.data import (BatchSampler, DataLoader, RandomSampler, Sampler,
                              SequentialSampler, SubsetRandomSampler, TensorDataset,
                              WeightedRandomSampler)
from mpamp.utils.data import sampler as sampler_mod


def _take(it, n):
    return [next(it) for _ in range(n)]


def test_huge_num_samples_iterates_lazily():
    s = RandomSampler(range(10), replacement=True, num_samples=int(1e10))
    assert len(s) == 10 ** 10
    before = mpamp.backends.cpu.allocator_stats()
    tracemalloc.start()
    try:
        it = iter(s)
        got = _take(it, 20000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak                       # a chunk, not 80 GB of indices
    after = mpamp.backends.cpu.allocator_stats()
    assert after["peak_in_use_bytes"] - before["peak_in_use_bytes"] < 4 << 20
    assert set(got) == set(range(10))
    counts = np.bincount(got, minlength=10) / len(got)
    np.testing.assert_allclose(counts, 0.1, atol=5 * np.sqrt(0.09 / len(got)))


def test_mingpt_style_loader():
    x = mpamp.arange(40).reshape(20, 2)
    ds = TensorDataset(x, mpamp.arange(20))
    loader = DataLoader(ds, sampler=RandomSampler(ds, replacement=True, num_samples=int(1e10)),
                        shuffle=False, pin_memory=True, batch_size=4, num_workers=4)
    assert len(loader) == int(1e10) // 4
    it = iter(loader)
    for _ in range(5):
        xb, yb = next(it)
        assert xb.shape == (4, 2) and yb.shape == (4,)
        assert [a // 2 for a in xb[:, 0].tolist()] == yb.tolist()


@pytest.mark.parametrize("chunk", [2, 6, 1024])
def test_same_indices_whatever_the_chunk(monkeypatch, chunk):
    n, count = 13, 5000
    want = mpamp.randint(0, n, (count,), generator=mpamp.Generator().manual_seed(4)).tolist()
    monkeypatch.setattr(sampler_mod, "_CHUNK", chunk)
    s = RandomSampler(range(n), replacement=True, num_samples=count,
                      generator=mpamp.Generator().manual_seed(4))
    assert list(s) == want


def test_without_replacement_repeats_permutations():
    g = mpamp.Generator().manual_seed(1)
    s = list(RandomSampler(range(7), num_samples=17, generator=g))
    assert len(s) == 17
    assert sorted(s[:7]) == sorted(s[7:14]) == list(range(7))
    assert len(set(s[14:])) == 3
    short = list(RandomSampler(range(7), num_samples=4, generator=g))
    assert len(short) == 4 and len(set(short)) == 4
    assert sorted(RandomSampler(range(7), generator=g)) == list(range(7))


def test_default_stream_seeds_a_private_generator_per_pass():
    ds = range(50)
    mpamp.manual_seed(3)
    a = list(RandomSampler(ds, replacement=True, num_samples=3000))
    mpamp.manual_seed(3)
    it = iter(RandomSampler(ds, replacement=True, num_samples=3000))
    b = []
    for _ in range(3000):
        b.append(next(it))
        if len(b) % 500 == 0:
            mpamp.rand(7)                           # other draws (dropout) between batches
    assert a == b
    mpamp.manual_seed(3)
    e1, e2 = list(RandomSampler(ds)), list(RandomSampler(ds))
    assert e1 != e2 and sorted(e1) == list(range(50))


def test_sequential_and_batch_samplers_unchanged():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2


def test_subset_random_sampler():
    g = mpamp.Generator().manual_seed(0)
    s = SubsetRandomSampler([5, 6, 7, 8], generator=g)
    assert len(s) == 4 and sorted(s) == [5, 6, 7, 8]
    orders = {tuple(s) for _ in range(20)}
    assert len(orders) > 1


def test_weighted_random_sampler():
    w = [0.1, 0.0, 0.9]
    s = WeightedRandomSampler(w, 20000, generator=mpamp.Generator().manual_seed(2))
    got = np.bincount(list(s), minlength=3) / 20000
    assert len(s) == 20000 and got[1] == 0
    np.testing.assert_allclose(got, [0.1, 0, 0.9], atol=0.02)
    no_rep = list(WeightedRandomSampler(mpamp.tensor([1.0, 2.0, 3.0]), 3, replacement=False))
    assert sorted(no_rep) == [0, 1, 2]


def test_sampler_errors_match_torch():
    cases = [
        (lambda: RandomSampler(range(3), num_samples=0), ValueError,
         "num_samples should be a positive integer value, but got num_samples=0"),
        (lambda: RandomSampler(range(3), num_samples=2.0), ValueError, "num_samples=2.0"),
        (lambda: RandomSampler(range(3), replacement=1), TypeError,
         "replacement should be a boolean value, but got replacement=1"),
        (lambda: WeightedRandomSampler([1, 2], 0), ValueError,
         "num_samples should be a positive integer value, but got num_samples=0"),
        (lambda: WeightedRandomSampler([1, 2], True), ValueError, "num_samples=True"),
        (lambda: WeightedRandomSampler([1, 2], 2, replacement=1), ValueError,
         "replacement should be a boolean value, but got replacement=1"),
        (lambda: WeightedRandomSampler([[1, 2]], 2), ValueError,
         "weights should be a 1d sequence but given weights have shape \\(1, 2\\)"),
        (lambda: list(WeightedRandomSampler([1, 2], 3, replacement=False)), RuntimeError,
         "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()


def test_torch_errors_are_the_same():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data
    for kwargs in (dict(num_samples=0), dict(num_samples=-3), dict(replacement="yes")):
        with pytest.raises((ValueError, TypeError)) as et:
            tdata.RandomSampler(range(3), **kwargs)
        with pytest.raises(et.type) as em:
            RandomSampler(range(3), **kwargs)
        assert str(em.value) == str(et.value)
    ts = tdata.RandomSampler(range(10), replacement=True, num_samples=int(1e10))
    assert len(ts) == len(RandomSampler(range(10), replacement=True, num_samples=int(1e10)))


class _EpochSampler(Sampler):
    """A DistributedSampler-shaped sampler: the order depends on set_epoch."""

    def __init__(self, n):
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = mpamp.Generator().manual_seed(self.epoch)
        return iter(mpamp.randperm(self.n, generator=g).tolist())

    def __len__(self):
        return self.n


def test_loader_with_set_epoch_sampler_and_plain_iterables():
    ds = TensorDataset(mpamp.arange(12))
    sampler = _EpochSampler(12)
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    assert loader.sampler is sampler and len(loader) == 3
    orders = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        orders.append(mpamp.cat([b[0] for b in loader]).tolist())
    assert orders[0] != orders[1] and all(sorted(o) == list(range(12)) for o in orders)
    sampler.set_epoch(1)
    assert mpamp.cat([b[0] for b in loader]).tolist() == orders[1]
    plain = DataLoader(list(range(10)), sampler=[3, 1, 2], batch_size=2)
    assert [b.tolist() for b in plain] == [[3, 1], [2]]
    once = DataLoader(list(range(10)), sampler=iter([4, 5]), batch_size=None)
    assert [int(b) for b in once] == [4, 5]
    with pytest.raises(TypeError, match="has no len"):
        len(DataLoader(list(range(10)), sampler=iter([1, 2])))
