"""backward() runs the C engine without the GIL (csrc/bindings/autograd_bind.c), so another
Python thread (DDP's communication thread, a data-loading thread) runs while a long backward
pass computes; Python hooks and autograd.Function nodes take the GIL back for their call, and
their exceptions still reach the caller."""
import threading
import time

import numpy as np
import pytest

import mpamp


def _long_backward_graph():
    a = mpamp.randn(768, 768, requires_grad=True)
    y = a
    for _ in range(6):                      # 12 products of 768^3 in backward, no Python
        y = mpamp.tanh(y @ a)
    return a, y.sum()


def test_other_threads_run_during_backward():
    mpamp.manual_seed(0)
    old = mpamp.get_num_threads()
    mpamp.set_num_threads(1)
    try:
        a, loss = _long_backward_graph()
        ticks, stop = [], threading.Event()

        def spin():
            while not stop.is_set():
                ticks.append(time.perf_counter())
                x = 0
                for i in range(200):        # Python bytecode: needs the GIL
                    x += i

        t = threading.Thread(target=spin)
        t.start()
        time.sleep(0.05)
        t0 = time.perf_counter()
        loss.backward()
        t1 = time.perf_counter()
        stop.set()
        t.join()
    finally:
        mpamp.set_num_threads(old)
    # With the GIL held for the whole backward, the thread could run only around the C call
    # (a switch interval, 5 ms, at each end); the middle third of a long backward has no
    # Python in it (no hooks in this graph).
    span = t1 - t0
    assert span > 0.03, span
    middle = [x for x in ticks if t0 + span / 3 <= x <= t1 - span / 3]
    assert len(middle) > 10, (len(middle), span)
    assert a.grad is not None and np.isfinite(a.grad.numpy()).all()


def test_hooks_and_functions_still_run_and_raise():
    seen = []
    w = mpamp.ones(3, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))

    class Twice(mpamp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append("fn")
            return g * 2

    y = Twice.apply(w * 1.0)
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    assert seen == ["fn", [4.0, 4.0, 4.0]]

    def bad(p):
        raise KeyError("from the hook")

    v = mpamp.ones(2, requires_grad=True)
    v.register_post_accumulate_grad_hook(bad)
    with pytest.raises(KeyError, match="from the hook"):
        (v * 3).sum().backward()
    x = mpamp.ones(2, requires_grad=True)
    (gx,) = mpamp.autograd.grad((Twice.apply(x)).sum(), [x])
    assert gx.tolist() == [2.0, 2.0]
