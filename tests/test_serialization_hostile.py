"""mpamp.load against files built to hurt: regression tests for what the fuzz target
(tests/fuzz/fuzz_load.py) found. A bad file raises RuntimeError or pickle.UnpicklingError naming
the file, never another type, and a small file can't make the loader allocate gigabytes."""
import io
import os
import pickle
import sys
import tracemalloc
import zipfile

import pytest

import mpamp
from mpamp.serialization import _torch_zip

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz"))
import load_seeds  # noqa: E402
from load_seeds import Call, Global, archive, dumps, storage, tensor  # noqa: E402


class _Named(io.BytesIO):
    name = "hostile.pth"


def _load(data, **kwargs):
    return mpamp.load(_Named(data), **kwargs)


def _floats(n):
    return bytes(4 * n)


def test_encrypted_member_is_a_clear_error():
    raw = bytearray(load_seeds.mpamp_seeds()["mpamp-float32"])
    central = raw.rindex(b"archive/data.pkl") - 46       # its central directory entry
    assert raw[central:central + 4] == b"PK\x01\x02"
    raw[central + 8] |= 0x1                               # "encrypted" flag
    with pytest.raises(RuntimeError, match=r"hostile\.pth.*corrupted.*encrypted"):
        _load(bytes(raw))


def test_pickle_errors_name_the_file():
    # The unpickler's own complaints (bad opcode, bad memo, refused call arguments) used to
    # reach the caller without the file's name.
    for pkl in (b"\x80\x02\xff.", b"\x80\x02h\x05.",
                dumps(Call(Global("torch._utils", "_rebuild_tensor_v2"), "x", 0, (1,), (1,))),
                dumps(Call(Global("_codecs", "encode"), "x", "rot13"))):
        with pytest.raises((RuntimeError, pickle.UnpicklingError),
                           match=r"^hostile\.pth: checkpoint is corrupted or truncated \(data"):
            _load(archive(pkl))


def test_memo_index_does_not_allocate():
    # LONG_BINPUT 2**32-1: pickle's C unpickler grows its memo array to twice the index
    # (64 GiB here; a 20-byte pickle), the pure-Python one mpamp uses keeps a dict.
    pkl = b"\x80\x02]r\xff\xff\xff\xff."
    tracemalloc.start()
    try:
        assert _load(archive(pkl)) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_bytearray_length_does_not_allocate():
    # BYTEARRAY8 with a length of 2**62: pickle's pure-Python unpickler allocates the declared
    # length before reading (the fuzz target's OOM input asked for 15 GB).
    tracemalloc.start()
    try:
        with pytest.raises(pickle.UnpicklingError, match=r"hostile\.pth: .*BYTEARRAY8 of "
                                                         r"4611686018427387904 bytes runs past"):
            _load(archive(b"\x80\x05\x96" + (2**62).to_bytes(8, "little") + b"abc."))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    assert _load(archive(b"\x80\x05\x96\x03\x00\x00\x00\x00\x00\x00\x00abc.")) == \
        bytearray(b"abc")


@pytest.mark.parametrize("size,stride,numel", [
    ((2**40,), (0,), 4),                 # expanded view: 4 TiB from 16 bytes
    ((2**13, 2**13), (1, 1), 2**14),     # self-overlapping view: 256 MiB from 64 KiB
])
def test_views_that_expand_are_refused(size, stride, numel):
    data = archive(dumps(tensor(storage(numel=numel), size=size, stride=stride)),
                   {"0": _floats(numel)})
    with pytest.raises(RuntimeError, match=r"hostile\.pth: .*more than twice .*\.clone\(\)"):
        _load(data)


def test_many_copies_of_one_storage_are_refused(monkeypatch):
    monkeypatch.setattr(_torch_zip, "_EXPANSION_SLACK", 100)
    stor = storage(numel=64)
    ok = archive(dumps([tensor(stor, size=(64,)), tensor(stor, size=(8, 8), stride=(1, 8))]),
                 {"0": _floats(64)})
    assert [t.shape for t in _load(ok)] == [(64,), (8, 8)]      # a tensor and its transpose
    bad = archive(dumps([tensor(stor, size=(64,)) for _ in range(4)]), {"0": _floats(64)})
    with pytest.raises(RuntimeError, match="more than twice the 64"):
        _load(bad)


def test_small_expanded_views_still_load():
    data = archive(dumps(tensor(storage(numel=1), size=(3, 5), stride=(0, 0))),
                   {"0": b"\x00\x00\x80\x3f"})
    assert _load(data).tolist() == [[1.0] * 5] * 3


def test_map_location_errors_pass_through():
    data = load_seeds.mpamp_seeds()["mpamp-float32"]

    def broken(t, location):
        raise ValueError("my map_location is broken")
    with pytest.raises(ValueError, match="my map_location is broken"):
        _load(data, map_location=broken)

    def refuses(t, location):
        raise RuntimeError("no room on that device")
    with pytest.raises(RuntimeError, match="^no room on that device$"):
        _load(data, map_location=refuses)


def test_compressed_checkpoints_load():
    src = zipfile.ZipFile(io.BytesIO(load_seeds.mpamp_seeds()["mpamp-dtypes"]))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in src.namelist():
            zf.writestr(name, src.read(name))
    keys = ["bf16", "bool", "empty", "f16", "f32", "i64", "scalar", "u8", "view"]
    assert sorted(_load(buf.getvalue())) == keys


def test_deflate_bomb_is_refused_before_inflating():
    """A deflated record of 256 MiB of zeros is ~250 KiB in the file: refused from its header
    (it would expand ~1000x), without inflating it."""
    n = 1 << 26
    data = archive(dumps(tensor(storage(numel=n), size=(n,))), {"0": bytes(4 * n)},
                   compress=zipfile.ZIP_DEFLATED)
    assert len(data) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match=r"hostile\.pth: .*record archive/data/0 would "
                                               r"expand from \d+ to 268435456 bytes, more "
                                               r"than 256x: refused as a decompression bomb"):
            _load(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_storage_record_of_the_wrong_size_is_refused_unread():
    """data.pkl says how big a storage is; a record of another size is corrupt, whatever it
    holds, and is not read."""
    pkl = dumps(tensor(storage(numel=4)))
    with pytest.raises(RuntimeError, match=r"hostile\.pth: checkpoint is corrupted or "
                                           r"truncated \(record archive/data/0 has 20 bytes, "
                                           r"expected 16\)"):
        _load(archive(pkl, {"0": _floats(5)}))
    small = archive(pkl, {"0": bytes(16)}, compress=zipfile.ZIP_DEFLATED)
    assert _load(small).tolist() == [0.0, 0.0, 0.0, 0.0]     # small records may compress well
