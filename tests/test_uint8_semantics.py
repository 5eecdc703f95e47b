"""What uint8 means, checked against NumPy (no torch needed): arithmetic, bitwise ops and
comparisons over every byte (a Python int becomes a uint8 first, so 255 == -1), exact pow and
remainder, accumulating writes (index_add, index_put, scatter) modulo 256, any/all keeping
uint8, torch's range check on numbers written into uint8, uint8 index tensors as deprecated
byte masks and uint8 where-conditions (with torch's warnings), autograd through uint8
operands, optimizers meeting uint8 tensors, and exact 2-d max pooling of bytes. The
comparison with torch itself is tests/test_uint8_ops.py."""
import numpy as np
import pytest

import mpamp

U8 = mpamp.uint8
BYTES = np.arange(256, dtype=np.uint8)

def _u8(a):
    return mpamp.tensor(np.array(a, dtype=np.uint8))


def _check(t, want):
    assert t.dtype is U8, t.dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(want) % 256)


NP_NAMES = {"sub": "subtract", "mul": "multiply", "eq": "equal", "ne": "not_equal",
            "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
VIEWS = [lambda t: t, lambda t: t[::3], lambda t: t.reshape(16, 16).t()]


@pytest.mark.parametrize("view", VIEWS, ids=["contiguous", "stepped", "transposed"])
def test_every_byte_wraps_modulo_256(view):
    a, b = _u8(BYTES), _u8(np.roll(BYTES[::-1], 7))
    ta, tb = view(a), view(b)
    x, y = ta.numpy().astype(np.int64), tb.numpy().astype(np.int64)
    for op in ("add", "sub", "mul", "bitwise_and", "bitwise_or", "bitwise_xor"):
        _check(getattr(mpamp, op)(ta, tb), getattr(np, NP_NAMES.get(op, op))(x, y) & 255)
    for s in (-300, -256, -255, -1, 0, 1, 7, 255, 256, 300):
        w = s % 256                                   # a Python int becomes a uint8 first
        _check(ta + s, x + w)
        _check(ta - s, x - w)
        _check(ta * s, x * w)
        _check(ta & s, x & w)
        _check(ta | s, x | w)
        _check(ta ^ s, x ^ w)
        for op in ("eq", "ne", "lt", "le", "gt", "ge"):
            got = getattr(mpamp, op)(ta, s)
            assert got.dtype is mpamp.bool
            np.testing.assert_array_equal(got.numpy(), getattr(np, NP_NAMES[op])(x, w))
    for s in (-0.5, 255.5, 1e30):                     # a float compares as float32
        np.testing.assert_array_equal((ta < s).numpy(), x < s)
    _check(-ta, -x)
    _check(~ta, 255 - x)
    _check(ta.square(), x * x)
    _check(ta.abs(), x)
    _check(ta.sign(), (x > 0).astype(np.int64))
    for op in ("relu", "floor", "ceil", "round", "trunc"):
        _check(getattr(ta, op)(), x)


def test_pow_remainder_and_fmod_are_exact_in_uint8():
    a = _u8(BYTES)
    x = [int(v) for v in BYTES]
    for e in (0, 1, 2, 3, 7, 128, 255):
        assert a.pow(e).tolist() == [pow(v, e, 256) for v in x] and a.pow(e).dtype is U8
    assert (2 ** a).tolist() == [pow(2, v, 256) for v in x]
    assert mpamp.pow(-2, a).tolist() == [pow(254, v, 256) for v in x]
    e = _u8(np.roll(BYTES, 5))
    assert a.pow(e).tolist() == [pow(v, w, 256) for v, w in zip(x, e.tolist())]
    assert a.pow(mpamp.tensor(300)).tolist() == [pow(v, 44, 256) for v in x]    # 0-d wraps
    d = _u8(np.roll(BYTES, 3)).clamp(1)
    for op in ("remainder", "fmod"):                  # unsigned: both are C's %
        assert getattr(a, op)(d).tolist() == [v % w for v, w in zip(x, d.tolist())]
        assert getattr(a, op)(7).tolist() == [v % 7 for v in x]
        assert getattr(a, op)(-1).tolist() == [v % 255 for v in x]   # -1 is 255
    assert (300 % d).tolist() == [44 % w for w in d.tolist()]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % 256


def test_accumulating_writes_wrap_modulo_256():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (5, 6)).astype(np.uint8)
    src = rng.integers(0, 256, (8, 6)).astype(np.uint8)
    idx = np.array([0, 0, 3, 4, 4, 4, 1, 0])
    want = base.astype(np.int64)
    np.add.at(want, idx, src.astype(np.int64))
    t, i = _u8(base), mpamp.tensor(idx)
    _check(mpamp.index_add(t, 0, i, _u8(src)), want)
    _check(t.index_put((i,), _u8(src), accumulate=True), want)
    want3 = base.astype(np.int64)
    np.add.at(want3, idx, 3 * src.astype(np.int64))
    _check(mpamp.index_add(t, 0, i, _u8(src), alpha=3), want3)
    sidx = rng.integers(0, 5, (8, 6))
    want = base.astype(np.int64)
    prod = base.astype(np.int64)
    for r in range(8):
        for c in range(6):
            want[sidx[r, c], c] += int(src[r, c])
            prod[sidx[r, c], c] *= int(src[r, c])
    _check(mpamp.scatter_add(t, 0, mpamp.tensor(sidx), _u8(src)), want)
    _check(mpamp.scatter(t, 0, mpamp.tensor(sidx), _u8(src), reduce="multiply"), prod % 256)
    assert t.tolist() == base.tolist()                # out-of-place: the input is unchanged


