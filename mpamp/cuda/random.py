"""mpamp.cuda.random: the CUDA generator's seeding and state, as torch.cuda.random.

Seeding never fails: without a GPU the seed is kept (torch queues it until CUDA starts), so
`torch.cuda.manual_seed(1337)` in a script runs on a CPU machine. Reading the state or the
initial seed needs a device, as in torch.
"""
from .. import _random


def _require(fname):
    from . import _no_cuda_error, is_available
    if not is_available():
        raise _no_cuda_error(fname)


def manual_seed(seed):
    """Seed the CUDA generator (kept even without a GPU); returns None, as torch."""
    _random.cuda_generator.manual_seed(seed)


def manual_seed_all(seed):
    """Seed the generators of every CUDA device (mpamp has one CUDA generator)."""
    manual_seed(seed)


def seed():
    """Seed the CUDA generator from the OS entropy source; returns None, as torch."""
    _random.cuda_generator.seed()


def seed_all():
    """seed() for every device."""
    seed()


def initial_seed():
    """The CUDA generator's seed (needs a CUDA device)."""
    _require("initial_seed")
    return _random.cuda_generator.initial_seed()


def get_rng_state(device="cuda"):
    """The CUDA generator's state as a uint8 tensor (needs a CUDA device)."""
    _require("get_rng_state")
    return _random.cuda_generator.get_state()


def get_rng_state_all():
    """One state per CUDA device: [] without a GPU."""
    from . import device_count
    return [get_rng_state() for _ in range(device_count())]


def set_rng_state(new_state, device="cuda"):
    """Restore the CUDA generator's state (ignored without a GPU, as torch queues it)."""
    from . import is_available
    if is_available():
        _random.cuda_generator.set_state(new_state)


def set_rng_state_all(new_states):
    """set_rng_state for each device's state."""
    for state in new_states:
        set_rng_state(state)
