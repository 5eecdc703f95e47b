"""The core's one op table (csrc/core/ops/op_table.h): every id has a row, Python takes its op
ids from it (_C.op_ids), the rows' names, policies and grad_fn names are the ones the ops
use, and autocast runs once, at the core op entry."""
import pytest

import mpamp
from mpamp import _C

TABLE = _C._op_table()
KINDS = {"binary", "compare", "logical", "bitwise", "extremum", "unary", "other", "python"}


def test_every_id_has_a_complete_row():
    assert len(TABLE) == len(set(range(len(TABLE)))) > 80
    for op, (name, kind, cpu, cuda, backward) in enumerate(TABLE):
        assert name and kind in KINDS, op
        for pol in (cpu, cuda):
            assert pol in (None, "lower", "fp32", "promote", "banned"), (name, pol)
    # op_ids: the first row of each name (gelu's tanh form shares gelu's name)
    assert {n: i for i, n in sorted(((i, r[0]) for i, r in enumerate(TABLE)), reverse=True)} \
        == _C.op_ids


def test_python_takes_its_op_numbers_from_the_table():
    from mpamp import _ops_compare, _ops_minmax, _ops_pointwise
    ids = _C.op_ids
    assert (_ops_pointwise._ADD, _ops_pointwise._POW) == (ids["add"], ids["pow"])
    assert (_ops_compare._EQ, _ops_compare._GE) == (ids["eq"], ids["ge"])
    assert (_ops_minmax._MAXIMUM, _ops_minmax._FMIN) == (ids["maximum"], ids["fmin"])
    x = mpamp.tensor([1.0, 5.0])
    assert _C._binary(ids["sub"], x, 1.0, 2.0).tolist() == [-1.0, 3.0]
    assert _C._compare(ids["gt"], x, 2.0).tolist() == [False, True]
    assert _C._logic(ids["bitwise_xor"], mpamp.tensor([6]), 3).tolist() == [5]
    assert _C._maximum(ids["fmin"], x, mpamp.tensor([2.0, 2.0])).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"_binary: op .* is not add/sub/mul/div/pow"):
        _C._binary(ids["eq"], x, x, 1.0)
    # the functions that serve two ops take one of their two ids
    assert _C._reduce(ids["mean"], x, None, False, None).item() == 3.0
    assert _C._pointwise_loss(ids["l1_loss"], x, x * 0, 2).item() == 6.0
    assert _C._smooth_loss(ids["huber_loss"], x, x * 0, 2, 1.0).item() == 5.0
    for fn, args, pair in ((_C._reduce, (x, None, False, None), "sum or mean"),
                           (_C._pointwise_loss, (x, x, 1), "mse_loss or l1_loss"),
                           (_C._smooth_loss, (x, x, 1, 1.0), "smooth_l1_loss or huber_loss")):
        for bad in (ids["add"], 0.5, True, -1):
            with pytest.raises(ValueError, match=f"is not the op id of {pair}"):
                fn(bad, *args)


def test_policies_are_the_rows():
    for name, kind, cpu, cuda, _ in TABLE:
        if _C.op_ids[name] != TABLE.index((name, kind, cpu, cuda, _)):
            continue
        assert _C._autocast_policy(name, "cpu") == cpu, name
        assert _C._autocast_policy(name, "cuda") == cuda, name


def _grad_fn_of(name, kind):
    x = mpamp.tensor([0.25, 0.5, 2.0], requires_grad=True)
    y = mpamp.tensor([0.5, 1.5, 1.0], requires_grad=True)
    if kind == "binary":
        return _C._binary(_C.op_ids[name], x, y, 1.0).grad_fn
    if kind == "extremum":
        return _C._maximum(_C.op_ids[name], x, y).grad_fn
    return getattr(x, name)().grad_fn


@pytest.mark.parametrize("row", [r for r in TABLE if r[1] in ("binary", "unary", "extremum")
                                 and r[4]], ids=lambda r: r[0])
def test_family_rows_name_the_grad_fn_their_op_records(row):
    name, kind, _, _, backward = row
    fn = _grad_fn_of(name, kind)
    assert fn is not None and fn.name() == backward


def test_rows_of_other_ops_name_their_grad_fn():
    a = mpamp.randn(3, 4, requires_grad=True)
    b = mpamp.randn(4, 2, requires_grad=True)
    want = {r[0]: r[4] for r in TABLE}
    assert mpamp.mm(a, b).grad_fn.name() == want["mm"]
    assert mpamp.addmm(mpamp.zeros(2), a, b).grad_fn.name() == want["addmm"]
    assert mpamp.nn.functional.mse_loss(a, a.detach() + 1).grad_fn.name() == want["mse_loss"]
    assert mpamp.cumsum(a, 0).grad_fn.name() == want["cumsum"]
    assert mpamp.logsumexp(a, 1).grad_fn.name() == want["logsumexp"]


def test_autocast_runs_once_at_the_core_entry():
    """linear's row casts to bf16 on the CPU; an op inside another op's entry is not
    autocast again (torch's ExcludeDispatchKeyGuard), and an explicit softmax dtype= is not
    autocast."""
    x = mpamp.randn(4, 8)
    w = mpamp.randn(3, 8, requires_grad=True)
    with mpamp.autocast("cpu", dtype=mpamp.bfloat16):
        y = mpamp.nn.functional.linear(x, w)
        assert y.dtype == mpamp.bfloat16
        # mse_loss is fp32 on the CPU list: its bf16 input is cast up once, at its entry
        loss = mpamp.nn.functional.mse_loss(y, mpamp.zeros(4, 3, dtype=mpamp.bfloat16))
        assert loss.dtype == mpamp.float32
        # cat promotes on the CPU: a bf16 and an fp32 tensor join in fp32
        assert mpamp.cat([y, x[:, :3]]).dtype == mpamp.float32
        assert mpamp.softmax(x, 0, dtype=mpamp.float16).dtype == mpamp.float16
    loss.backward()
    assert w.grad.dtype == mpamp.float32 and w.grad.shape == (3, 8)


def test_one_dtype_table():
    """Every dtype spelling mpamp accepts or prints comes from the core's dtype table."""
    table = _C._dtype_table()
    assert [d["name"] for d in table] == ["float32", "float16", "bfloat16", "int64", "bool",
                                          "uint8"]
    for d in table:
        dt = getattr(mpamp, d["name"])
        assert repr(dt) == "mpamp." + d["name"]
        assert mpamp.zeros(1, dtype=dt).type() == "mpamp." + d["torch_name"] + "Tensor"
        for sp in d["spellings"]:
            assert mpamp.zeros(1).to(sp).dtype is dt
            if dt is mpamp.bfloat16:                   # autocast reads the same spellings
                with mpamp.autocast("cpu", dtype=sp):
                    assert mpamp.get_autocast_dtype("cpu") is dt
    with pytest.raises(ValueError, match="'fp32', 'float32', 'fp16', 'float16', 'half', "
                                         "'bf16', 'bfloat16'"):
        mpamp.zeros(1, dtype="fp8")
    from mpamp.serialization._common import DTYPES
    assert {k: (v[0], v[2]) for k, v in DTYPES.items()} == \
        {d["name"]: (d["storage"], d["safetensors"]) for d in table}

