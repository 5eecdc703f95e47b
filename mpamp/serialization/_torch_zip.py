"""mpamp.save / mpamp.load in PyTorch's checkpoint format, with the standard library only.

Layout (torch.save's zip format): <prefix>/data.pkl is a protocol-2 pickle in which each
tensor is torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
hooks) and each storage a persistent id ('storage', torch.<X>Storage, key, location, numel)
whose bytes are the stored (uncompressed, 64-byte aligned) record <prefix>/data/<key>;
<prefix>/byteorder, <prefix>/version and friends complete it. Loading is weights-only: the
unpickler resolves a fixed list of globals and refuses everything else, so nothing in the
file can run code. torch is never imported.
"""
import codecs
import collections
import io
import math
import os
import pickle
import struct
import sys
import warnings
import zipfile

import numpy as np

from .. import _C
from .._size import Size, device
from ._common import DTYPES, atomic_write, display_name, hooked, tensor_bytes, tensor_from_array

_ALIGN = 64
_PROTOCOL = 2     # torch.serialization.DEFAULT_PROTOCOL
_STORAGE_TO_DTYPE = {v[0]: k for k, v in DTYPES.items()}
# Storages mpamp has no dtype for, widened exactly (integers) or narrowed (float64) on load.
_CONVERTED = {"DoubleStorage": ("<f8", "float32"), "IntStorage": ("<i4", "int64"),
              "ShortStorage": ("<i2", "int64"), "CharStorage": ("i1", "int64")}
# Tensors are copied out of their storages on load, so overlapping or expanded (stride 0) views,
# or many tensors over one storage, could ask for far more memory than the file holds. A load
# may build at most twice the elements its storages hold, plus this many.
_EXPANSION_SLACK = 1 << 24
# A compressed record larger than _EXPANSION_FREE bytes may expand at most _MAX_EXPANSION times.
_EXPANSION_FREE = 1 << 26
_MAX_EXPANSION = 256
_SAVE_TYPES = "tensors, numbers, strings, bytes, None, dtypes, devices and dicts/lists/tuples"


# ---- writing ----

class _Global:
    """A callable stand-in that pickles as GLOBAL 'module name' (torch need not exist)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise RuntimeError("placeholder for pickling only")


class _StorageRef:
    def __init__(self, pid):
        self.pid = pid


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_DEVICE = _Global("torch", "device")
_PLAIN_TYPES = {_Global, _C.dtype, dict, collections.OrderedDict, list, tuple, str, bytes, int,
                float, bool, type(None)}


def _contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, with tensors, storages, dtypes and devices spelled as torch."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.records = []       # (key, bytes-like) in pickling order
        self._keys = {}         # id(tensor) -> storage key

    def _save_global_ref(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_Global] = _save_global_ref

    def _save_dtype(self, obj):
        # torch.dtype pickles as the bare global torch.<name>, as its __reduce__ returns a name
        self.write(pickle.GLOBAL + f"torch\n{repr(obj).split('.')[-1]}\n".encode())

    dispatch[_C.dtype] = _save_dtype

    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _StorageRef) else None

    def reducer_override(self, obj):
        from ..nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return (_REBUILD_PARAMETER, (obj.detach(), obj.requires_grad,
                                         collections.OrderedDict()))
        if isinstance(obj, _C.TensorBase):
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (_TORCH_SIZE, (tuple(obj),))
        if isinstance(obj, device):
            return (_TORCH_DEVICE, (str(obj),))
        if type(obj) in _PLAIN_TYPES or obj is collections.OrderedDict or obj is codecs.encode:
            return NotImplemented
        raise TypeError(f"mpamp.save can't save an object of type {type(obj).__qualname__}: "
                        f"checkpoints hold {_SAVE_TYPES} of them (so that loading never runs "
                        f"code)")

    def _reduce_tensor(self, t):
        name, shape, raw = tensor_bytes(t)
        key = str(len(self.records))
        self.records.append((key, raw))
        location = str(t.device)
        if location == "cuda":
            location = "cuda:0"
        numel = len(raw) // DTYPES[name][1].itemsize
        storage = _StorageRef(("storage", _Global("torch", DTYPES[name][0]), key, location,
                               numel))
        return (_REBUILD_TENSOR, (storage, 0, shape, _contiguous_strides(shape),
                                  t.requires_grad, collections.OrderedDict()))


def _write_record(zf, name, data):
    """Add an uncompressed record whose data starts on a 64-byte boundary (as torch's)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o600 << 16
    header = 30 + len(name.encode("utf-8")) + 4
    if len(data) > zipfile.ZIP64_LIMIT:
        header += 20      # zipfile adds a zip64 extra field to the local header
    pad = (-(zf.fp.tell() + header)) % _ALIGN
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad     # torch's "FB" padding
    zf.writestr(info, data)


def _write_archive(obj, fh, protocol):
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, "archive/data.pkl", buf.getvalue())
        _write_record(zf, "archive/.format_version", b"1")
        _write_record(zf, "archive/.storage_alignment", str(_ALIGN).encode())
        _write_record(zf, "archive/byteorder", sys.byteorder.encode())
        for key, raw in pickler.records:
            _write_record(zf, f"archive/data/{key}", raw)
        _write_record(zf, "archive/version", b"3\n")
        serial = str(int.from_bytes(os.urandom(16), "little")).zfill(40)[:40]
        _write_record(zf, "archive/.data/serialization_id", serial.encode())


