"""save_safetensors / load_safetensors: the file layout byte by byte, round trips, and clear
errors for damaged files."""
import json
import os
import struct

import numpy as np
import pytest

import mpamp
from mpamp.serialization import safetensors_metadata


def _tensors():
    mpamp.manual_seed(0)
    return {"w": mpamp.randn(3, 4), "h": mpamp.randn(5).half(),
            "b": mpamp.randn(2, 2).bfloat16(), "i": mpamp.arange(3),
            "m": mpamp.from_numpy(np.array([True, False, True])), "e": mpamp.zeros(0, 2),
            "s": mpamp.tensor(2.5)}


def _bits(t):
    return bytes(mpamp._C._memoryview(t.contiguous()).cast("B")) if t.numel() else b""


def test_round_trip_every_dtype(tmp_path):
    ts = _tensors()
    mpamp.save_safetensors(ts, tmp_path / "m.safetensors", metadata={"format": "pt"})
    back = mpamp.load_safetensors(tmp_path / "m.safetensors")
    assert set(back) == set(ts)
    for k, t in ts.items():
        assert back[k].dtype == t.dtype and tuple(back[k].shape) == tuple(t.shape)
        assert _bits(back[k]) == _bits(t)
    assert safetensors_metadata(tmp_path / "m.safetensors") == {"format": "pt"}


def test_layout_follows_the_spec(tmp_path):
    path = tmp_path / "a.safetensors"
    mpamp.save_safetensors({"b": mpamp.ones(2, dtype=mpamp.bfloat16),
                            "a": mpamp.tensor([1.0, 2.0]).t()}, path)
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["a"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    assert header["b"] == {"dtype": "BF16", "shape": [2], "data_offsets": [8, 12]}
    body = raw[8 + n:]
    assert body[:8] == np.array([1, 2], "<f4").tobytes() and body[8:] == b"\x80\x3f" * 2


def test_reads_a_hand_written_file_with_integer_dtypes(tmp_path):
    header = {"x": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]},
              "y": {"dtype": "U8", "shape": [1, 2], "data_offsets": [8, 10]},
              "__metadata__": {"k": "v"}}
    text = json.dumps(header).encode()
    body = np.array([-1, 7], "<i4").tobytes() + bytes([200, 3])
    (tmp_path / "h.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + body)
    back = mpamp.load_safetensors(tmp_path / "h.safetensors")
    assert back["x"].dtype == mpamp.int64 and back["x"].tolist() == [-1, 7]
    assert back["y"].tolist() == [[200, 3]]


def _write(path, header, body):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)


@pytest.mark.parametrize("case,match", [
    ("short", "shorter than the 8-byte header"),
    ("huge_header", "does not fit"),
    ("not_json", "not valid JSON"),
    ("gap", "gap or overlap"),
    ("size", "bytes for shape"),
    ("past_end", "header describes"),
    ("dtype", "dtype F64, which mpamp can't hold"),
    ("shape", "bad shape"),
])
def test_damaged_files_raise_clear_errors(tmp_path, case, match):
    path = tmp_path / "bad.safetensors"
    f32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    if case == "short":
        path.write_bytes(b"\x01\x02")
    elif case == "huge_header":
        path.write_bytes(struct.pack("<Q", 10 ** 6) + b"{}")
    elif case == "not_json":
        path.write_bytes(struct.pack("<Q", 4) + b"{{{{")
    elif case == "gap":
        _write(path, {"a": f32, "b": {"dtype": "F32", "shape": [1],
                                      "data_offsets": [12, 16]}}, bytes(16))
    elif case == "size":
        _write(path, {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8))
    elif case == "past_end":
        _write(path, {"a": f32}, bytes(4))
    elif case == "dtype":
        _write(path, {"a": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}, bytes(8))
    elif case == "shape":
        _write(path, {"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8))
    with pytest.raises(RuntimeError, match=match) as info:
        mpamp.load_safetensors(path)
    assert "bad.safetensors" in str(info.value)


def test_truncated_file(tmp_path):
    path = tmp_path / "t.safetensors"
    mpamp.save_safetensors(_tensors(), path)
    raw = path.read_bytes()
    for n in (0, 5, 30, len(raw) - 1):
        path.write_bytes(raw[:n])
        with pytest.raises(RuntimeError, match=r"t\.safetensors.*corrupted or truncated"):
            mpamp.load_safetensors(path)


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="dict of str -> Tensor"):
        mpamp.save_safetensors([mpamp.ones(1)], tmp_path / "x")
    with pytest.raises(TypeError, match="'a' is a list, not a Tensor"):
        mpamp.save_safetensors({"a": [1]}, tmp_path / "x")
    with pytest.raises(TypeError, match="metadata must be a dict of str -> str"):
        mpamp.save_safetensors({"a": mpamp.ones(1)}, tmp_path / "x", metadata={"a": 1})
    assert os.listdir(tmp_path) == []


def test_atomic(tmp_path, monkeypatch):
    path = tmp_path / "a.safetensors"
    mpamp.save_safetensors({"a": mpamp.ones(1)}, path)
    before = path.read_bytes()

    def fail(fd):
        raise OSError(5, "I/O error (simulated, after the data was written)")
    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="simulated"):
        mpamp.save_safetensors({"a": mpamp.ones(1)}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["a.safetensors"]


def test_torch_reads_the_tensors_via_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    mpamp.save_safetensors({"w": mpamp.ones(2, 2)}, tmp_path / "w.safetensors")
    assert st.load_file(str(tmp_path / "w.safetensors"))["w"].shape == (2, 2)
