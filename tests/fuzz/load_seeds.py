"""Seed corpus for the mpamp.load fuzz target: name -> bytes of a checkpoint file.

Three kinds: valid checkpoints written by mpamp.save (every dtype, nested state dicts, optimizer
and scaler state), checkpoints written by torch.save when torch is installed (dtypes mpamp
converts, views sharing a storage, expanded tensors), and hand-made hostile archives (pickles
that name code to run, bad storage ids, offsets, sizes and strides, odd zip layouts). The
hostile pickles are spelled with a small pickler of our own, so they do not depend on the
loader's internals.
"""
import collections
import io
import os
import pickle
import zipfile

import mpamp

CANARY = ("mpamp_fuzz_canary", "fire")


# ---- spelling pickles by hand ----

class Global:
    """Pickles as GLOBAL 'module name'."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise RuntimeError("for pickling only")


class Call:
    """Pickles as func(*args) (REDUCE), func a Global."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


class Pid:
    """Pickles as a persistent id (BINPERSID) of the given tuple."""

    def __init__(self, *fields):
        self.fields = fields


class _Pickler(pickle._Pickler):
    dispatch = dict(pickle._Pickler.dispatch)

    def _save_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())

    dispatch[Global] = _save_global

    def persistent_id(self, obj):
        return obj.fields if isinstance(obj, Pid) else None


def dumps(obj):
    buf = io.BytesIO()
    _Pickler(buf, 2).dump(obj)
    return buf.getvalue()


def storage(kind="FloatStorage", key="0", numel=4, location="cpu"):
    return Pid("storage", Global("torch", kind), key, location, numel)


def tensor(stor, offset=0, size=(4,), stride=(1,), requires_grad=False):
    return Call(Global("torch._utils", "_rebuild_tensor_v2"), stor, offset, tuple(size),
                tuple(stride), requires_grad, Call(Global("collections", "OrderedDict")))


def archive(pkl, records=None, prefix="archive", compress=zipfile.ZIP_STORED, extra=None):
    """A torch-style zip: data.pkl, byteorder, version, data/<key> records (+ extra names)."""
    names = {"data.pkl": pkl, "byteorder": b"little"}
    names.update({f"data/{key}": raw for key, raw in (records or {}).items()})
    names.update({"version": b"3\n", **(extra or {})})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as zf:
        for name, raw in names.items():
            zf.writestr(f"{prefix}/{name}", raw)
    return buf.getvalue()


# ---- valid files ----

def _saved(obj):
    buf = io.BytesIO()
    mpamp.save(obj, buf)
    return buf.getvalue()


def mpamp_seeds():
    from mpamp import nn, optim
    mpamp.manual_seed(0)
    x = mpamp.randn(3, 4)
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 2))
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    model(x).sum().backward()
    opt.step()
    scaler = mpamp.amp.GradScaler("cpu")
    seeds = {
        "mpamp-float32": _saved(x),
        "mpamp-dtypes": _saved({"f32": x, "f16": x.half(), "bf16": x.bfloat16(),
                                "i64": (x * 100).long(), "bool": x.sum(0).long().bool(),
                                "u8": (x * 50).byte(),
                                "scalar": mpamp.tensor(2.5), "empty": mpamp.zeros(0, 4),
                                "view": x.t()}),
        "mpamp-training": _saved({"model": model.state_dict(), "optimizer": opt.state_dict(),
                                  "scaler": scaler.state_dict(), "epoch": 3}),
        "mpamp-misc": _saved([nn.Parameter(mpamp.ones(2)), (1, 2.5, None, "s", b"\x00\xff"),
                              mpamp.Size([2, 3]), mpamp.device("cpu"), mpamp.bfloat16,
                              collections.OrderedDict(a=x[0])]),
    }
    return seeds


def torch_seeds():
    """Files written by torch.save ({} when torch is not installed)."""
    try:
        import torch
    except ImportError:
        return {}
    x = torch.arange(12.0).reshape(3, 4)
    objs = {
        "torch-dtypes": {"f64": x.double(), "f32": x, "f16": x.half(), "bf16": x.bfloat16(),
                         "i32": x.int(), "i16": x.short(), "i8": x.char(), "u8": x.byte(),
                         "i64": x.long(), "bool": x > 3},
        "torch-views": {"x": x, "row": x[1], "cols": x[:, 1:3], "t": x.t(),
                        "expanded": torch.zeros(1).expand(5),
                        "param": torch.nn.Parameter(torch.ones(2))},
        "torch-module": torch.nn.Linear(3, 2).state_dict(),
    }
    out = {}
    for name, obj in objs.items():
        buf = io.BytesIO()
        torch.save(obj, buf)
        out[name] = buf.getvalue()
    return out


# ---- hostile files ----

