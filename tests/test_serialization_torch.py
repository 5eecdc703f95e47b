"""Checkpoints cross between mpamp and torch: mpamp.save -> torch.load(weights_only=True) and
torch.save -> mpamp.load, every dtype, views, shared storages, optimizer/scaler state."""
from collections import OrderedDict

import numpy as np
import pytest

import mpamp
from conftest import run_python

torch = pytest.importorskip("torch")

PAIRS = [(mpamp.float32, torch.float32), (mpamp.float16, torch.float16),
         (mpamp.bfloat16, torch.bfloat16), (mpamp.int64, torch.int64),
         (mpamp.bool, torch.bool)]


def _bits_mp(t):
    return bytes(mpamp._C._memoryview(t.contiguous()).cast("B")) if t.numel() else b""


def _bits_torch(t):
    t = t.contiguous().reshape(-1)
    return t.view(torch.uint8).numpy().tobytes() if t.dtype != torch.bool \
        else t.numpy().tobytes()


def _torch_sample(dtype, shape=(4, 6)):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=g) * 3
    return (x > 0) if dtype == torch.bool else x.to(dtype) if dtype.is_floating_point \
        else (x * 1000).to(dtype)


def _assert_same(mp_t, torch_t):
    assert str(mp_t.dtype).split(".")[-1] == str(torch_t.dtype).split(".")[-1]
    assert tuple(mp_t.shape) == tuple(torch_t.shape)
    assert _bits_mp(mp_t) == _bits_torch(torch_t)


@pytest.mark.parametrize("mp_dtype,torch_dtype", PAIRS, ids=lambda d: str(d))
def test_mpamp_save_torch_load(tmp_path, mp_dtype, torch_dtype):
    x = mpamp.from_numpy(_torch_sample(torch.float32).numpy())
    t = mpamp.from_numpy(np.asarray(x.numpy() > 0)) if mp_dtype == mpamp.bool else \
        (x * 1000).long() if mp_dtype == mpamp.int64 else x.to(mp_dtype)
    obj = {"t": t, "view": t.t()[1:3], "scalar": t[0, 0], "empty": t[:0]}
    mpamp.save(obj, tmp_path / "a.pth")
    back = torch.load(tmp_path / "a.pth", weights_only=True)
    for k in obj:
        assert back[k].dtype == torch_dtype
        _assert_same(obj[k], back[k])


@pytest.mark.parametrize("mp_dtype,torch_dtype", PAIRS, ids=lambda d: str(d))
def test_torch_save_mpamp_load(tmp_path, mp_dtype, torch_dtype):
    t = _torch_sample(torch_dtype)
    obj = {"t": t, "view": t.t()[1:3], "offset": t[2:, 1:], "scalar": t[1, 1],
           "empty": t[:0], "expanded": t[0:1].expand(3, 6)}
    torch.save(obj, tmp_path / "a.pth")
    back = mpamp.load(tmp_path / "a.pth")
    for k in obj:
        assert back[k].dtype == mp_dtype
        _assert_same(back[k], obj[k])


