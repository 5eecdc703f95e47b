"""uint8 through every op family: a table of (op, args) cases run on uint8 inputs (contiguous,
transposed, stepped, expanded, 0-d, empty; values 0..255 with the wrap-around edges) in mpamp and
torch 2.13, which must agree on values and dtype; a table of refusals that must raise torch's
exception type with a message naming the dtype; and NumPy references for what is defined without
torch (modulo-256 arithmetic, bitwise ops, comparisons with out-of-range numbers, byte masks,
the overflow check on numbers written into uint8). Run it under the ASan build too: the first bug
of this kind was an 8-byte store into a 1-byte output."""
import warnings

import numpy as np
import pytest

import mpamp

U8 = mpamp.uint8
U = np.array([0, 1, 2, 3, 100, 127, 128, 200, 250, 254, 255], np.uint8)
M = np.array([[0, 255, 128, 7], [200, 1, 254, 100], [3, 127, 250, 2]], np.uint8)
N = np.array([[1, 2, 255, 128], [100, 0, 3, 200], [255, 255, 7, 9]], np.uint8)
BYTES = np.arange(256, dtype=np.uint8)


def inputs(T):
    """The same operands as tensors of library T (mpamp or torch)."""
    t = T.tensor
    return {
        "u": t(U.copy()), "m": t(M.copy()), "n": t(N.copy()), "mt": t(M.copy()).t(),
        "nt": t(N.T.copy()),
        "ms": t(U.copy())[::2], "mb": t(M[:1].copy()).expand(3, 4), "z": t(np.uint8(200)),
        "e": t(np.zeros((0, 4), np.uint8)), "i64": t(M.astype(np.int64) - 100),
        "f": t((M.astype(np.float32) - 100) / 7), "b": t(M > 100),
        "idx": t(np.array([2, 0, 1], np.uint8)), "mask": t((M > 100).astype(np.uint8)),
        "mask1": t((U > 100).astype(np.uint8)),
        "im": t((np.arange(150).reshape(2, 3, 5, 5) * 3 % 256).astype(np.uint8)),
    }


def _F(T):
    return T.nn.functional


def _set(t, key, value):
    t[key] = value
    return t


SAME = []          # (id, fn(T, X)): mpamp and torch give equal values and dtypes


def case(name, fn):
    SAME.append(pytest.param(fn, id=name))


for _op in ["abs", "neg", "relu", "sign", "sgn", "floor", "ceil", "round", "trunc", "square",
            "bitwise_not", "logical_not", "isfinite", "isinf", "isnan", "isposinf", "isneginf",
            "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "erf", "log1p",
            "expm1", "reciprocal", "log2", "log10"]:
    for _k in ["u", "mt", "ms", "mb", "z", "e"]:
        case(f"{_op}({_k})", lambda T, X, op=_op, k=_k: getattr(T, op)(X[k]))
for _op in ["abs_", "neg_", "relu_", "sign_", "floor_", "square_", "bitwise_not_",
            "logical_not_"]:
    case(f"m.{_op}()", lambda T, X, op=_op: getattr(X["mt"], op)())
_PAIRS = [("m", "n"), ("mt", "nt"), ("mb", "n"), ("m", "z"), ("z", "m"), ("m", "i64"), ("m", "f"),
          ("m", "b"), ("b", "m"), ("e", "e")]
_SCALARS = [3, 300, -1, -300, 2.5, True]
for _op in ["add", "sub", "mul", "div", "remainder", "fmod", "maximum", "minimum", "fmax", "fmin",
            "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
            "logical_xor", "eq", "ne", "lt", "le", "gt", "ge"]:
    for _a, _b in _PAIRS:
        if _op in ("remainder", "fmod") and (_b in ("n", "nt", "b", "i64") or _a in "zb"):
            continue                                # zero divisors: see RAISES
        if (_op == "sub" and "b" in (_a, _b)) or (_op.startswith("bitwise") and _b == "f"):
            continue                                # bool operands of -, float bits: RAISES
        case(f"{_op}({_a},{_b})", lambda T, X, op=_op, a=_a, b=_b: getattr(T, op)(X[a], X[b]))
    for _s in _SCALARS:
        if _op.startswith(("maximum", "minimum", "fm", "logical")) or \
                (_op.startswith("bitwise") and isinstance(_s, float)) or \
                (_op == "sub" and _s is True):
            continue                                # tensor-only ops; RAISES
        case(f"{_op}(m,{_s!r})", lambda T, X, op=_op, s=_s: getattr(T, op)(X["m"], s))