def save(obj, f, pickle_module=None, pickle_protocol=_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Save tensors in nested dicts/lists/tuples in torch.save's zip format (atomic for paths)."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("mpamp.save supports only the standard pickle module")
    if not _use_new_zipfile_serialization:
        raise ValueError("mpamp.save writes only the zip format (the legacy format is not "
                         "supported)")
    if pickle_protocol != _PROTOCOL:
        # torch.load(weights_only=True) can't read protocol 4/5 (FRAME) nor protocol 3's bytes.
        raise ValueError(f"mpamp.save writes pickle protocol 2 only (torch's default, the one "
                         f"torch.load(weights_only=True) reads in full), got {pickle_protocol}")
    if isinstance(f, (str, bytes, os.PathLike)):
        atomic_write(f, lambda fh: _write_archive(obj, fh, pickle_protocol))
    elif hasattr(f, "write"):
        # not atomic: an interrupted save leaves a truncated archive in f (see README)
        _write_archive(obj, hooked(f), pickle_protocol)
    else:
        raise TypeError(f"mpamp.save expected a path or a writable file object, got "
                        f"{type(f).__name__}")


# ---- reading ----

class _StorageType:
    def __init__(self, name):
        self.name = name


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError("_rebuild_tensor_v2 expects a storage")
    return storage.tensor(storage_offset, size, stride, requires_grad)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from ..nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _codecs_encode(text, encoding="utf-8"):
    """The only use pickles make of _codecs.encode: bytes under protocol 2."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is only allowed for latin1 bytes")
    return text.encode("latin1")


def _fresh(fn):
    """A new function object per load, so a pickle's BUILD can't alter mpamp's own objects."""
    def call(*args, **kwargs):
        return fn(*args, **kwargs)
    return call


def _allowed_globals():
    """The globals a checkpoint may name, as new objects for each load."""
    allowed = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _fresh(_rebuild_tensor_v2),
        ("torch._utils", "_rebuild_tensor"): _fresh(_rebuild_tensor),
        ("torch._utils", "_rebuild_parameter"): _fresh(_rebuild_parameter),
        ("torch._utils", "_rebuild_parameter_with_state"): _fresh(_rebuild_parameter),
        ("torch", "Size"): _fresh(Size),
        ("torch", "device"): _fresh(device),
        ("_codecs", "encode"): _fresh(_codecs_encode),
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "complex"): complex,
        ("__builtin__", "set"): set,
    }
    for name in list(_STORAGE_TO_DTYPE) + list(_CONVERTED):
        allowed[("torch", name)] = _StorageType(name)
    for name in DTYPES:
        allowed[("torch", name)] = getattr(_C, name)      # immutable C objects
    return allowed


class _Storage:
    """A storage record of the archive: its bytes as a NumPy array, read on first use."""

    def __init__(self, reader, type_name, key, location, numel):
        self.reader, self.type_name, self.key = reader, type_name, key
        self.location, self.numel = location, numel
        self._array = None

    def array(self):
        if self._array is None:
            if self.type_name in _STORAGE_TO_DTYPE:
                np_dtype = DTYPES[_STORAGE_TO_DTYPE[self.type_name]][1]
            else:
                np_dtype = np.dtype(_CONVERTED[self.type_name][0])
            raw = self.reader.record(f"data/{self.key}", self.numel * np_dtype.itemsize)
            if len(raw) != self.numel * np_dtype.itemsize:
                raise self.reader.corrupted(f"storage {self.key} has {len(raw)} bytes, "
                                            f"expected {self.numel * np_dtype.itemsize}")
            arr = np.frombuffer(raw, dtype=np_dtype)
            self.reader.stored_elements += self.numel
            if self.reader.byteorder != sys.byteorder and np_dtype.itemsize > 1:
                arr = arr.byteswap()
            self._array = arr
        return self._array

    def tensor(self, offset, size, stride, requires_grad):
        arr = self.array()
        size, stride = tuple(size), tuple(stride)
        if len(size) != len(stride) or offset < 0 or any(n < 0 for n in size) or \
                any(s < 0 for s in stride):
            raise self.reader.corrupted(f"bad tensor geometry {size} / {stride} at offset "
                                        f"{offset}")
        self.reader.spend(math.prod(size))
        if all(size):
            last = offset + sum((n - 1) * s for n, s in zip(size, stride))
            if last >= self.numel:
                raise self.reader.corrupted(f"tensor of size {size} at offset {offset} runs "
                                            f"past storage {self.key} ({self.numel} elements)")
            item = arr.itemsize
            arr = np.lib.stride_tricks.as_strided(arr[offset:], size, [s * item for s in stride])
        else:
            arr = np.zeros(size, dtype=arr.dtype)
        if self.type_name in _STORAGE_TO_DTYPE:
            name = _STORAGE_TO_DTYPE[self.type_name]
        else:
            name = _CONVERTED[self.type_name][1]
            self.reader.converted.add(f"{self.type_name} -> {name}")
        # placed first, requires_grad after: a tensor moved to its device stays a leaf
        t = self.reader.place(tensor_from_array(arr, name), self.location)
        return t.requires_grad_(True) if requires_grad else t


