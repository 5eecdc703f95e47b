"""mpamp.save / mpamp.load: torch's zip format, weights-only loading, atomic writes, clear
errors for damaged files; torch interop both ways when torch is installed."""
import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import mpamp
from mpamp import nn

DTYPES = [mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.int64, mpamp.bool, mpamp.uint8]


def _sample(dtype, shape=(3, 5)):
    x = mpamp.randn(*shape) * 3
    if dtype == mpamp.bool:
        return mpamp.from_numpy(np.asarray(x.cpu().numpy() > 0))
    if dtype == mpamp.int64:
        return (x * 1000).long()
    return x.to(dtype)


def _bits(t):
    """The tensor's raw bytes (bf16 as bits), to compare without rounding questions."""
    return bytes(mpamp._C._memoryview(t.cpu().contiguous()).cast("B")) if t.numel() else b""


def _same(a, b):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert _bits(a) == _bits(b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(3, 5), (0, 4), (), (7,)])
def test_round_trip_every_dtype(tmp_path, dtype, shape):
    t = _sample(dtype, shape)
    mpamp.save(t, tmp_path / "t.pth")
    _same(mpamp.load(tmp_path / "t.pth"), t)


def test_round_trip_views_and_nesting(tmp_path):
    base = mpamp.arange(24).reshape(4, 6)
    obj = {"view": base.t()[1:4], "list": [1, 2.5, "s", None, True, b"\x00\xff"],
           "tuple": (mpamp.ones(2, dtype=mpamp.float16), (3, 4)),
           "od": OrderedDict(b=1, a=2), "nested": {"deep": {"x": mpamp.zeros(2, 2)}},
           "dtype": mpamp.bfloat16, "big": 2 ** 70, "inf": float("inf")}
    mpamp.save(obj, tmp_path / "o.pth")
    back = mpamp.load(tmp_path / "o.pth")
    _same(back["view"], obj["view"].contiguous())
    assert back["list"] == obj["list"] and back["tuple"][1] == (3, 4)
    assert isinstance(back["od"], OrderedDict) and list(back["od"]) == ["b", "a"]
    _same(back["nested"]["deep"]["x"], obj["nested"]["deep"]["x"])
    assert back["dtype"] is mpamp.bfloat16 and back["big"] == 2 ** 70


def test_same_tensor_twice_stays_one_object(tmp_path):
    t = mpamp.ones(3)
    mpamp.save([t, t], tmp_path / "s.pth")
    a, b = mpamp.load(tmp_path / "s.pth")
    assert a is b


def test_module_state_dict_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    mpamp.save(model.state_dict(), tmp_path / "m.pth")
    sd = mpamp.load(tmp_path / "m.pth")
    assert isinstance(sd, OrderedDict) and sd._metadata[""] == {"version": 1}
    other = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    other.load_state_dict(sd)
    for k, v in model.state_dict().items():
        _same(other.state_dict()[k], v)


def test_incompatible_state_dict_lists_keys(tmp_path):
    mpamp.save(nn.Linear(4, 3).state_dict(), tmp_path / "m.pth")
    with pytest.raises(RuntimeError, match="size mismatch|Missing key|Unexpected key"):
        nn.Sequential(nn.Linear(4, 2)).load_state_dict(mpamp.load(tmp_path / "m.pth"))


def test_parameter_and_requires_grad_survive(tmp_path):
    p = nn.Parameter(mpamp.ones(2))
    g = mpamp.ones(2).requires_grad_()
    mpamp.save({"p": p, "g": g}, tmp_path / "p.pth")
    back = mpamp.load(tmp_path / "p.pth")
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["g"].requires_grad and back["g"].is_leaf


def test_file_objects(tmp_path):
    buf = io.BytesIO()
    mpamp.save({"a": mpamp.arange(3)}, buf)
    buf.seek(0)
    assert mpamp.load(buf)["a"].tolist() == [0, 1, 2]


def test_layout_is_torchs(tmp_path):
    mpamp.save({"a": mpamp.ones(3, dtype=mpamp.bfloat16)}, tmp_path / "a.pth")
    with zipfile.ZipFile(tmp_path / "a.pth") as zf:
        names = zf.namelist()
        assert {"archive/data.pkl", "archive/byteorder", "archive/version",
                "archive/data/0"} <= set(names)
        assert zf.read("archive/byteorder") == b"little"
        info = zf.getinfo("archive/data/0")
        assert info.compress_type == zipfile.ZIP_STORED
        raw = (tmp_path / "a.pth").read_bytes()
        start = info.header_offset + 30 + len(info.filename) + \
            int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
        assert start % 64 == 0 and raw[start:start + 6] == b"\x80\x3f" * 3