for _op in ["add_", "sub_", "mul_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "eq_", "lt_",
            "logical_and_"]:
    for _o in ["n", "i64", "z"] + ([7, -1] if _op != "logical_and_" else []):
        case(f"m.{_op}({_o})", lambda T, X, op=_op, o=_o: getattr(X["mt"].t(), op)(
            X[o] if isinstance(o, str) else o))
for _o in ["m", "mt"]:
    case(f"f.add_({_o})", lambda T, X, o=_o: X["f"].add_(X[o] if o == "m" else X[o].t()))
    case(f"i64.mul_({_o})", lambda T, X, o=_o: X["i64"].mul_(X[o] if o == "m" else X[o].t()))
for _b in ["n", "z", 0, 1, 2, 7, 255, True, False, 2.0]:
    case(f"pow(m,{_b})", lambda T, X, b=_b: T.pow(X["m"], X[b] if isinstance(b, str) else b))
for _a in [2, -2, 300, "i64"]:
    case(f"pow({_a},m)", lambda T, X, a=_a: T.pow(X[a] if isinstance(a, str) else a, X["m"]))
case("pow(m, 0-d 300)", lambda T, X: T.pow(X["m"], T.tensor(300)))
case("pow(m, tensor -1)", lambda T, X: X["m"].pow(T.tensor([-1, -1, -1, -1])))
case("m.pow_(n)", lambda T, X: X["m"].pow_(X["n"]))
case("i64.pow_(m)", lambda T, X: X["i64"].pow_(X["m"]))
case("300 % m", lambda T, X: 300 % X["m"].clamp(1))
case("m %= 7", lambda T, X: X["m"].__imod__(7))
case("m.remainder_(n+1)", lambda T, X: X["m"].remainder_(X["n"].clamp(1)))
case("fmod(m, 0-d -1)", lambda T, X: T.fmod(X["m"], T.tensor(-1)))
for _expr in ["m & 15", "m | 256", "m ^ n", "~m", "-m", "m + 300", "m - 1", "m * 1000",
              "m == -1", "m == 511", "m < 300", "m >= -256", "m == 256.0", "m < 1e30", "2 ** m",
              "3 - m", "3 / m", "m / n", "m == m.t().t()"]:
    case(_expr, lambda T, X, e=_expr: eval(e, {}, X))
case("logical_and(m, 0-d 256)", lambda T, X: T.logical_and(X["m"], T.tensor(256)))
case("add alpha", lambda T, X: T.add(X["m"], X["n"], alpha=3))
case("sub alpha", lambda T, X: T.sub(X["m"], X["n"], alpha=-2))
for _lo, _hi in [(10, 200), (-1, None), (None, -1), (None, 50), (1.5, 100.5), (-255, 255)]:
    case(f"clamp({_lo},{_hi})", lambda T, X, lo=_lo, hi=_hi: T.clamp(X["mt"], lo, hi))
case("clamp_", lambda T, X: X["m"].clamp_(10, 200))
for _v in [5, -1, 2.5, "n", "i64", "f"]:
    case(f"where(b,m,{_v})", lambda T, X, v=_v: T.where(X["b"], X["m"], X[v] if isinstance(
        v, str) else v))
case("where(mask u8,m,n)", lambda T, X: T.where(X["mask"], X["m"], X["n"]))
case("m.where", lambda T, X: X["m"].where(X["b"], 5))
case("isclose", lambda T, X: T.isclose(X["m"], X["n"], atol=3))
case("allclose", lambda T, X: T.allclose(X["m"], X["m"].clone()))
case("equal", lambda T, X: T.equal(X["m"], X["mt"].t()))
for _op in ["sum", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any",
            "argsort"]:
    for _k in ["m", "mt", "mb", "z", "u", "e"]:
        if _op in ("max", "min", "amax", "amin", "argmax", "argmin") and _k == "e":
            continue
        case(f"{_op}({_k})", lambda T, X, op=_op, k=_k: getattr(T, op)(X[k]))
    for _d in [0, 1]:
        case(f"{_op}(mt,{_d})", lambda T, X, op=_op, d=_d: getattr(T, op)(X["mt"], d))
for _op in ["sum", "prod", "cumsum", "cumprod", "mean"]:
    for _dt in ["uint8", "float32", "int64", "float16"]:
        if _op == "mean" and _dt not in ("float32", "float16"):
            continue
        case(f"{_op}(m,1,dtype={_dt})", lambda T, X, op=_op, dt=_dt: getattr(T, op)(
            X["m"], 1, dtype=getattr(T, dt)))
for _op in ["cumsum", "cumprod"]:
    case(f"{_op}(mt,0)", lambda T, X, op=_op: getattr(T, op)(X["mt"], 0))