def test_any_all_keep_uint8_and_byte_results_stay_one_byte():
    t = _u8([[0, 3, 255], [0, 0, 0]])
    assert t.any().dtype is U8 and t.any().item() == 1 and t.all().item() == 0
    assert t.any(1).tolist() == [1, 0] and t.all(0, keepdim=True).tolist() == [[0, 0, 0]]
    assert t.bool().any().dtype is mpamp.bool
    for r in (t.bitwise_not(), t ^ 1, t % 7, t.square(), t.pow(2), t.clamp(-1)):
        assert r.dtype is U8 and r.element_size() == 1 and r.nbytes == 6


def test_numbers_written_into_uint8_convert_as_torch():
    t = _u8(np.zeros(4))
    for v, want in ((-1, 255), (-255, 1), (255, 255), (2.7, 2), (0.0, 0), (True, 1)):
        assert t.fill_(v).tolist() == [want] * 4
    assert mpamp.clamp(_u8([0, 5, 255]), -1).tolist() == [255, 255, 255]      # min is 255
    assert mpamp.clamp(_u8([0, 5, 255]), max=-1).tolist() == [0, 5, 255]      # max is 255
    assert mpamp.where(mpamp.tensor([True, False]), _u8([1, 2]), -1).tolist() == [1, 255]
    for bad in (256, -256, -0.1, 255.1, float("inf"), float("nan")):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t "
                                               "without overflow"):
            t.fill_(bad)
    assert t.tolist() == [1] * 4                      # a refused fill writes nothing


def test_byte_masks_index_as_bool_masks_with_torchs_warning():
    x = mpamp.arange(12.0).reshape(3, 4)
    m = _u8([[1, 0, 2, 0], [0, 0, 0, 255], [9, 9, 0, 0]])
    warn = "indexing with dtype mpamp.uint8 is now deprecated, please use a dtype mpamp.bool"
    with pytest.warns(UserWarning, match=warn):
        got = x[m]
    assert got.tolist() == x[m.bool()].tolist() == [0.0, 2.0, 7.0, 8.0, 9.0]
    with pytest.warns(UserWarning, match=warn):
        assert x[_u8([1, 0, 1])].tolist() == x[[0, 2]].tolist()
    with pytest.warns(UserWarning, match=warn):
        assert x[:, _u8([0, 1, 1, 0])].tolist() == x[:, 1:3].tolist()
    with pytest.warns(UserWarning, match=warn):
        assert x[_u8(3)].shape == (1, 3, 4) and x[_u8(0)].shape == (0, 3, 4)
    y = x.clone()
    with pytest.warns(UserWarning, match=warn):
        y[m] = mpamp.tensor([-1.0, -2, -3, -4, -5])   # values, not one number: written
    assert y[m.bool()].tolist() == [-1.0, -2, -3, -4, -5]
    with pytest.warns(UserWarning, match=warn):
        z = mpamp.index_put(x, (m,), mpamp.arange(5.0), accumulate=True)
    assert z[m.bool()].tolist() == [0.0, 3.0, 9.0, 11.0, 13.0]
    with pytest.raises(IndexError, match="The shape of the mask"):
        with pytest.warns(UserWarning, match=warn):
            x[_u8([1, 0])]
    xg = mpamp.arange(12.0, requires_grad=True)
    with pytest.warns(UserWarning, match=warn):
        xg[_u8(np.arange(12) % 3 == 0)].sum().backward()
    assert xg.grad.tolist() == [float(i % 3 == 0) for i in range(12)]


def test_where_takes_a_uint8_condition_with_torchs_warning():
    c = _u8([0, 1, 255, 0])
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        r = mpamp.where(c, mpamp.tensor([1.0, 2, 3, 4]), 0.0)
    assert r.tolist() == [0.0, 2.0, 3.0, 0.0]
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, "
                                           "but got a tensor with dtype int64"):
        mpamp.where(c.long(), 1, 2)


def test_uint8_feeds_float_graphs_but_never_requires_grad():
    m = _u8([[3, 0, 255], [1, 2, 128]])
    x = mpamp.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
    (x * m + m).sum().backward()
    assert x.grad.tolist() == m.float().tolist()
    assert not (x * m).dtype is U8 and not m.requires_grad
    x.grad = None
    F = mpamp.nn.functional
    F.cross_entropy(x, _u8([2, 0])).backward()
    g8 = x.grad.clone()
    x.grad = None
    F.cross_entropy(x, mpamp.tensor([2, 0])).backward()
    np.testing.assert_array_equal(g8.numpy(), x.grad.numpy())


def test_optimizers_skip_uint8_tensors_and_refuse_uint8_grads_by_name():
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"):
        t = _u8([1, 2, 3])
        opt = getattr(mpamp.optim, name)([t], lr=0.1)
        opt.step()                                    # no grad: untouched, as torch
        assert t.tolist() == [1, 2, 3]
        t.grad = _u8([1, 1, 1])
        with pytest.raises(TypeError, match=r"param 0 has an unsupported dtype \(uint8; "
                                            "expected float32, float16 or bfloat16\\)"):
            opt.step()
        assert t.tolist() == [1, 2, 3]


def test_max_pool2d_of_bytes_is_exact():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (2, 3, 7, 9)).astype(np.uint8)
    t = _u8(a)
    out, idx = mpamp.nn.functional.max_pool2d(t, 2, return_indices=True, ceil_mode=True)
    assert out.dtype is U8 and idx.dtype is mpamp.int64
    fo, fi = mpamp.nn.functional.max_pool2d(t.float(), 2, return_indices=True, ceil_mode=True)
    assert out.tolist() == fo.byte().tolist() and idx.tolist() == fi.tolist()
    want = np.pad(a, ((0, 0), (0, 0), (0, 1), (0, 1))).reshape(2, 3, 4, 2, 5, 2).max((3, 5))
    np.testing.assert_array_equal(out.numpy(), want)
