"""Random sequences of GradScaler calls, valid and invalid, with inf/NaN gradients: nothing
crashes, every call either works or raises one of torch's errors, and the scale stays a
float. (Exact scale traces against torch's algorithm are in test_grad_scaler.py.)"""
import math

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mpamp  # noqa: E402

ACTIONS = st.lists(st.tuples(st.sampled_from(["backward", "unscale", "step", "update",
                                              "update_new", "scale_list", "scale_bad",
                                              "zero_grad"]),
                             st.sampled_from([1.0, float("inf"), float("nan"), 1e30])),
                   min_size=1, max_size=40)
ALLOWED = (
    "unscale_() has already been called on this optimizer since the last update().",
    "unscale_() is being called after step().",
    "step() has already been called since the last update().",
    "No inf checks were recorded for this optimizer.",
    "No inf checks were recorded prior to update.",
    "outputs must be a Tensor or an iterable of Tensors",
    "new_scale should be a float or a 1-element",
    "but _scale is None",                       # torch asserts this before the first scale()
    "but _growth_tracker is None",
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS, interval=st.integers(1, 4))
def test_random_call_sequences(actions, interval):
    w = mpamp.nn.Parameter(mpamp.ones(3))
    opt = mpamp.optim.SGD([w], lr=0.1)
    scaler = mpamp.amp.GradScaler("cpu", init_scale=8.0, growth_interval=interval)
    for name, value in actions:
        try:
            if name == "backward":
                loss = (w * value).sum()
                scaler.scale(loss).backward()
            elif name == "unscale":
                scaler.unscale_(opt)
            elif name == "step":
                scaler.step(opt)
            elif name == "update":
                scaler.update()
            elif name == "update_new":
                scaler.update(2.0)
            elif name == "scale_list":
                scaler.scale([mpamp.ones(2), (mpamp.ones(1),)])
            elif name == "scale_bad":
                scaler.scale("not a tensor")
            else:
                opt.zero_grad()
        except (RuntimeError, ValueError, AssertionError) as exc:
            assert any(msg in str(exc) for msg in ALLOWED), str(exc)
        s = scaler.get_scale()
        assert isinstance(s, float) and not math.isnan(s) and s >= 0
    # (weights may be inf here: backward after unscale_ is misuse that torch lets through)
    assert w.shape == (3,) and w.dtype is mpamp.float32
