"""Rank variables. MPI launchers export their own (Open MPI's OMPI_COMM_WORLD_*, MPICH and
Intel MPI's PMI_RANK/PMI_SIZE/MPI_LOCALRANKID/MPI_LOCALNRANKS); torch-style scripts read
torch's (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE) before init_process_group, so
`import mpamp` copies the launcher's into torch's names when RANK is not set already. Pure
environment work: nothing here starts MPI."""
import os

# (rank, world size, local rank, local world size) per launcher, first match wins
_LAUNCHERS = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
)
TORCH_NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


def launcher_ranks(env=None):
    """{RANK, WORLD_SIZE[, LOCAL_RANK, LOCAL_WORLD_SIZE]} from an MPI launcher's variables
    (strings, as the environment holds them), or None outside mpiexec."""
    env = os.environ if env is None else env
    for names in _LAUNCHERS:
        rank, size = env.get(names[0]), env.get(names[1])
        if rank is None or size is None or not (rank.isdigit() and size.isdigit()):
            continue
        found = {"RANK": rank, "WORLD_SIZE": size}
        local, local_size = env.get(names[2]), env.get(names[3])
        if local is not None and local.isdigit() and local_size and local_size.isdigit():
            found["LOCAL_RANK"], found["LOCAL_WORLD_SIZE"] = local, local_size
        return found
    return None


def export_launcher_env(env=None):
    """Set torch's rank variables from the MPI launcher's when RANK is unset; returns what was
    set (an empty dict when RANK was already there or no launcher is seen)."""
    env = os.environ if env is None else env
    if "RANK" in env:
        return {}
    found = launcher_ranks(env) or {}
    for name, value in found.items():
        env.setdefault(name, value)
    return found


def env_int(name, env=None):
    """An integer environment variable, or None when absent or not a number."""
    value = (os.environ if env is None else env).get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
