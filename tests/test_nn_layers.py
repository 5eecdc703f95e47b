"""mpamp.nn layers and containers: construction, default init, repr fields, forward against
NumPy float32 on the same (rounded) inputs, and backward producing gradients of the right
shape and dtype. Layers whose op group is not built yet (linear, layer_norm, softmax, losses,
dropout, embedding) skip until it is."""
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import mpamp
from mpamp import nn
from mpamp.nn import functional as F
from conftest import assert_close, to_numpy

LOW = ["float32", "float16", "bfloat16"]


def needs(*ops):
    missing = [op for op in ops if not hasattr(mpamp, op)]
    return pytest.mark.skipif(bool(missing), reason=f"mpamp.{', '.join(missing)} not built "
                                                    "yet (another branch)")


def f32(t):
    """A tensor's values as a float32 NumPy array (to_numpy keeps float16)."""
    return to_numpy(t).astype(np.float32)


def rounded(arr, dtype_name):
    """A tensor of arr in dtype and the float32 NumPy values it really holds."""
    t = mpamp.tensor(np.asarray(arr, dtype=np.float32)).to(getattr(mpamp, dtype_name))
    return t, f32(t)


def np_log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# ---- Linear, Identity, Flatten ----

@pytest.mark.parametrize("fan_in, fan_out", [(3, 5), (64, 32), (1, 1)])
def test_linear_default_init_bounds(fan_in, fan_out):
    mpamp.manual_seed(fan_in)
    layer = nn.Linear(fan_in, fan_out)
    bound = 1 / math.sqrt(fan_in)       # kaiming_uniform_(a=sqrt(5)) gives the same bound
    w, b = to_numpy(layer.weight), to_numpy(layer.bias)
    assert layer.weight.shape == (fan_out, fan_in) and layer.bias.shape == (fan_out,)
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound)
    assert layer.weight.requires_grad and isinstance(layer.weight, nn.Parameter)


def test_linear_init_statistics():
    mpamp.manual_seed(0)
    w = to_numpy(nn.Linear(400, 300).weight)
    bound = 1 / math.sqrt(400)
    assert abs(w.mean()) < 0.01 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert w.max() > 0.99 * bound and w.min() < -0.99 * bound


def test_linear_options():
    layer = nn.Linear(4, 2, bias=False, dtype=mpamp.bfloat16)
    assert layer.bias is None and layer.weight.dtype == mpamp.bfloat16
    assert list(layer.state_dict()) == ["weight"]
    assert repr(layer) == "Linear(in_features=4, out_features=2, bias=False)"


@needs("linear")
@pytest.mark.parametrize("dtype", LOW)
def test_linear_forward_backward(dtype, rng):
    layer = nn.Linear(7, 5).to(dtype)
    x, xn = rounded(rng.standard_normal((4, 7)), dtype)
    w, b = f32(layer.weight), f32(layer.bias)
    out = layer(x)
    assert out.dtype == getattr(mpamp, dtype) and out.shape == (4, 5)
    assert_close(out, xn @ w.T + b, dtype)
    out.backward(mpamp.ones_like(out))
    assert layer.weight.grad.shape == (5, 7) and layer.weight.grad.dtype == out.dtype
    assert_close(layer.weight.grad, np.tile(xn.sum(0), (5, 1)), dtype)
    assert_close(layer.bias.grad, np.full(5, 4.0), dtype)


def test_identity_and_flatten():
    x = mpamp.arange(24, dtype=mpamp.float32).reshape(2, 3, 4)
    assert nn.Identity(3, key="ignored")(x) is x
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


# ---- activations ----

def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))).astype(np.float32)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("layer, ref", [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.GELU(), _gelu),
    (nn.GELU(approximate="tanh"), _gelu_tanh),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x)))])
def test_activation_forward_backward(layer, ref, dtype, rng):
    x, xn = rounded(rng.standard_normal((3, 5)) * 2, dtype)
    x.requires_grad_()
    out = layer(x)
    assert_close(out, ref(xn).astype(np.float32), dtype)
    out.backward(mpamp.ones_like(out))
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype


def test_inplace_activations():
    x = mpamp.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(x) is x
    np.testing.assert_array_equal(to_numpy(x), [0.0, 2.0])
    y = mpamp.tensor([0.0, 1.0])
    assert nn.SiLU(inplace=True)(y) is y
    assert repr(nn.ReLU(True)) == "ReLU(inplace=True)" and repr(nn.SiLU()) == "SiLU()"