def _floats(n):
    """4n bytes of a float32 record (a repeating byte ramp: finite and NaN values alike)."""
    return (bytes(range(256)) * (n // 64 + 1))[:4 * n]


def hostile_seeds():
    canary = Call(Global(*CANARY), "boom")
    good = tensor(storage(numel=4))
    seeds = {
        "canary-reduce": archive(dumps({"w": canary})),
        "canary-nested": archive(dumps([1, {"a": (canary,)}])),
        "os-system": archive(dumps(Call(Global("os", "system"), "true"))),
        "posix-system": archive(dumps(Call(Global("posix", "system"), "true"))),
        "builtins-exec": archive(dumps(Call(Global("builtins", "exec"),
                                            "import mpamp_fuzz_canary"))),
        "builtins-eval": archive(dumps(Call(Global("builtins", "eval"), "1"))),
        "getattr-chain": archive(dumps(Call(Global("builtins", "getattr"),
                                            Global("torch", "Size"), "__class__"))),
        "canary-as-storage-type": archive(dumps(tensor(
            Pid("storage", Global(*CANARY), "0", "cpu", 4))), {"0": _floats(4)}),
        "bare-pickle": dumps(canary),
        "good": archive(dumps({"w": good}), {"0": _floats(4)}),
        "missing-record": archive(dumps(good)),
        "short-record": archive(dumps(good), {"0": _floats(3)}),
        "unknown-storage": archive(dumps(tensor(storage("ComplexFloatStorage"))),
                                   {"0": _floats(4)}),
        "converted-storages": archive(dumps([
            tensor(storage("DoubleStorage", "0", 2), size=(2,)),
            tensor(storage("ByteStorage", "1", 8), size=(8,))]),
            {"0": _floats(4), "1": _floats(2)}),
        "bad-pid": archive(dumps(Pid("storage", "FloatStorage", 0, None, -1))),
        "huge-numel": archive(dumps(tensor(storage(numel=2**62))), {"0": _floats(4)}),
        "negative-offset": archive(dumps(tensor(storage(), offset=-1)), {"0": _floats(4)}),
        "past-end": archive(dumps(tensor(storage(), offset=2, size=(3,))), {"0": _floats(4)}),
        "negative-stride": archive(dumps(tensor(storage(), stride=(-1,))), {"0": _floats(4)}),
        "many-dims": archive(dumps(tensor(storage(), size=(1,) * 12, stride=(1,) * 12)),
                             {"0": _floats(4)}),
        "zero-size-overflow": archive(dumps(tensor(storage(), size=(0, 2**62, 2**62),
                                                   stride=(1, 1, 1))), {"0": _floats(4)}),
        "expand-huge": archive(dumps(tensor(storage(), size=(2**31,), stride=(0,))),
                               {"0": _floats(4)}),
        "overlap-huge": archive(dumps(tensor(storage(numel=2**14), size=(2**13, 2**13),
                                             stride=(1, 1))), {"0": _floats(2**14)}),
        "many-copies": archive(dumps([tensor(storage(numel=256), size=(256,))
                                      for _ in range(64)]), {"0": _floats(256)}),
        "not-a-storage": archive(dumps(Call(Global("torch._utils", "_rebuild_tensor_v2"),
                                            "x", 0, (1,), (1,)))),
        "bad-location": archive(dumps(tensor(storage(location="tpu:0"))), {"0": _floats(4)}),
        "cuda-location": archive(dumps(tensor(storage(location="cuda:0"))), {"0": _floats(4)}),
        "big-endian": archive(dumps(good), {"0": _floats(4)},
                              extra={"byteorder": b"big"}),
        "bad-byteorder": archive(dumps(good), {"0": _floats(4)},
                                 extra={"byteorder": b"middle"}),
        "deflated": archive(dumps({"w": good}), {"0": _floats(4)},
                            compress=zipfile.ZIP_DEFLATED),
        "codecs-bytes": archive(dumps(Call(Global("_codecs", "encode"), "\xff", "latin1"))),
        "codecs-other": archive(dumps(Call(Global("_codecs", "encode"), "x", "rot13"))),
        "set-and-complex": archive(dumps([Call(Global("builtins", "set"), [1, 2]),
                                          Call(Global("builtins", "complex"), 1.0, 2.0)])),
        "torchscript": archive(b"", extra={"constants.pkl": b""}),
        "no-data-pkl": _zip({"archive/version": b"3\n"}),
        "empty-zip": _zip({}),
        "legacy-magic": b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.",
        "empty": b"",
    }
    return seeds


def _zip(records):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, raw in records.items():
            zf.writestr(name, raw)
    return buf.getvalue()


def all_seeds():
    """Every seed, name -> bytes."""
    return {**mpamp_seeds(), **torch_seeds(), **hostile_seeds()}


def write_corpus(folder):
    """Write every seed as a file in folder (created if needed); returns the count."""
    os.makedirs(folder, exist_ok=True)
    seeds = all_seeds()
    for name, data in seeds.items():
        with open(os.path.join(folder, f"seed-{name}"), "wb") as fh:
            fh.write(data)
    return len(seeds)
