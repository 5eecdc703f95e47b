"""Samplers, as torch.utils.data.sampler: iterables over dataset indices. Random ones draw
lazily in chunks from mpamp's Philox stream, so RandomSampler(replacement=True,
num_samples=10**10) costs memory for one chunk, and the indices are the same for a seed
whatever the chunk size. Without generator=, each pass draws a seed from the default stream
for a private generator (as torch does), so other users of the default stream between batches
(dropout) do not change the order.

Resumable (an extension, in the spirit of torchdata's StatefulDataLoader): the built-in samplers
have state_dict()/load_state_dict(). A state records the generator state the current pass
started from and how many indices the pass has handed out; after load_state_dict the next pass
regenerates that pass and continues after those indices, so a shuffled epoch resumes mid-way to
the same order. A generator passed to a sampler should serve only that sampler (draws others
make from it between a pass's lazy chunks are not replayed)."""
import itertools

from ..._factories import randint, tensor
from ..._ops_random import multinomial, randperm
from ..._random import Generator, default_generator
from ..._tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

# Indices drawn per call: even, so consecutive chunks read consecutive Philox blocks (2 draws
# per block) and the concatenation equals one big draw.
_CHUNK = 1024


class Sampler:
    """Base class of samplers: iterables over dataset indices."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


def _check_state(obj, state, keys):
    if not isinstance(state, dict) or not set(keys) <= set(state):
        raise ValueError(f"{type(obj).__name__}.load_state_dict expected a dict with keys "
                         f"{sorted(keys)} (from state_dict()), got {state!r:.200}")
    return state


class _Resumable:
    """Pass bookkeeping of the built-in samplers: where the current pass's random stream
    started, how many indices it has handed out, and a pending resume for the next pass."""

    _pass_state = None      # generator state before the current pass drew anything
    _yielded = 0            # indices the current pass has handed out
    _resume = None          # (pass_state, yielded) that the next pass replays

    def _begin(self, generator):
        """(generator for this pass, indices to skip): a fresh pass, or the pending resume."""
        if self._resume is None:
            gen = generator() if callable(generator) else generator
            self._pass_state = gen.get_state() if gen is not None else None
            self._yielded = 0
            return gen, 0
        self._pass_state, skip = self._resume
        self._resume = None
        own = getattr(self, "generator", None)
        gen = None
        if self._pass_state is not None:
            gen = (own if own is not None else Generator()).set_state(self._pass_state)
        self._yielded = skip
        return gen, skip

    def _count(self, indices, skip=0):
        """Hand out indices after the first `skip`, counting them."""
        for i in itertools.islice(indices, skip, None):
            self._yielded += 1
            yield i

    def state_dict(self):
        """Extension (torchdata-style): where this sampler's current pass stands."""
        own = getattr(self, "generator", None)
        return {"pass_state": self._pass_state, "yielded": self._yielded,
                "generator": own.get_state() if own is not None else None}

    def load_state_dict(self, state_dict):
        """Extension: the next pass resumes the pass state_dict() described."""
        state = _check_state(self, state_dict, ("pass_state", "yielded", "generator"))
        own = getattr(self, "generator", None)
        if own is not None and state["generator"] is not None:
            own.set_state(state["generator"])
        done = state["yielded"] >= len(self)
        self._resume = None if done or (state["pass_state"] is None and not state["yielded"]) \
            else (state["pass_state"], int(state["yielded"]))
        self._pass_state, self._yielded = state["pass_state"], int(state["yielded"])


class SequentialSampler(_Resumable, Sampler):
    """Indices 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        _, skip = self._begin(None)
        yield from self._count(iter(range(len(self.data_source))), skip)

    def __len__(self):
        return len(self.data_source)


def _pass_generator(generator):
    """generator, or a private one seeded from the default stream (one draw per pass)."""
    if generator is not None:
        return generator
    seed = randint(0, 2 ** 63 - 1, (1,), generator=default_generator).item()
    return Generator().manual_seed(seed)


def _stream_of(generator):
    """The generator draws come from: the given one, else the default stream."""
    return generator if generator is not None else default_generator


def _randint_lazily(n, count, gen):
    """count indices uniform in [0, n), drawn _CHUNK at a time."""
    for start in range(0, count, _CHUNK):
        yield from randint(0, n, (min(_CHUNK, count - start),), generator=gen).tolist()


class RandomSampler(_Resumable, Sampler):
    """Random indices: a fresh permutation each pass (repeated while num_samples is larger
    than the dataset), or num_samples independent draws with replacement; drawn lazily."""

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
        gen, skip = self._begin(lambda: _pass_generator(self.generator))
        yield from self._count(self._indices(gen), skip)

    def _indices(self, gen):
        n = len(self.data_source)
        if self.replacement:
            yield from _randint_lazily(n, self.num_samples, gen)
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=gen).tolist()
        rest = self.num_samples % n
        if rest:
            yield from randperm(n, generator=gen).tolist()[:rest]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(_Resumable, Sampler):
    """The given indices in a random order each pass."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        gen, skip = self._begin(_stream_of(self.generator))
        order = randperm(len(self.indices), generator=gen).tolist()
        yield from self._count((self.indices[i] for i in order), skip)

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(_Resumable, Sampler):
    """num_samples indices in [0, len(weights)), index i with probability weights[i] / sum."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or \
                num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = weights.detach().float() if isinstance(weights, Tensor) else \
            tensor(weights, dtype="float32")
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        gen, skip = self._begin(_stream_of(self.generator))
        drawn = multinomial(self.weights, self.num_samples, self.replacement, generator=gen)
        yield from self._count(iter(drawn.tolist()), skip)

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

    def state_dict(self):
        """Extension: the wrapped sampler's state (batches end on its index boundaries)."""
        inner = getattr(self.sampler, "state_dict", None)
        return {"sampler": inner() if inner is not None else None}

    def load_state_dict(self, state_dict):
        """Extension: resume the wrapped sampler (it must have load_state_dict)."""
        state = _check_state(self, state_dict, ("sampler",))
        if state["sampler"] is not None:
            self.sampler.load_state_dict(state["sampler"])


