"""DistributedSampler (torch.utils.data.distributed): each of num_replicas ranks iterates over
its own share of the dataset. With shuffle, every rank draws the same permutation from
seed + epoch (mpamp's Philox randperm, so the order differs from torch's, the partition rule
is torch's): padded by repeating indices from the start so every rank gets the same count, or
trimmed with drop_last; rank r takes positions r, r + num_replicas, ..."""
import math

from ..._ops_random import randperm
from ..._random import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _from_group(value, getter):
    if value is not None:
        return value
    from ... import distributed as dist
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return getter()


class DistributedSampler(Sampler):
    """Indices of this rank's share of dataset (torch's partition rule)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        from ... import distributed as dist
        num_replicas = _from_group(num_replicas, dist.get_world_size)
        rank = _from_group(rank, dist.get_rank)
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, "
                             f"{num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif indices:
            pad = self.total_size - len(indices)
            indices += (indices * math.ceil(pad / len(indices)))[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Reshuffle for this epoch (the same on every rank for the same seed)."""
        self.epoch = epoch
