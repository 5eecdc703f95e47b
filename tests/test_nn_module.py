"""mpamp.nn.Module and Parameter: registration, traversal, state_dict (keys and order as torch),
load_state_dict messages, repr as torch, modes, gradients, dtype conversion that keeps
Parameter identity, hooks."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import mpamp
from mpamp import nn
from conftest import to_numpy


class Block(nn.Module):
    """A module using only pointwise ops, so it runs before linear/reduce ops exist."""

    def __init__(self, n=3):
        super().__init__()
        self.scale = nn.Parameter(mpamp.ones(n))
        self.shift = nn.Parameter(mpamp.zeros(n))
        self.register_buffer("running", mpamp.full((n,), 2.0))
        self.register_buffer("scratch", mpamp.zeros(n), persistent=False)

    def forward(self, x):
        return (x * self.scale + self.shift).tanh()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.b = Block()
        self.out = nn.Parameter(mpamp.ones(3))

    def forward(self, x):
        return self.b(self.a(x)) * self.out


# ---- Parameter ----

def test_parameter_shares_storage_and_requires_grad():
    data = mpamp.arange(6, dtype=mpamp.float32).reshape(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, nn.Parameter) and isinstance(p, mpamp.Tensor)
    assert p.requires_grad and p.is_leaf and not data.requires_grad
    assert p.data_ptr() == data.data_ptr() and p.shape == (2, 3)
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert type(p * 2) is mpamp.Tensor           # ops give plain tensors, as torch
    assert nn.Parameter().shape == (0,)


def test_parameter_errors():
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(mpamp.arange(3))


def test_parameter_repr_as_torch():
    p = nn.Parameter(mpamp.tensor([1.0, 2.5], device="cpu"))   # torch's CPU repr
    # as torch, a tensor off the default device's type names its device (the device suite
    # runs this module with set_default_device("cuda"))
    off_default = mpamp.get_default_device().type != "cpu"
    suffix = ", device='cpu'" if off_default else ""
    assert repr(p) == f"Parameter containing:\ntensor([1.0000, 2.5000]{suffix}, requires_grad=True)"
    torch = pytest.importorskip("torch")
    if not off_default:
        assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.5])))


def test_parameter_copy_and_pickle_keep_class():
    p = nn.Parameter(mpamp.tensor([1.0, 2.0]), requires_grad=False)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and q.requires_grad is False
        assert q.data_ptr() != p.data_ptr()
        np.testing.assert_array_equal(to_numpy(q), [1.0, 2.0])


# ---- registration ----

def test_setattr_registers_members():
    m = Block()
    assert list(m._parameters) == ["scale", "shift"]
    assert list(m._buffers) == ["running", "scratch"]
    assert m._non_persistent_buffers_set == {"scratch"}
    m.child = Block()
    assert m._modules == {"child": m.child}
    m.plain = 5
    assert "plain" in m.__dict__ and m.plain == 5
    m.running = mpamp.ones(3)                    # a registered buffer stays a buffer
    assert "running" in m._buffers and "running" not in m.__dict__


def test_setattr_replaces_kinds_and_none():
    m = Block()
    m.scale = None
    assert m._parameters["scale"] is None and m.scale is None
    assert [n for n, _ in m.named_parameters()] == ["shift"]
    with pytest.raises(TypeError, match="as parameter 'shift'"):
        m.shift = Block()                        # as torch: a parameter name stays one
    m.child = Block()
    m.child = nn.Parameter(mpamp.ones(1))        # a Parameter takes the module's place
    assert "child" not in m._modules and m._parameters["child"] is m.child
    m.sub = Block()
    m.sub = None
    assert m._modules["sub"] is None


def test_registration_errors():
    m = Block()
    with pytest.raises(TypeError, match="cannot assign 'mpamp.FloatTensor' as parameter "
                                        "'scale' \\(torch.nn.Parameter or None expected\\)"):
        m.scale = mpamp.ones(3)
    with pytest.raises(TypeError, match="as child module"):
        m.child = Block()
        m.child = 3
    with pytest.raises(TypeError, match="as buffer 'running'"):
        m.running = 3.0
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        m.register_buffer("forward", mpamp.ones(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="empty"):
        m.register_buffer("", None)
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match="object to parameter 'w'"):
        m.register_parameter("w", mpamp.ones(2))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 5)
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'w'"):
        p = nn.Parameter(mpamp.ones(2))
        q = p * 2
        q.__class__ = nn.Parameter
        m.register_parameter("w", q)


def test_assignment_before_init():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(mpamp.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__\\(\\) call"):
        Early()


def test_getattr_delattr_dir():
    m = Block()
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'nope'"):
        m.nope
    assert {"scale", "shift", "running", "scratch", "forward"} <= set(dir(m))
    del m.scale, m.running
    assert "scale" not in m._parameters and "running" not in m._buffers
    m.c = Block()
    del m.c
    assert not m._modules
    with pytest.raises(AttributeError):
        del m.nothing
    del m.scratch
    assert m._non_persistent_buffers_set == set()


def test_forward_missing():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the '
                                                  'required "forward" function'):
        nn.Module()(1)
    with pytest.raises(TypeError):
        nn.Module(3)


# ---- traversal ----

def test_traversal_names_and_order():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "out", "a.scale", "a.shift", "b.scale", "b.shift"]
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["out"]
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.out"
    assert [n for n, _ in net.named_buffers()] == [
        "a.running", "a.scratch", "b.running", "b.scratch"]
    assert [n for n, _ in net.named_children()] == ["a", "b"]
    assert list(net.children()) == [net.a, net.b]
    assert [n for n, _ in net.named_modules()] == ["", "a", "b"]
    assert list(net.modules()) == [net, net.a, net.b]
    assert len(list(net.parameters())) == 5 and len(list(net.buffers())) == 4


def test_shared_members_listed_once():
    net = Net()
    net.b = net.a                                 # the same block twice
    net.twin = net.out
    assert [n for n, _ in net.named_modules()] == ["", "a"]
    assert len(list(net.parameters())) == 3
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == [
        "out", "twin", "a.scale", "a.shift", "b.scale", "b.shift"]
    assert [n for n, _ in net.named_modules(remove_duplicate=False)] == ["", "a", "b"]
    assert list(net.state_dict()) == ["out", "twin", "a.scale", "a.shift", "a.running",
                                      "b.scale", "b.shift", "b.running"]


def test_get_submodule():
    net = nn.Sequential(Net())
    assert net.get_submodule("0.a") is net[0].a
    assert net.get_submodule("") is net
    with pytest.raises(AttributeError, match="has no attribute `zz`"):
        net.get_submodule("0.zz")
    with pytest.raises(AttributeError, match="`out` is not an nn.Module"):
        net.get_submodule("0.out")


# ---- state_dict ----

def test_state_dict_keys_values_and_metadata():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["out", "a.scale", "a.shift", "a.running", "b.scale", "b.shift",
                        "b.running"]
    assert all(type(v) is mpamp.Tensor and not v.requires_grad for v in sd.values())
    assert sd["a.scale"].data_ptr() == net.a.scale.data_ptr()   # detached, not copied
    assert net.state_dict(keep_vars=True)["a.scale"] is net.a.scale
    assert list(net.a.state_dict(prefix="x.")) == ["x.scale", "x.shift", "x.running"]
    assert sd._metadata == OrderedDict([("", {"version": 1}), ("a", {"version": 1}),
                                        ("b", {"version": 1})])


def _torch_twin(torch):
    class TBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(3))
            self.shift = torch.nn.Parameter(torch.zeros(3))
            self.register_buffer("running", torch.full((3,), 2.0))
            self.register_buffer("scratch", torch.zeros(3), persistent=False)

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = TBlock()
            self.b = TBlock()
            self.out = torch.nn.Parameter(torch.ones(3))
    return TNet()


def test_state_dict_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = Net(), _torch_twin(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.state_dict()._metadata == theirs.state_dict()._metadata
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]


def test_load_state_dict_copies_and_converts():
    src, dst = Net(), Net().half()
    with mpamp.no_grad():
        src.a.scale.fill_(3.0)
        src.b.running.fill_(7.0)
    before = dst.a.scale
    result = dst.load_state_dict(src.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.a.scale is before and dst.a.scale.dtype == mpamp.float16
    np.testing.assert_array_equal(to_numpy(dst.a.scale), [3.0] * 3)
    np.testing.assert_array_equal(to_numpy(dst.b.running), [7.0] * 3)


def test_load_state_dict_strict_errors_message():
    net = Net()
    sd = net.state_dict()
    del sd["a.shift"]
    sd["a.extra"] = mpamp.ones(1)
    sd["c.weight"] = mpamp.ones(1)
    sd["b.scale"] = mpamp.ones(4)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == (
        'Error(s) in loading state_dict for Net:\n\t'
        'Missing key(s) in state_dict: "a.shift". \n\t'
        'Unexpected key(s) in state_dict: "c.weight", "a.extra". \n\t'
        "size mismatch for b.scale: copying a param with shape mpamp.Size([4]) from "
        "checkpoint, the shape in current model is mpamp.Size([3]).")


def test_load_state_dict_message_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = Net(), _torch_twin(torch)
    sd = {k: v for k, v in ours.state_dict().items() if k != "a.shift"}
    sd["zz"] = mpamp.ones(1)
    messages = []
    for model, state in ((ours, sd), (theirs, {k: torch.from_numpy(to_numpy(v))
                                               for k, v in sd.items()})):
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(state)
        messages.append(str(info.value).replace("TNet", "Net"))
    assert messages[0] == messages[1]


def test_load_state_dict_non_strict():
    net = Net()
    sd = net.state_dict()
    del sd["out"]
    sd["b.nope"] = mpamp.ones(1)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["out"] and result.unexpected_keys == ["b.nope"]
    assert repr(result) == "_IncompatibleKeys(missing_keys=['out'], unexpected_keys=['b.nope'])"
    sd["a.scale"] = mpamp.ones(2)                 # shape errors are raised even when non-strict
    with pytest.raises(RuntimeError, match="size mismatch for a.scale"):
        net.load_state_dict(sd, strict=False)


def test_load_state_dict_bad_inputs():
    net = Net()
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])
    sd = net.state_dict()
    sd["out"] = [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match='While copying the parameter named "out", expected '
                                           'torch.Tensor or Tensor-like object'):
        net.load_state_dict(sd)


def test_load_state_dict_assign():
    net = Net()
    new = mpamp.full((3,), 5.0, dtype=mpamp.bfloat16)
    sd = net.state_dict()
    sd["a.scale"] = new
    net.load_state_dict(sd, assign=True)
    assert type(net.a.scale) is nn.Parameter and net.a.scale.requires_grad
    assert net.a.scale.dtype == mpamp.bfloat16 and net.a.scale.data_ptr() == new.data_ptr()


def test_extra_state_round_trip():
    class WithExtra(Block):
        def __init__(self):
            super().__init__()
            self.step = 0

        def get_extra_state(self):
            return {"step": self.step}

        def set_extra_state(self, state):
            self.step = state["step"]

    m = WithExtra()
    m.step = 9
    sd = m.state_dict()
    assert list(sd)[-1] == "_extra_state"
    other = WithExtra()
    other.load_state_dict(sd)
    assert other.step == 9
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: '
                                           '"_extra_state"'):
        Block().load_state_dict(sd)


# ---- repr ----

def test_repr_nested_format():
    net = nn.Sequential(OrderedDict([("blk", Net()), ("act", nn.ReLU())]))
    assert repr(net) == ("Sequential(\n"
                         "  (blk): Net(\n"
                         "    (a): Block()\n"
                         "    (b): Block()\n"
                         "  )\n"
                         "  (act): ReLU()\n"
                         ")")

    class Multi(nn.Module):
        def extra_repr(self):
            return "first\nsecond"
    assert repr(Multi()) == "Multi(\n  first\n  second\n)"


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")

    def build(lib):
        class Head(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = lib.nn.Linear(8, 4, bias=False)
                self.norm = lib.nn.LayerNorm(4, eps=1e-6)

        return lib.nn.Sequential(
            lib.nn.Embedding(100, 8, padding_idx=-1),
            lib.nn.ModuleList([lib.nn.Linear(8, 8), lib.nn.Linear(8, 8), lib.nn.GELU("tanh"),
                               lib.nn.Dropout(0.25)]),
            lib.nn.ModuleDict({"head": Head(), "flat": lib.nn.Flatten(0)}),
            lib.nn.ReLU(inplace=True), lib.nn.SiLU(), lib.nn.Tanh(), lib.nn.Sigmoid(),
            lib.nn.Softmax(dim=-1), lib.nn.LogSoftmax(1), lib.nn.Identity(),
            lib.nn.LayerNorm([2, 3], elementwise_affine=False), lib.nn.MSELoss(),
            lib.nn.L1Loss(), lib.nn.CrossEntropyLoss(label_smoothing=0.1), lib.nn.NLLLoss(),
            lib.nn.BCEWithLogitsLoss(), lib.nn.ModuleList())

    ours, theirs = build(mpamp), build(torch)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


# ---- modes and gradients ----

def test_train_eval_propagate():
    net = Net()
    assert net.training and net.a.training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.a.train()
    assert net.a.training and not net.training and not net.b.training
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)


def test_backward_fills_param_grads_and_zero_grad():
    net = Net()
    x = mpamp.tensor([0.5, -1.0, 2.0])
    net(x).backward(mpamp.ones(3))
    assert all(p.grad is not None and p.grad.shape == p.shape and p.grad.dtype == p.dtype
               for p in net.parameters())
    grad = net.out.grad
    net.zero_grad(set_to_none=False)
    assert net.out.grad is grad
    np.testing.assert_array_equal(to_numpy(grad), [0.0] * 3)
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_requires_grad_():
    net = Net()
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.a.requires_grad_()
    assert [n for n, p in net.named_parameters() if p.requires_grad] == ["a.scale", "a.shift"]


# ---- conversions ----

@pytest.mark.parametrize("convert, dtype", [
    (lambda m: m.half(), mpamp.float16), (lambda m: m.bfloat16(), mpamp.bfloat16),
    (lambda m: m.to(mpamp.float16), mpamp.float16), (lambda m: m.to("bf16"), mpamp.bfloat16),
    (lambda m: m.to(dtype=mpamp.bfloat16), mpamp.bfloat16),
    (lambda m: m.to(mpamp.get_default_device(), mpamp.float16), mpamp.float16),
    (lambda m: m.to(mpamp.zeros(1, dtype=mpamp.float16)), mpamp.float16),
    (lambda m: m.type(mpamp.float16), mpamp.float16)])
def test_dtype_conversion_keeps_parameter_identity(convert, dtype):
    net = Net()
    held = list(net.parameters())                # what an optimizer built now would keep
    net(mpamp.ones(3)).backward(mpamp.ones(3))
    grads = [p.grad for p in held]
    values = [to_numpy(p) for p in held]
    assert convert(net) is net
    assert list(net.parameters()) == held
    for p, g, v in zip(held, grads, values):
        assert type(p) is nn.Parameter and p.dtype == dtype and p.requires_grad and p.is_leaf
        assert p.grad.dtype == dtype and p.grad.shape == p.shape
        np.testing.assert_array_equal(to_numpy(p), v)   # 0/1/2 are exact in every dtype
        np.testing.assert_array_equal(to_numpy(p.grad), to_numpy(g.float().to(dtype)))
    assert net.a.running.dtype == dtype and net.a.scratch.dtype == dtype
    net.float()
    assert list(net.parameters()) == held and all(p.dtype == mpamp.float32 for p in held)
    net(mpamp.ones(3)).backward(mpamp.ones(3))  # still trainable after the round trip
    assert all(p.grad.dtype == mpamp.float32 for p in held)


def test_conversion_leaves_integer_buffers_and_same_dtype_is_noop():
    m = Block()
    m.register_buffer("count", mpamp.arange(3))
    count = m.count
    m.half()
    assert m.count is count and m.count.dtype == mpamp.int64
    ptr = m.scale.data_ptr()
    m.half()
    assert m.scale.data_ptr() == ptr               # already float16: nothing rebound


def test_conversion_errors():
    m = Block()
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex "
                                        "dtypes, but got desired dtype=mpamp.int64"):
        m.to(mpamp.int64)
    with pytest.raises(TypeError, match="float64"):
        m.double()
    assert m.cpu() is m and m.to("cpu") is m
    if not mpamp.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA not available"):
            m.cuda()
        with pytest.raises(RuntimeError, match="CUDA not available"):
            m.to("cuda")
        with pytest.raises(RuntimeError, match="CUDA not available"):
            nn.Module().cuda()                    # even without parameters


def test_set_data_keeps_or_drops_grad():
    p = nn.Parameter(mpamp.ones(2))
    p.grad = mpamp.full((2,), 3.0)
    grad = p.grad
    mpamp._C._set_data(p, mpamp.zeros(2))
    assert p.grad is grad and p.requires_grad     # same shape and dtype: kept
    mpamp._C._set_data(p, mpamp.zeros(3))
    assert p.grad is None and p.shape == (3,)
    with pytest.raises(RuntimeError, match="only leaf tensors"):
        mpamp._C._set_data(p * 2, mpamp.zeros(3))
    with pytest.raises(RuntimeError, match="floating point"):
        mpamp._C._set_data(p, mpamp.arange(3))
    with pytest.raises(TypeError):
        mpamp._C._set_data(p, [1.0])


def test_apply_visits_children_first():
    net = Net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Block", "Block", "Net"]


# ---- hooks ----

def test_forward_hooks():
    m = Block()
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    post = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    np.testing.assert_allclose(to_numpy(m(mpamp.ones(3))), [1.0] * 3)
    assert calls == [(3,)]
    pre.remove()
    with post:
        pass                                     # leaving the block removes the hook
    np.testing.assert_allclose(to_numpy(m(mpamp.zeros(3))), [0.0] * 3)
    assert calls == [(3,)]


def test_forward_hooks_with_kwargs_and_prepend():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    m = Scale()
    order = []
    m.register_forward_pre_hook(lambda mod, args: order.append("second"))
    m.register_forward_pre_hook(lambda mod, args: order.append("first"), prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}),
                                with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: out + kwargs["factor"],
                            with_kwargs=True)
    np.testing.assert_allclose(to_numpy(m(mpamp.ones(2), factor=2.0)), [6.0, 6.0])
    assert order == ["first", "second"]
