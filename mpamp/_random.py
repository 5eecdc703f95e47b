"""Random number generators: counter-based (Philox) streams of (seed, offset).

The C core draws numbers for a given (seed, offset); this module only keeps the state, so
the same seed gives the same numbers on every ISA level, thread count and run.
"""
import os
import threading

from . import _C


class Generator:
    """A random stream, as torch.Generator: manual_seed, seed, initial_seed, get/set_state."""

    def __init__(self, device="cpu"):
        self.device = device
        self._lock = threading.Lock()
        self._seed = 67280421310721   # torch's default seed
        self._offset = 0

    def manual_seed(self, seed):
        """Set the seed (any int; reduced modulo 2**64) and restart the stream."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        with self._lock:
            self._seed = seed % (1 << 64)
            self._offset = 0
        return self

    def seed(self):
        """Seed from the OS entropy source and return the new seed."""
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed the stream started from."""
        return self._seed

    def get_state(self):
        """The (seed, offset) state as a tuple that set_state accepts."""
        return (self._seed, self._offset)

    def set_state(self, state):
        """Restore a state returned by get_state."""
        seed, offset = state
        with self._lock:
            self._seed, self._offset = int(seed), int(offset)

    def _fill(self, tensor, kind, a, b):
        """Fill tensor in place from the stream and advance it."""
        with self._lock:
            seed, offset = self._seed, self._offset
            # Reserve the blocks before releasing the lock so concurrent users never overlap.
            used = _C._random_(tensor, kind, a, b, _signed(seed), _signed(offset))
            self._offset = (offset + used) % (1 << 64)
        return tensor

    def _draw(self, fn, *args):
        """fn(*args, seed, offset) -> (result, blocks_used): run it on the stream and advance."""
        with self._lock:
            seed, offset = self._seed, self._offset
            result, used = fn(*args, _signed(seed), _signed(offset))
            self._offset = (offset + used) % (1 << 64)
        return result


def _signed(x):
    return x - (1 << 64) if x >= (1 << 63) else x


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (returns it), as torch.manual_seed."""
    return default_generator.manual_seed(seed)


def seed():
    """Seed the default generator from the OS and return the seed."""
    return default_generator.seed()


def initial_seed():
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state."""
    return default_generator.get_state()


def set_rng_state(state):
    """Restore the default generator's state."""
    default_generator.set_state(state)
