"""Starting the jobs of this folder from pytest: plain mpiexec (with the flags a shared CI
machine needs: --oversubscribe, --bind-to none, root allowed) or the launcher, with the mpamp
under test on PYTHONPATH, a timeout, and LD_PRELOAD (the sanitizer run's) handed to the ranks
rather than to mpiexec itself."""
import os
import signal
import subprocess
import sys
import tempfile
import time

import mpamp
from mpamp.distributed import run as launcher

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
MPIEXEC = launcher.find_mpiexec()
FLAVOR = launcher.mpi_flavor(MPIEXEC) if MPIEXEC else None


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(name, None)
    return env


class Job:
    """A started job; finish() waits for it (killing it after its timeout). Output goes to
    files, so jobs running side by side never block on a full pipe."""

    def __init__(self, cmd, env, timeout):
        self.timeout = timeout
        self.start = time.monotonic()
        self.files = [tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")]
        self.proc = subprocess.Popen(cmd, cwd=HERE, env=env, stdout=self.files[0],
                                     stderr=self.files[1], text=True, start_new_session=True)

    def finish(self):
        note = ""
        try:
            self.proc.wait(timeout=max(1.0, self.timeout - (time.monotonic() - self.start)))
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)      # mpiexec and its ranks too
            self.proc.wait()
            note = f"\n(killed by the test after {self.timeout} s)"
        out, err = [(f.seek(0), f.read(), f.close())[1] for f in self.files]
        done = subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err + note)
        done.elapsed = time.monotonic() - self.start
        done.output = done.stdout + done.stderr
        return done


def _run(cmd, env, timeout, wait=True):
    job = Job(cmd, env, timeout)
    return job.finish() if wait else job


def mpiexec(n, script, *args, timeout=180, wait=True):
    """Run script on n ranks with plain mpiexec (wait=False: return the started Job)."""
    env = _env()
    preload = env.pop("LD_PRELOAD", None)
    cmd = [MPIEXEC]
    if FLAVOR == "openmpi":
        cmd += ["--oversubscribe", "--bind-to", "none"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if preload:
            cmd += ["-x", f"LD_PRELOAD={preload}"]
    elif preload:
        cmd += ["-genv", "LD_PRELOAD", preload]
    cmd += ["-n", str(n), sys.executable, os.path.join(HERE, script), *args]
    return _run(cmd, env, timeout, wait)


def launch(n, script, *args, timeout=180, options=(), wait=True):
    """Run script on n ranks through python -m mpamp.distributed.run."""
    cmd = [sys.executable, "-m", "mpamp.distributed.run", "-n", str(n), *options,
           os.path.join(HERE, script), *args]
    return _run(cmd, _env(), timeout, wait)


def python(script, *args, timeout=180, wait=True):
    """Run script as one plain process (no MPI)."""
    return _run([sys.executable, os.path.join(HERE, script), *args], _env(), timeout, wait)


def finish_all(jobs):
    """{name: CompletedProcess (with .elapsed and .output)} of started jobs."""
    return {name: job.finish() for name, job in jobs.items()}