def test_torch_training_state_loads(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(),
                                torch.nn.Linear(10, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    model(torch.randn(4, 10)).sum().backward()
    opt.step()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    scaler = torch.amp.GradScaler("cpu")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                "sched": sched.state_dict(), "scaler": scaler.state_dict(), "epoch": 3,
                "dtype": torch.bfloat16, "size": torch.Size([2, 3]),
                "device": torch.device("cpu"), "param": torch.nn.Parameter(torch.ones(2))},
               tmp_path / "ckpt.pth")
    back = mpamp.load(tmp_path / "ckpt.pth")
    assert isinstance(back["model"], OrderedDict) and "" in back["model"]._metadata
    for k, v in model.state_dict().items():
        _assert_same(back["model"][k], v)
    state = back["opt"]["state"][0]
    _assert_same(state["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    assert back["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["sched"]["step_size"] == 2 and back["scaler"] == scaler.state_dict()
    assert back["dtype"] is mpamp.bfloat16 and back["size"] == (2, 3)
    assert str(back["device"]) == "cpu"
    assert isinstance(back["param"], mpamp.nn.Parameter)
    net = mpamp.nn.Sequential(mpamp.nn.Linear(10, 10), mpamp.nn.ReLU(),
                              mpamp.nn.Linear(10, 1))
    net.load_state_dict(back["model"])
    x = np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32)
    np.testing.assert_allclose(net(mpamp.from_numpy(x)).detach().numpy(),
                               model(torch.from_numpy(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_mpamp_model_checkpoint_loads_into_torch_model(tmp_path):
    net = mpamp.nn.Sequential(mpamp.nn.Linear(10, 10), mpamp.nn.ReLU(),
                              mpamp.nn.Linear(10, 1))
    mpamp.save(net.state_dict(), tmp_path / "m.pth")
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(),
                                torch.nn.Linear(10, 1))
    model.load_state_dict(torch.load(tmp_path / "m.pth", weights_only=True))
    for k, v in net.state_dict().items():
        _assert_same(v, model.state_dict()[k])


def test_shared_storage_from_torch(tmp_path):
    base = torch.arange(12.0)
    torch.save({"a": base[:6].view(2, 3), "b": base[6:], "all": base}, tmp_path / "s.pth")
    back = mpamp.load(tmp_path / "s.pth")
    assert back["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["b"].tolist()[0] == 6.0
    assert back["all"].numel() == 12


def test_dtypes_mpamp_lacks_are_converted_with_a_warning(tmp_path):
    torch.save({"d": torch.tensor([1.5, 2.5], dtype=torch.float64),
                "i": torch.tensor([1, -2], dtype=torch.int32),
                "u": torch.tensor([255], dtype=torch.uint8)}, tmp_path / "c.pth")
    with pytest.warns(UserWarning, match="DoubleStorage -> float32"):
        back = mpamp.load(tmp_path / "c.pth")
    assert back["d"].dtype == mpamp.float32 and back["d"].tolist() == [1.5, 2.5]
    assert back["i"].tolist() == [1, -2] and back["u"].tolist() == [255]


def test_torch_file_with_code_is_refused(tmp_path):
    import pickle
    torch.save({"np": np.float64(1.0)}, tmp_path / "x.pth")
    with pytest.raises(pickle.UnpicklingError, match="refused the global numpy"):
        mpamp.load(tmp_path / "x.pth")


def test_mpamp_load_does_not_import_torch(tmp_path):
    torch.save({"w": torch.ones(2, dtype=torch.bfloat16)}, tmp_path / "w.pth")
    proc = run_python("import sys, mpamp; d = mpamp.load(%r); "
                      "assert 'torch' not in sys.modules, 'torch imported'; "
                      "print(d['w'].dtype)" % str(tmp_path / "w.pth"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "mpamp.bfloat16"


def test_in_memory_buffers_and_other_protocols(tmp_path):
    import io
    buf = io.BytesIO()
    torch.save({"a": torch.arange(3)}, buf)            # prefix 'archive', not the file stem
    buf.seek(0)
    assert mpamp.load(buf)["a"].tolist() == [0, 1, 2]
    buf = io.BytesIO()
    obj = {"b": mpamp.ones(2, dtype=mpamp.bfloat16), "od": OrderedDict(a=(1, 2.5)), "s": b"x"}
    mpamp.save(obj, buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=True)
    assert back["b"].dtype == torch.bfloat16 and back["od"] == OrderedDict(a=(1, 2.5))
    assert back["s"] == b"x"
    with pytest.raises(ValueError, match="protocol 2 only"):
        mpamp.save(obj, io.BytesIO(), pickle_protocol=4)
    for protocol in (2, 3, 4, 5):      # mpamp.load reads what torch.save writes, any protocol
        torch_buf = io.BytesIO()
        torch.save({"c": torch.ones(1)}, torch_buf, pickle_protocol=protocol)
        torch_buf.seek(0)
        assert mpamp.load(torch_buf)["c"].tolist() == [1.0]