case("sort desc", lambda T, X: T.sort(X["mt"], dim=0, descending=True))
case("topk", lambda T, X: T.topk(X["u"], 5))
case("topk smallest", lambda T, X: T.topk(X["mt"], 2, dim=0, largest=False))
case("aminmax", lambda T, X: T.aminmax(X["mt"]))
case("max(m,1)", lambda T, X: T.max(X["m"], 1))
for _name, _f in [("mm", lambda T, X: T.mm(X["m"], X["n"].t())),
                  ("matmul 1-d", lambda T, X: X["u"] @ X["u"]),
                  ("bmm", lambda T, X: T.bmm(X["m"][None], X["n"].t()[None])),
                  ("addmm", lambda T, X: T.addmm(X["m"][:, :3], X["m"], X["n"].t(), beta=2,
                                                  alpha=3)),
                  ("einsum", lambda T, X: T.einsum("ij,kj->ik", X["m"], X["n"])),
                  ("einsum sum", lambda T, X: T.einsum("ij->j", X["mt"])),
                  ("outer", lambda T, X: T.outer(X["u"], X["u"])),
                  ("cat", lambda T, X: T.cat([X["m"], X["n"], X["e"]])),
                  ("cat with i64", lambda T, X: T.cat([X["m"], X["i64"]])),
                  ("cat with bool", lambda T, X: T.cat([X["b"], X["m"]])),
                  ("cat strided", lambda T, X: T.cat([X["mt"], X["mt"]], 1)),
                  ("stack", lambda T, X: T.stack([X["m"], X["n"]], 1)),
                  ("tril", lambda T, X: T.tril(X["m"])), ("triu", lambda T, X: T.triu(X["mt"], 1)),
                  ("tril_", lambda T, X: X["m"].tril_(-1)),
                  ("flip", lambda T, X: T.flip(X["mt"], [0, 1])),
                  ("roll", lambda T, X: T.roll(X["mt"], 5)),
                  ("repeat", lambda T, X: X["mt"].repeat(2, 1)),
                  ("repeat_interleave", lambda T, X: T.repeat_interleave(X["m"], 2, dim=0)),
                  ("split", lambda T, X: T.split(X["m"], 2, 1)),
                  ("chunk", lambda T, X: T.chunk(X["mt"], 2)),
                  ("unbind", lambda T, X: T.unbind(X["m"])),
                  ("tensor_split", lambda T, X: T.tensor_split(X["m"], 3, 1)),
                  ("reshape", lambda T, X: X["mt"].reshape(2, 6)),
                  ("contiguous", lambda T, X: X["mb"].contiguous()),
                  ("nonzero", lambda T, X: T.nonzero(X["mt"])),
                  ("nonzero tuple", lambda T, X: T.nonzero(X["m"], as_tuple=True)),
                  ("argwhere", lambda T, X: T.argwhere(X["m"])),
                  ("masked_select", lambda T, X: T.masked_select(X["mt"], X["b"].t())),
                  ("masked_fill 7", lambda T, X: T.masked_fill(X["m"], X["b"], 7)),
                  ("masked_fill -1", lambda T, X: T.masked_fill(X["m"], X["b"], -1)),
                  ("masked_fill 2.5", lambda T, X: T.masked_fill(X["m"], X["b"], 2.5)),
                  ("masked_fill_ 0-d", lambda T, X: X["mt"].masked_fill_(
                      X["b"].t(), T.tensor(9, dtype=T.uint8))),
                  ("f.masked_fill u8 value", lambda T, X: X["f"].masked_fill(
                      X["b"], T.tensor(200, dtype=T.uint8))),
                  ("one_hot", lambda T, X: _F(T).one_hot(X["i64"] + 100, 256)),
                  ("pad", lambda T, X: _F(T).pad(X["mt"], (1, 2), value=2.5)),
                  ("pad 255", lambda T, X: _F(T).pad(X["m"], (1, 2, 0, 1), value=255)),
                  ("pad negative", lambda T, X: _F(T).pad(X["m"], (-1, 1))),
                  ("eye", lambda T, X: T.eye(3, 4, dtype=T.uint8)),
                  ("arange", lambda T, X: T.arange(0, 250, 7, dtype=T.uint8)),
                  ("full -1", lambda T, X: T.full((2,), -1, dtype=T.uint8)),
                  ("full_like 255", lambda T, X: T.full_like(X["m"], 255)),
                  ("fill_ -255", lambda T, X: X["mt"].fill_(-255)),
                  ("fill_ 2.7", lambda T, X: X["m"].fill_(2.7)),
                  ("fill_ 0-d 300", lambda T, X: X["m"].fill_(T.tensor(300))),
                  ("zero_", lambda T, X: X["mt"].zero_()),
                  ("copy_ from f", lambda T, X: X["m"].copy_(X["f"] * 10)),
                  ("to f16", lambda T, X: X["mt"].to(T.float16)),
                  ("i64 -> u8", lambda T, X: (X["i64"] * 10).byte()),
                  ("item", lambda T, X: X["z"].item()), ("tolist", lambda T, X: X["mt"].tolist()),
                  ("dropout eval", lambda T, X: _F(T).dropout(X["m"], 0.5, training=False)),
                  ("embedding weight", lambda T, X: _F(T).embedding(T.tensor([0, 2]), X["m"])),
                  ("max_pool2d", lambda T, X: _F(T).max_pool2d(X["im"], 2)),
                  ("max_pool2d indices", lambda T, X: _F(T).max_pool2d(
                      X["im"].transpose(2, 3), 3, 2, 1, return_indices=True)),
                  ("mse f/u8", lambda T, X: _F(T).mse_loss(X["f"], X["m"])),
                  ("l1 f/u8", lambda T, X: _F(T).l1_loss(X["f"], X["m"])),
                  ("smooth_l1 f/u8", lambda T, X: _F(T).smooth_l1_loss(X["f"], X["m"])),
                  ("huber f/u8", lambda T, X: _F(T).huber_loss(X["f"], X["m"])),
                  ("cosine f/u8", lambda T, X: _F(T).cosine_similarity(X["f"], X["m"])),
                  ("cross_entropy u8 target", lambda T, X: _F(T).cross_entropy(
                      X["f"], X["idx"])),
                  ("cross_entropy u8 smoothing", lambda T, X: _F(T).cross_entropy(
                      X["f"], X["idx"], label_smoothing=0.1, reduction="none")),
                  ("nll u8 target", lambda T, X: _F(T).nll_loss(X["f"], X["idx"])),
                  ("sdpa bool mask of u8", lambda T, X: _F(T).scaled_dot_product_attention(
                      X["f"][None], X["f"][None], X["f"][None], attn_mask=X["mask"][:, :3] > 0))]:
    case(_name, _f)
