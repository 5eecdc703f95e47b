"""DataLoader, as torch.utils.data.dataloader (single-process), with default_collate,
default_convert and get_worker_info. Owns batching; tensors are built with mpamp.stack /
mpamp.as_tensor. num_workers, pin_memory and friends are accepted for source compatibility,
and batches are always produced in the calling process (no worker processes).

Resumable (an extension, as torchdata's StatefulDataLoader): state_dict() and
load_state_dict() come from _stateful.StatefulLoader.
"""
import collections.abc

import numpy as np

from ... import _C
from ..._factories import as_tensor, tensor
from ..._ops_matmul import stack
from ..._tensor import Tensor
from .dataset import IterableDataset, TensorDataset
from ._stateful import StatefulLoader
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


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


class DataLoader(StatefulLoader):
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
        StatefulLoader.__init__(self)

    def _batches(self):
        """The epoch's batches; index lists come through self._indices (see _stateful)."""
        if self._iterable:
            return self._iter_iterable()
        if self.batch_sampler is not None:
            batches = self._indices(self.batch_sampler)
            if type(self.dataset) is TensorDataset and self.collate_fn is default_collate and \
                    all(_rows_fast(t) for t in self.dataset.tensors):
                return ([_take_rows(t, batch) for t in self.dataset.tensors]
                        for batch in batches)
            return (self.collate_fn(self._fetch(batch)) for batch in batches)
        return (self.collate_fn(self.dataset[i]) for i in self._indices(self.sampler))

    def _fetch(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def _iter_iterable(self):
        if self.batch_size is None:
            for item in self.dataset:
                yield self.collate_fn(item)
            self._source_done = True
            return
        batch = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        self._source_done = True
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
