"""A failing rank ends the job. Once a multi-rank process group exists (and from the start
under `python -m mpamp.distributed.run`), an uncaught exception on any rank prints its
traceback with every line prefixed `[rankN]:` and calls MPI_Abort, so the other ranks (maybe
blocked in a collective the failed one will never join) are ended by mpiexec within seconds;
mpiexec's own message names the rank too. A rank whose collective timed out aborts at exit
instead of finalizing MPI (MPI_Finalize would wait for the stuck collective)."""
import atexit
import os
import sys
import traceback

_state = {"installed": False, "previous": None, "rank": 0, "world": 1, "broken": False,
          "atexit": False}


def _mpi_if_started():
    """mpi4py's MPI module when MPI is initialized (never initializes it)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        return mpi
    return None


def abort_job(reason, code=1):
    """Print why and end every rank of the job (this process exits with code)."""
    rank, world = _state["rank"], _state["world"]
    try:
        sys.stdout.flush()
        sys.stderr.write(f"mpamp.distributed: rank {rank} (of {world}) {reason}; aborting the "
                         f"MPI job\n")
        sys.stderr.flush()
    except Exception:           # a closed stream must not stop the abort
        pass
    mpi = _mpi_if_started()
    if mpi is not None:
        mpi.COMM_WORLD.Abort(code)
    os._exit(code)


def format_for_rank(etype, value, tb, rank):
    """The traceback, each line prefixed with [rankN]: (torchrun's style)."""
    text = "".join(traceback.format_exception(etype, value, tb)).rstrip("\n")
    return "".join(f"[rank{rank}]: {line}\n" for line in text.split("\n"))


def _excepthook(etype, value, tb):
    try:
        sys.stderr.write(format_for_rank(etype, value, tb, _state["rank"]))
    finally:
        abort_job(f"raised {etype.__name__}: {value}")


def _at_exit():
    if _state["broken"]:
        abort_job("has a collective that never completed (it timed out)")


def install(rank, world):
    """Abort the whole job on an uncaught exception of this rank (world > 1)."""
    _state["rank"], _state["world"] = rank, world
    if not _state["atexit"]:
        atexit.register(_at_exit)
        _state["atexit"] = True
    if world > 1 and not _state["installed"]:
        _state["previous"] = sys.excepthook
        sys.excepthook = _excepthook
        _state["installed"] = True


def uninstall():
    """Restore the previous sys.excepthook (destroy_process_group)."""
    if _state["installed"]:
        if sys.excepthook is _excepthook:
            sys.excepthook = _state["previous"]
        _state["installed"] = False


def mark_broken():
    """A collective timed out: at exit, abort instead of finalizing MPI."""
    _state["broken"] = True