# indexing: uint8 values, and uint8 index tensors as torch's deprecated byte masks
for _name, _f in [("get int", lambda T, X: X["mt"][1]),
                  ("get i64", lambda T, X: X["mt"][T.tensor([2, 0])]),
                  ("get bool", lambda T, X: X["m"][X["b"]]),
                  ("get list", lambda T, X: X["m"][[0, 2], [1, 3]]),
                  ("get byte mask", lambda T, X: X["m"][X["mask"]]),
                  ("get byte mask strided", lambda T, X: X["mt"][X["mask"].t()]),
                  ("get byte rows", lambda T, X: X["m"][T.tensor([1, 0, 1], dtype=T.uint8)]),
                  ("get byte mask 1-d", lambda T, X: X["u"][X["mask1"]]),
                  ("get byte nonzero values", lambda T, X: X["m"][X["idx"]]),
                  ("get byte + slice", lambda T, X: X["m"][T.tensor([1, 0, 1], dtype=T.uint8),
                                                          1:]),
                  ("get slice + byte", lambda T, X: X["m"][:, T.tensor([1, 0, 1, 1],
                                                                       dtype=T.uint8)]),
                  ("get byte 0-d", lambda T, X: X["m"][T.tensor(1, dtype=T.uint8)]),
                  ("get i64 + byte", lambda T, X: X["m"][T.tensor([0, 2]), T.tensor(
                      [1, 0, 0, 1], dtype=T.uint8)]),
                  ("get all-zero byte", lambda T, X: X["m"][T.zeros(3, 4, dtype=T.uint8)]),
                  ("set byte values", lambda T, X: _set(X["m"], X["mask"], X["n"][X["b"]])),
                  ("set byte rows", lambda T, X: _set(X["f"], T.tensor([1, 0, 1], dtype=T.uint8),
                                                      T.tensor([1.0, 2, 3, 4]))),
                  ("set bool -1", lambda T, X: _set(X["m"], X["b"], -1)),
                  ("set i64 255", lambda T, X: _set(X["m"], T.tensor([0, 2]), 255)),
                  ("set slice 7.9", lambda T, X: _set(X["m"], (slice(None), 1), 7.9)),
                  ("index_put accumulate", lambda T, X: X["m"].index_put(
                      (T.tensor([0, 0, 2]),), X["n"][:3], accumulate=True)),
                  ("index_put_ accumulate 2-d", lambda T, X: X["m"].index_put_(
                      (T.tensor([0, 0, 1]), T.tensor([1, 1, 0])),
                      T.tensor([200, 100, 60], dtype=T.uint8), accumulate=True)),
                  ("index_put byte values", lambda T, X: X["f"].index_put(
                      (X["mask"],), T.arange(6.0))),
                  ("index_select", lambda T, X: T.index_select(X["mt"], 0, T.tensor([3, 0]))),
                  ("index_add", lambda T, X: T.index_add(X["m"], 0, T.tensor([0, 0, 2]), X["n"])),
                  ("index_add alpha", lambda T, X: T.index_add(X["m"], 0, T.tensor([0, 0, 2]),
                                                              X["n"], alpha=3)),
                  ("index_add alpha -1", lambda T, X: T.index_add(X["m"], 0, T.tensor([0, 0, 2]),
                                                                 X["n"], alpha=-1)),
                  ("index_add_ strided", lambda T, X: X["mt"].index_add_(
                      1, T.tensor([2, 2, 0]), X["nt"])),
                  ("index_copy", lambda T, X: T.index_copy(X["m"], 0, T.tensor([2, 0, 1]), X["n"])),
                  ("index_fill -1", lambda T, X: T.index_fill(X["m"], 1, T.tensor([1, 3]), -1)),
                  ("index_fill 2.5", lambda T, X: T.index_fill(X["m"], 1, T.tensor([1, 3]), 2.5)),
                  ("gather", lambda T, X: T.gather(X["mt"], 1, T.tensor([[0, 2], [1, 1], [2, 0],
                                                                        [0, 0]]))),
                  ("scatter", lambda T, X: T.scatter(X["m"], 1, T.tensor([[0, 2], [1, 1]]),
                                                     X["n"])),
                  ("scatter value", lambda T, X: T.scatter(X["m"], 1, T.tensor([[0, 2]]), 250)),
                  ("scatter add", lambda T, X: T.scatter(X["m"], 1, T.tensor([[0, 0], [1, 1]]),
                                                         X["n"], reduce="add")),
                  ("scatter multiply", lambda T, X: T.scatter(X["m"], 1, T.tensor([[0, 0], [2, 2]]),
                                                              X["n"], reduce="multiply")),
                  ("scatter_add", lambda T, X: T.scatter_add(X["m"], 1, T.tensor([[0, 0], [3, 3]]),
                                                             X["n"])),
                  ("scatter_add_ strided", lambda T, X: X["mt"].scatter_add_(
                      0, T.tensor([[0, 0, 1], [1, 1, 1]]), X["n"][:2, :3])),
                  ("take_along_dim", lambda T, X: T.take_along_dim(X["m"], T.tensor([[0], [1],
                                                                                     [2]]), 1))]:
    case(_name, _f)


