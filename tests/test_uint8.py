"""uint8 (torch's ByteTensor): creation, casts to and from every dtype (NumPy references; out of
range values wrap modulo 256, floats truncate first, NaN/inf give 0), torch's type promotion,
arithmetic and reductions, products, repr, NumPy / buffer / DLPack interop, pickling,
mpamp.save/load and safetensors with torch both ways, and the errors of ops that refuse it."""
import json
import pickle
import struct

import numpy as np
import pytest

import mpamp
from conftest import to_numpy

U8 = mpamp.uint8
ALL = [mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.int64, mpamp.bool, mpamp.uint8]
BYTES = np.arange(256, dtype=np.uint8)


def _name(dt):
    return repr(dt).split(".")[1]


def test_dtype_object():
    assert repr(U8) == "mpamp.uint8" and mpamp.uint8 is mpamp._C.uint8
    assert U8.itemsize == 1 and U8.is_floating_point is False and U8.is_signed is False
    assert U8._index == 5 and [d._index for d in ALL[:5]] == [0, 1, 2, 3, 4]
    assert pickle.loads(pickle.dumps(U8)) is U8
    assert mpamp.int64.is_signed is True and mpamp.bool.is_signed is False
    with pytest.raises(ValueError, match="mpamp.bool, mpamp.uint8 or one of the strings"):
        mpamp.zeros(2, dtype="uint7")


def test_creation():
    assert mpamp.zeros(2, 3, dtype=U8).tolist() == [[0] * 3] * 2
    assert mpamp.ones(3, dtype=U8).dtype is U8 and mpamp.empty(4, dtype=U8).shape == (4,)
    assert mpamp.full((2,), 7, dtype=U8).tolist() == [7, 7]
    assert mpamp.arange(250, 260, dtype=U8).tolist() == [250, 251, 252, 253, 254, 255, 0, 1,
                                                         2, 3]     # wraps, as torch
    assert mpamp.tensor([1, 2, 255], dtype=U8).tolist() == [1, 2, 255]
    assert mpamp.tensor(np.array([3, 200], np.uint8)).dtype is U8     # stays uint8
    assert mpamp.tensor([[1, 2]], dtype=U8).type() == "mpamp.ByteTensor"
    t = mpamp.zeros_like(mpamp.ones(3), dtype=U8)
    assert t.dtype is U8 and mpamp.ones_like(t).dtype is U8 and mpamp.full_like(t, 9).tolist() \
        == [9, 9, 9]
    r = mpamp.randint(0, 256, (5000,), dtype=U8, generator=mpamp.Generator().manual_seed(0))
    assert r.dtype is U8 and 0 <= to_numpy(r).min() and to_numpy(r).max() == 255
    assert mpamp.randint_like(t, 3, 7).dtype is U8
    for args, msg in [((0, 257), "to - 1 is out of bounds for unsigned char"),
                      ((-1, 5), "from is out of bounds for unsigned char")]:
        with pytest.raises(RuntimeError, match=msg):
            mpamp.randint(*args, (3,), dtype=U8)
    with pytest.raises(TypeError, match="floating point"):
        mpamp.rand(3, dtype=U8)


def test_repr_item_index():
    t = mpamp.tensor([1, 2, 255], dtype=U8)
    assert repr(t) == "tensor([  1,   2, 255], dtype=mpamp.uint8)"
    assert repr(mpamp.tensor(3, dtype=U8)) == "tensor(3, dtype=mpamp.uint8)"
    assert repr(mpamp.zeros(0, dtype=U8)) == "tensor([], dtype=mpamp.uint8)"
    assert t[2].item() == 255 and type(t[2].item()) is int and int(t[1]) == 2
    assert ["a", "b", "c"][t[1]] == "c" and float(t[0]) == 1.0 and bool(t[0])


@pytest.mark.parametrize("dst", ALL)
def test_casts_from_uint8_are_exact(dst):
    t = mpamp.from_numpy(BYTES.copy())
    got = t.to(dst)
    assert got.dtype is dst
    if dst is mpamp.bool:
        assert got.tolist() == (BYTES != 0).tolist()
    else:
        assert got.float().tolist() == BYTES.astype(np.float32).tolist()
    assert got.to(U8).tolist() == (BYTES if dst is not mpamp.bool else BYTES != 0).tolist()


