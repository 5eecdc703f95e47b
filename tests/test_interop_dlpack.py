"""DLPack: Tensor.__dlpack__ / __dlpack_device__ and mpamp.from_dlpack, with NumPy, PyTorch
(when installed) and hand-made capsules (ctypes) for every error path; lifetimes and leaks."""
import ctypes
import gc
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import mpamp

NP_DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "bool": np.bool_,
             "uint8": np.uint8}
ALL = list(NP_DTYPES) + ["bfloat16"]


def _sample(name, shape=(2, 3)):
    n = int(np.prod(shape))
    if name == "bool":
        return mpamp.tensor((np.arange(n) % 2 == 0).reshape(shape))
    return mpamp.tensor(np.arange(n).reshape(shape) - 2, dtype=getattr(mpamp, name))


def _in_use():
    gc.collect()
    return mpamp.backends.cpu.allocator_stats()["in_use_bytes"]


# ---- hand-made capsules (the DLPack ABI, mirrored in ctypes) ----

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManaged(ctypes.Structure):
    pass


class DLManagedVersioned(ctypes.Structure):
    pass


LEGACY_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManaged))
VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedVersioned))
DLManaged._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                      ("deleter", LEGACY_DELETER)]
DLManagedVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                               ("manager_ctx", ctypes.c_void_p),
                               ("deleter", VERSIONED_DELETER), ("flags", ctypes.c_uint64),
                               ("dl_tensor", DLTensor)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_NAMES = {True: b"dltensor_versioned", False: b"dltensor"}
_alive = {}       # what a hand-made capsule points into, until its deleter runs
deleted = []      # addresses of managed tensors whose deleter ran


def _on_delete(ptr):
    addr = ctypes.cast(ptr, ctypes.c_void_p).value
    deleted.append(addr)
    _alive.pop(addr, None)


_legacy_deleter = LEGACY_DELETER(_on_delete)
_versioned_deleter = VERSIONED_DELETER(_on_delete)


def make_capsule(arr, versioned=True, code=2, bits=32, lanes=1, device=(1, 0), strides=True,
                 byte_offset=0, flags=0, version=(1, 0), ndim=None, shape=None, data=True):
    """A capsule over arr's memory (no capsule destructor: only consumers delete)."""
    shape = arr.shape if shape is None else shape
    ndim = len(shape) if ndim is None else ndim
    shp = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    std = None
    if strides is True:
        std = (ctypes.c_int64 * max(arr.ndim, 1))(*[s // arr.itemsize for s in arr.strides])
    elif strides is not None:
        std = (ctypes.c_int64 * len(strides))(*strides)
    m = DLManagedVersioned() if versioned else DLManaged()
    dl = m.dl_tensor
    dl.data = arr.ctypes.data if data else None
    dl.device = DLDevice(*device)
    dl.ndim = ndim
    dl.dtype = DLDataType(code, bits, lanes)
    dl.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(std, ctypes.POINTER(ctypes.c_int64)) if std is not None else None
    dl.byte_offset = byte_offset
    if versioned:
        m.major, m.minor = version
        m.flags = flags
        m.deleter = _versioned_deleter
    else:
        m.deleter = _legacy_deleter
    addr = ctypes.addressof(m)
    while addr in deleted:     # an earlier, freed capsule had this address: forget it
        deleted.remove(addr)
    _alive[addr] = (m, shp, std, arr)
    return _capsule_new(addr, _NAMES[versioned], None), addr


def capsule_name(cap):
    return _capsule_name(cap).decode()


# ---- export ----

def test_dlpack_device():
    assert mpamp.ones(2).__dlpack_device__() == (1, 0)


def test_capsule_flavours():
    t = mpamp.ones(3)
    assert capsule_name(t.__dlpack__()) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=None)) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    for mv in ((1, 0), (1, 3), (2, 0)):
        cap = t.__dlpack__(max_version=mv)
        assert capsule_name(cap) == "dltensor_versioned"
        m = DLManagedVersioned.from_address(_capsule_pointer(cap, b"dltensor_versioned"))
        assert m.major == 1 and m.flags == 0
        dl = m.dl_tensor
        assert (dl.device.device_type, dl.ndim, dl.byte_offset) == (1, 1, 0)
        assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (2, 32, 1)
        assert dl.data == t.data_ptr() and dl.shape[0] == 3 and dl.strides[0] == 1


