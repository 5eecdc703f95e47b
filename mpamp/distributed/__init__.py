"""mpamp.distributed: torch.distributed's API on MPI (through mpi4py). Process groups and
collectives on CPU tensors of every dtype; DDP is mpamp.nn.parallel.DistributedDataParallel;
the launcher is `python -m mpamp.distributed.run`. Importing this module (import mpamp does)
copies an MPI launcher's rank variables into torch's (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE) when RANK is unset, so torch-style scripts work under plain mpiexec; MPI
itself starts only in init_process_group."""
import importlib.util
import os

from . import _env
from ._group import (Backend, GroupMember, ProcessGroup, destroy_process_group, get_backend,
                     group, init_process_group, is_initialized, new_group)
from ._reduce_op import ReduceOp
from ._work import DistBackendError, DistError, Work
from .distributed_c10d import (all_gather, all_gather_into_tensor, all_gather_object,
                               all_reduce, barrier, broadcast, broadcast_object_list,
                               get_global_rank, get_group_rank, get_process_group_ranks,
                               get_rank, get_world_size, reduce, reduce_scatter,
                               reduce_scatter_tensor)

_env.export_launcher_env()


def is_available():
    """True when mpi4py (and so an MPI library) can be imported."""
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):      # a broken or blocked installation
        return False


def is_mpi_available():
    """True when the MPI backend can be used (mpi4py is installed)."""
    return is_available()


def is_gloo_available():
    """True when backend='gloo' works: mpamp runs it on MPI."""
    return is_available()


def is_nccl_available():
    """False: the NCCL backend for CUDA tensors is not available yet."""
    return False


def is_torchelastic_launched():
    """True under torchrun (TORCHELASTIC_RUN_ID set), as torch; mpamp's launcher is not
    elastic."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


__all__ = ["is_available", "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "is_torchelastic_launched", "is_initialized", "init_process_group",
           "destroy_process_group", "new_group", "get_backend", "get_rank", "get_world_size",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "barrier",
           "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "all_gather_object",
           "broadcast_object_list", "ReduceOp", "Backend", "GroupMember", "ProcessGroup",
           "Work", "group", "DistError", "DistBackendError"]
