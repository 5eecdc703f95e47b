"""DistributedSampler (mpamp.utils.data.distributed): torch's partition rule (padding by
repeating from the start, or drop_last), shuffling from seed + epoch identical on every rank,
set_epoch, DataLoader use, and torch's errors. The ranks are simulated with num_replicas/rank
(no process group needed)."""
import math

import pytest

import mpamp
from mpamp.utils.data import DataLoader, DistributedSampler, TensorDataset


def _all_ranks(n, k, **kw):
    return [list(DistributedSampler(range(n), num_replicas=k, rank=r, **kw)) for r in range(k)]


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n", [0, 1, 5, 10, 11, 97])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_partitions_exactly(n, k, drop_last, shuffle):
    parts = _all_ranks(n, k, drop_last=drop_last, shuffle=shuffle, seed=7)
    sampler = DistributedSampler(range(n), num_replicas=k, rank=0, drop_last=drop_last)
    per_rank = (n // k) if (drop_last and n % k) else math.ceil(n / k)
    assert sampler.num_samples == len(sampler) == per_rank and sampler.total_size == per_rank * k
    assert all(len(p) == per_rank for p in parts)
    flat = sorted(i for p in parts for i in p)
    if drop_last or n % k == 0 or n == 0:
        assert len(set(flat)) == len(flat)                       # no index twice
        if not drop_last:
            assert flat == list(range(n))                        # and every index once
    else:
        assert set(flat) == set(range(n))                        # every index, padded
        assert len(flat) - n == per_rank * k - n                 # by exactly the shortfall
    # rank r takes positions r, r + k, ... of one common order
    order = [parts[p % k][p // k] for p in range(per_rank * k)]
    if not shuffle:
        base = list(range(n)) if n else []
        expect = (base * (per_rank * k // max(n, 1) + 1))[:per_rank * k] if not drop_last \
            else base[:per_rank * k]
        assert order == expect


def test_shuffle_is_the_same_on_every_rank_and_changes_with_epoch_and_seed():
    def order(seed, epoch, k=3):
        parts = []
        for r in range(k):
            s = DistributedSampler(range(30), num_replicas=k, rank=r, seed=seed)
            s.set_epoch(epoch)
            parts.append(list(s))
        return [parts[p % k][p // k] for p in range(30)]

    first = order(0, 0)
    assert sorted(first) == list(range(30)) and first != list(range(30))
    assert order(0, 0) == first                                  # reproducible
    assert order(0, 1) != first and sorted(order(0, 1)) == list(range(30))
    assert order(5, 0) != first
    s = DistributedSampler(range(30), num_replicas=3, rank=1, seed=4)
    assert s.epoch == 0 and s.seed == 4 and s.shuffle and not s.drop_last
    # the order is the permutation mpamp.randperm draws from seed + epoch
    perm = mpamp.randperm(30, generator=mpamp.Generator().manual_seed(0 + 1)).tolist()
    assert order(0, 1) == perm


def test_unshuffled_partition_equals_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for n in (0, 1, 5, 7, 10, 23):
        for k in (1, 2, 3, 4):
            for drop_last in (False, True):
                for r in range(k):
                    ours = DistributedSampler(range(n), num_replicas=k, rank=r, shuffle=False,
                                              drop_last=drop_last)
                    theirs = TorchSampler(range(n), num_replicas=k, rank=r, shuffle=False,
                                          drop_last=drop_last)
                    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert torch.utils.data.DistributedSampler is TorchSampler


def test_with_a_dataloader():
    data = TensorDataset(mpamp.arange(10).float(), mpamp.arange(10))
    seen = []
    for r in range(2):
        sampler = DistributedSampler(data, num_replicas=2, rank=r, shuffle=True, seed=1)
        loader = DataLoader(data, batch_size=2, sampler=sampler)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            seen.append((r, epoch, [y.tolist() for _, y in loader]))
    for epoch in range(2):
        mine = [b for r, e, batches in seen if e == epoch for b in batches]
        assert sorted(i for b in mine for i in b) == list(range(10))
    assert seen[0][2] != seen[1][2]                              # epochs differ
    assert mpamp.utils.data.distributed.DistributedSampler is DistributedSampler


def test_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(range(5), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match=r"Invalid rank -1"):
        DistributedSampler(range(5), num_replicas=2, rank=-1)
    if mpamp.distributed.is_available():
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            DistributedSampler(range(5))
    else:
        with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
            DistributedSampler(range(5))


def test_without_the_distributed_package(monkeypatch):
    monkeypatch.setattr(mpamp.distributed, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(range(5), rank=0)
    assert list(DistributedSampler(range(5), num_replicas=1, rank=0, shuffle=False)) == \
        [0, 1, 2, 3, 4]
