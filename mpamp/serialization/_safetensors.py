"""save_safetensors / load_safetensors: the Hugging Face safetensors format.

Layout: 8-byte little-endian header length N, N bytes of JSON {name: {"dtype", "shape",
"data_offsets": [begin, end]}, "__metadata__": {str: str}} padded with spaces to a multiple
of 8, then the tensors' bytes (little-endian, C order) back to back. Offsets are relative to
the end of the header and must tile the data exactly, as the reference implementation checks.
"""
import json
import math

import numpy as np

from .. import _C
from ._common import DTYPES, atomic_write, display_name, tensor_bytes, tensor_from_array

_CODE_TO_DTYPE = {v[2]: k for k, v in DTYPES.items()}
# Integer codes mpamp has no dtype for: widened exactly to int64 on load.
_WIDENED = {"I8": "i1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4"}
_MAX_HEADER = 100_000_000      # the reference implementation's limit


def save_safetensors(tensors, path, metadata=None):
    """Write a dict of name -> tensor to path in the safetensors format (atomically)."""
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors expects a dict of str -> Tensor, got "
                        f"{type(tensors).__name__}")
    for key, value in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"tensor names must be str, got {type(key).__name__} ({key!r})")
        if not isinstance(value, _C.TensorBase):
            raise TypeError(f"tensor {key!r} is a {type(value).__name__}, not a Tensor")
    if metadata is not None and (not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("metadata must be a dict of str -> str")
    if "__metadata__" in tensors:
        raise ValueError("'__metadata__' is reserved and can't be a tensor name")
    # Largest items first, then by name, as the reference writer: keeps every tensor aligned.
    order = sorted(tensors, key=lambda k: (-tensors[k].element_size(), k))
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(metadata)
    for key in order:
        name, shape, raw = tensor_bytes(tensors[key])
        header[key] = {"dtype": DTYPES[name][2], "shape": list(shape),
                       "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)

    def write(fh):
        fh.write(len(text).to_bytes(8, "little"))
        fh.write(text)
        for raw in chunks:
            fh.write(raw)
    atomic_write(path, write)


def _bad(name, why):
    return RuntimeError(f"{name}: safetensors file is corrupted or truncated ({why})")


def _read_header(data, name):
    if len(data) < 8:
        raise _bad(name, f"{len(data)} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(data[:8], "little")
    if n > _MAX_HEADER or 8 + n > len(data):
        raise _bad(name, f"header length {n} does not fit in the file's {len(data)} bytes")
    try:
        header = json.loads(bytes(data[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(name, f"header is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise _bad(name, "header is not a JSON object")
    return header, 8 + n


def _check_entry(key, info, name):
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise _bad(name, f"entry {key!r} lacks dtype/shape/data_offsets")
    shape, offsets, code = info["shape"], info["data_offsets"], info["dtype"]
    if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
        raise _bad(name, f"entry {key!r} has a bad shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and
            all(isinstance(o, int) and o >= 0 for o in offsets) and offsets[0] <= offsets[1]):
        raise _bad(name, f"entry {key!r} has bad data_offsets {offsets!r}")
    if code in _CODE_TO_DTYPE:
        np_dtype, dtype = DTYPES[_CODE_TO_DTYPE[code]][1], _CODE_TO_DTYPE[code]
    elif code in _WIDENED:
        np_dtype, dtype = np.dtype(_WIDENED[code]), "int64"
    else:
        raise RuntimeError(f"{name}: tensor {key!r} has dtype {code}, which mpamp can't hold "
                           f"(supported: BF16, F16, F32, BOOL and integer dtypes)")
    if offsets[1] - offsets[0] != math.prod(shape) * np_dtype.itemsize:
        raise _bad(name, f"entry {key!r}: {offsets[1] - offsets[0]} bytes for shape {shape} "
                         f"of {code}")
    return np_dtype, dtype


def load_safetensors(path, device="cpu"):
    """Read a safetensors file into a dict of name -> tensor (metadata is not returned)."""
    name = display_name(path)
    with open(path, "rb") as fh:
        data = fh.read()
    header, start = _read_header(data, name)
    header.pop("__metadata__", None)
    body = memoryview(data)[start:]
    entries = []
    for key, info in header.items():
        np_dtype, dtype = _check_entry(key, info, name)
        entries.append((info["data_offsets"], key, info["shape"], np_dtype, dtype))
    entries.sort(key=lambda e: tuple(e[0]))
    end = 0
    for (begin, stop), key, *_ in entries:
        if begin != end:
            raise _bad(name, f"entry {key!r} starts at {begin}, expected {end} (gap or overlap)")
        end = stop
    if end != len(body):
        raise _bad(name, f"data is {len(body)} bytes but the header describes {end}")
    out = {}
    for (begin, stop), key, shape, np_dtype, dtype in sorted(entries, key=lambda e: e[1]):
        arr = np.frombuffer(body[begin:stop], dtype=np_dtype).reshape(shape)
        t = tensor_from_array(arr, dtype)
        out[key] = t if str(device) == "cpu" else t.to(device)
    return out


def safetensors_metadata(path):
    """The '__metadata__' dict of a safetensors file ({} when absent)."""
    with open(path, "rb") as fh:
        head = fh.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        data = head + (fh.read(n) if 0 <= n <= _MAX_HEADER else b"")
    header, _ = _read_header(data, display_name(path))
    return dict(header.get("__metadata__") or {})
