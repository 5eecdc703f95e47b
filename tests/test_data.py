"""mpamp.utils.data: datasets, samplers, DataLoader and default_collate, as torch's."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import mpamp
from mpamp.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, RandomSampler, SequentialSampler, Subset,
                              TensorDataset, default_collate, random_split)


def _xy(n=10):
    x = mpamp.arange(n * 3, dtype=mpamp.float32).reshape(n, 3)
    y = mpamp.arange(n)
    return x, y


def test_tensor_dataset_rows_and_len():
    x, y = _xy()
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    a, b = ds[4]
    assert a.tolist() == [12.0, 13.0, 14.0] and b.item() == 4


def test_tensor_dataset_size_mismatch():
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(mpamp.zeros(5, 2), mpamp.zeros(4))


def test_loader_batches_in_order():
    x, y = _xy()
    dl = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert [tuple(b[0].shape) for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert isinstance(batches[0], list)       # torch collates a tuple sample into a list
    assert mpamp.cat([b[1] for b in batches]).tolist() == list(range(10))
    assert batches[0][0].dtype == mpamp.float32 and batches[0][1].dtype == mpamp.int64


def test_drop_last():
    dl = DataLoader(TensorDataset(*_xy()), batch_size=4, drop_last=True)
    assert len(dl) == 2 and [len(b[1]) for b in dl] == [4, 4]


def test_shuffle_is_a_permutation_and_seeded():
    ds = TensorDataset(*_xy(50))

    def order(seed):
        g = mpamp.Generator().manual_seed(seed)
        return mpamp.cat([b[1] for b in DataLoader(ds, batch_size=7, shuffle=True,
                                                   generator=g)]).tolist()
    a, b, c = order(1), order(1), order(2)
    assert sorted(a) == list(range(50))
    assert a == b and a != c and a != list(range(50))


def test_shuffle_new_order_each_epoch_and_default_generator():
    ds = TensorDataset(*_xy(30))
    mpamp.manual_seed(3)
    dl = DataLoader(ds, batch_size=30, shuffle=True)
    e1, e2 = next(iter(dl))[1].tolist(), next(iter(dl))[1].tolist()
    assert e1 != e2
    mpamp.manual_seed(3)
    assert next(iter(dl))[1].tolist() == e1


class _Dicts(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full((2,), i, dtype=np.float32), "n": i, "f": i / 2, "s": f"s{i}",
                "np": np.int64(i), "b": i % 2 == 0}


def test_collate_dicts_numpy_numbers_strings():
    batch = next(iter(DataLoader(_Dicts(), batch_size=3)))
    assert isinstance(batch, dict)
    assert batch["x"].shape == (3, 2) and batch["x"].dtype == mpamp.float32
    assert batch["n"].tolist() == [0, 1, 2] and batch["n"].dtype == mpamp.int64
    assert batch["f"].tolist() == [0.0, 0.5, 1.0] and batch["f"].dtype == mpamp.float32
    assert batch["s"] == ["s0", "s1", "s2"]
    assert batch["np"].tolist() == [0, 1, 2]
    assert batch["b"].dtype == mpamp.bool and batch["b"].tolist() == [True, False, True]


def test_collate_nested_tuples_namedtuple_ordereddict():
    Pt = namedtuple("Pt", "a b")
    out = default_collate([Pt(1, (2.0, 3)), Pt(4, (5.0, 6))])
    assert isinstance(out, Pt) and out.a.tolist() == [1, 4]
    assert out.b[0].tolist() == [2.0, 5.0] and out.b[1].tolist() == [3, 6]
    od = default_collate([OrderedDict(z=1, a=2), OrderedDict(z=3, a=4)])
    assert isinstance(od, OrderedDict) and list(od) == ["z", "a"]


def test_collate_bf16_tensors():
    t = [mpamp.ones(2, dtype=mpamp.bfloat16) * i for i in range(3)]
    out = default_collate(t)
    assert out.dtype == mpamp.bfloat16 and out.shape == (3, 2)


def test_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])


def test_batch_size_none_and_custom_collate():
    ds = TensorDataset(*_xy(3))
    items = list(DataLoader(ds, batch_size=None))
    assert len(items) == 3 and items[1][1].item() == 1
    dl = DataLoader(ds, batch_size=2, collate_fn=lambda b: len(b))
    assert list(dl) == [2, 1]


def test_samplers_and_batch_sampler():
    ds = list(range(7))
    assert list(SequentialSampler(ds)) == list(range(7))
    g = mpamp.Generator().manual_seed(0)
    assert sorted(RandomSampler(ds, generator=g)) == list(range(7))
    assert len(list(RandomSampler(ds, replacement=True, num_samples=20, generator=g))) == 20
    bs = BatchSampler(SequentialSampler(ds), 3, False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    dl = DataLoader(ds, batch_sampler=bs)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]


def test_bad_arguments():
    ds = TensorDataset(*_xy())
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        DataLoader(ds, batch_size=2, drop_last="yes")


def test_num_workers_accepted_in_process():
    ds = TensorDataset(*_xy())
    assert len(list(DataLoader(ds, batch_size=5, num_workers=2, pin_memory=True))) == 2


class _Stream(IterableDataset):
    def __iter__(self):
        return iter(range(5))


def test_iterable_dataset():
    assert [b.tolist() for b in DataLoader(_Stream(), batch_size=2)] == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(_Stream(), shuffle=True)


def test_concat_subset_random_split():
    a, b = list(range(3)), list(range(10, 14))
    cat = ConcatDataset([a, b])
    assert len(cat) == 7 and cat[3] == 10 and cat[-1] == 13
    sub = Subset(b, [3, 0])
    assert len(sub) == 2 and [sub[0], sub[1]] == [13, 10]
    parts = random_split(list(range(10)), [0.7, 0.3], generator=mpamp.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [7, 3]
    assert sorted([p[i] for p in parts for i in range(len(p))]) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(list(range(10)), [3, 3])


def test_len_of_map_dataset_without_len_is_a_clear_error():
    class NoLen(Dataset):
        def __getitem__(self, i):
            return i
    with pytest.raises(TypeError):
        len(DataLoader(NoLen()))


def test_same_batches_as_torch_without_shuffle():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((11, 4)).astype(np.float32)
    ours = [b[0].cpu().numpy() for b in DataLoader(TensorDataset(mpamp.from_numpy(x),
                                                           mpamp.arange(11)), batch_size=4)]
    theirs = [b[0].cpu().numpy() for b in torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.arange(11)), batch_size=4)]
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("dtype", [mpamp.float32, mpamp.float16, mpamp.bfloat16, mpamp.int64,
                                   mpamp.bool], ids=str)
def test_tensor_dataset_fast_path_matches_stacking(dtype):
    x = (mpamp.randn(20, 3, 2) * 10).to(dtype) if dtype != mpamp.bool else \
        mpamp.from_numpy(np.arange(40).reshape(20, 2) % 3 == 0)
    y = mpamp.arange(20)
    ds = TensorDataset(x.transpose(1, 2) if x.dim() == 3 else x, y)
    g1, g2 = mpamp.Generator().manual_seed(5), mpamp.Generator().manual_seed(5)
    fast = list(DataLoader(ds, batch_size=6, shuffle=True, generator=g1))
    slow = list(DataLoader(ds, batch_size=6, shuffle=True, generator=g2,
                           collate_fn=lambda b: default_collate(b)))
    assert len(fast) == len(slow) == 4
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert fx.dtype == sx.dtype == ds.tensors[0].dtype and fx.shape == sx.shape
        assert mpamp._C._memoryview(fx.cpu()).tobytes() == mpamp._C._memoryview(sx.cpu()).tobytes()
        assert fy.tolist() == sy.tolist()


def test_getitems_is_used_for_batches():
    class Batched(Dataset):
        calls = 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            raise AssertionError("per-item path should not be used")

        def __getitems__(self, idx):
            Batched.calls += 1
            return [i * 10 for i in idx]
    assert [b.tolist() for b in DataLoader(Batched(), batch_size=2)] == [[0, 10], [20, 30]]
    assert Batched.calls == 2
