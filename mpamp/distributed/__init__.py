"""mpamp.distributed: importable with torch.distributed's names so scripts that branch on DDP
import cleanly. Distributed training is not available yet (its engine comes in its own
issue): is_available() is False, and the calls that would start or use a process group raise
a RuntimeError saying so."""

_MSG = ("mpamp.distributed.{}(): distributed training is not available in mpamp yet; run a "
        "single process (mpamp.distributed.is_available() is False)")


def is_available():
    """False: mpamp has no distributed backend yet."""
    return False


def is_initialized():
    """False: no process group can exist."""
    return False


def is_torchelastic_launched():
    """False: no elastic launcher is used."""
    return False


def _unavailable(name):
    def call(*args, **kwargs):
        raise RuntimeError(_MSG.format(name))
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Unavailable: raises RuntimeError (torch.distributed.{name})."
    return call


init_process_group = _unavailable("init_process_group")
destroy_process_group = _unavailable("destroy_process_group")
get_rank = _unavailable("get_rank")
get_world_size = _unavailable("get_world_size")
barrier = _unavailable("barrier")
all_reduce = _unavailable("all_reduce")
all_gather = _unavailable("all_gather")
broadcast = _unavailable("broadcast")
reduce = _unavailable("reduce")


class ReduceOp:
    """Reduction names, as torch.distributed.ReduceOp."""
    SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG = ("sum", "product", "min", "max", "band",
                                                    "bor", "bxor", "avg")


__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group",
           "get_rank", "get_world_size", "barrier", "all_reduce", "all_gather", "broadcast",
           "reduce", "ReduceOp"]
