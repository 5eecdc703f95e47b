"""Each core status code reaches Python as the right exception with the core's message."""
import pytest

import mpamp
from mpamp import _C


@pytest.mark.parametrize("trigger,exc,msg", [
    (lambda: mpamp.zeros(-1), ValueError, "negative dimension"),             # MP_ERR_VALUE
    (lambda: -mpamp.tensor([True]), TypeError, "Negation"),                  # MP_ERR_TYPE
    (lambda: mpamp.zeros(2, 3).view(4), RuntimeError, "invalid for input"),  # MP_ERR_SHAPE
    (lambda: mpamp.zeros(2).size(5), IndexError, "Dimension out of range"),  # MP_ERR_INDEX
    (lambda: mpamp.empty(2**55), MemoryError, "allocate"),                   # MP_ERR_NOMEM
    (lambda: _C._cuda_probe(), RuntimeError, "CUDA not available"),          # MP_ERR_NO_CUDA
])
def test_status_codes_map_to_exceptions(trigger, exc, msg):
    with pytest.raises(exc, match=msg):
        trigger()


def test_runtime_status_from_the_engine():
    x = mpamp.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):                   # MP_ERR_RUNTIME
        y.backward()


def test_errors_do_not_leave_stale_messages():
    with pytest.raises(IndexError) as first:
        mpamp.zeros(2).size(7)
    with pytest.raises(ValueError) as second:
        mpamp.zeros(-2)
    assert "7" in str(first.value) and "-2" in str(second.value)
