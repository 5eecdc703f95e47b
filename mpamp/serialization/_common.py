"""Shared by the checkpoint formats: dtype tables, tensor <-> raw bytes, atomic file writes.

Raw bytes are little-endian; bfloat16 travels as its uint16 bit patterns, so neither format
needs ml_dtypes. Tensors are rebuilt from NumPy arrays the loader owns (no sharing with the
file's buffer).
"""
import os
import secrets

import numpy as np

from .. import _C

# mpamp dtype name -> (torch storage class, NumPy dtype of the raw bytes, safetensors code)
DTYPES = {
    "float32": ("FloatStorage", np.dtype("<f4"), "F32"),
    "float16": ("HalfStorage", np.dtype("<f2"), "F16"),
    "bfloat16": ("BFloat16Storage", np.dtype("<u2"), "BF16"),
    "int64": ("LongStorage", np.dtype("<i8"), "I64"),
    "bool": ("BoolStorage", np.dtype("?"), "BOOL"),
    "uint8": ("ByteStorage", np.dtype("u1"), "U8"),
}


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


def atomic_write(path, write):
    """Call write(fileobj) on a temporary file beside path, then rename it over path.

    An exception (or KeyboardInterrupt) while writing removes the temporary file and leaves
    whatever was at path untouched; a crash can leave only the hidden temporary file.
    """
    path = os.fsdecode(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot write checkpoint {path!r} (folder {folder!r}): "
                        f"{exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
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
