"""mpamp.utils.data: datasets, samplers and DataLoader, as torch.utils.data (batches are built
in the calling process). The submodules mirror torch's paths (dataset, sampler, dataloader,
distributed), so `from mpamp.utils.data.dataloader import DataLoader` works as in torch."""
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .distributed import DistributedSampler
from .dataset import (ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "DataLoader", "default_collate",
           "default_convert", "random_split", "get_worker_info"]
