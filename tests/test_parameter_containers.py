"""nn.ParameterList / nn.ParameterDict (torch's API, state_dict keys, repr, registration) and
the legacy typed constructors mpamp.FloatTensor, LongTensor, HalfTensor, BFloat16Tensor,
BoolTensor (data or sizes, isinstance by dtype)."""
import numpy as np
import pytest

import mpamp
from mpamp import nn

try:
    import torch
except ImportError:
    torch = None


def test_parameter_list_api():
    pl = nn.ParameterList([nn.Parameter(mpamp.ones(2, 3)), mpamp.zeros(4)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad   # tensors become params
    pl.append(nn.Parameter(mpamp.ones(1, dtype=mpamp.half)))
    pl.extend([nn.Parameter(mpamp.ones(2))])
    pl += [nn.Parameter(mpamp.ones(7))]
    assert len(pl) == 5 and pl[-1].shape == (7,)
    assert list(pl.state_dict()) == ["0", "1", "2", "3", "4"]
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2", "3", "4"]
    pl[0] = nn.Parameter(mpamp.zeros(5))
    assert pl[0].shape == (5,)
    sub = pl[1:3]
    assert isinstance(sub, nn.ParameterList) and len(sub) == 2 and sub[0] is pl[1]
    assert [p.shape for p in pl][:2] == [(5,), (4,)]
    with pytest.raises(IndexError, match="index 10 is out of range"):
        pl[10]
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an "
                                        "iterable, but got Tensor"):
        pl.extend(mpamp.ones(3))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    pl.append(3)                             # other objects are kept as they are
    assert pl[5] == 3 and len(list(pl.parameters())) == 5


def test_parameter_dict_api():
    pd = nn.ParameterDict({"b": nn.Parameter(mpamp.ones(2)), "a": mpamp.zeros(3, 3)})
    assert list(pd.keys()) == ["a", "b"]     # a plain dict is taken in sorted order (torch)
    pd["c"] = nn.Parameter(mpamp.ones(1))
    assert "a" in pd and len(pd) == 3 and list(pd.state_dict()) == ["a", "b", "c"]
    assert pd.pop("a").shape == (3, 3) and list(pd) == ["b", "c"]
    pd.update([("z", mpamp.ones(1))])
    assert isinstance(pd["z"], nn.Parameter) and pd.get("q") is None
    assert list(reversed(pd)) == ["z", "c", "b"]
    assert pd.popitem()[0] == "z" and list(pd) == ["b", "c"]
    assert pd.setdefault("d", mpamp.ones(2)).shape == (2,)
    both = pd | nn.ParameterDict({"e": mpamp.ones(1)})
    assert list(both) == ["b", "c", "d", "e"] and list(pd) == ["b", "c", "d"]
    assert list(pd.copy()) == list(pd) and list(pd.fromkeys(["x"])) == ["x"]
    with pytest.raises(AttributeError, match="'ParameterDict' object has no attribute 'nope'"):
        pd["nope"]
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd()
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []


def test_containers_in_a_module_train_and_save(tmp_path):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([nn.Parameter(mpamp.ones(3)) for _ in range(2)])
            self.pd = nn.ParameterDict({"w": nn.Parameter(mpamp.full((3,), 2.0))})

        def forward(self, x):
            return (x * self.ps[0] * self.ps[1] * self.pd["w"]).sum()

    m = M()
    assert list(m.state_dict()) == ["ps.0", "ps.1", "pd.w"]
    opt = mpamp.optim.SGD(m.parameters(), lr=0.1)
    m(mpamp.ones(3)).backward()
    opt.step()
    np.testing.assert_allclose(m.ps[0].detach().numpy(), np.full(3, 0.8, np.float32))
    path = tmp_path / "m.pt"
    mpamp.save(m.state_dict(), path)
    m2 = M()
    m2.load_state_dict(mpamp.load(path))
    np.testing.assert_array_equal(m2.pd["w"].detach().numpy(), m.pd["w"].detach().numpy())


def test_container_repr_matches_torch():
    def build(lib):
        pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)), lib.zeros(4)])
        pl.append(3)
        pd = lib.nn.ParameterDict({"a": lib.nn.Parameter(lib.ones(2)), "b": lib.zeros(3, 3)})
        one = lib.nn.ParameterDict({"w": lib.nn.Parameter(lib.ones(3))})
        return [repr(pl), repr(pd), repr(one), repr(lib.nn.ParameterList()),
                repr(lib.nn.ParameterDict())]

    got = build(mpamp)
    assert got[0] == ("ParameterList(\n"
                      "    (0): Parameter containing: [mpamp.float32 of size 2x3]\n"
                      "    (1): Parameter containing: [mpamp.float32 of size 4]\n"
                      "    (2): Object of type: int\n)")
    assert got[1] == ("ParameterDict(\n"
                      "    (a): Parameter containing: [mpamp.FloatTensor of size 2]\n"
                      "    (b): Parameter containing: [mpamp.FloatTensor of size 3x3]\n)")
    if torch is not None:
        assert got == [r.replace("torch.", "mpamp.") for r in build(torch)]


