"""Error sites of the C core that the Python layer shields (it validates first), reached through
the extension's own entry points (mpamp._C, torch's names where torch has them): a caller that
skips the Python layer still gets the right exception, never a crash or a SystemError."""
import pytest

import mpamp
from mpamp import _C


def _unscale(grads, found_inf, inv_scale):
    _C._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)


# Tensors are made inside the test (lambdas here): parameters live until the interpreter exits,
# where the sanitizer run would report their C headers as leaks.
@pytest.mark.parametrize("args,exc,msg", [
    (lambda: ([mpamp.ones(2)], mpamp.zeros(2)), RuntimeError,
     "found_inf must be a 1-element tensor"),
    (lambda: ([mpamp.ones(2)], mpamp.zeros(1).bfloat16()), RuntimeError,
     "found_inf must be a float "),
    (lambda: ([mpamp.ones(2).long()], mpamp.zeros(1)), TypeError,
     "scaled_grads must be floating-point tensors"),
    (lambda: ([mpamp.ones(2, 3).t()], mpamp.zeros(1)), RuntimeError,
     "one of scaled_grads was not a contiguous tensor"),
], ids=["found-inf-size", "found-inf-dtype", "int-grad", "strided-grad"])
def test_unscale_checks_its_tensors(args, exc, msg):
    grads, found_inf = args()
    with pytest.raises(exc, match=msg):
        _unscale(grads, found_inf, mpamp.ones(1))


def test_random_int_checks_its_range():
    with pytest.raises(ValueError, match="random_ expects 'from' to be less than 'to', but "
                                         "got from=5 >= to=3"):
        _C._random_(mpamp.zeros(3).long(), "int", 5, 3, 0, 0)


def test_fused_adam_amsgrad_needs_its_state():
    p, g = mpamp.zeros(3), mpamp.ones(3)
    m, v = mpamp.zeros(3), mpamp.zeros(3)
    args = ([p], [g], None, None, None, False, 0, 0, [m], [v], None,
            0.9, 0.999, 1e-8, 0.0, 1e-3, 1.0, 1.0, False, True, False)
    with pytest.raises(ValueError, match="amsgrad needs max_exp_avg_sq tensors"):
        _C._fused_adam_(*args)


@pytest.mark.parametrize("result,exc,msg", [
    (5, TypeError, "backward must return a tuple of gradients"),
    ((), RuntimeError, r"returned an incorrect number of gradients \(expected 1, got 0\)"),
])
def test_recorded_function_results_are_checked(result, exc, msg):
    x = mpamp.ones(2, requires_grad=True)
    with mpamp.no_grad():
        y = x * 2
    _C._record_function("RawBackward", lambda g: result, [x], [y])
    with pytest.raises(exc, match=msg):
        y.sum().backward()
