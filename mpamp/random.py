"""mpamp.random: torch.random's names for the default generator, and fork_rng (run a block on
a copy of the random state, restored afterwards)."""
import contextlib

from ._random import (cuda_generator, default_generator, get_rng_state, initial_seed,
                      manual_seed, seed, set_rng_state)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed",
           "fork_rng"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Save the CPU (and CUDA) generator state, run the block, restore it on exit."""
    if not enabled:
        yield
        return
    saved = (default_generator.get_state(), cuda_generator.get_state())
    try:
        yield
    finally:
        default_generator.set_state(saved[0])
        cuda_generator.set_state(saved[1])