def test_export_keyword_arguments():
    t = mpamp.arange(4)
    assert mpamp.from_dlpack(t.__dlpack__(stream=None, dl_device=(1, 0), copy=False)) \
        .data_ptr() == t.data_ptr()
    assert mpamp.from_dlpack(t.__dlpack__(stream=-1)).tolist() == [0, 1, 2, 3]
    cap = t.__dlpack__(copy=True, max_version=(1, 0))
    m = DLManagedVersioned.from_address(_capsule_pointer(cap, b"dltensor_versioned"))
    assert m.flags & 2                                   # DLPACK_FLAG_BITMASK_IS_COPIED
    u = mpamp.from_dlpack(cap)
    assert u.data_ptr() != t.data_ptr() and u.tolist() == [0, 1, 2, 3]
    nc = mpamp.arange(6).reshape(2, 3).t()
    c = mpamp.from_dlpack(nc.__dlpack__(copy=True))
    assert c.is_contiguous() and c.tolist() == nc.tolist()


def test_export_errors():
    t = mpamp.ones(2)
    with pytest.raises(TypeError, match="no positional"):
        t.__dlpack__(None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'device'"):
        t.__dlpack__(device="cpu")
    with pytest.raises(ValueError, match="stream must be None"):
        t.__dlpack__(stream=1)
    with pytest.raises(ValueError, match="stream must be None"):
        t.__dlpack__(stream=2**80)
    with pytest.raises(TypeError, match="stream must be an int"):
        t.__dlpack__(stream="cuda")
    with pytest.raises(BufferError, match=r"dl_device=\(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match=r"dl_device=\(1, 1\)"):
        t.__dlpack__(dl_device=(1, 1))
    with pytest.raises(TypeError, match="dl_device must be a tuple"):
        t.__dlpack__(dl_device="cpu")
    with pytest.raises(TypeError, match="max_version must be a tuple"):
        t.__dlpack__(max_version=1)
    with pytest.raises(TypeError, match="max_version must be a tuple"):
        t.__dlpack__(max_version=(1, 0, 0))
    with pytest.raises(OverflowError):
        t.__dlpack__(max_version=(2**80, 0))
    with pytest.raises(BufferError, match="require gradient"):
        mpamp.ones(2, requires_grad=True).__dlpack__()
    assert mpamp.from_dlpack(mpamp.ones(2, requires_grad=True).detach()).tolist() == [1, 1]


@pytest.mark.parametrize("name", list(NP_DTYPES))
def test_numpy_from_dlpack_is_zero_copy(name):
    t = _sample(name, (3, 4))
    for view in (t, t.t(), t[::2, 1::2], t[1]):
        a = np.from_dlpack(view)
        assert a.dtype == NP_DTYPES[name] and a.ctypes.data == view.data_ptr()
        assert a.strides == tuple(s * view.element_size() for s in view.stride())
        assert a.tolist() == view.tolist()
    a = np.from_dlpack(t, device="cpu")
    a[0, 0] = 0
    assert t[0, 0].item() == 0
    c = np.from_dlpack(t, copy=True)
    assert c.ctypes.data != t.data_ptr() and c.tolist() == t.tolist()


def test_numpy_rejects_bfloat16_capsules_cleanly():
    t = mpamp.ones(2, dtype=mpamp.bfloat16)
    before = _in_use()
    for _ in range(3):
        with pytest.raises((BufferError, RuntimeError, TypeError)):
            np.from_dlpack(t)
    del t
    assert _in_use() < before     # the refused capsules released their reference


# ---- import ----

@pytest.mark.parametrize("name", list(NP_DTYPES))
def test_from_dlpack_numpy_is_zero_copy(name):
    a = (np.arange(12).reshape(3, 4) % 2).astype(NP_DTYPES[name])
    for view in (a, a.T, a[::2, 1::2], a[1]):
        t = mpamp.from_dlpack(view)
        assert t.dtype is getattr(mpamp, name) and t.data_ptr() == view.ctypes.data
        assert t.tolist() == view.tolist()
    t = mpamp.from_dlpack(a)
    t[2, 3] = 1
    assert a[2, 3] == 1


def test_from_dlpack_mpamp_round_trip_all_dtypes():
    for name in ALL:
        t = _sample(name)
        u = mpamp.from_dlpack(t)
        assert u.dtype is t.dtype and u.data_ptr() == t.data_ptr() and u.tolist() == t.tolist()
        assert mpamp.from_dlpack(t.t()).stride() == (1, 3)


def test_from_dlpack_copy_and_device():
    a = np.arange(3, dtype=np.float32)
    assert mpamp.from_dlpack(a, copy=False).data_ptr() == a.ctypes.data
    assert mpamp.from_dlpack(a, device="cpu").data_ptr() == a.ctypes.data
    c = mpamp.from_dlpack(a, copy=True)
    assert c.data_ptr() != a.ctypes.data and c.tolist() == [0.0, 1.0, 2.0]
    c = mpamp.from_dlpack(mpamp.arange(3).__dlpack__(), copy=True)     # a raw capsule
    assert c.tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="CUDA not available"):
        mpamp.from_dlpack(a, device="cuda")


class _LegacyProducer:
    """A producer from before DLPack 1.0: __dlpack__ takes only stream."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return (1, 0)


def test_from_dlpack_legacy_producer():
    t = mpamp.arange(4)
    u = mpamp.from_dlpack(_LegacyProducer(t))
    assert u.data_ptr() == t.data_ptr()
    c = mpamp.from_dlpack(_LegacyProducer(t), copy=True)
    assert c.data_ptr() != t.data_ptr() and c.tolist() == [0, 1, 2, 3]


def test_from_dlpack_readonly_warns():
    a = np.arange(3, dtype=np.float32)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="read-only"):
        t = mpamp.from_dlpack(a)
    assert t.tolist() == [0.0, 1.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mpamp.from_dlpack(a, copy=True).tolist() == [0.0, 1.0, 2.0]


def test_capsule_consumed_twice():
    cap = mpamp.ones(2).__dlpack__()
    t = mpamp.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    with pytest.raises(RuntimeError, match="consumed only once"):
        mpamp.from_dlpack(cap)
    cap = mpamp.ones(2).__dlpack__(max_version=(1, 0))
    mpamp.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned"
    with pytest.raises(RuntimeError, match="consumed only once"):
        mpamp.from_dlpack(cap)
    assert t.tolist() == [1.0, 1.0]


def test_from_dlpack_bad_objects():
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        mpamp.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        mpamp._C._from_dlpack(3)
    other = _capsule_new(ctypes.addressof(ctypes.c_int(0)), b"something", None)
    with pytest.raises(ValueError, match="named 'something'"):
        mpamp.from_dlpack(other)
    with pytest.raises(BufferError, match=r"device \(2, 0\)"):
        mpamp.from_dlpack(_DeviceProducer())


class _DeviceProducer:
    def __dlpack__(self, **kwargs):
        raise AssertionError("must not be asked for a capsule")

    def __dlpack_device__(self):
        return (2, 0)


# Each case: make_capsule keyword arguments -> (exception, message).
BAD_CAPSULES = [
    (dict(code=2, bits=64), TypeError, r"float64 \(code=2, bits=64, lanes=1\).*float32, "
                                       r"float16, bfloat16, int64, bool and uint8"),
    (dict(code=1, bits=16), TypeError, r"uint16 \(code=1, bits=16"),
    (dict(code=0, bits=32), TypeError, r"int32 \(code=0, bits=32"),
    (dict(code=5, bits=64), TypeError, r"complex64"),
    (dict(code=2, bits=32, lanes=4), TypeError, r"lanes=4"),
    (dict(code=9, bits=32), TypeError, r"unknown32"),
    (dict(device=(2, 0)), BufferError, r"device \(2, 0\)"),
    (dict(version=(2, 0)), BufferError, r"version 2\.0"),
    (dict(ndim=17, shape=(1,) * 17, strides=None), ValueError, "0 to 16 dimensions"),
    (dict(ndim=-1), ValueError, "dimensions"),
    (dict(shape=(2, -3), strides=None), ValueError, "negative dimension"),
    (dict(strides=(-1, 1)), ValueError, "negative strides"),
    (dict(strides=(2**62, 1)), ValueError, "overflow"),
    (dict(byte_offset=1), ValueError, "aligned"),
    (dict(data=False), ValueError, "NULL"),
]


@pytest.mark.parametrize("kwargs,exc,msg", BAD_CAPSULES)
@pytest.mark.parametrize("versioned", [True, False])
def test_bad_capsules_raise_and_are_not_consumed(kwargs, exc, msg, versioned):
    if "version" in kwargs and not versioned:
        pytest.skip("legacy capsules carry no version")
    a = np.zeros((2, 3), np.float32)
    cap, addr = make_capsule(a, versioned=versioned, **kwargs)
    with pytest.raises(exc, match=msg):
        mpamp.from_dlpack(cap)
    assert capsule_name(cap) == _NAMES[versioned].decode()    # still the producer's
    assert addr not in deleted
    _alive.pop(addr)


@pytest.mark.parametrize("versioned", [True, False])
def test_hand_made_capsules(versioned):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    cap, addr = make_capsule(a, versioned=versioned, strides=None)     # NULL = row-major
    t = mpamp.from_dlpack(cap)
    assert t.stride() == (4, 1) and t.tolist() == a.tolist() and t.data_ptr() == a.ctypes.data
    assert capsule_name(cap).startswith("used_")
    v = t[1:]
    del t
    gc.collect()
    assert addr not in deleted          # a view still holds the storage
    del v
    gc.collect()
    assert deleted.count(addr) == 1
    cap, addr = make_capsule(a, versioned=versioned, shape=(2, 2), strides=(4, 1),
                             byte_offset=8)                            # starts at a[0, 2]
    t = mpamp.from_dlpack(cap)
    assert t.tolist() == [[2.0, 3.0], [6.0, 7.0]] and t.data_ptr() == a.ctypes.data + 8
    del t
    gc.collect()
    assert deleted.count(addr) == 1
    for code, bits, name in ((2, 16, "float16"), (4, 16, "bfloat16"), (0, 64, "int64"),
                             (6, 8, "bool")):
        b = np.zeros(4, np.uint8 if bits == 8 else np.uint16 if bits == 16 else np.int64)
        cap, addr = make_capsule(b, versioned=versioned, code=code, bits=bits)
        assert mpamp.from_dlpack(cap).dtype is getattr(mpamp, name)
    e = np.zeros((0, 3), np.float32)
    cap, _ = make_capsule(e, versioned=versioned, data=False)          # empty: NULL is fine
    assert mpamp.from_dlpack(cap).shape == (0, 3)


def test_readonly_flag_on_hand_made_capsule():
    a = np.arange(3, dtype=np.float32)
    cap, _ = make_capsule(a, flags=1)
    with pytest.warns(UserWarning, match="read-only"):
        mpamp.from_dlpack(cap)
    cap, _ = make_capsule(a, device=(3, 0))                            # kDLCUDAHost
    assert mpamp.from_dlpack(cap).tolist() == [0.0, 1.0, 2.0]


# ---- lifetimes and leaks ----

def test_producer_deleted_before_consumer():
    before = _in_use()
    t = mpamp.arange(1000)
    a = np.from_dlpack(t)
    u = mpamp.from_dlpack(t)
    del t
    assert _in_use() > before and a[999] == 999 and u[999].item() == 999
    del a
    assert u[500].item() == 500
    del u
    assert _in_use() == before
    b = np.arange(1000, dtype=np.int64)
    v = mpamp.from_dlpack(b)
    del b
    gc.collect()
    assert v[999].item() == 999


def test_unconsumed_capsules_free_their_tensor():
    before = _in_use()
    t = mpamp.ones(1000)
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0)), t.__dlpack__(copy=True)]
    del t
    assert _in_use() > before
    del caps
    assert _in_use() == before


_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]


@pytest.mark.parametrize("owner", ["mpamp", "numpy"])
def test_export_deleter_runs_without_the_gil_on_another_thread(owner):
    """Consumers may call the deleter anywhere; ctypes drops the GIL around the call."""
    import threading
    arr = np.arange(1000, dtype=np.float32)
    t = mpamp.arange(1000) if owner == "mpamp" else mpamp.from_numpy(arr)
    before, arr_refs = _in_use(), sys.getrefcount(arr)
    cap = t.__dlpack__(max_version=(1, 0))
    m = DLManagedVersioned.from_address(_capsule_pointer(cap, b"dltensor_versioned"))
    _capsule_set_name(cap, b"used_dltensor_versioned")    # we are the consumer now
    del t
    worker = threading.Thread(target=m.deleter, args=(ctypes.pointer(m),))
    worker.start()
    worker.join()
    del cap, m
    if owner == "mpamp":
        assert _in_use() < before
    else:
        gc.collect()
        assert sys.getrefcount(arr) < arr_refs            # from_numpy's buffer was released


def _refcounts(*objs):
    return [sys.getrefcount(o) for o in objs]


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks",
                                                "keepcost")]


def _c_heap_in_use():
    """Bytes malloc has handed out (glibc), to catch leaked C headers; None elsewhere."""
    fn = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if fn is None:
        return None
    fn.restype = _MallInfo2
    return fn().uordblks


def test_round_trips_do_not_leak():
    x = mpamp.ones(64)
    arr = np.ones(64, np.float32)
    for _ in range(200):       # warm up caches (allocator classes, tracemalloc, etc.)
        np.from_dlpack(x), mpamp.from_dlpack(arr), mpamp.from_dlpack(x)
    gc.collect()
    refs = _refcounts(x, arr)
    in_use = _in_use()
    heap = _c_heap_in_use()
    tracemalloc.start()
    snap = tracemalloc.take_snapshot()
    for _ in range(10000):
        np.from_dlpack(x)
        mpamp.from_dlpack(arr)
        mpamp.from_dlpack(x.__dlpack__(max_version=(1, 0)))
        x.__dlpack__()                                  # never consumed
        mpamp.from_dlpack(mpamp.ones(8))                # new storage each time
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap, "filename"))
    tracemalloc.stop()
    assert _refcounts(x, arr) == refs
    assert _in_use() == in_use
    assert grown < 64 * 1024
    if heap is not None:       # a leaked export context or storage header is >= 40 bytes
        assert _c_heap_in_use() - heap < 256 * 1024


# ---- PyTorch ----

@pytest.mark.parametrize("name", ALL)
def test_torch_round_trips_zero_copy(name):
    torch = pytest.importorskip("torch")
    t = _sample(name, (3, 4))
    tt = torch.from_dlpack(t)
    assert tt.dtype == getattr(torch, name) and tt.data_ptr() == t.data_ptr()
    assert tt.tolist() == t.tolist()
    tt[0, 0] = 1
    assert t[0, 0].item() == 1
    src = torch.zeros(3, 4, dtype=getattr(torch, name))
    for view in (src, src.t(), src[::2, 1::2]):
        u = mpamp.from_dlpack(view)
        assert u.dtype is getattr(mpamp, name) and u.data_ptr() == view.data_ptr()
        assert u.stride() == view.stride() and u.tolist() == view.tolist()
    u = mpamp.from_dlpack(src)
    u[2, 3] = 1
    assert src[2, 3].item() == 1
    ttt = torch.from_dlpack(t.t())
    assert ttt.stride() == (1, 4) and ttt.tolist() == t.t().tolist()


def test_torch_lifetimes_and_errors():
    torch = pytest.importorskip("torch")
    before = _in_use()
    t = mpamp.arange(1000)
    tt = torch.from_dlpack(t)
    del t
    assert _in_use() > before and tt[999].item() == 999
    del tt
    assert _in_use() == before
    src = torch.arange(1000)
    u = mpamp.from_dlpack(src)
    del src
    gc.collect()
    assert u[999].item() == 999
    for bad in ("float64", "int32", "int16", "complex64"):
        with pytest.raises(TypeError, match="unsupported DLPack dtype"):
            mpamp.from_dlpack(torch.zeros(2, dtype=getattr(torch, bad)))
    with pytest.raises(BufferError, match="gradient"):
        mpamp.from_dlpack(torch.zeros(2, requires_grad=True))
    with pytest.raises(BufferError, match="gradient"):
        torch.from_dlpack(mpamp.zeros(2, requires_grad=True))


@pytest.mark.skipif(mpamp.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.parametrize("versioned", [False, True])
def test_cuda_memory_needs_cuda(versioned):
    """kDLCUDA memory imports only where this process has CUDA (the simulated GPU's checks
    cover the import itself); other devices are refused with the ones mpamp takes."""
    a = np.arange(4, dtype=np.float32)
    cap, _ = make_capsule(a, device=(2, 0), versioned=versioned)
    with pytest.raises(BufferError, match=r"device \(2, 0\), CUDA, and CUDA not available"):
        mpamp.from_dlpack(cap)
    cap, _ = make_capsule(a, device=(2, 1), versioned=versioned)
    with pytest.raises(BufferError, match=r"CPU memory and cuda:0 memory .*device \(2, 1\)"):
        mpamp.from_dlpack(cap)
    with pytest.raises(BufferError, match=r"\(2, 0\), CUDA, and CUDA not available"):
        mpamp.from_dlpack(_DeviceProducer())
