"""Error sites of the C core reached through the public API: each raises the Python exception
its status maps to, with the core's message."""
import pytest

import mpamp


def test_sizes_that_overflow_int64_are_refused():
    # Empty tensors and expanded views used to compute strides and numel with signed overflow
    # (undefined behaviour; strides came out negative).
    big = 2**62
    with pytest.raises(RuntimeError, match=r"numel: integer multiplication overflow "
                                           r"\(sizes=\[0, 4611686018427387904, 46"):
        mpamp.empty(0, big, big)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        mpamp.empty(big, big, 0)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        mpamp.ones(1).expand(big, big)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        mpamp.zeros(0).view(0, big, 4)
    with pytest.raises(RuntimeError, match="is invalid for input of size 4"):
        mpamp.zeros(4).view(big, big, -1)
    with pytest.raises(RuntimeError, match="cat: the result's size in dimension 1 overflows"):
        mpamp.cat([mpamp.empty(0, big), mpamp.empty(0, big)], dim=1)
    ok = mpamp.empty(0, big, 1)
    assert tuple(ok.shape) == (0, big, 1) and ok.stride() == (big, 1, 1)
    assert tuple(mpamp.ones(1).expand(big).shape) == (big,)
