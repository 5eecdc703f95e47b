"""NumPy interop: Tensor.numpy(), __array__ (NumPy 2 copy= rules), the buffer protocol and
from_numpy. All zero-copy where the API promises it. DLPack is in test_interop_dlpack.py."""
import gc
import struct
import sys

import numpy as np
import pytest

import mpamp
import mpamp._tensor

DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "bool": np.bool_,
          "uint8": np.uint8}
FORMATS = {"float32": "f", "float16": "e", "int64": "q", "bool": "?", "bfloat16": "H", "uint8": "B"}


def _mp(name):
    return getattr(mpamp, name)


def _sample(name, shape=(2, 3)):
    n = int(np.prod(shape))
    if name == "bool":
        return mpamp.tensor((np.arange(n) % 2 == 0).reshape(shape))
    return mpamp.tensor(np.arange(n).reshape(shape) - 2, dtype=_mp(name))


def _no_ml_dtypes(monkeypatch):
    monkeypatch.setattr(mpamp._tensor, "_ml_dtypes", lambda: None)


# ---- Tensor.numpy() ----

@pytest.mark.parametrize("name", list(DTYPES))
def test_numpy_is_a_zero_copy_view(name):
    t = _sample(name)
    a = t.numpy()
    assert a.dtype == DTYPES[name] and a.shape == (2, 3)
    assert a.ctypes.data == t.data_ptr() and a.flags.writeable
    np.testing.assert_array_equal(a, np.array(t.tolist(), dtype=DTYPES[name]))
    a[0, 1] = 1                       # write through the array ...
    assert t[0, 1].item() == 1
    t[1, 2] = 0                       # ... and through the tensor
    assert a[1, 2] == 0


@pytest.mark.parametrize("name", list(DTYPES) + ["bfloat16"])
def test_numpy_keeps_the_tensor_alive(name):
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    t = _sample(name, (64,))
    expect = t.tolist()
    gc.collect()            # free other tests' garbage first: only this tensor may move
    in_use = mpamp.backends.cpu.allocator_stats()["in_use_bytes"]
    a = t.numpy()
    del t
    gc.collect()
    assert mpamp.backends.cpu.allocator_stats()["in_use_bytes"] == in_use
    assert a.astype(np.float32).tolist() == [float(x) for x in expect]
    del a
    gc.collect()
    assert mpamp.backends.cpu.allocator_stats()["in_use_bytes"] < in_use


def test_numpy_bfloat16_with_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    t = mpamp.tensor([[1.5, -2.0], [3.0, 0.25]], dtype=mpamp.bfloat16)
    a = t.numpy()
    assert a.dtype == np.dtype(ml.bfloat16) and a.ctypes.data == t.data_ptr()
    np.testing.assert_array_equal(a.astype(np.float32), [[1.5, -2.0], [3.0, 0.25]])
    a[0, 0] = 8.0
    assert t[0, 0].item() == 8.0
    assert a.view(np.uint16)[0, 1] == 0xC000      # the raw bits of -2.0


def test_numpy_bfloat16_without_ml_dtypes(monkeypatch):
    _no_ml_dtypes(monkeypatch)
    t = mpamp.tensor([1.5], dtype=mpamp.bfloat16)
    with pytest.raises(TypeError, match=r"ml_dtypes.*\.float\(\)"):
        t.numpy()
    assert t.float().numpy().tolist() == [1.5]


@pytest.mark.parametrize("name", list(DTYPES) + ["bfloat16"])
def test_numpy_of_non_contiguous_tensors(name):
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    base = _sample(name, (4, 6))
    ref = base.float().numpy() if name == "bfloat16" else base.numpy()
    isz = base.element_size()
    for view, expect in ((base.t(), ref.T), (base[::2, 1::3], ref[::2, 1::3]),
                         (base.permute(1, 0)[::3, :], ref.T[::3, :])):
        a = view.numpy()
        assert a.shape == tuple(view.shape)
        assert a.strides == tuple(s * isz for s in view.stride())
        assert a.ctypes.data == view.data_ptr()
        np.testing.assert_array_equal(a.astype(np.float32), expect.astype(np.float32))


def test_numpy_of_expanded_and_empty_tensors():
    t = mpamp.tensor([1.0, 2.0]).expand(3, 2)
    a = t.numpy()
    assert a.strides == (0, 4) and a.tolist() == [[1.0, 2.0]] * 3
    assert mpamp.zeros(0, 3).numpy().shape == (0, 3)
    assert mpamp.tensor(2.5).numpy().shape == ()


def test_numpy_requires_grad_error():
    t = mpamp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*detach\(\)\.numpy\(\)"):
        t.numpy()
    assert t.numpy(force=True).tolist() == [1.0, 1.0]
    assert t.detach().numpy().tolist() == [1.0, 1.0]


# ---- np.asarray / np.array / __array__ ----

