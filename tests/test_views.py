"""Views over strided storage and basic indexing, checked against NumPy's equivalents."""
import numpy as np
import pytest

import mpamp
from conftest import to_numpy

DTYPES = ["float32", "float16", "bfloat16", "int64"]


def make(shape, dtype="float32"):
    n = int(np.prod(shape))
    a = np.arange(n, dtype=np.float32).reshape(shape)
    return mpamp.tensor(a).to(getattr(mpamp, dtype)), a


def shares(a, b):
    a.view(-1)[0] if a.is_contiguous() else None
    return a.data_ptr() - a.storage_offset() * a.element_size() == \
        b.data_ptr() - b.storage_offset() * b.element_size()


@pytest.mark.parametrize("dtype", DTYPES)
def test_view_reshape_share_storage(dtype):
    t, a = make((2, 3, 4), dtype)
    v = t.view(6, 4)
    assert v.shape == (6, 4) and shares(v, t)
    np.testing.assert_array_equal(to_numpy(v), a.reshape(6, 4))
    assert t.view(-1).shape == (24,) and t.view(4, -1).shape == (4, 6)
    assert t.view((3, 8)).shape == (3, 8) and t.view(mpamp.Size([24])).shape == (24,)
    assert t.reshape(2, 12).shape == (2, 12) and shares(t.reshape(2, 12), t)
    tt = t.transpose(0, 2)                          # not viewable as (24,)
    r = tt.reshape(-1)
    np.testing.assert_array_equal(to_numpy(r), a.transpose(2, 1, 0).reshape(-1))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tt.view(-1)


def test_view_of_non_contiguous_when_possible():
    t, a = make((4, 6))
    s = t[:, :4]                                    # rows not contiguous with each other
    v = s.view(4, 2, 2)
    np.testing.assert_array_equal(to_numpy(v), a[:, :4].reshape(4, 2, 2))
    assert shares(v, t)
    e = mpamp.zeros(3).expand(2, 3)
    assert e.view(2, 1, 3).stride() == (0, 3, 1)


