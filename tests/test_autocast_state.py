"""autocast regions: constructor checks and warnings as torch's, nesting, enabled=False
regions, decorators, per-thread state, the policy table, custom_fwd/custom_bwd."""
import threading
import warnings

import pytest

import mpamp
from mpamp.amp import autocast


def test_default_device_and_dtype():
    with mpamp.autocast(dtype="bf16") as ac:
        assert ac is not None and ac.device == "cpu"        # no GPU here
        assert mpamp.is_autocast_enabled("cpu") and not mpamp.is_autocast_enabled("cuda")
        assert mpamp.get_autocast_dtype("cpu") is mpamp.bfloat16
    assert not mpamp.is_autocast_enabled("cpu")
    assert mpamp.get_autocast_dtype("cpu") is mpamp.bfloat16
    assert mpamp.get_autocast_dtype("cuda") is mpamp.float16
    with autocast("cpu"):                                   # default dtype on CPU: bf16
        assert mpamp.get_autocast_dtype("cpu") is mpamp.bfloat16


@pytest.mark.parametrize("spelling,dtype", [("fp16", "float16"), ("half", "float16"),
                                            ("float16", "float16"), ("bf16", "bfloat16"),
                                            ("bfloat16", "bfloat16")])
def test_dtype_spellings(spelling, dtype):
    with autocast("cpu", dtype=spelling):
        assert mpamp.get_autocast_dtype("cpu") is getattr(mpamp, dtype)


def test_constructor_errors_and_warnings():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: "):
        autocast(mpamp.device("cpu"))
    with pytest.raises(RuntimeError, match="User specified an unsupported autocast "
                                           "device_type 'tpu'"):
        autocast("tpu")
    with pytest.raises(ValueError, match="unknown autocast dtype"):
        autocast("cpu", dtype="fp8")
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast."):
        ac = autocast("cpu", dtype=mpamp.float32)
    with ac:
        assert not mpamp.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling autocast."):
        cu = autocast("cuda")
    with cu:
        assert not mpamp.is_autocast_enabled("cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        autocast("cpu", dtype=mpamp.float32, enabled=False)  # no check when disabled


def test_deprecated_spellings_warn_and_work():
    with pytest.warns(FutureWarning, match=r"mpamp.cpu.amp.autocast\(args...\)` is "
                                           r"deprecated. Please use `mpamp.amp.autocast"):
        ac = mpamp.cpu.amp.autocast()
    with ac:
        assert mpamp.is_autocast_enabled("cpu")
        assert mpamp.get_autocast_dtype("cpu") is mpamp.bfloat16
    with pytest.warns(FutureWarning, match="mpamp.cuda.amp.autocast"), \
            pytest.warns(UserWarning, match="CUDA is not available"):
        cu = mpamp.cuda.amp.autocast()
    with cu:                                               # the documents' scripts still run
        assert not mpamp.is_autocast_enabled("cuda")


def test_nesting_enabled_false_and_dtype_change():
    with autocast("cpu", dtype="bf16"):
        with autocast("cpu", enabled=False):
            assert not mpamp.is_autocast_enabled("cpu")
            with autocast("cpu", dtype="fp16"):
                assert mpamp.is_autocast_enabled("cpu")
                assert mpamp.get_autocast_dtype("cpu") is mpamp.float16
            assert not mpamp.is_autocast_enabled("cpu")
        assert mpamp.is_autocast_enabled("cpu")
        assert mpamp.get_autocast_dtype("cpu") is mpamp.bfloat16
    assert not mpamp.is_autocast_enabled("cpu")


def test_exception_restores_state():
    with pytest.raises(KeyError):
        with autocast("cpu", cache_enabled=False):
            assert not mpamp.is_autocast_cache_enabled()
            raise KeyError("x")
    assert not mpamp.is_autocast_enabled("cpu") and mpamp.is_autocast_cache_enabled()


def test_decorator_on_functions_and_methods():
    @autocast("cpu", dtype="fp16")
    def f():
        return mpamp.is_autocast_enabled("cpu"), mpamp.get_autocast_dtype("cpu")

    class Model:
        @mpamp.autocast(dtype="bf16")
        def forward(self):
            return mpamp.is_autocast_enabled("cpu")

    assert f() == (True, mpamp.float16) and Model().forward()
    assert not mpamp.is_autocast_enabled("cpu")


def test_state_is_per_thread():
    seen = {}

    def worker(name, dtype):
        seen[name + "_start"] = mpamp.is_autocast_enabled("cpu")
        with autocast("cpu", dtype=dtype):
            barrier.wait()
            seen[name] = mpamp.get_autocast_dtype("cpu")
            barrier.wait()

    barrier = threading.Barrier(2)
    with autocast("cpu"):
        ts = [threading.Thread(target=worker, args=("a", "fp16")),
              threading.Thread(target=worker, args=("b", "bf16"))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert mpamp.is_autocast_enabled("cpu")
    assert seen == {"a_start": False, "b_start": False, "a": mpamp.float16,
                    "b": mpamp.bfloat16}


def test_state_functions():
    with pytest.raises(TypeError, match=r"enabled must be a bool \(got int\)"):
        mpamp.set_autocast_cache_enabled(1)
    mpamp.set_autocast_dtype("cpu", "fp16")
    assert mpamp.get_autocast_dtype("cpu") is mpamp.float16
    mpamp.set_autocast_dtype("cpu", mpamp.bfloat16)
    mpamp.set_autocast_enabled("cpu", True)
    assert mpamp.is_autocast_enabled("cpu")
    mpamp.set_autocast_enabled("cpu", False)
    assert mpamp.amp.is_autocast_available("cpu") and not mpamp.amp.is_autocast_available("x")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        mpamp.is_autocast_enabled("tpu")


def test_policy_table_matches_torch_lists():
    pol = mpamp._C._autocast_policy
    for op in ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm"):
        assert pol(op, "cpu") == "lower" and pol(op, "cuda") == "lower"
    for op in ("mse_loss", "l1_loss", "nll_loss", "cross_entropy",
               "binary_cross_entropy_with_logits"):
        assert pol(op, "cpu") == "fp32" and pol(op, "cuda") == "fp32"
    for op in ("layer_norm", "exp", "log", "pow", "rsqrt", "softmax", "log_softmax", "sum"):
        assert pol(op, "cpu") is None and pol(op, "cuda") == "fp32"
    for op in ("cat", "stack"):
        assert pol(op, "cpu") == "promote" and pol(op, "cuda") is None
    assert pol("relu", "cpu") is None and pol("add", "cuda") is None


def test_custom_fwd_bwd():
    class Scale(mpamp.autograd.Function):
        @staticmethod
        @mpamp.amp.custom_fwd(device_type="cpu", cast_inputs=mpamp.float32)
        def forward(ctx, x):
            ctx.seen = (x.dtype, mpamp.is_autocast_enabled("cpu"))
            return x * 2

        @staticmethod
        @mpamp.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            ctx.bwd_seen = mpamp.is_autocast_enabled("cpu")
            return g * 2

    x = mpamp.ones(2, dtype="bf16", requires_grad=True)
    with autocast("cpu"):
        y = Scale.apply(x)
    assert y.dtype is mpamp.float32
    y.backward(mpamp.ones(2))
    assert x.grad.dtype is mpamp.bfloat16 and x.grad.float().tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        mpamp.amp.custom_fwd(device_type=None)
