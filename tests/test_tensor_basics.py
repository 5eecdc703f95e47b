"""Tensor creation from data, introspection, dtype objects and spellings, conversions."""
import copy
import pickle

import numpy as np
import pytest

import mpamp
from conftest import to_numpy


def test_dtype_objects_and_aliases():
    assert mpamp.float is mpamp.float32 and mpamp.half is mpamp.float16
    assert mpamp.long is mpamp.int64
    assert repr(mpamp.bool) == "mpamp.bool" and repr(mpamp.bfloat16) == "mpamp.bfloat16"
    assert mpamp.float16.is_floating_point and not mpamp.int64.is_floating_point
    assert [d.itemsize for d in (mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.int64,
                                 mpamp.bool)] == [4, 2, 2, 8, 1]
    assert pickle.loads(pickle.dumps(mpamp.bfloat16)) is mpamp.bfloat16
    with pytest.raises(TypeError):
        mpamp.dtype()


@pytest.mark.parametrize("spelling,expected", [
    ("fp32", "float32"), ("float32", "float32"), ("fp16", "float16"), ("float16", "float16"),
    ("half", "float16"), ("bf16", "bfloat16"), ("bfloat16", "bfloat16")])
def test_dtype_strings_everywhere(spelling, expected):
    want = getattr(mpamp, expected)
    assert mpamp.zeros(2, dtype=spelling).dtype is want
    assert mpamp.tensor([1.0], dtype=spelling).dtype is want
    assert mpamp.ones(1).to(spelling).dtype is want
    assert mpamp.ones(1).to(dtype=spelling).dtype is want
    assert mpamp.arange(3, dtype=spelling).dtype is want
    assert mpamp.rand(2, dtype=spelling).dtype is want


@pytest.mark.parametrize("bad", ["float64", "fp8", "Float32", "", "int32"])
def test_unknown_dtype_string_lists_accepted(bad):
    with pytest.raises(ValueError) as exc:
        mpamp.zeros(2, dtype=bad)
    msg = str(exc.value)
    for s in ("'fp32'", "'float32'", "'fp16'", "'float16'", "'half'", "'bf16'", "'bfloat16'"):
        assert s in msg


def test_dtype_wrong_type():
    with pytest.raises(TypeError, match="dtype must be"):
        mpamp.zeros(2, dtype=np.float32)


def test_tensor_from_python_data():
    assert mpamp.tensor(3.5).shape == () and mpamp.tensor(3.5).item() == 3.5
    assert mpamp.tensor(3).dtype is mpamp.int64
    assert mpamp.tensor(True).dtype is mpamp.bool
    t = mpamp.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.dtype is mpamp.int64 and t.shape == (2, 3) and t.tolist() == [[1, 2, 3], [4, 5, 6]]
    f = mpamp.tensor([[1, 2.5], [3, 4]])
    assert f.dtype is mpamp.float32 and f.tolist() == [[1.0, 2.5], [3.0, 4.0]]
    assert mpamp.tensor([True, False]).dtype is mpamp.bool
    assert mpamp.tensor([]).shape == (0,) and mpamp.tensor([]).dtype is mpamp.float32
    assert mpamp.tensor([[], []]).shape == (2, 0)
    assert mpamp.tensor([np.float32(1), 2]).dtype is mpamp.float32


def test_tensor_from_numpy_copies_and_converts():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = mpamp.tensor(a)
    assert t.dtype is mpamp.float32        # no float64 in mpamp (README: API table)
    a[0, 0] = 100
    assert t[0, 0].item() == 0.0           # tensor() always copies
    assert mpamp.tensor(np.arange(3, dtype=np.int32)).dtype is mpamp.int64
    assert mpamp.tensor(np.ones(2, np.float16)).dtype is mpamp.float16
    nc = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(to_numpy(mpamp.tensor(nc)), nc)


def test_tensor_from_tensor_and_requires_grad():
    a = mpamp.tensor([1.0, 2.0])
    b = mpamp.tensor(a, dtype="bf16", requires_grad=True)
    assert b.dtype is mpamp.bfloat16 and b.requires_grad and not a.requires_grad
    b2 = mpamp.tensor(a)
    b2[0] = 5
    assert a[0].item() == 1.0