def test_map_location(tmp_path):
    mpamp.save(mpamp.ones(2), tmp_path / "a.pth")
    for ml in ("cpu", mpamp.device("cpu"), {"cpu": "cpu"}, lambda t, loc: t):
        assert mpamp.load(tmp_path / "a.pth", map_location=ml).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="map_location"):
        mpamp.load(tmp_path / "a.pth", map_location=3)


def test_unsupported_objects_refused_at_save(tmp_path):
    class Thing:
        pass
    with pytest.raises(TypeError, match="can't save an object of type .*Thing"):
        mpamp.save({"x": Thing()}, tmp_path / "x.pth")
    assert not os.path.exists(tmp_path / "x.pth") and os.listdir(tmp_path) == []
    with pytest.raises(TypeError, match="ndarray"):
        mpamp.save(np.zeros(2), tmp_path / "x.pth")


# ---- safety ----

class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def _zip_with_pickle(path, payload):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", b"3\n")


@pytest.mark.parametrize("evil", [_Evil(), {"a": [1, _Evil()]}, eval, np.zeros(3)],
                         ids=["reduce", "nested", "builtin", "numpy"])
def test_malicious_pickles_rejected(tmp_path, evil, monkeypatch):
    _zip_with_pickle(tmp_path / "evil.pth", pickle.dumps(evil, protocol=2))
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    with pytest.raises(pickle.UnpicklingError, match=r"evil\.pth.*refused the global"):
        mpamp.load(tmp_path / "evil.pth")
    assert called == []


def test_refusal_names_the_global(tmp_path):
    _zip_with_pickle(tmp_path / "e.pth", pickle.dumps(_Evil(), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"(posix|nt|os)\.system"):
        mpamp.load(tmp_path / "e.pth")


def test_bare_pickle_is_not_a_checkpoint(tmp_path):
    (tmp_path / "p.pkl").write_bytes(pickle.dumps(_Evil()))
    with pytest.raises(RuntimeError, match=r"p\.pkl.*corrupted or truncated"):
        mpamp.load(tmp_path / "p.pkl")


# ---- damaged files ----

def _good_file(tmp_path):
    path = tmp_path / "good.pth"
    mpamp.manual_seed(0)
    mpamp.save({"w": mpamp.randn(8, 8), "b": mpamp.randn(8).bfloat16(), "step": 3}, path)
    return path


@pytest.mark.parametrize("keep", [0, 10, 100, 0.5, -1, -22])
def test_truncated_files_raise_clear_errors(tmp_path, keep):
    raw = _good_file(tmp_path).read_bytes()
    if isinstance(keep, float):
        n = int(len(raw) * keep)
    else:
        n = keep if keep >= 0 else len(raw) + keep
    bad = tmp_path / "cut.pth"
    bad.write_bytes(raw[:n])
    with pytest.raises(RuntimeError, match=r"cut\.pth.*(corrupted or truncated)"):
        mpamp.load(bad)


def test_bit_flips_in_data_and_pickle_are_detected(tmp_path):
    path = _good_file(tmp_path)
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        targets = []
        for name in ("archive/data.pkl", "archive/data/0", "archive/data/1"):
            info = zf.getinfo(name)
            extra = int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30],
                                   "little")
            targets.append(info.header_offset + 30 + len(name) + extra + 5)
    for pos in targets:
        flipped = bytearray(raw)
        flipped[pos] ^= 0x10
        bad = tmp_path / "flip.pth"
        bad.write_bytes(bytes(flipped))
        with pytest.raises(RuntimeError, match=r"flip\.pth.*corrupted or truncated"):
            mpamp.load(bad)


def test_any_single_bit_flip_loads_identically_or_fails_clearly(tmp_path):
    path = _good_file(tmp_path)
    raw = path.read_bytes()
    ref = mpamp.load(path)
    rng = np.random.default_rng(0)
    for pos in rng.choice(len(raw), size=200, replace=False):
        flipped = bytearray(raw)
        flipped[pos] ^= 1 << int(rng.integers(8))
        bad = tmp_path / "flip.pth"
        bad.write_bytes(bytes(flipped))
        try:
            out = mpamp.load(bad)
        except (RuntimeError, pickle.UnpicklingError) as exc:
            assert "flip.pth" in str(exc)
            continue
        assert out["step"] == 3
        _same(out["w"], ref["w"])
        _same(out["b"], ref["b"])


