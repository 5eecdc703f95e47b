"""The program each rank of `python -m mpamp.distributed.run` runs: exports torch's rank
variables from the MPI launcher's (before the script, which may read them before
init_process_group), sets the thread count for NumPy/OpenMP from cores / local ranks unless
the user chose one, then runs the script (or -m module) as __main__. An exception or a
non-zero exit of the script ends the whole job with a message naming this rank."""
import os
import runpy
import sys

from . import _env, _failure


def _export():
    found = _env.export_launcher_env()
    env = os.environ
    if "RANK" not in env:          # started by hand, not by mpiexec: a world of one
        for name in _env.TORCH_NAMES:
            env.setdefault(name, "1" if "SIZE" in name else "0")
    env.setdefault("LOCAL_RANK", env["RANK"])
    env.setdefault("LOCAL_WORLD_SIZE", env.get("WORLD_SIZE", "1"))
    env.setdefault("GROUP_RANK", str(int(env["RANK"]) // max(1, int(env["LOCAL_WORLD_SIZE"]))))
    env.setdefault("ROLE_RANK", env["RANK"])
    env.setdefault("ROLE_WORLD_SIZE", env.get("WORLD_SIZE", "1"))
    if "OMP_NUM_THREADS" not in env:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
        per_rank = int(env.get("MPAMP_NUM_THREADS") or
                       max(1, cores // max(1, int(env["LOCAL_WORLD_SIZE"]))))
        env["OMP_NUM_THREADS"] = str(per_rank)
    return found


def _run(target):
    if target and target[0] == "-m":
        sys.argv = [target[1]] + target[2:]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(target)
        sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
        runpy.run_path(target[0], run_name="__main__")


def _user_frames(tb):
    """The traceback from the script's first frame on (this file and runpy left out)."""
    here = os.path.abspath(__file__)
    while tb is not None and tb.tb_next is not None:
        name = tb.tb_frame.f_code.co_filename
        if os.path.abspath(name) != here and "runpy" not in name:
            break
        tb = tb.tb_next
    return tb


def main(argv):
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv or argv == ["-m"]:
        sys.stderr.write("usage: python -m mpamp.distributed._rank -- script [args] "
                         "(started by python -m mpamp.distributed.run)\n")
        return 2
    _export()
    rank, world = int(os.environ["RANK"]), int(os.environ.get("WORLD_SIZE", "1"))
    _failure.install(rank, world)
    try:
        _run(argv)
    except SystemExit as exc:
        if exc.code in (None, 0):
            return 0
        code = exc.code if isinstance(exc.code, int) else 1
        if world > 1:
            _failure.abort_job(f"exited with status {exc.code}", code)
        raise
    except BaseException:
        etype, value, tb = sys.exc_info()
        if world <= 1:
            raise
        sys.stderr.write(_failure.format_for_rank(etype, value, _user_frames(tb), rank))
        _failure.abort_job(f"raised {etype.__name__}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