def test_casts_to_uint8_wrap_as_torch():
    ints = np.array([0, 1, 255, 256, 257, -1, -256, 1000, 2 ** 40 + 3, -(2 ** 62)], np.int64)
    assert mpamp.tensor(ints).byte().tolist() == ints.astype(np.uint8).tolist()
    floats = np.array([0.0, 2.9, -0.9, -1.0, 255.0, 256.0, 300.5, -300.7, 1e10, 65504.0],
                      np.float32)

    def ref(v):
        return int(np.trunc(v)) % 256 if np.isfinite(v) else 0   # fp16 turns 1e10 into inf
    want = [ref(v) for v in floats.astype(np.float64)]
    for dt in (mpamp.float32, mpamp.float16, mpamp.bfloat16):
        src = mpamp.tensor(floats).to(dt)
        exact = to_numpy(src.float()).astype(np.float64)
        assert src.byte().tolist() == [ref(v) for v in exact], dt
    assert mpamp.tensor(floats).byte().tolist() == want
    special = mpamp.tensor([float("nan"), float("inf"), -float("inf"), 1e30])
    assert special.byte().tolist() == [0, 0, 0, 0]           # documented: undefined in torch
    assert mpamp.tensor([True, False]).byte().tolist() == [1, 0]
    z = mpamp.zeros(3, dtype=U8)
    z.copy_(mpamp.tensor([1.7, 257.0, -1.0]))
    assert z.tolist() == [1, 1, 255]


def test_casts_agree_with_torch_where_torch_defines_them():
    torch = pytest.importorskip("torch")
    ints = [0, 255, 256, -1, 1000, -300]
    assert mpamp.tensor(ints).byte().tolist() == torch.tensor(ints).byte().tolist()
    floats = [-1.0, 256.0, 300.5, 2.9, -300.7, 254.99]
    assert mpamp.tensor(floats).byte().tolist() == torch.tensor(floats).byte().tolist()
    b = torch.arange(256, dtype=torch.uint8)
    for dt in ("float32", "float16", "bfloat16", "int64", "bool"):
        assert mpamp.arange(256).byte().to(getattr(mpamp, dt)).float().tolist() == \
            b.to(getattr(torch, dt)).float().tolist()


def test_type_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    names = ["float32", "float16", "bfloat16", "int64", "bool", "uint8"]
    for other in names:
        for shape_a, shape_b in [((3,), (3,)), ((3,), ()), ((), (3,))]:
            a = mpamp.zeros(shape_a, dtype=U8) + mpamp.zeros(shape_b,
                                                            dtype=getattr(mpamp, other))
            ta = torch.zeros(shape_a, dtype=torch.uint8) + torch.zeros(
                shape_b, dtype=getattr(torch, other))
            assert _name(a.dtype) == str(ta.dtype).split(".")[1], (other, shape_a, shape_b)
    u = mpamp.zeros(3, dtype=U8)
    for scalar, want in [(3, U8), (True, U8), (1.5, mpamp.float32), (300, U8)]:
        assert (u + scalar).dtype is want and (scalar * u).dtype is want
    assert mpamp.cat([u, mpamp.zeros(2, dtype=mpamp.int64)]).dtype is mpamp.int64
    assert mpamp.cat([u, mpamp.zeros(2, dtype=mpamp.bool)]).dtype is U8
    assert mpamp.where(mpamp.ones(3, dtype=mpamp.bool), u, 5).dtype is U8


def test_arithmetic_wraps_like_numpy_uint8(rng):
    a = rng.integers(0, 256, (5, 7), dtype=np.uint8)
    b = rng.integers(0, 256, (5, 7), dtype=np.uint8)
    ta, tb = mpamp.tensor(a), mpamp.tensor(b)
    with np.errstate(over="ignore"):
        assert (ta + tb).tolist() == (a + b).tolist()
        assert (ta - tb).tolist() == (a - b).tolist()
        assert (ta * tb).tolist() == (a * b).tolist()
        assert (-ta).tolist() == (-a).tolist()
        assert (ta ** 2).tolist() == (a ** 2).tolist()
        assert (ta + 300).tolist() == (a + np.uint8(44)).tolist()
        assert (ta + (-1)).tolist() == (a - np.uint8(1)).tolist()
    np.testing.assert_allclose(to_numpy(ta / tb.clamp(1)), a / np.maximum(b, 1), rtol=1e-6)
    assert (ta / 2).dtype is mpamp.float32
    assert (ta + mpamp.tensor(b.astype(np.int64))).tolist() == \
        (a.astype(np.int64) + b).tolist()                           # widened, no wrap
    assert mpamp.abs(ta).tolist() == a.tolist() and mpamp.relu(ta).tolist() == a.tolist()
    assert mpamp.clamp(ta, 10, 200).tolist() == np.clip(a, 10, 200).tolist()
    assert mpamp.clamp(ta, 1.5).dtype is mpamp.float32
    small = ta[:, :2].clamp(0, 60)
    np.testing.assert_allclose(to_numpy(mpamp.exp(small)),
                               np.exp(to_numpy(small).astype(np.float32)), rtol=1e-5)