def test_missing_file_and_legacy_format(tmp_path):
    with pytest.raises(FileNotFoundError):
        mpamp.load(tmp_path / "nope.pth")
    legacy = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.rest"
    (tmp_path / "old.pth").write_bytes(legacy)
    with pytest.raises(RuntimeError, match="legacy"):
        mpamp.load(tmp_path / "old.pth")


# ---- atomicity ----

def test_failed_save_leaves_no_partial_file(tmp_path, monkeypatch):
    from mpamp.serialization import _torch_zip
    target = tmp_path / "ckpt.pth"
    real = _torch_zip._write_record
    calls = []

    def dying(zf, name, data):
        calls.append(name)
        if name.endswith("data/1"):
            raise KeyboardInterrupt("simulated crash mid-write")
        real(zf, name, data)
    monkeypatch.setattr(_torch_zip, "_write_record", dying)
    with pytest.raises(KeyboardInterrupt):
        mpamp.save({"a": mpamp.ones(1000), "b": mpamp.ones(1000)}, target)
    assert "archive/data/0" in calls
    assert os.listdir(tmp_path) == []


def test_failed_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    from mpamp.serialization import _torch_zip
    target = tmp_path / "ckpt.pth"
    mpamp.save({"v": 1}, target)
    before = target.read_bytes()

    def dying(*args):
        raise OSError(28, "No space left on device (simulated)")
    monkeypatch.setattr(_torch_zip, "_write_record", dying)
    with pytest.raises(OSError, match="No space"):
        mpamp.save({"v": 2}, target)
    assert target.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pth"]


def test_unwritable_or_missing_folder(tmp_path):
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        mpamp.save({}, tmp_path / "missing" / "a.pth")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        with pytest.raises(PermissionError, match="cannot write checkpoint"):
            mpamp.save({}, ro / "a.pth")
    finally:
        ro.chmod(0o700)


def test_saved_file_gets_normal_permissions(tmp_path):
    mpamp.save({}, tmp_path / "a.pth")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.pth").stat().st_mode & 0o777 == 0o666 & ~umask


def test_build_opcodes_cannot_alter_mpamp(tmp_path):
    # GLOBAL torch.Size, then BUILD with a slot state that would replace attributes of the
    # object the unpickler handed out: it must be a throwaway, not mpamp.Size itself.
    payload = (b"\x80\x02ctorch\nSize\n(}(X\x08\x00\x00\x00__repr__X\x01\x00\x00\x00xdtb"
               b"ctorch\nBFloat16Storage\n(}X\x04\x00\x00\x00nameX\x0b\x00\x00\x00FloatStorage"
               b"sb.")
    _zip_with_pickle(tmp_path / "b.pth", payload)
    try:
        mpamp.load(tmp_path / "b.pth")
    except (RuntimeError, pickle.UnpicklingError):
        pass
    assert repr(mpamp.Size([1])) == "mpamp.Size([1])"
    mpamp.save(mpamp.ones(2, dtype=mpamp.bfloat16), tmp_path / "ok.pth")
    assert mpamp.load(tmp_path / "ok.pth").dtype == mpamp.bfloat16


@pytest.mark.skipif(not hasattr(mpamp, "optim") or not hasattr(mpamp.amp, "GradScaler"),
                    reason="needs mpamp.optim and mpamp.amp.GradScaler")
def test_training_state_round_trip(tmp_path):
    from mpamp import optim
    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    opt = optim.Adam(model.parameters(), lr=0.001)
    sched = optim.lr_scheduler.StepLR(opt, step_size=3)
    scaler = mpamp.amp.GradScaler()
    model(mpamp.randn(4, 10)).sum().backward()
    opt.step()
    sched.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(), "scaler": scaler.state_dict(), "epoch": 1}
    mpamp.save(ckpt, tmp_path / "ckpt.pth")
    back = mpamp.load(tmp_path / "ckpt.pth")
    opt2 = optim.Adam(model.parameters(), lr=0.5)
    opt2.load_state_dict(back["optimizer"])
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    optim.lr_scheduler.StepLR(opt2, step_size=1).load_state_dict(back["scheduler"])
    mpamp.amp.GradScaler().load_state_dict(back["scaler"])
    assert back["scaler"] == scaler.state_dict() and back["epoch"] == 1
    try:
        import torch
    except ImportError:
        return
    theirs = torch.load(tmp_path / "ckpt.pth", weights_only=True, map_location="cpu")
    assert theirs["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert set(theirs["optimizer"]["state"][0]) >= {"step", "exp_avg", "exp_avg_sq"}
