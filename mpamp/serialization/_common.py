"""Shared by the checkpoint formats: dtype tables, tensor <-> raw bytes, atomic file writes
(temp file + fsync + rename; leftovers of killed saves are removed by the next save).

Raw bytes are little-endian; bfloat16 travels as its uint16 bit patterns, so neither format
needs ml_dtypes. Tensors are rebuilt from NumPy arrays the loader owns (no sharing with the
file's buffer).
"""
import hashlib
import os
import re
import secrets
import socket
import threading

import numpy as np

from .. import _C

# mpamp dtype name -> (torch storage class, NumPy dtype of the raw bytes, safetensors code):
# names and codes from the core's dtype table; the raw NumPy layout is this module's own
_RAW = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2", "int64": "<i8", "bool": "?",
        "uint8": "u1"}
DTYPES = {d["name"]: (d["storage"], np.dtype(_RAW[d["name"]]), d["safetensors"])
          for d in _C._dtype_table()}


def dtype_name(dtype):
    """'float32' for mpamp.float32 etc."""
    return repr(dtype).split(".")[-1]


def tensor_bytes(t):
    """(dtype name, shape, bytes-like of the contiguous CPU data) of a tensor."""
    data = t.detach()
    if data.device.type != "cpu":
        data = data.cpu()
    data = data.contiguous()
    raw = _C._memoryview(data).cast("B") if data.numel() else b""
    return dtype_name(t.dtype), tuple(t.shape), raw


def tensor_from_array(arr, name, requires_grad=False):
    """A tensor of dtype name owning a copy of arr (raw-bits dtype from DTYPES)."""
    arr = np.array(arr, dtype=DTYPES[name][1].newbyteorder("="), order="C", copy=True)
    if arr.size == 0:
        t = _C._empty(arr.shape, getattr(_C, name))
    else:
        t, _ = _C._from_buffer(arr, name == "bfloat16")
    if requires_grad:
        t.requires_grad_(True)
    return t


def display_name(f):
    """How error messages name a checkpoint: its path, or the file object's name/type."""
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.fsdecode(f)
    name = getattr(f, "name", None)
    return name if isinstance(name, str) else f"<{type(f).__name__}>"


# Temporary files are named .<name>.<host tag>-<pid>-<random>.tmp beside the target, so the
# next save to the same path can tell a leftover of a killed process (same host, pid no longer
# running) from a save in progress (another live process, another host) and remove only those.
_HOST_TAG = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
_TMP_RE = re.compile(r"\.(?P<name>.+)\.(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[0-9a-f]{12}\.tmp\Z",
                     re.DOTALL)
_active = set()                 # temp files this process is writing now (absolute paths)
_active_lock = threading.Lock()

# TEST-ONLY pause point (tests/test_kill_save.py): when set, every save's bytes go through it
# as hook(fh, written) after each chunk of at most _HOOK_CHUNK bytes, so a test can stop a
# save halfway (sleep until killed, or raise). Never set by mpamp itself; None costs nothing.
_test_write_hook = None
_HOOK_CHUNK = 1 << 20


class _HookedFile:
    """Forwards writes to fh in chunks, calling _test_write_hook(fh, bytes written) after each."""

    def __init__(self, fh, hook):
        self._fh, self._hook, self.written = fh, hook, 0

    def write(self, data):
        view = memoryview(data).cast("B")
        for start in range(0, len(view), _HOOK_CHUNK):
            chunk = view[start:start + _HOOK_CHUNK]
            self._fh.write(chunk)
            self.written += len(chunk)
            self._hook(self._fh, self.written)
        return len(view)

    def __getattr__(self, name):
        return getattr(self._fh, name)


def hooked(fh):
    """fh, or fh behind the test-only write hook when one is set."""
    hook = _test_write_hook
    return fh if hook is None else _HookedFile(fh, hook)


def _pid_running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:             # EPERM: a live process of another user
        return True
    return True


def stale_temp_files(path):
    """Temporary files of interrupted saves to path: written on this host by a process that
    is no longer running (or by this one, for a save that is no longer in progress)."""
    path = os.path.abspath(os.fsdecode(path))
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    with _active_lock:
        active = set(_active)
    for entry in names:
        m = _TMP_RE.match(entry)
        if not m or m["name"] != base or m["host"] != _HOST_TAG:
            continue
        full = os.path.join(folder, entry)
        pid = int(m["pid"])
        if (pid == os.getpid() and full not in active) or \
                (pid != os.getpid() and not _pid_running(pid)):
            found.append(full)
    return sorted(found)


def remove_stale_temp_files(path):
    """Delete what stale_temp_files(path) lists; returns how many were removed."""
    removed = 0
    for full in stale_temp_files(path):
        try:
            os.unlink(full)
            removed += 1
        except OSError:         # raced with another cleaner, or not ours to remove
            pass
    return removed


def atomic_write(path, write):
    """Call write(fileobj) on a temporary file beside path, fsync it, then rename it over path.

    An exception (or KeyboardInterrupt) while writing removes the temporary file and leaves
    whatever was at path untouched; a killed process can leave only its hidden temporary file
    (.<name>.<host>-<pid>-<random>.tmp), which the next save to the same path removes.
    """
    path = os.fsdecode(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    remove_stale_temp_files(path)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{_HOST_TAG}-{os.getpid()}-"
                               f"{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot write checkpoint {path!r} (folder {folder!r}): "
                        f"{exc.strerror}") from None
    with _active_lock:
        _active.add(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(hooked(fh))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        with _active_lock:
            _active.discard(tmp)
    _fsync_folder(folder)


def _fsync_folder(folder):
    """Make the rename durable where the OS allows it (not on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