def test_view_errors_name_shapes():
    t = mpamp.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6 "
                                           r"\(input shape \[2, 3\]\)"):
        t.view(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        t.reshape(-2, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 0"):
        mpamp.zeros(0, 3).view(-1, 0)
    with pytest.raises(TypeError, match="must be tuple of ints"):
        t.view(2.0, 3)
    with pytest.raises(TypeError):
        t.view("a")


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_permute_t(dtype):
    t, a = make((2, 3, 4), dtype)
    np.testing.assert_array_equal(to_numpy(t.transpose(0, 2)), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(to_numpy(t.transpose(-1, 1)), a.swapaxes(2, 1))
    np.testing.assert_array_equal(to_numpy(t.permute(2, 0, 1)), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(to_numpy(t.permute((1, 2, 0))), a.transpose(1, 2, 0))
    np.testing.assert_array_equal(to_numpy(t.T), a.T)
    m, b = make((3, 5), dtype)
    np.testing.assert_array_equal(to_numpy(m.t()), b.T)
    assert mpamp.zeros(3).t().shape == (3,)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        t.t()
    with pytest.raises(RuntimeError, match="duplicate dims"):
        t.permute(0, 0, 1)
    with pytest.raises(RuntimeError, match="number of dimensions"):
        t.permute(0, 1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-3, 2\], but got 3\)"):
        t.transpose(0, 3)


def test_unsqueeze_squeeze_flatten():
    t, a = make((2, 1, 3))
    assert t.unsqueeze(0).shape == (1, 2, 1, 3) and t.unsqueeze(-1).shape == (2, 1, 3, 1)
    assert t.unsqueeze(3).shape == (2, 1, 3, 1)
    assert t.squeeze().shape == (2, 3) and t.squeeze(1).shape == (2, 3)
    assert t.squeeze(0).shape == (2, 1, 3)          # size != 1: unchanged, as torch
    assert t.flatten().shape == (6,) and t.flatten(1).shape == (2, 3)
    assert t.flatten(0, 1).shape == (2, 3)
    np.testing.assert_array_equal(to_numpy(t.flatten()), a.ravel())
    np.testing.assert_array_equal(to_numpy(t.transpose(0, 2).flatten()),
                                  a.transpose(2, 1, 0).ravel())
    assert mpamp.tensor(3.0).flatten().shape == (1,)
    assert mpamp.tensor(3.0).unsqueeze(0).shape == (1,)
    with pytest.raises(IndexError):
        t.unsqueeze(4)
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        t.flatten(2, 0)


def test_expand():
    t = mpamp.tensor([[1.0], [2.0]])
    e = t.expand(2, 3)
    assert e.shape == (2, 3) and e.stride() == (1, 0)
    assert e.tolist() == [[1, 1, 1], [2, 2, 2]]
    assert t.expand(4, -1, 3).shape == (4, 2, 3)
    assert t.expand_as(mpamp.zeros(2, 5)).shape == (2, 5)
    np.testing.assert_array_equal(to_numpy(e.contiguous()), [[1, 1, 1], [2, 2, 2]])
    with pytest.raises(RuntimeError, match="must match the existing size"):
        t.expand(3, 3)
    with pytest.raises(RuntimeError, match="must be greater or equal"):
        t.expand(3)
    with pytest.raises(RuntimeError, match="not allowed in a leading, non-existing dimension"):
        t.expand(-1, 2, 3)


@pytest.mark.parametrize("key", [
    0, -1, 1, (0, 1), (slice(None), 2), (slice(1, None), slice(None, None, 2)),
    (Ellipsis, 1), (None, 0), (0, None, slice(1, 3)), (slice(None, None, 3),),
    (slice(-2, None), Ellipsis, slice(None, 1)), (1, Ellipsis), (Ellipsis,),
    (slice(10, 20),), (slice(-100, 100),), (Ellipsis, None), (None, Ellipsis, None)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_basic_indexing_matches_numpy(key, dtype):
    t, a = make((3, 4, 5), dtype)
    got = t[key]
    np.testing.assert_array_equal(to_numpy(got), a[key])
    assert got.shape == a[key].shape


def test_indexing_shares_memory_and_setitem():
    t = mpamp.zeros(3, 4)
    row = t[1]
    row[2] = 7.0
    assert t[1, 2].item() == 7.0
    t[:, 0] = mpamp.tensor([1.0, 2.0, 3.0])
    t[0] = 5
    t[2, 1:3] = mpamp.tensor(9.0)
    a = t.cpu().numpy()
    np.testing.assert_array_equal(a[:, 0], [5, 2, 3])
    np.testing.assert_array_equal(a[0], [5, 5, 5, 5])
    np.testing.assert_array_equal(a[2, 1:3], [9, 9])
    h = mpamp.zeros(2, 2, dtype="fp16")
    h[0] = mpamp.tensor([1.5, 2.5])                 # converts on assignment
    assert h.float().tolist() == [[1.5, 2.5], [0, 0]]


def test_indexing_errors():
    t = mpamp.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t[3]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1"):
        t[0, -5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    assert t[[0, 1]].shape == (2, 4)     # advanced indexing: tests/test_advanced_indexing.py
    with pytest.raises(IndexError, match="only integers, slices .* are valid indices \\(got "
                                         "str\\)"):
        t["a"]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        mpamp.tensor(1.0)[0]
    with pytest.raises(TypeError, match="cannot be deleted"):
        del t[0]
    with pytest.raises(RuntimeError, match="expanded size"):
        t[0] = mpamp.zeros(3)
    with pytest.raises(TypeError, match="expected a number"):
        t[0] = "x"


def test_views_keep_storage_alive():
    v = mpamp.arange(10, dtype="fp32")[2:5]
    assert v.tolist() == [2, 3, 4]
    import gc
    gc.collect()
    assert v.tolist() == [2, 3, 4]
    assert v.storage_offset() == 2 and v.is_contiguous()


def test_detach_shares_memory():
    t = mpamp.zeros(3, requires_grad=True)
    d = t.detach()
    assert not d.requires_grad and d.data_ptr() == t.data_ptr()


def test_zero_size_views():
    t = mpamp.zeros(0, 4)
    assert t.view(4, 0).shape == (4, 0) and t.reshape(-1, 2).shape == (0, 2)
    assert t.t().shape == (4, 0) and t[:, 1:].shape == (0, 3)
    assert t.contiguous().numel() == 0 and t.clone().shape == (0, 4)