def test_numpy_prefers_the_buffer_over_array_for_non_bf16(monkeypatch):
    """NumPy asks for the buffer before __array__: documented in interop_buffer.c."""
    def boom(self, dtype=None, copy=None):
        raise AssertionError("__array__ should not be reached")
    monkeypatch.setattr(mpamp.Tensor, "__array__", boom)
    for name in DTYPES:
        t = _sample(name)
        assert np.asarray(t).dtype == DTYPES[name]
    with pytest.raises(AssertionError, match="should not be reached"):
        np.asarray(mpamp.ones(2, dtype=mpamp.bfloat16))


@pytest.mark.parametrize("name", list(DTYPES) + ["bfloat16"])
def test_np_asarray_and_array_copy_semantics(name):
    if name == "bfloat16":
        ml = pytest.importorskip("ml_dtypes")
        np_dtype = np.dtype(ml.bfloat16)
    else:
        np_dtype = np.dtype(DTYPES[name])
    t = _sample(name)
    shared = [np.asarray(t), np.array(t, copy=False), np.asarray(t, copy=False),
              np.asarray(t, dtype=np_dtype), np.array(t, copy=None)]
    for a in shared:
        assert a.dtype == np_dtype and a.ctypes.data == t.data_ptr()
    copied = [np.array(t), np.array(t, copy=True), np.asarray(t, copy=True),
              np.asarray(t, dtype=np.float64)]
    for a in copied:
        assert a.ctypes.data != t.data_ptr()
        np.testing.assert_array_equal(a.astype(np.float32), t.float().numpy())
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float64, copy=False)
    with pytest.raises(ValueError):
        np.array(t, dtype=np.float64, copy=False)


@pytest.mark.parametrize("name", list(DTYPES) + ["bfloat16"])
def test_dunder_array_direct_calls(name):
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    t = _sample(name)
    assert t.__array__().ctypes.data == t.data_ptr()
    assert t.__array__(copy=False).ctypes.data == t.data_ptr()
    assert t.__array__(copy=True).ctypes.data != t.data_ptr()
    a = t.__array__(np.float64)
    assert a.dtype == np.float64 and a.ctypes.data != t.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(np.float64, copy=False)
    u = mpamp.ones(2, requires_grad=True)     # NumPy conversion detaches, as the buffer does
    assert u.__array__().tolist() == [1.0, 1.0]


def test_bfloat16_asarray_without_ml_dtypes_is_float32(monkeypatch):
    _no_ml_dtypes(monkeypatch)
    t = mpamp.tensor([1.5, -2.0], dtype=mpamp.bfloat16)
    for a in (np.asarray(t), np.array(t), t.__array__(), t.__array__(copy=True)):
        assert a.dtype == np.float32 and a.tolist() == [1.5, -2.0]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="ml_dtypes"):
        np.asarray(t, copy=False)
    with pytest.raises(ValueError, match="ml_dtypes"):
        t.__array__(copy=False)


@pytest.mark.parametrize("ml", [True, False])
def test_numpy_functions_see_bfloat16_values(ml, monkeypatch):
    """Before the buffer fix these saw the raw bits (16128, ...) as uint16."""
    if not ml:
        _no_ml_dtypes(monkeypatch)
    t = mpamp.tensor([0.5, 1.5, 2.5], dtype=mpamp.bfloat16)
    np.testing.assert_allclose(np.asarray(t, dtype=np.float32), [0.5, 1.5, 2.5])
    np.testing.assert_allclose(t, [0.5, 1.5, 2.5])
    assert float(np.sum(np.asarray(t).astype(np.float32))) == 4.5
    assert mpamp.tensor([t, t]).float().tolist() == [[0.5, 1.5, 2.5]] * 2


# ---- buffer protocol ----

@pytest.mark.parametrize("name", list(DTYPES))
def test_memoryview_formats_shapes_strides(name):
    t = _sample(name, (3, 4))
    m = memoryview(t)
    isz = t.element_size()
    assert (m.format, m.itemsize, m.ndim, m.readonly) == (FORMATS[name], isz, 2, False)
    assert m.shape == (3, 4) and m.strides == (4 * isz, isz)
    assert np.asarray(m).tolist() == t.tolist()    # memoryview.tolist lacks 'e' before 3.12
    mt = memoryview(t.t())
    assert mt.shape == (4, 3) and mt.strides == (isz, 4 * isz) and not mt.c_contiguous
    assert np.asarray(mt).tolist() == t.t().tolist()
    ms = memoryview(t[::2, 1::2])
    assert ms.shape == (2, 2) and ms.strides == (8 * isz, 2 * isz)
    assert np.asarray(ms).tolist() == t[::2, 1::2].tolist()


def test_memoryview_of_bfloat16():
    t = mpamp.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=mpamp.bfloat16)
    m = mpamp._C._memoryview(t)                  # the typed export: raw bits as 'H'
    assert (m.format, m.itemsize, m.shape) == ("H", 2, (2, 2))
    assert m.tolist() == [[0x3F80, 0xC000], [0x3F00, 0x4040]]
    assert mpamp._C._memoryview(t.t()).strides == (2, 4)
    with pytest.raises(BufferError, match="bfloat16.*float\\(\\)"):
        memoryview(t)                            # typed requests go to __array__ instead
    assert struct.unpack_from("4H", t) == (0x3F80, 0xC000, 0x3F00, 0x4040)  # untyped: bytes
    with pytest.raises(TypeError, match="expects a Tensor"):
        mpamp._C._memoryview(np.zeros(2))


