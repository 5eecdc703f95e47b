"""Random number generators: counter-based (Philox) streams of (seed, offset).

The C core draws numbers for a given (seed, offset); this module only keeps the state, so
the same seed gives the same numbers on every ISA level, thread count and run. A state is
a uint8 tensor of 16 bytes, the seed then the offset as little-endian uint64 (the layout of
torch's CUDA Philox state), so torch-style checkpoint code saves and restores it unchanged.
"""
import os
import struct
import threading

from . import _C

_STATE_BYTES = 16


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
        """The state as a uint8 tensor of 16 bytes (seed, offset), as torch's get_state."""
        with self._lock:
            raw = struct.pack("<QQ", self._seed, self._offset)
        t = _C._empty((_STATE_BYTES,), _C.uint8)
        _C._memoryview(t)[:] = raw
        return t

    def set_state(self, new_state):
        """Restore a state returned by get_state (a uint8 tensor of 16 bytes)."""
        seed, offset = _unpack_state(new_state)
        with self._lock:
            self._seed, self._offset = seed, offset
        return self

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


def _unpack_state(state):
    """(seed, offset) from a state tensor, with torch's errors for the wrong type or size."""
    if not isinstance(state, _C.TensorBase):
        raise TypeError(f"expected a mpamp.ByteTensor, but got {type(state).__name__}")
    if state.dtype is not _C.uint8:
        raise TypeError("RNG state must be a mpamp.ByteTensor")
    if state.numel() != _STATE_BYTES:
        raise RuntimeError(f"Expected a Philox generator state of size {_STATE_BYTES} (seed "
                           f"and offset, as mpamp.get_rng_state() returns) but found the input "
                           f"RNG state size to be {state.numel()}")
    raw = bytes(_C._memoryview(state.detach().contiguous()))
    return struct.unpack("<QQ", raw)


def _signed(x):
    return x - (1 << 64) if x >= (1 << 63) else x


default_generator = Generator()
# The CUDA generator (mpamp.cuda.manual_seed etc.): kept even without a GPU, as torch queues
# CUDA seeds until CUDA starts, so seeding never fails on a CPU machine.
cuda_generator = Generator("cuda")


def manual_seed(seed):
    """Seed the default generator and the CUDA one (returns the default), as torch."""
    cuda_generator.manual_seed(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seed the default generator from the OS and return the seed (CUDA's gets it too)."""
    s = default_generator.seed()
    cuda_generator.manual_seed(s)
    return s


def initial_seed():
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state: a uint8 tensor (16 bytes), as torch.get_rng_state."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state from get_rng_state()'s tensor."""
    default_generator.set_state(new_state)