def test_legacy_constructors():
    assert mpamp.LongTensor([1.7, -1.7]).tolist() == [1, -1]
    assert mpamp.LongTensor([1.7]).dtype == mpamp.int64
    assert mpamp.FloatTensor(2, 3).shape == (2, 3) and mpamp.FloatTensor(2, 3).dtype == \
        mpamp.float32
    assert mpamp.FloatTensor(mpamp.Size([2, 3])).shape == (2, 3)
    assert mpamp.FloatTensor((2, 3)).tolist() == [2.0, 3.0]      # a tuple is data
    assert mpamp.FloatTensor().shape == (0,) and mpamp.FloatTensor(0).shape == (0,)
    assert mpamp.BoolTensor([0, 2]).tolist() == [False, True]
    assert mpamp.HalfTensor([[1, 2]]).dtype == mpamp.float16
    assert mpamp.BFloat16Tensor(3).dtype == mpamp.bfloat16
    assert mpamp.FloatTensor(np.arange(3, dtype=np.float32)).tolist() == [0.0, 1.0, 2.0]
    t = mpamp.ones(2)
    alias = mpamp.FloatTensor(t)
    assert alias is not t and alias.data_ptr() == t.data_ptr()
    assert isinstance(mpamp.zeros(2), mpamp.FloatTensor)
    assert isinstance(nn.Parameter(mpamp.ones(1)), mpamp.FloatTensor)
    assert not isinstance(mpamp.zeros(2).long(), mpamp.FloatTensor)
    assert isinstance(mpamp.zeros(2).long(), mpamp.LongTensor) and not isinstance(3,
                                                                                  mpamp.LongTensor)
    assert mpamp.FloatTensor.dtype == mpamp.float32 and mpamp.FloatTensor.__name__ == \
        "FloatTensor"
    with pytest.raises(TypeError, match=r"expected mpamp.float32 \(got mpamp.int64\)"):
        mpamp.FloatTensor(mpamp.ones(2).long())
    with pytest.raises(TypeError, match="new\\(\\) received an invalid combination of "
                                        "arguments - got \\(list, int\\)"):
        mpamp.FloatTensor([1, 2], 3)
    with pytest.raises(TypeError, match="new\\(\\): data must be a sequence \\(got float\\)"):
        mpamp.FloatTensor(2.5)
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        mpamp.FloatTensor("a")
    with pytest.raises(ValueError, match="expected sequence of length 1 at dim 1 \\(got 2\\)"):
        mpamp.FloatTensor([[1], [2, 3]])
    with pytest.raises(TypeError, match="unexpected keyword argument 'requires_grad'"):
        mpamp.FloatTensor([1, 2], requires_grad=True)


def test_legacy_constructors_match_torch():
    if torch is None:
        pytest.skip("torch not installed")
    for name in ("FloatTensor", "LongTensor", "HalfTensor", "BFloat16Tensor", "BoolTensor"):
        for args in (([1.5, -2.25, 0],), ([[1, 0], [3, 4]],), ()):
            got = getattr(mpamp, name)(*args)
            want = getattr(torch, name)(*args)
            assert tuple(got.shape) == tuple(want.shape)
            assert got.float().tolist() == want.float().tolist()
            assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        assert tuple(getattr(mpamp, name)(2, 5).shape) == tuple(getattr(torch, name)(2, 5).shape)