@needs("softmax", "log_softmax")
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_layers(dim, rng):
    x, xn = rounded(rng.standard_normal((4, 6)), "float32")
    x.requires_grad_()
    logp = np_log_softmax(xn, dim)
    assert_close(nn.Softmax(dim)(x), np.exp(logp))
    out = nn.LogSoftmax(dim=dim)(x)
    assert_close(out, logp)
    out.backward(mpamp.ones_like(out))
    assert_close(x.grad, 1 - x.shape[dim] * np.exp(logp))


@needs("softmax")
def test_softmax_implicit_dim_warns():
    x = mpamp.ones(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(x)
    assert_close(out, np.full((2, 3), 1 / 3))


# ---- Dropout ----

def test_dropout_arguments():
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            nn.Dropout(p)
        with pytest.raises(ValueError, match="dropout probability"):
            F.dropout(mpamp.ones(2), p)


@needs("dropout")
def test_dropout_train_and_eval():
    layer = nn.Dropout(0.25)
    x = mpamp.ones(200, 100, requires_grad=True)
    out = layer(x)
    y = to_numpy(out)
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    out.backward(mpamp.ones_like(out))
    np.testing.assert_allclose(to_numpy(x.grad), y, rtol=1e-6)
    layer.eval()
    np.testing.assert_array_equal(to_numpy(layer(x)), np.ones((200, 100)))


# ---- LayerNorm ----

def test_layer_norm_construction():
    ln = nn.LayerNorm(6)
    assert ln.normalized_shape == (6,) and ln.eps == 1e-5
    np.testing.assert_array_equal(to_numpy(ln.weight), np.ones(6))
    np.testing.assert_array_equal(to_numpy(ln.bias), np.zeros(6))
    assert nn.LayerNorm([2, 3], bias=False).bias is None
    plain = nn.LayerNorm((2, 3), elementwise_affine=False)
    assert plain.weight is None and list(plain.parameters()) == []
    assert repr(ln) == "LayerNorm((6,), eps=1e-05, elementwise_affine=True, bias=True)"


def np_layer_norm(x, ndim, w, b, eps):
    axes = tuple(range(x.ndim - ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


@needs("layer_norm")
@pytest.mark.parametrize("dtype", LOW)
def test_layer_norm_forward_backward(dtype, rng):
    ln = nn.LayerNorm((3, 8), eps=1e-4).to(dtype)
    with mpamp.no_grad():
        ln.weight.copy_(mpamp.tensor(rng.uniform(0.5, 1.5, (3, 8)).astype(np.float32)))
        ln.bias.copy_(mpamp.tensor(rng.standard_normal((3, 8)).astype(np.float32)))
    x, xn = rounded(rng.standard_normal((2, 3, 8)) * 3 + 1, dtype)
    out = ln(x)
    assert out.dtype == x.dtype and out.shape == x.shape
    assert_close(out, np_layer_norm(xn, 2, f32(ln.weight), f32(ln.bias), 1e-4), dtype)
    out.backward(mpamp.ones_like(out))
    assert ln.weight.grad.shape == (3, 8) and ln.weight.grad.dtype == ln.weight.dtype
    assert_close(ln.bias.grad, np.full((3, 8), 2.0), dtype)
    assert_close(ln.weight.grad, np_layer_norm(xn, 2, 1.0, 0.0, 1e-4).sum(0), dtype)


# ---- Embedding ----

def test_embedding_init_and_padding():
    mpamp.manual_seed(3)
    emb = nn.Embedding(500, 64, padding_idx=-2)
    w = to_numpy(emb.weight)
    assert emb.padding_idx == 498 and w.shape == (500, 64)
    np.testing.assert_array_equal(w[498], np.zeros(64))
    rest = np.delete(w, 498, axis=0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1) < 0.02
    assert repr(emb) == "Embedding(500, 64, padding_idx=498)"
    for bad in (500, -501):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            nn.Embedding(500, 4, padding_idx=bad)
    with pytest.raises(NotImplementedError):
        nn.Embedding(5, 4, max_norm=1.0)


def test_embedding_from_pretrained():
    table = mpamp.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.weight.data_ptr() == table.data_ptr()
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(mpamp.ones(3))


@needs("embedding")
@pytest.mark.parametrize("dtype", LOW)
def test_embedding_forward_backward(dtype):
    emb = nn.Embedding(6, 3, padding_idx=0).to(dtype)
    idx = mpamp.tensor([[1, 0, 5], [1, 1, 2]])
    out = emb(idx)
    assert out.shape == (2, 3, 3) and out.dtype == emb.weight.dtype
    np.testing.assert_array_equal(to_numpy(out), to_numpy(emb.weight)[to_numpy(idx)])
    out.backward(mpamp.ones_like(out))
    counts = np.array([0, 3, 1, 0, 0, 1], dtype=np.float32)     # padding row gets none
    assert emb.weight.grad.dtype == emb.weight.dtype
    np.testing.assert_array_equal(to_numpy(emb.weight.grad), np.tile(counts[:, None], 3))


# ---- containers ----

def test_sequential_construction_and_indexing():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    seq = nn.Sequential(a, b, c)
    assert list(seq._modules) == ["0", "1", "2"] and len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c and seq[-3] is a
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    with pytest.raises(IndexError):
        seq[-4]
    tail = seq[1:]
    assert type(tail) is nn.Sequential and list(tail._modules) == ["1", "2"]
    named = nn.Sequential(OrderedDict([("act", a), ("squash", b)]))
    assert list(named._modules) == ["act", "squash"] and named.act is a
    assert named[::-1][0] is b


def test_sequential_mutation():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh())
    assert seq.append(nn.Sigmoid()) is seq and len(seq) == 3
    seq[0] = nn.Identity()
    assert isinstance(seq[0], nn.Identity)
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and isinstance(seq[0], nn.Tanh)
    seq.insert(0, nn.SiLU())
    assert [type(m).__name__ for m in seq] == ["SiLU", "Tanh", "Sigmoid"]
    both = seq + nn.Sequential(nn.ReLU())
    assert len(both) == 4 and len(seq) == 3
    assert isinstance(seq.pop(-1), nn.Sigmoid) and len(seq) == 2
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential"):
        seq + nn.ReLU()


def test_sequential_forward_chains(rng):
    x, xn = rounded(rng.standard_normal((2, 3)), "float32")
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Flatten(0))
    assert_close(seq(x), np.tanh(np.maximum(xn, 0)).ravel())


def test_module_list():
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    assert len(layers) == 2 and layers[-1] is layers[1]
    layers.append(nn.Sigmoid()).extend([nn.SiLU()])
    layers += [nn.Identity()]
    assert [type(m).__name__ for m in layers] == ["ReLU", "Tanh", "Sigmoid", "SiLU",
                                                  "Identity"]
    assert type(layers[1:3]) is nn.ModuleList and len(layers[1:3]) == 2
    del layers[1]
    assert list(layers._modules) == ["0", "1", "2", "3"] and isinstance(layers[1], nn.Sigmoid)
    layers.insert(0, nn.Tanh())
    assert isinstance(layers[0], nn.Tanh) and len(layers) == 5
    with pytest.raises(IndexError):
        layers[5]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        layers.extend(nn.ReLU)
    holder = nn.Module()
    holder.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert [n for n, _ in holder.named_parameters()][:2] == ["layers.0.weight",
                                                             "layers.0.bias"]


def test_module_list_repr_compresses_runs():
    layers = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.ReLU()])
    assert repr(layers) == ("ModuleList(\n  (0-2): 3 x ReLU()\n  (3): Tanh()\n"
                            "  (4): ReLU()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_dict():
    d = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
    d.update([("c", nn.Sigmoid())])
    d["a"] = nn.SiLU()
    assert list(d) == ["a", "b", "c"] and list(d.keys()) == ["a", "b", "c"]
    assert isinstance(d["a"], nn.SiLU) and "b" in d and len(d) == 3
    assert [type(m).__name__ for m in d.values()] == ["SiLU", "Tanh", "Sigmoid"]
    assert isinstance(d.pop("b"), nn.Tanh) and "b" not in d
    del d["c"]
    assert list(d.items()) == [("a", d["a"])]
    d.update(nn.ModuleDict({"z": nn.ReLU()}))
    assert list(d) == ["a", "z"]
    d.clear()
    assert len(d) == 0
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        d.update(5)
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        d.update([("a", nn.ReLU(), 1)])


# ---- losses ----

def test_loss_construction():
    assert nn.MSELoss().reduction == "mean" and nn.L1Loss(reduction="sum").reduction == "sum"
    weight = mpamp.tensor([1.0, 2.0])
    ce = nn.CrossEntropyLoss(weight=weight, ignore_index=1, label_smoothing=0.2)
    assert ce.weight is weight and "weight" in ce._buffers
    assert list(ce.state_dict()) == ["weight"] and list(nn.NLLLoss().state_dict()) == []
    bce = nn.BCEWithLogitsLoss(pos_weight=weight)
    assert list(bce._buffers) == ["weight", "pos_weight"] and bce.weight is None
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.MSELoss(reduction="none")


def _ce_reference(x, y, weight, ignore_index, smoothing, reduction):
    n, c = x.shape
    w = np.ones(c, np.float32) if weight is None else weight
    logp = np_log_softmax(x, 1)
    valid = y != ignore_index
    ys = np.where(valid, y, 0)
    nll = np.where(valid, -w[ys] * logp[np.arange(n), ys], 0.0)
    smooth = np.where(valid, -(logp * w).sum(1), 0.0)
    if reduction == "none":
        return (1 - smoothing) * nll + smoothing / c * smooth
    if reduction == "sum":
        return (1 - smoothing) * nll.sum() + smoothing / c * smooth.sum()
    denom = w[ys][valid].sum()
    return (1 - smoothing) * nll.sum() / denom + smoothing / c * smooth.sum() / denom


@needs("cross_entropy", "nll_loss")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted, smoothing", [(False, 0.0), (True, 0.0), (True, 0.1)])
def test_cross_entropy_and_nll(reduction, weighted, smoothing, rng):
    x, xn = rounded(rng.standard_normal((6, 4)), "float32")
    y = np.array([0, 3, 1, -100, 2, 3])
    wn = rng.uniform(0.5, 2, 4).astype(np.float32) if weighted else None
    w = None if wn is None else mpamp.tensor(wn)
    x.requires_grad_()
    loss = nn.CrossEntropyLoss(weight=w, reduction=reduction, label_smoothing=smoothing)(
        x, mpamp.tensor(y))
    assert_close(loss, _ce_reference(xn, y, wn, -100, smoothing, reduction))
    loss.backward(mpamp.ones_like(loss))
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype
    logp, logpn = rounded(np_log_softmax(xn, 1), "float32")
    nll = nn.NLLLoss(weight=w, ignore_index=3, reduction=reduction)(logp, mpamp.tensor(y % 4))
    assert_close(nll, _ce_reference(xn, y % 4, wn, 3, 0.0, reduction))


@needs("mse_loss", "l1_loss")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_and_l1(reduction, rng):
    x, xn = rounded(rng.standard_normal((3, 5)), "float32")
    t, tn = rounded(rng.standard_normal((3, 5)), "float32")
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    x.requires_grad_()
    mse = nn.MSELoss(reduction=reduction)(x, t)
    assert_close(mse, reduce((xn - tn) ** 2))
    assert_close(nn.L1Loss(reduction=reduction)(x, t), reduce(np.abs(xn - tn)))
    mse.backward(mpamp.ones_like(mse))
    scale = 1 / xn.size if reduction == "mean" else 1.0
    assert_close(x.grad, 2 * (xn - tn) * scale)


@needs("sum")
def test_weighted_mse_functional(rng):
    x, xn = rounded(rng.standard_normal(5), "float32")
    w, wn = rounded(rng.uniform(0, 1, 5), "float32")
    t = mpamp.zeros(5)
    assert_close(F.mse_loss(x, t, weight=w), (wn * xn ** 2).sum() / wn.sum())
    assert_close(F.l1_loss(x, t, weight=w, reduction="sum"), (wn * np.abs(xn)).sum())
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(x, t, weight=mpamp.ones(2))


@needs("binary_cross_entropy_with_logits")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(reduction, rng):
    x, xn = rounded(rng.standard_normal((4, 3)) * 3, "float32")
    t, tn = rounded(rng.uniform(0, 1, (4, 3)), "float32")
    w, wn = rounded(rng.uniform(0.5, 1.5, 3), "float32")
    pw, pwn = rounded(rng.uniform(0.5, 3, 3), "float32")
    log_weight = (pwn - 1) * tn + 1
    ref = wn * ((1 - tn) * xn + log_weight * (np.log1p(np.exp(-np.abs(xn))) +
                                              np.maximum(-xn, 0)))
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    x.requires_grad_()
    loss = nn.BCEWithLogitsLoss(weight=w, reduction=reduction, pos_weight=pw)(x, t)
    assert_close(loss, reduce(ref))
    loss.backward(mpamp.ones_like(loss))
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype


def test_functional_namespace_complete():
    for name in F.__all__:
        assert callable(getattr(F, name)), name
    for name in ("relu", "gelu", "silu", "sigmoid", "tanh"):
        assert_close(getattr(F, name)(mpamp.zeros(2)), getattr(mpamp, name)(mpamp.zeros(2)))
    with pytest.raises(NotImplementedError):
        F.embedding(mpamp.tensor([0]), mpamp.ones(2, 2), sparse=True)