def _canon(r, T):
    if isinstance(r, T.Tensor):
        dt = repr(r.dtype).split(".")[-1]
        dt = {"int32": "int64", "float64": "float32"}.get(dt, dt)   # mpamp has neither
        v = r.detach()
        v = v.float() if dt == "bfloat16" else v
        return ("T", dt, tuple(r.shape), np.array(v.numpy(), copy=True))
    if isinstance(r, (tuple, list)):
        return ("L", [_canon(x, T) for x in r])
    return ("S", r)


def _assert_same(got, want, path="result"):
    assert got[0] == want[0], f"{path}: {got} vs {want}"
    if got[0] == "L":
        assert len(got[1]) == len(want[1]), path
        for i, (g, w) in enumerate(zip(got[1], want[1])):
            _assert_same(g, w, f"{path}[{i}]")
    elif got[0] == "T":
        assert got[1:3] == want[1:3], f"{path}: dtype/shape {got[1:3]} vs torch {want[1:3]}"
        if want[3].dtype.kind == "f":
            np.testing.assert_allclose(got[3], want[3], rtol=1e-5, atol=1e-6, err_msg=path)
        else:
            np.testing.assert_array_equal(got[3], want[3], err_msg=path)
    else:
        assert got[1] == want[1], path


def _run(fn, T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # byte-mask deprecations: tested below
        return _canon(fn(T, inputs(T)), T)


@pytest.mark.parametrize("fn", SAME)
def test_uint8_matches_torch(fn):
    torch = pytest.importorskip("torch")
    _assert_same(_run(fn, mpamp), _run(fn, torch))


RAISES = []        # (id, fn, exception, message): torch raises that exception type too


def refuse(name, fn, exc, match, torch_raises=True):
    RAISES.append(pytest.param(fn, exc, match, torch_raises, id=name))


OVERFLOW = "value cannot be converted to type uint8_t without overflow"
BYTE_MASK = "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"
for _name, _f in [("fill_(256)", lambda T, X: X["m"].fill_(256)),
                  ("fill_(-256)", lambda T, X: X["m"].fill_(-256)),
                  ("fill_(-0.5)", lambda T, X: X["m"].fill_(-0.5)),
                  ("fill_(255.5)", lambda T, X: X["mt"].fill_(255.5)),
                  ("fill_(nan)", lambda T, X: X["m"].fill_(float("nan"))),
                  ("full 256", lambda T, X: T.full((2,), 256, dtype=T.uint8)),
                  ("full_like 300", lambda T, X: T.full_like(X["m"], 300)),
                  ("new_full -300", lambda T, X: X["m"].new_full((2,), -300)),
                  ("setitem int 300", lambda T, X: _set(X["m"], 0, 300)),
                  ("setitem bool mask 300", lambda T, X: _set(X["m"], X["b"], 300)),
                  ("setitem i64 300", lambda T, X: _set(X["m"], T.tensor([0]), 300)),
                  ("masked_fill 300", lambda T, X: T.masked_fill(X["m"], X["b"], 300)),
                  ("masked_fill -1.5", lambda T, X: T.masked_fill(X["m"], X["b"], -1.5)),
                  ("masked_fill 0-d 300", lambda T, X: T.masked_fill(X["m"], X["b"],
                                                                     T.tensor(300))),
                  ("index_fill 300", lambda T, X: T.index_fill(X["m"], 1, T.tensor([1]), 300)),
                  ("scatter 300", lambda T, X: T.scatter(X["m"], 1, T.tensor([[0]]), 300)),
                  ("pad 300", lambda T, X: _F(T).pad(X["m"], (1, 1), value=300)),
                  ("pad -1", lambda T, X: _F(T).pad(X["m"], (1, 1), value=-1)),
                  ("clamp 300", lambda T, X: T.clamp(X["m"], -1, 300)),
                  ("clamp max 256", lambda T, X: T.clamp(X["mt"], max=256)),
                  ("where 256", lambda T, X: T.where(X["b"], X["m"], 256)),
                  ("pow 256", lambda T, X: T.pow(X["m"], 256)),
                  ("add alpha 300", lambda T, X: T.add(X["m"], 1, alpha=300)),
                  ("linspace 256", lambda T, X: T.linspace(0, 256, 4, dtype=T.uint8)),
                  ("linspace -0.5", lambda T, X: T.linspace(-0.5, 3, 4, dtype=T.uint8))]:
    refuse(_name, _f, RuntimeError, OVERFLOW)
for _name, _f in [("set byte mask 5", lambda T, X: _set(X["m"], X["mask"], 5)),
                  ("set byte mask 0-d", lambda T, X: _set(X["f"], X["mask"], T.tensor(5.0))),
                  ("set byte mask + int", lambda T, X: _set(
                      X["f"], (T.tensor([1, 0, 1], dtype=T.uint8), 1), 9.0)),
                  ("set slice + byte mask", lambda T, X: _set(
                      X["f"], (slice(None), T.tensor([1, 0, 1, 0], dtype=T.uint8)), 9.0)),
                  ("index_put byte 0-d", lambda T, X: X["f"].index_put((X["mask"],),
                                                                       T.tensor(5.0))),
                  ("masked_fill byte mask", lambda T, X: T.masked_fill(X["m"], X["mask"], 7))]:
    refuse(_name, _f, RuntimeError, BYTE_MASK)
for _row in [
        ("remainder zero", lambda T, X: T.remainder(X["m"], X["n"]), RuntimeError,
         "ZeroDivisionError"),
        ("% 256 wraps to 0", lambda T, X: X["m"] % 256, RuntimeError, "ZeroDivisionError"),
        ("300 % m", lambda T, X: 300 % X["m"], RuntimeError, "ZeroDivisionError"),
        ("fmod(b, m)", lambda T, X: T.fmod(X["b"], X["m"]), RuntimeError, "ZeroDivisionError"),
        ("m %= n", lambda T, X: X["m"].__imod__(X["n"]), RuntimeError, "ZeroDivisionError"),
        ("m - b", lambda T, X: X["m"] - X["b"], RuntimeError,
         "Subtraction, the `-` operator, with a bool tensor is not supported"),
        ("m - True", lambda T, X: T.sub(X["m"], True), RuntimeError,
         "Subtraction, the `-` operator, with a bool tensor is not supported"),
        ("b.sub(b)", lambda T, X: X["b"].sub(X["b"]), RuntimeError,
         "Subtraction, the `-` operator, with two bool tensors is not supported"),
        ("bitwise_and(m, f)", lambda T, X: T.bitwise_and(X["m"], X["f"]), NotImplementedError,
         "\"bitwise_and_cpu\" not implemented for 'Float'"),
        ("pow(m, -1)", lambda T, X: T.pow(X["m"], -1), RuntimeError,
         "Integers to negative integer powers are not allowed."),
        ("m.pow_(f)", lambda T, X: X["m"].pow_(X["f"]), RuntimeError,
         "result type Float can't be cast to the desired output type Byte"),
        ("m.div_(2)", lambda T, X: X["m"].div_(2), RuntimeError,
         "result type Float can't be cast to the desired output type Byte"),
        ("b.add_(m)", lambda T, X: X["b"].add_(X["m"]), RuntimeError,
         "result type Byte can't be cast to the desired output type Bool"),
        ("b.mul_(m)", lambda T, X: X["b"].mul_(X["m"]), RuntimeError,
         "result type Byte can't be cast to the desired output type Bool"),
        ("b.bitwise_or_(m)", lambda T, X: X["b"].bitwise_or_(X["m"]), RuntimeError,
         "result type Byte can't be cast to the desired output type Bool"),
        ("add alpha 2.5", lambda T, X: T.add(X["m"], X["n"], alpha=2.5), RuntimeError,
         "For integral input tensors, argument alpha must not be a floating point number."),
        ("gelu", lambda T, X: _F(T).gelu(X["m"]), NotImplementedError,
         "\"GeluKernelImpl\" not implemented for 'Byte'"),
        ("gelu tanh", lambda T, X: _F(T).gelu(X["m"], approximate="tanh"), NotImplementedError,
         "\"GeluKernelImpl\" not implemented for 'Byte'"),
        ("silu", lambda T, X: _F(T).silu(X["m"]), NotImplementedError,
         "\"silu_cpu\" not implemented for 'Byte'"),
        ("softplus", lambda T, X: _F(T).softplus(X["m"]), NotImplementedError, "'Byte'"),
        ("round decimals", lambda T, X: T.round(X["m"], decimals=1), NotImplementedError,
         "\"round_cpu\" not implemented for 'Byte'"),
        ("mean", lambda T, X: X["m"].mean(), RuntimeError, "Got: Byte"),
        ("std", lambda T, X: X["m"].std(), RuntimeError, "only support floating point"),
        ("vector_norm", lambda T, X: T.linalg.vector_norm(X["m"], dtype=T.float32),
         RuntimeError, "Expected a floating point or complex tensor as input. Got Byte"),
        ("softmax", lambda T, X: T.softmax(X["m"], 1), RuntimeError, "for 'Byte'"),
        ("layer_norm", lambda T, X: _F(T).layer_norm(X["m"], (4,)), RuntimeError, "'Byte'"),
        ("rms_norm", lambda T, X: _F(T).rms_norm(X["m"], (4,)), NotImplementedError,
         "\"rms_norm\" not implemented for 'Byte'"),
        ("batch_norm", lambda T, X: _F(T).batch_norm(X["im"], None, None, training=True),
         NotImplementedError, "\"batch_norm\" not implemented for 'Byte'"),
        ("group_norm", lambda T, X: _F(T).group_norm(X["im"], 3), NotImplementedError,
         "not implemented for 'Byte'"),
        ("avg_pool2d", lambda T, X: _F(T).avg_pool2d(X["im"], 2), NotImplementedError,
         "\"avg_pool2d\" not implemented for 'Byte'"),
        ("adaptive_avg_pool2d", lambda T, X: _F(T).adaptive_avg_pool2d(X["im"], 2),
         NotImplementedError, "not implemented for 'Byte'"),
        ("max_pool1d", lambda T, X: _F(T).max_pool1d(X["im"][0], 2), NotImplementedError,
         "not implemented for 'Byte'"),
        ("conv2d bias", lambda T, X: _F(T).conv2d(X["im"].float(), T.ones(1, 3, 2, 2),
                                                  bias=T.ones(1, dtype=T.uint8)), RuntimeError,
         r"Input type \(float\) and bias type \(unsigned char\) should be the same"),
        ("conv2d weight", lambda T, X: _F(T).conv2d(X["im"].float(), T.ones(
            1, 3, 2, 2, dtype=T.uint8)), RuntimeError, "Byte"),
        ("mse u8 u8", lambda T, X: _F(T).mse_loss(X["m"], X["n"]), RuntimeError, "Byte"),
        ("smooth_l1 u8 u8", lambda T, X: _F(T).smooth_l1_loss(X["m"], X["n"]),
         NotImplementedError, "\"smooth_l1_cpu\" not implemented for 'Byte'"),
        ("huber u8 u8", lambda T, X: _F(T).huber_loss(X["m"], X["n"]), NotImplementedError,
         "\"huber_cpu\" not implemented for 'Byte'"),
        ("cosine u8 u8", lambda T, X: _F(T).cosine_similarity(X["m"], X["n"]), RuntimeError,
         "yet common dtype is Byte"),
        ("cross_entropy u8 probabilities", lambda T, X: _F(T).cross_entropy(X["f"], X["m"]),
         RuntimeError, "Expected floating point type for target with class probabilities, "
         "got Byte"),
        ("cross_entropy target out of range", lambda T, X: _F(T).cross_entropy(
            X["f"], T.tensor([0, 1, 4], dtype=T.uint8)), IndexError, "Target 4 is out of bounds"),
        ("dropout", lambda T, X: _F(T).dropout(X["m"], 0.5), RuntimeError,
         "result type Float can't be cast to the desired output type Byte"),
        ("sdpa u8 query", lambda T, X: _F(T).scaled_dot_product_attention(
            X["m"][None], X["m"][None], X["m"][None]), RuntimeError,
         "expected scalar type Float but found Byte"),
        ("sdpa u8 mask", lambda T, X: _F(T).scaled_dot_product_attention(
            X["f"][None], X["f"][None], X["f"][None], attn_mask=X["mask"][:, :3]), RuntimeError,
         "attn_mask.dtype: unsigned char and  query.dtype: float"),
        ("mm u8 f", lambda T, X: T.mm(X["m"], X["f"].t()), RuntimeError,
         "expected m1 and m2 to have the same dtype"),
        ("index_put dtypes", lambda T, X: X["m"].index_put((T.tensor([0]),), X["i64"][0]),
         RuntimeError, "got Byte for the destination and Long for the source"),
        ("gather u8 index", lambda T, X: T.gather(X["m"], 0, X["idx"][None]), RuntimeError,
         r"gather\(\): Expected dtype int32/int64 for index"),
        ("index_select u8 index", lambda T, X: T.index_select(X["m"], 0, X["idx"]),
         RuntimeError, "Expected dtype int32 or int64 for index"),
        ("index_add u8 index", lambda T, X: T.index_add(X["m"], 0, X["idx"], X["n"]),
         RuntimeError, "but got: Byte"),
        ("take_along_dim u8", lambda T, X: T.take_along_dim(X["m"], X["idx"][:, None], 1),
         RuntimeError, "dtype of indices should be Long but got Byte"),
        ("tensor_split u8", lambda T, X: T.tensor_split(X["m"], X["idx"][:1], 1),
         RuntimeError, "to have dtype of long, but got Byte"),
        ("one_hot u8", lambda T, X: _F(T).one_hot(X["idx"]), RuntimeError,
         "only applicable to index tensor of type LongTensor"),
        ("embedding u8 index", lambda T, X: _F(T).embedding(X["idx"], X["f"]), RuntimeError,
         "'indices'"),
        ("masked_select byte mask", lambda T, X: T.masked_select(X["m"], X["mask"]),
         RuntimeError, "masked_select: expected BoolTensor for mask"),
        ("uniform_", lambda T, X: X["m"].uniform_(), NotImplementedError, "'Byte'"),
        ("requires_grad_", lambda T, X: X["m"].requires_grad_(), RuntimeError,
         "floating point"),
        ("tensor requires_grad", lambda T, X: T.tensor([1, 2], dtype=T.uint8,
                                                       requires_grad=True), RuntimeError,
         "floating point"),
        ("Parameter", lambda T, X: T.nn.Parameter(X["m"]), RuntimeError, "floating point"),
        ("assign u8 grad", lambda T, X: setattr(X["f"], "grad", X["m"]), RuntimeError,
         "grad"),
        ("backward of u8", lambda T, X: X["m"].sum().backward(), RuntimeError,
         "does not require grad"),
        # mpamp refuses what torch computes (README): convolutions of uint8
        ("conv2d u8", lambda T, X: _F(T).conv2d(X["im"], T.ones(2, 3, 2, 2, dtype=T.uint8)),
         NotImplementedError, "\"slow_conv2d_cpu\" not implemented for 'Byte'", False)]:
    refuse(*_row)


@pytest.mark.parametrize("fn, exc, match, torch_raises", RAISES)
def test_uint8_refusals_name_the_problem(fn, exc, match, torch_raises):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match) as info:
            fn(mpamp, inputs(mpamp))
        assert type(info.value) is exc            # not a subclass (SystemError, ...) either
        try:
            import torch
        except ImportError:
            return
        if torch_raises:
            with pytest.raises(exc):
                fn(torch, inputs(torch))
        else:
            fn(torch, inputs(torch))               # torch computes it: a documented refusal

