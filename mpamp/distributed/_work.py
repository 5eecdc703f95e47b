"""Work handles and communication threads. Every collective of a process group runs on that
group's own thread, in the order the program issued them (so all ranks issue them in the same
order, as MPI requires); a synchronous call is an asynchronous one followed by wait(). The
thread blocks inside MPI with the GIL released, so a collective progresses while the caller
computes: a DDP bucket all-reduce overlaps the rest of backward (which also runs without the
GIL). A wait that exceeds the group's timeout raises DistBackendError naming the rank and the
collective; uncaught, that error (like any other) aborts the MPI job (see _failure.py)."""
import datetime
import queue
import threading
import time

__all__ = ["Work", "DistError", "DistBackendError"]


class DistError(RuntimeError):
    """Base of mpamp.distributed's errors (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """A collective failed or timed out (torch.distributed.DistBackendError)."""


DistError.__module__ = DistBackendError.__module__ = "mpamp.distributed"


def _seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Work:
    """Handle of an issued collective (torch.distributed.Work)."""

    def __init__(self, name, fn, group, outputs=()):
        self._name = name
        self._fn = fn
        self._group = group
        self._outputs = list(outputs)
        self._done = threading.Event()
        self._exc = None
        self._span = (0.0, 0.0)         # perf_counter() at start and end on the thread

    def _run(self):
        start = time.perf_counter()
        try:
            self._fn()
        except BaseException as exc:       # reported to whoever waits
            self._exc = exc
        finally:
            self._fn = None
            self._span = (start, time.perf_counter())
            self._done.set()

    def wait(self, timeout=None):
        """Block until the collective finished (raises its error, or DistBackendError after
        the group's timeout); returns True."""
        limit = self._group._timeout if timeout is None else timeout
        if not self._done.wait(_seconds(limit)):
            self._group._mark_broken()
            raise DistBackendError(
                f"[rank {self._group._global_rank}] mpamp.distributed: {self._name} did not "
                f"complete within {datetime.timedelta(seconds=_seconds(limit))} (the process "
                f"group's timeout): another rank has probably failed, exited or is not calling "
                f"the same collective")
        if self._exc is not None:
            raise DistBackendError(f"[rank {self._group._global_rank}] mpamp.distributed: "
                                   f"{self._name} failed: {self._exc}") from self._exc
        return True

    def is_completed(self):
        """True once the collective finished (successfully or not)."""
        return self._done.is_set()

    def is_success(self):
        """True once the collective finished without an error."""
        return self._done.is_set() and self._exc is None

    def exception(self):
        """The collective's error, or None."""
        return self._exc

    def result(self):
        """The output tensors (after wait())."""
        self.wait()
        return self._outputs

    def synchronize(self):
        """Same as wait() for CPU tensors."""
        self.wait()

    def __repr__(self):
        state = "completed" if self.is_completed() else "pending"
        return f"<mpamp.distributed.Work {self._name} ({state})>"


class Channel:
    """One thread that runs the collectives given to it, in order."""

    def __init__(self, name):
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self):
        while True:
            work = self._queue.get()
            if work is None:
                return
            work._run()

    def submit(self, work):
        self._queue.put(work)
        return work

    def close(self, timeout=5.0):
        """Stop the thread after the queued collectives; False if it did not stop in time."""
        self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()