def test_introspection():
    t = mpamp.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, mpamp.Size)
    assert repr(t.shape) == "mpamp.Size([2, 3, 4])" and t.shape.numel() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.ndim == 3 and t.dim() == 3 and t.numel() == 24 and len(t) == 2
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.is_contiguous() and t.dtype is mpamp.float32
    assert t.device == mpamp.device("cpu") and t.device == "cpu" and str(t.device) == "cpu"
    assert repr(t.device) == "device(type='cpu')" and t.is_cpu and not t.is_cuda
    assert t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 96
    assert t.data_ptr() % 64 == 0      # 64-byte aligned storage
    assert mpamp.is_tensor(t) and not mpamp.is_tensor(np.zeros(1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(3)


def test_item_and_number_protocol():
    assert mpamp.tensor([[2.5]]).item() == 2.5
    assert isinstance(mpamp.tensor([7]).item(), int)
    assert mpamp.tensor([True]).item() is True
    assert float(mpamp.tensor(1.5)) == 1.5 and int(mpamp.tensor(3)) == 3
    assert [10, 20, 30][mpamp.tensor(1)] == 20
    assert bool(mpamp.tensor([1.0])) and not bool(mpamp.tensor(0))
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to "
                                           "Scalar"):
        mpamp.zeros(2, 3).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(mpamp.zeros(2))
    with pytest.raises(TypeError):
        [1, 2][mpamp.tensor(1.0)]
    assert f"{mpamp.tensor(2.5):.2f}" == "2.50"


def test_tolist_iter_len():
    t = mpamp.arange(6).view(2, 3)
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    rows = list(t)
    assert len(rows) == 2 and rows[1].tolist() == [3, 4, 5]
    assert mpamp.zeros(2, 0, 3).tolist() == [[], []]
    assert mpamp.tensor(5).tolist() == 5
    with pytest.raises(TypeError):
        len(mpamp.tensor(1.0))
    with pytest.raises(TypeError):
        iter(mpamp.tensor(1.0))
    assert mpamp.tensor([0.1], dtype="fp16").tolist() == [float(np.float16(0.1))]


def test_repr_like_torch():
    assert repr(mpamp.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(mpamp.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
    assert repr(mpamp.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(mpamp.tensor([1.0], dtype="bf16")) == "tensor([1.], dtype=mpamp.bfloat16)"
    assert repr(mpamp.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(mpamp.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert "..." in repr(mpamp.zeros(5000))
    assert repr(mpamp.tensor([True, False])) == "tensor([ True, False])"
    assert "e" in repr(mpamp.tensor([1e-5, 1e5]))
    assert "nan" in repr(mpamp.tensor([float("nan"), 1.5]))


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16", "int64", "bool"])
@pytest.mark.parametrize("dst", ["float32", "float16", "bfloat16", "int64", "bool"])
def test_casts_between_all_dtypes(src, dst):
    vals = [0.0, 1.0, -2.0, 3.0, 0.0, 5.0] if src != "bool" else [0, 1, 1, 0, 0, 1]
    t = mpamp.tensor(vals).to(getattr(mpamp, src))
    out = t.to(getattr(mpamp, dst))
    assert out.dtype is getattr(mpamp, dst)
    expect = np.array(vals, dtype=np.float32)
    if src == "bool" or dst == "bool":
        expect = (expect != 0).astype(np.float32)
    np.testing.assert_array_equal(to_numpy(out).astype(np.float32), expect)


def test_cast_methods_and_identity():
    t = mpamp.tensor([1.0, 2.0])
    assert t.float() is t and t.to(mpamp.float32) is t and t.to("cpu") is t
    assert t.to(mpamp.float32, copy=True) is not t
    assert t.half().dtype is mpamp.float16 and t.bfloat16().dtype is mpamp.bfloat16
    assert t.long().dtype is mpamp.int64 and t.bool().dtype is mpamp.bool
    assert t.type_as(mpamp.zeros(1, dtype="bf16")).dtype is mpamp.bfloat16
    assert t.to(mpamp.zeros(1, dtype="fp16")).dtype is mpamp.float16
    assert t.to("cpu", "bf16").dtype is mpamp.bfloat16
    assert t.type() == "mpamp.FloatTensor" and t.type("fp16").dtype is mpamp.float16
    with pytest.raises(TypeError, match="float64"):
        t.double()
    with pytest.raises(RuntimeError, match="CUDA not available"):
        t.to("cuda")
    with pytest.raises(RuntimeError, match="CUDA not available"):
        t.cuda()
    with pytest.raises(ValueError, match="neither a device"):
        t.to("int32")
    with pytest.raises(TypeError, match="type_as"):
        t.type_as(3)


def test_float_to_int_casts_truncate_and_handle_nan():
    t = mpamp.tensor([1.7, -1.7, float("nan"), float("inf"), 1e30])
    out = t.long().tolist()
    assert out[:2] == [1, -1]
    assert out[2] == out[3] == out[4] == np.iinfo(np.int64).min   # x86 semantics, no UB
    assert mpamp.tensor([0.0, -0.0, float("nan"), 2.0]).bool().tolist() == [False, False, True,
                                                                             True]


def test_clone_contiguous_copy_fill():
    t = mpamp.arange(6, dtype="fp32").view(2, 3)
    c = t.clone()
    c[0, 0] = 9
    assert t[0, 0].item() == 0 and c.is_contiguous()
    tt = t.t()
    assert not tt.is_contiguous() and tt.contiguous().is_contiguous()
    assert tt.contiguous().tolist() == tt.tolist()
    assert t.contiguous() is t
    z = mpamp.empty(2, 3, dtype="bf16")
    z.copy_(t)
    assert z.float().tolist() == t.tolist()
    z.fill_(1.5)
    assert z.float().tolist() == [[1.5] * 3] * 2
    z.zero_()
    assert z.float().tolist() == [[0.0] * 3] * 2
    z.copy_(mpamp.tensor([1.0, 2.0, 3.0]))         # broadcasting source
    assert z.float().tolist() == [[1, 2, 3], [1, 2, 3]]
    z.fill_(mpamp.tensor(4.0))
    assert z.float().tolist() == [[4.0] * 3] * 2
    with pytest.raises(RuntimeError, match="expanded size"):
        z.copy_(mpamp.zeros(4))
    with pytest.raises(RuntimeError, match="0-dimension"):
        z.fill_(mpamp.zeros(2))
    with pytest.raises(TypeError):
        z.copy_([1, 2, 3])


def test_requires_grad_flag():
    t = mpamp.zeros(2)
    assert not t.requires_grad
    assert t.requires_grad_() is t and t.requires_grad
    t.requires_grad = False
    assert not t.requires_grad
    assert mpamp.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        mpamp.zeros(2, dtype=mpamp.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="requires grad"):
        mpamp.zeros(2, requires_grad=True).numpy()
    assert not mpamp.zeros(2, requires_grad=True).detach().requires_grad


def test_pickle_and_deepcopy():
    for dt in ("fp32", "fp16", "bf16"):
        t = mpamp.tensor([[1.5, -2.0], [3.0, 4.25]], dtype=dt)
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype is t.dtype and u.float().tolist() == t.float().tolist()
    t = mpamp.tensor([1.0], requires_grad=True)
    d = copy.deepcopy(t)
    assert d.requires_grad and d.data_ptr() != t.data_ptr()
    assert pickle.loads(pickle.dumps(mpamp.zeros(0, 2))).shape == (0, 2)
    assert pickle.loads(pickle.dumps(mpamp.Size([2, 3]))) == (2, 3)
    assert pickle.loads(pickle.dumps(mpamp.device("cpu"))) == mpamp.device("cpu")


def test_tensor_constructor():
    t = mpamp.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype is mpamp.float32 and type(t) is mpamp.Tensor
    with pytest.raises(TypeError):
        mpamp.Tensor(2, dtype="fp16")


def test_device_objects():
    d = mpamp.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert mpamp.device("cpu") != mpamp.device("cuda")
    with pytest.raises(ValueError):
        mpamp.device("tpu")
    with pytest.raises(ValueError):
        mpamp.device("cuda:x")
    with pytest.raises(AttributeError):
        d.type = "cpu"


def test_data_property():
    p = mpamp.ones(2, requires_grad=True)
    d = p.data
    assert not d.requires_grad and d.data_ptr() == p.data_ptr()
    p.data = mpamp.zeros(3, dtype="fp16")
    assert p.shape == (3,) and p.dtype is mpamp.float16 and p.requires_grad
    with pytest.raises(TypeError, match="data must be a Tensor"):
        p.data = [1, 2]