def test_untyped_buffer_needs_contiguity():
    t = mpamp.arange(6).reshape(2, 3).t()
    with pytest.raises(BufferError, match="not contiguous"):
        struct.unpack_from("6q", t)
    assert struct.unpack_from("6q", t.contiguous()) == (0, 3, 1, 4, 2, 5)


def test_memoryview_keeps_tensor_alive_and_writes_through():
    t = mpamp.zeros(4)
    m = memoryview(t)
    m[1] = 7.0
    assert t[1].item() == 7.0
    del t
    gc.collect()
    assert m.tolist() == [0.0, 7.0, 0.0, 0.0]


def test_pickle_bfloat16_uses_the_typed_export():
    import pickle
    t = mpamp.tensor([[1.5, -2.0]], dtype=mpamp.bfloat16).t()
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is mpamp.bfloat16 and u.float().tolist() == [[1.5], [-2.0]]


# ---- from_numpy ----

@pytest.mark.parametrize("name", list(DTYPES))
def test_from_numpy_is_zero_copy(name):
    a = (np.arange(6).reshape(2, 3) % 3).astype(DTYPES[name])
    t = mpamp.from_numpy(a)
    assert t.dtype is _mp(name) and t.data_ptr() == a.ctypes.data
    assert t.tolist() == a.tolist()
    a[0, 0] = 1
    assert t[0, 0].item() == 1
    t[1, 1] = 0
    assert a[1, 1] == 0


def test_from_numpy_bfloat16():
    ml = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0], dtype=ml.bfloat16)
    t = mpamp.from_numpy(a)
    assert t.dtype is mpamp.bfloat16 and t.data_ptr() == a.ctypes.data
    assert t.float().tolist() == [1.5, -2.0]


def test_from_numpy_strided_and_keeps_array_alive():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = a[::2, 1::3].T
    t = mpamp.from_numpy(view)
    assert t.stride() == (3, 12) and t.tolist() == view.tolist()
    b = np.arange(5, dtype=np.int64)
    before = sys.getrefcount(b)
    t = mpamp.from_numpy(b)
    assert sys.getrefcount(b) == before + 1     # the storage holds the array's buffer
    del b
    gc.collect()
    assert t.tolist() == [0, 1, 2, 3, 4]
    b = np.arange(3, dtype=np.int64)
    before = sys.getrefcount(b)
    t = mpamp.from_numpy(b)
    del t
    gc.collect()
    assert sys.getrefcount(b) == before


def test_from_numpy_errors():
    with pytest.raises(TypeError, match=r"numpy\.float64.*float32, float16, bfloat16"):
        mpamp.from_numpy(np.zeros(2))
    with pytest.raises(TypeError, match=r"numpy\.int32"):
        mpamp.from_numpy(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match=r"numpy\.uint16"):
        mpamp.from_numpy(np.zeros(2, np.uint16))
    with pytest.raises(TypeError, match=">f4|float32"):
        mpamp.from_numpy(np.zeros(2, ">f4"))
    with pytest.raises(ValueError, match="negative"):
        mpamp.from_numpy(np.arange(4, dtype=np.float32)[::-1])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        mpamp.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        mpamp.from_numpy(mpamp.zeros(2))


def test_from_numpy_readonly_warns():
    a = np.arange(3, dtype=np.float32)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = mpamp.from_numpy(a)
    assert t.tolist() == [0.0, 1.0, 2.0]


def test_contiguous_buffer_requests_refuse_strided_tensors():
    # mpi4py and ctypes ask for PyBUF_ANY/C/F_CONTIGUOUS and then read one run of memory
    import ctypes

    class Py_buffer(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                    ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                    ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                    ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                    ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]

    get = ctypes.pythonapi.PyObject_GetBuffer
    get.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = [ctypes.POINTER(Py_buffer)]
    strides, c_contig, f_contig, any_contig = 0x18, 0x38, 0x58, 0x98

    def request(obj, flags):
        view = Py_buffer()
        get(obj, ctypes.byref(view), flags)
        n = view.len
        release(ctypes.byref(view))
        return n

    t = mpamp.arange(12, dtype=mpamp.float32).reshape(3, 4)
    for flags in (strides, c_contig, any_contig):
        assert request(t, flags) == 48
    assert request(t[1], f_contig) == 16                   # one dimension: both orders
    for bad, flags in ((t.t(), c_contig), (t[:, ::2], any_contig), (t, f_contig),
                       (t[:, 1], c_contig)):
        with pytest.raises(BufferError, match="not contiguous in the requested order"):
            request(bad, flags)
    assert request(t.t(), strides) == 48                     # a strided consumer still works