def test_non_contiguous_operands(rng):
    a = rng.integers(0, 256, (6, 8), dtype=np.uint8)
    t = mpamp.tensor(a)
    for view, ref in [(t.t(), a.T), (t[::2, 1::3], a[::2, 1::3]),
                      (t[:1].expand(4, 8), np.broadcast_to(a[:1], (4, 8)))]:
        with np.errstate(over="ignore"):
            assert (view + view).tolist() == (ref + ref).tolist()
        assert view.contiguous().tolist() == ref.tolist()
        assert view.float().tolist() == ref.astype(np.float32).tolist()
        assert view.sum().item() == int(ref.astype(np.int64).sum())


def test_in_place_ops():
    t = mpamp.tensor([250, 1, 2], dtype=U8)
    t += 10
    assert t.tolist() == [4, 11, 12] and t.dtype is U8
    t.mul_(mpamp.tensor([True, False, True]))
    assert t.tolist() == [4, 0, 12]
    t.add_(mpamp.tensor([300, 1, 1]))             # int64 operand: wraps into uint8, as torch
    assert t.tolist() == [48, 1, 13]
    t.neg_()
    assert t.tolist() == [208, 255, 243]
    t.fill_(7)
    assert t.tolist() == [7, 7, 7]
    for call in (lambda: t.add_(1.5), lambda: t.div_(2), lambda: t.exp_()):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Byte"):
            call()
    with pytest.raises(RuntimeError, match="clamp_: result type Float can't be cast to the "
                                           "desired output type Byte"):
        t.clamp_(0.5)


def test_reductions():
    a = np.array([[200, 100, 3], [255, 0, 7]], np.uint8)
    t = mpamp.tensor(a)
    assert t.sum().dtype is mpamp.int64 and t.sum().item() == 565
    assert t.sum(0).tolist() == [455, 100, 10] and t.sum(1, keepdim=True).shape == (2, 1)
    assert t.sum(dtype=U8).item() == 565 % 256 and t.sum(dtype=mpamp.float32).item() == 565.0
    assert t.max().item() == 255 and t.max().dtype is U8
    v, i = t.max(1)
    assert v.tolist() == [200, 255] and i.tolist() == [0, 0] and v.dtype is U8
    assert t.argmax().item() == 3 and t.argmax(0).tolist() == [1, 0, 1]
    assert t.mean(dtype=mpamp.float32).item() == pytest.approx(565 / 6)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input "
                                           "dtype must be either a floating point or complex "
                                           "dtype. Got: Byte"):
        t.mean()


def test_products_are_exact_and_wrap(rng):
    a = rng.integers(0, 256, (5, 301), dtype=np.uint8)
    b = rng.integers(0, 256, (301, 4), dtype=np.uint8)
    want = (a.astype(np.int64) @ b.astype(np.int64)) % 256
    ta, tb = mpamp.tensor(a), mpamp.tensor(b)
    assert (ta @ tb).dtype is U8 and (ta @ tb).tolist() == want.tolist()
    assert mpamp.mm(ta, tb).tolist() == want.tolist()
    assert (ta[0] @ tb[:, 0]).item() == want[0, 0]
    assert mpamp.bmm(ta[None], tb[None])[0].tolist() == want.tolist()
    assert mpamp.nn.functional.linear(ta, tb.t()).tolist() == want.tolist()
    big = mpamp.full((301,), 255, dtype=U8)
    assert (big @ big).item() == (301 * 255 * 255) % 256       # beyond fp32's exact range
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but "
                                           "got: uint8 != float32"):
        mpamp.matmul(ta, mpamp.ones(301, 2))


