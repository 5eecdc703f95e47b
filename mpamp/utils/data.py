"""Datasets, samplers and DataLoader, as torch.utils.data (single-process).

Owns batching and shuffling only; tensors are built with mpamp.stack / mpamp.as_tensor.
num_workers, pin_memory and friends are accepted for source compatibility, and batches are
always produced in the calling process (no worker processes).
"""
import bisect
import collections.abc
import itertools

import numpy as np

from .. import _C
from .._factories import as_tensor, randint, tensor
from .._ops_matmul import stack
from .._random import default_generator
from .._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
           "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "random_split", "get_worker_info"]


# ---- datasets ----

class Dataset:
    """A map-style dataset: subclasses implement __getitem__ (and usually __len__)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses implement __iter__."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    """Samples are tuples of the i-th rows of the given tensors (same first dimension)."""

    def __init__(self, *tensors):
        sizes = [t.size(0) for t in tensors]
        if not tensors or any(n != sizes[0] for n in sizes):
            raise ValueError(f"Size mismatch between tensors: first dimensions are "
                             f"{', '.join(map(str, sizes)) or 'missing (no tensors)'}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class ConcatDataset(Dataset):
    """The concatenation of several map-style datasets."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        i = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[i - 1] if i > 0 else 0
        return self.datasets[i][idx - start]


class Subset(Dataset):
    """The samples of a dataset at the given indices."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def _randperm(n, generator):
    """A random permutation of range(n) drawn from an mpamp Generator."""
    if n == 0:
        return []
    gen = generator if generator is not None else default_generator
    keys = randint(0, 1 << 62, (n,), generator=gen).numpy()
    return np.argsort(keys, kind="stable").tolist()


def random_split(dataset, lengths, generator=None):
    """Split a dataset into non-overlapping Subsets of the given lengths (or fractions)."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-6:
        counts = [int(f * n) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _randperm(n, generator)
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out


# ---- samplers ----

class Sampler:
    """Base class of samplers: iterables over dataset indices."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh random permutation of the indices each epoch, drawn from generator."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            gen = self.generator if self.generator is not None else default_generator
            return iter(randint(0, n, (self.num_samples,), generator=gen).tolist())
        out = []
        while len(out) < self.num_samples:
            out.extend(_randperm(n, self.generator))
        return iter(out[:self.num_samples])

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of a sampler into lists of batch_size."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---- collation ----

_COLLATE_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found {}")


def _numpy_to_tensor(arr):
    if arr.dtype.kind in "USO":
        raise TypeError(_COLLATE_ERR.format(arr.dtype))
    return as_tensor(np.ascontiguousarray(arr))


def default_convert(data):
    """Convert NumPy arrays (also inside mappings and sequences) to tensors, as torch's."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and data.dtype.kind not in "USO":
        return _numpy_to_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "USO":
        return _numpy_to_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data


def _same_mapping(like, items):
    """items as a mapping of like's type when that type can be rebuilt, else a dict."""
    if type(like) is dict:
        return items
    try:
        out = type(like)()
        out.update(items)
        return out
    except (TypeError, AttributeError):
        return items


def default_collate(batch):
    """Merge a list of samples into a batch, as torch.utils.data.default_collate."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        return stack([_numpy_to_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic):
        if elem.dtype.kind in "USO":
            raise TypeError(_COLLATE_ERR.format(elem.dtype))
        return _numpy_to_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=_C.float32)    # torch: float64 (mpamp has no float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _same_mapping(elem, {key: default_collate([d[key] for d in batch])
                                    for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):     # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(b) != size for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(_COLLATE_ERR.format(type(elem)))


def get_worker_info():
    """Always None: mpamp loads batches in the main process."""
    return None


# ---- the loader ----

def _rows_fast(t):
    """True when a batch of t can be gathered in one NumPy take (same result as stacking)."""
    return t.device.type == "cpu" and not t.requires_grad and t.dim() > 0


def _take_rows(t, indices):
    """mpamp.stack([t[i] for i in indices]) in one gather (bf16 handled as raw bits)."""
    bits = np.asarray(_C._memoryview(t if t.is_contiguous() else t.contiguous()))
    return _C._from_buffer(np.ascontiguousarray(bits[indices]), t.dtype == _C.bfloat16)[0]


class DataLoader:
    """Iterates over a dataset in (optionally shuffled) batches, as torch's DataLoader."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or \
                num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 "sampler/batch_sampler option")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            if self._iterable:
                BatchSampler([], batch_size, drop_last)     # validates the arguments
            else:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if batch_size is not None or batch_sampler is not None \
                else default_convert
        self.collate_fn = collate_fn

    def __iter__(self):
        if self.worker_init_fn is not None:
            self.worker_init_fn(0)
        if self._iterable:
            return self._iter_iterable()
        if self.batch_sampler is not None:
            if type(self.dataset) is TensorDataset and self.collate_fn is default_collate and \
                    all(_rows_fast(t) for t in self.dataset.tensors):
                return ([_take_rows(t, batch) for t in self.dataset.tensors]
                        for batch in self.batch_sampler)
            return (self.collate_fn(self._fetch(batch)) for batch in self.batch_sampler)
        return (self.collate_fn(self.dataset[i]) for i in self.sampler)

    def _fetch(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def _iter_iterable(self):
        if self.batch_size is None:
            for item in self.dataset:
                yield self.collate_fn(item)
            return
        batch = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
