"""DataLoader.state_dict()/load_state_dict(): an mpamp extension in the spirit of torchdata's
StatefulDataLoader. A state says how many batches the current epoch has produced, whether it
has ended (the loop saw StopIteration) or has handed out its last batch (the next next() ends it),
and the state of what can restore its own position (the built-in samplers, or an
IterableDataset with state_dict/load_state_dict); after load_state_dict the next iteration
continues that epoch with the batches an uninterrupted run would have produced. Any other
sampler or dataset is fast-forwarded (its first batches are produced again and dropped).
"""
import itertools

from .sampler import BatchSampler

_KEYS = ("batches_yielded", "epoch_finished", "source_exhausted", "source")


class StatefulLoader:
    """The epoch bookkeeping of DataLoader; the subclass provides _batches() and uses
    _indices() for the sampler it iterates."""

    def __init__(self):
        self._yielded = 0           # batches the current epoch has produced
        self._finished = False      # ... and it ran to its end (StopIteration)
        self._source_done = False   # the sampler / dataset iterator is exhausted
        self._live = None           # this epoch's index iterator (map-style datasets)
        self._pending = None        # (batches produced, batches to fast-forward): a resume

    def __iter__(self):
        if self.worker_init_fn is not None:
            self.worker_init_fn(0)
        (count, skip), self._pending = self._pending or (0, 0), None
        self._yielded, self._finished, self._source_done = count, False, False
        self._live = None
        if skip is None:            # resumed after the epoch's last batch: it just ends
            return self._counted(iter(()), 0)
        return self._counted(self._batches(), skip)

    def _counted(self, batches, skip):
        for batch in itertools.islice(batches, skip, None):
            self._yielded += 1
            yield batch
        self._finished = True

    def _indices(self, sampler):
        """Iterate sampler, noting when it is exhausted."""
        def run(it):
            yield from it
            self._source_done = True
        self._live = run(iter(sampler))
        return self._live

    def _stateful_source(self):
        """What restores its own position: the dataset (iterable), the batch sampler or the
        sampler; None when the loader has to fast-forward."""
        if self._iterable:
            src = self.dataset
        else:
            src = self.batch_sampler if self.batch_sampler is not None else self.sampler
            if isinstance(src, BatchSampler) and not hasattr(src.sampler, "state_dict"):
                return None
        return src if hasattr(src, "state_dict") and hasattr(src, "load_state_dict") else None

    def _epoch_length(self):
        try:
            return len(self)
        except TypeError:           # an IterableDataset without __len__
            return float("inf")

    def state_dict(self):
        """Extension (torchdata's StatefulDataLoader): where the current epoch stands."""
        src = self._stateful_source()
        if src is not None and not self._iterable and self._live is not None and \
                not self._source_done and self._yielded >= self._epoch_length():
            # Every batch is out: finish the sampler's pass now (a drop_last remainder, lazy
            # draws), as the epoch's closing next() would, so the state is of a pass that ended.
            for _ in self._live:
                pass
        return {"batches_yielded": self._yielded, "epoch_finished": self._finished,
                "source_exhausted": self._source_done,
                "source": src.state_dict() if src is not None else None}

    def load_state_dict(self, state_dict):
        """Extension: the next iteration resumes the epoch state_dict() described."""
        if not isinstance(state_dict, dict) or not set(_KEYS) <= set(state_dict):
            raise ValueError(f"DataLoader.load_state_dict expected a dict with keys "
                             f"{list(_KEYS)} (from state_dict()), got {state_dict!r:.200}")
        src = self._stateful_source()
        if (src is None) != (state_dict["source"] is None):
            raise ValueError("DataLoader.load_state_dict: the state was saved by a loader "
                             "whose sampler or dataset " + ("had a" if src is None else "had no")
                             + " state of its own; build the loader the same way")
        count = int(state_dict["batches_yielded"])
        if src is not None:
            src.load_state_dict(state_dict["source"])
        self._yielded, self._finished = count, bool(state_dict["epoch_finished"])
        self._source_done = bool(state_dict["source_exhausted"])
        self._pending = None
        if self._finished:
            return                  # the next iteration is a new epoch
        if self._source_done or (src is None and count >= self._epoch_length()):
            self._pending = (count, None)       # only the epoch's end is left
        elif count:
            self._pending = (count, 0 if src is not None else count)