def test_ops_that_refuse_uint8_name_it():
    t = mpamp.tensor([[1, 2, 3], [4, 5, 6]], dtype=U8)
    F = mpamp.nn.functional
    cases = [
        (lambda: t.requires_grad_(), RuntimeError, "only Tensors of floating point dtype can "
                                                   "require gradients"),
        (lambda: mpamp.softmax(t, 1), RuntimeError, "not implemented for 'Byte'"),
        (lambda: mpamp.log_softmax(t, 1), RuntimeError, "not implemented for 'Byte'"),
        (lambda: F.layer_norm(t, (3,)), RuntimeError, "not implemented for 'Byte'"),
        (lambda: F.mse_loss(t, t), RuntimeError, "got Byte and Byte"),
        (lambda: F.cross_entropy(mpamp.ones(2, 3), t), RuntimeError,   # a probability target
         "Expected floating point type for target with class probabilities, got Byte"),
        (lambda: F.binary_cross_entropy_with_logits(t, t), RuntimeError, "got Byte"),
        (lambda: F.embedding(t, mpamp.ones(8, 2)), RuntimeError, "but got uint8 instead"),
        (lambda: F.dropout(t, 0.5), RuntimeError, "output type Byte"),
        (lambda: mpamp.multinomial(t.float().byte(), 1), RuntimeError, "got: Byte"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call()
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with mpamp.autocast("cpu", dtype=U8):
            pass


def test_numpy_and_buffer_interop():
    arr = BYTES.copy()
    t = mpamp.from_numpy(arr)
    assert t.dtype is U8
    arr[0] = 9
    assert t[0].item() == 9                                  # shares memory
    back = t.numpy()
    assert back.dtype == np.uint8 and np.shares_memory(back, arr)
    assert memoryview(t).format == "B" and memoryview(t).itemsize == 1
    assert np.asarray(t).dtype == np.uint8
    assert np.array(t, dtype=np.float32).tolist() == arr.astype(np.float32).tolist()
    with pytest.raises(ValueError, match="needs a copy"):
        t.__array__(dtype=np.int64, copy=False)
    assert mpamp.as_tensor(arr).numpy().base is not None
    img = np.zeros((2, 4, 4, 3), np.uint8)
    collated = mpamp.utils.data.default_collate([img[0], img[1]])
    assert collated.dtype is U8 and collated.shape == (2, 4, 4, 3)


def test_dlpack_roundtrips():
    t = mpamp.arange(10).byte()
    a = np.from_dlpack(t)
    assert a.dtype == np.uint8 and a.tolist() == list(range(10))
    back = mpamp.from_dlpack(np.arange(5, dtype=np.uint8))
    assert back.dtype is U8 and back.tolist() == [0, 1, 2, 3, 4]
    assert mpamp.from_dlpack(t).dtype is U8


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = mpamp.arange(300).byte()
    tt = torch.from_dlpack(t)
    assert tt.dtype == torch.uint8 and tt.tolist() == t.tolist()
    tt[0] = 77
    assert t[0].item() == 77                                      # zero-copy
    u = mpamp.from_dlpack(torch.arange(256, dtype=torch.uint8))
    assert u.dtype is U8 and u.tolist() == list(range(256))


def test_pickle_and_deepcopy():
    import copy
    t = mpamp.tensor([[1, 255]], dtype=U8)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.dtype is U8 and u.tolist() == [[1, 255]]


def test_save_load_roundtrip(tmp_path):
    t = mpamp.arange(256).byte().reshape(16, 16)
    mpamp.save({"img": t, "v": t.t()[::3], "dt": U8}, tmp_path / "u.pth")
    back = mpamp.load(tmp_path / "u.pth")
    assert back["img"].dtype is U8 and back["img"].tolist() == t.tolist()
    assert back["v"].tolist() == t.t()[::3].tolist() and back["dt"] is U8


def test_checkpoints_with_torch_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    t = mpamp.arange(256).byte()
    mpamp.save({"u": t, "dt": U8}, tmp_path / "m.pth")
    got = torch.load(tmp_path / "m.pth", weights_only=True)
    assert got["u"].dtype == torch.uint8 and got["u"].tolist() == t.tolist()
    assert got["dt"] is torch.uint8
    torch.save({"u": torch.arange(200, dtype=torch.uint8)[::2], "dt": torch.uint8},
               tmp_path / "t.pth")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # uint8 is no longer converted
        back = mpamp.load(tmp_path / "t.pth")
    assert back["u"].dtype is U8 and back["u"].tolist() == list(range(0, 200, 2))
    assert back["dt"] is U8


def test_safetensors_u8(tmp_path):
    t = mpamp.tensor([[0, 7, 255]], dtype=U8)
    mpamp.save_safetensors({"x": t}, tmp_path / "a.safetensors")
    raw = (tmp_path / "a.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    assert header["x"]["dtype"] == "U8" and header["x"]["shape"] == [1, 3]
    assert raw[8 + n:8 + n + 3] == bytes([0, 7, 255])
    back = mpamp.load_safetensors(tmp_path / "a.safetensors")["x"]
    assert back.dtype is U8 and back.tolist() == [[0, 7, 255]]


def test_safetensors_read_by_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    mpamp.save_safetensors({"x": mpamp.arange(9).byte()}, tmp_path / "b.safetensors")
    arr = st.load_file(str(tmp_path / "b.safetensors"))["x"]
    assert arr.dtype == np.uint8 and arr.tolist() == list(range(9))


def test_rng_state_is_a_byte_tensor_torch_understands():
    torch = pytest.importorskip("torch")
    s = mpamp.get_rng_state()
    assert s.dtype is U8 and s.type() == "mpamp.ByteTensor"
    ts = torch.from_dlpack(s)
    assert ts.dtype == torch.uint8 and ts.shape == (16,)