class _Unpickler(pickle._Unpickler):
    """The pure-Python unpickler (as torch's weights-only loader uses): the C one grows its memo
    array to the largest index a PUT opcode names, so a 20-byte pickle could demand gigabytes.
    Globals come only from the allowlist; persistent ids only name storages."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def _load_bytearray8(self):
        # pickle's own allocates the declared length before reading: 15 GB for a 20-byte pickle
        n, = struct.unpack("<Q", self.read(8))
        data = self.read(n)
        if len(data) != n:
            raise pickle.UnpicklingError(f"BYTEARRAY8 of {n} bytes runs past the end of data")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8

    def __init__(self, file, reader):
        super().__init__(file)
        self.reader = reader
        self.allowed = _allowed_globals()

    def find_class(self, module, name):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"{self.reader.name}: weights-only load refused the global {module}.{name}: "
                f"mpamp.load only rebuilds tensors, numbers, strings and containers, and never "
                f"runs code from a checkpoint. Load files you trust with torch.load("
                f"weights_only=False) and re-save their tensors.") from None

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)
                and isinstance(pid[3], str) and isinstance(pid[4], int) and pid[4] >= 0):
            raise self.reader.corrupted(f"unsupported persistent id {pid!r:.80}")
        key = pid[2]
        if key not in self.reader.storages:
            self.reader.storages[key] = _Storage(self.reader, pid[1].name, key, pid[3], pid[4])
        return self.reader.storages[key]


class _Reader:
    def __init__(self, zf, name, map_location):
        self.zf, self.name, self.map_location = zf, name, map_location
        self.storages = {}
        self.converted = set()
        self.stored_elements = 0    # elements of the storages read so far
        self.built_elements = 0     # elements of the tensors copied out of them
        self.user_error = None      # an exception raised by a map_location callable
        names = zf.namelist()
        if not names:
            raise self.corrupted("the zip archive is empty")
        self.prefix = names[0].split("/")[0]
        if f"{self.prefix}/data.pkl" not in names:
            if f"{self.prefix}/constants.pkl" in names:
                raise RuntimeError(f"{name}: is a TorchScript archive (torch.jit.save); "
                                   f"mpamp.load reads torch.save checkpoints")
            raise self.corrupted("no data.pkl record: not a torch.save checkpoint")
        self.names = set(names)
        order = f"{self.prefix}/byteorder"
        self.byteorder = self.record("byteorder").decode("ascii", "replace") \
            if order in self.names else "little"
        if self.byteorder not in ("little", "big"):
            raise self.corrupted(f"unknown byteorder {self.byteorder!r}")

    def corrupted(self, why):
        return RuntimeError(f"{self.name}: checkpoint is corrupted or truncated ({why})")

    def spend(self, elements):
        """Account for a tensor about to be copied out of a storage; refuse amplification."""
        self.built_elements += elements
        limit = 2 * self.stored_elements + _EXPANSION_SLACK
        if self.built_elements > limit:
            raise RuntimeError(
                f"{self.name}: the checkpoint's tensors would take {self.built_elements} "
                f"elements, more than twice the {self.stored_elements} its storages hold "
                f"(+{_EXPANSION_SLACK}); mpamp.load copies every tensor, so it refuses files "
                f"whose views overlap or are expanded this much. Re-save such tensors with "
                f".clone() (a hostile file could otherwise demand any amount of memory).")

    def record(self, name, expected=None):
        """The bytes of a record. With `expected` (a storage's size from data.pkl) a record of
        another size is refused before anything is read; a compressed record may expand at most
        _MAX_EXPANSION times (beyond _EXPANSION_FREE bytes): torch writes its records stored,
        and a deflate bomb would otherwise be inflated in full."""
        full = f"{self.prefix}/{name}"
        if full not in self.names:
            raise self.corrupted(f"record {full} is missing")
        try:
            info = self.zf.getinfo(full)
            if expected is not None and info.file_size != expected:
                raise self.corrupted(f"record {full} has {info.file_size} bytes, expected "
                                     f"{expected}")
            if info.compress_type != zipfile.ZIP_STORED and \
                    info.file_size > max(_EXPANSION_FREE, _MAX_EXPANSION * info.compress_size):
                raise self.corrupted(
                    f"record {full} would expand from {info.compress_size} to "
                    f"{info.file_size} bytes, more than {_MAX_EXPANSION}x: refused as a "
                    f"decompression bomb (torch writes records uncompressed)")
            with self.zf.open(info) as member:
                return member.read(info.file_size)
        except _ZIP_ERRORS as exc:
            raise self.corrupted(f"record {full}: {exc}") from None

    def place(self, t, location):
        ml = self.map_location
        if ml is None:
            target = location
        elif isinstance(ml, dict):
            target = ml.get(location, location)
        elif callable(ml) and not isinstance(ml, device):
            try:
                out = ml(t, location)
            except Exception as exc:
                self.user_error = exc       # the caller's bug, not a bad file: passed on as is
                raise
            return t if out is None else out
        else:
            target = str(ml)
        target = str(target)
        if target == "cpu":
            return t
        if target.startswith("cuda"):
            from .. import cuda
            if not cuda.is_available():
                raise RuntimeError(
                    f"{self.name}: Attempting to deserialize object on a CUDA device but "
                    f"mpamp.cuda.is_available() is False. If you are running on a CPU-only "
                    f"machine, please use mpamp.load with map_location='cpu' to map your "
                    f"storages to the CPU.")
            return t.to(target)
        raise RuntimeError(f"{self.name}: don't know how to restore data location "
                           f"{target!r} (mpamp supports 'cpu' and 'cuda')")

    def load(self):
        data = self.record("data.pkl")
        try:
            obj = _Unpickler(io.BytesIO(data), self).load()
        except Exception as exc:   # noqa: BLE001 - any unpickling failure is a bad file
            named = isinstance(exc, (pickle.UnpicklingError, RuntimeError)) and \
                str(exc).startswith(f"{self.name}: ")
            if named or exc is self.user_error:
                raise               # already says what is wrong with which file
            if isinstance(exc, pickle.UnpicklingError):
                raise pickle.UnpicklingError(f"{self.name}: checkpoint is corrupted or "
                                             f"truncated (data.pkl: {exc})") from None
            raise self.corrupted(f"data.pkl: {type(exc).__name__}: {exc}") from None
        if self.converted:
            warnings.warn(f"{self.name}: mpamp has no dtype for some tensors; converted "
                          f"{', '.join(sorted(self.converted))}", UserWarning, stacklevel=3)
        return obj


_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."


def _zip_errors():
    """What zipfile raises for a damaged archive: its own errors, RuntimeError for a member
    flagged as encrypted, and the errors of its decompressors (deflate, lzma)."""
    errors = [zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, struct.error, EOFError,
              OverflowError, OSError, NotImplementedError, UnicodeDecodeError, RuntimeError]
    for module, attr in (("zlib", "error"), ("lzma", "LZMAError")):
        try:
            errors.append(getattr(__import__(module), attr))
        except ImportError:          # Python built without it: zipfile can't use it either
            pass
    return tuple(errors)


_ZIP_ERRORS = _zip_errors()


def _open_zip(f, name):
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    try:
        return zipfile.ZipFile(f)
    except _ZIP_ERRORS as exc:
        head = b""
        try:
            f.seek(0)
            head = f.read(len(_LEGACY_MAGIC))
        except OSError:
            pass
        if head == _LEGACY_MAGIC:
            raise RuntimeError(f"{name}: is in torch's legacy (pre-1.6) format, which mpamp "
                               f"does not read; re-save it with a current torch.save") from None
        raise RuntimeError(f"{name}: checkpoint is corrupted or truncated (not a valid zip "
                           f"archive: {exc})") from None


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load an object saved by mpamp.save or torch.save (weights-only: never runs code)."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("mpamp.load supports only the standard pickle module")
    if map_location is not None and not isinstance(map_location, (str, dict, device)) and \
            not callable(map_location):
        raise TypeError(f"map_location should be None, a str, a device, a dict or a callable, "
                        f"got {type(map_location).__name__}")
    name = display_name(f)
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_from(fh, name, map_location)
    if not hasattr(f, "read"):
        raise TypeError(f"mpamp.load expected a path or a readable file object, got "
                        f"{type(f).__name__}")
    return _load_from(f, name, map_location)


def _load_from(fh, name, map_location):
    with _open_zip(fh, name) as zf:
        return _Reader(zf, name, map_location).load()
