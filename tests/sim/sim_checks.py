"""Checks run under the simulated GPU (MPAMP_CUDA_SIM=1), one per process invocation:
`python sim_checks.py NAME`. tests/test_device_sim.py runs each in a subprocess, since the
variable is process-wide and a host dereference of device memory is meant to crash."""
import ctypes
import os
import sys

import numpy as np

import mpamp as m


def check_roundtrip():
    for dt in (m.float32, m.float16, m.bfloat16, m.int64, m.bool, m.uint8):
        x = (m.randn(5, 7) * 4).to(dt)
        y = x.cuda()
        assert y.is_cuda and str(y.device) == "cuda:0" and y.dtype == dt
        assert y.cpu().tolist() == x.tolist()
        assert y.t().contiguous().cpu().tolist() == x.t().tolist()   # strided, on the device
    x = m.randn(4, 6)
    assert x.t().cuda().cpu().tolist() == x.t().tolist()             # strided source
    assert x.to("cuda", m.float16).cpu().tolist() == x.half().tolist()  # cast across
    assert m.zeros(3, device="cuda").cpu().tolist() == [0.0] * 3
    assert m.full((2,), 7, device="cuda").cpu().tolist() == [7, 7]
    assert m.tensor([1.5, 2.5], device="cuda").device == m.device("cuda", 0)
    assert m.arange(4, device="cuda").cpu().tolist() == [0, 1, 2, 3]
    assert x.cuda().cuda() is not None and x.cpu() is x
    assert "device='cuda:0'" in repr(x.cuda())
    assert x.cuda()[1, 2].item() == x[1, 2].item()
    assert x.pin_memory() is x and not x.is_pinned()
    try:
        x.half().cuda().pin_memory()
    except RuntimeError as e:
        assert str(e) == ("cannot pin 'mpamp.cuda.HalfTensor' only dense CPU tensors can be "
                          "pinned"), e
    else:
        raise AssertionError("pinned a cuda tensor")


def check_maps_bit_identical():
    x = m.randn(64, 33)
    y = m.randn(33)
    for dt in (m.float32, m.float16, m.bfloat16):
        a, b = x.to(dt), y.to(dt)
        host = ((a * b + 1.5) / (b.abs() + 1)).exp().relu()
        dev = ((a.cuda() * b.cuda() + 1.5) / (b.cuda().abs() + 1)).exp().relu()
        assert dev.is_cuda
        assert dev.cpu().float().numpy().tobytes() == host.float().numpy().tobytes(), dt
        assert a.cuda().clamp(-0.5, 0.5).cpu().tolist() == a.clamp(-0.5, 0.5).tolist()
        assert a.cuda().neg().abs().cpu().tolist() == a.neg().abs().tolist()
    for op in (lambda t: t > 0, lambda t: t.isfinite(), lambda t: t.long().abs()):
        try:          # host kernels outside the backend: refused, never touched
            op(x.cuda())
        except NotImplementedError as e:
            assert "with arguments from the 'CUDA' backend" in str(e), e
        else:
            raise AssertionError("a host-only op ran on a cuda tensor")
    s = m.tensor(2.0)      # a 0-d CPU tensor is accepted beside CUDA ones, as in torch
    assert (x.cuda() * s).cpu().tolist() == (x * s).tolist()


def check_autograd_across_devices():
    a = m.randn(6, requires_grad=True)
    b = a.cuda()
    assert b.grad_fn is not None and b.grad_fn.name() == "ToCopyBackward0"
    c = (b * b).exp()
    c.backward(m.ones(6, device="cuda"))
    want = (2 * a * (a * a).exp()).detach()
    assert a.grad.device == m.device("cpu")
    assert a.grad.numpy().tobytes() == want.numpy().tobytes()
    w = m.randn(4, device="cuda").requires_grad_()
    (w * 3).backward(m.ones(4, device="cuda"))
    assert w.grad.is_cuda and w.grad.cpu().tolist() == [3.0] * 4


def check_errors():
    x = m.randn(3)
    try:
        x.cuda() + m.randn(3)
    except RuntimeError as e:
        assert str(e) == ("Expected all tensors to be on the same device, but found at least "
                          "two devices, cuda:0 and cpu!"), e
    else:
        raise AssertionError("mixed devices accepted")
    try:
        x.cuda().sum()
    except NotImplementedError as e:
        assert "Could not run 'sum' with arguments from the 'CUDA' backend" in str(e), e
    else:
        raise AssertionError("sum on cuda accepted")
    try:
        x.cuda().numpy()
    except TypeError as e:
        assert "can't convert cuda:0 device type tensor to numpy" in str(e)
    else:
        raise AssertionError("numpy() of a cuda tensor")
    try:
        x.to("cuda:1")
    except RuntimeError as e:
        assert "invalid device ordinal" in str(e)
    else:
        raise AssertionError("cuda:1 accepted")
    try:
        m._C._cuda_properties(3)
    except ValueError as e:
        assert "Invalid device id 3" in str(e)
    else:
        raise AssertionError("device 3 of one")


def check_queries():
    import mpamp.cuda as c
    assert c.is_available() and c.device_count() == 1
    assert c.get_device_name() == "mpamp simulated GPU"
    assert c.get_device_capability() == (9, 0)
    assert c.is_bf16_supported()
    c.synchronize()
    before = c.memory_allocated()
    t = m.empty(1 << 20, device="cuda")
    assert c.memory_allocated() >= before + (4 << 20)
    assert c.max_memory_allocated() >= c.memory_allocated()
    del t
    assert c.memory_allocated() == before
    assert c.memory_reserved() >= 4 << 20
    c.empty_cache()
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == c.memory_allocated()
    s0 = c.sim_stats()
    y = m.randn(10).cuda() * 2      # one host->device copy, no device->host one
    s1 = c.sim_stats()
    assert s1["h2d"] - s0["h2d"] == 1 and s1["d2h"] == s0["d2h"], (s0, s1)
    y.cpu()
    assert c.sim_stats()["d2h"] == s1["d2h"] + 1
    assert c.sim_stats()["syncs"] >= 1


def check_out_of_memory():
    import mpamp.cuda as c
    try:
        m.empty(1 << 40, dtype=m.uint8, device="cuda")
    except c.OutOfMemoryError as e:
        assert isinstance(e, RuntimeError) and isinstance(e, MemoryError)
        assert str(e).startswith("CUDA out of memory. Tried to allocate"), e
    else:
        raise AssertionError("1 TiB fit on the simulated GPU")
    assert m.ones(3, device="cuda").cpu().tolist() == [1.0] * 3   # still usable


def check_fork_refuses():
    x = m.ones(3, device="cuda")
    x2 = m.zeros(3, device="cuda")
    pid = os.fork()
    if pid == 0:
        import mpamp.cuda
        calls = [lambda: x * 2, lambda: x.add_(x), lambda: x.copy_(x2), lambda: x.fill_(1),
                 lambda: x.cpu(), mpamp.cuda.synchronize]
        for i, call in enumerate(calls):
            try:
                call()
            except RuntimeError as e:
                if "Cannot re-initialize CUDA in forked subprocess" not in str(e):
                    os._exit(10 + i)
            else:
                os._exit(20 + i)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, status
    assert (x * 2).cpu().tolist() == [2.0] * 3


def check_host_pointer_refused():
    """A host pointer handed to a simulated kernel as a device one fails the call."""
    from mpamp._C import _sim_kernel_on_host_pointer
    try:
        _sim_kernel_on_host_pointer()
    except RuntimeError as e:
        assert "which is not device memory" in str(e), e
    else:
        raise AssertionError("a host pointer passed the simulator's check")


def check_arena_that_cannot_map():
    """MPAMP_CUDA_SIM_MB beyond the address space: no device, and calls say why."""
    import mpamp.cuda as c
    assert not c.is_available() and c.device_count() == 0
    try:
        m._C._cuda_synchronize()
    except RuntimeError as e:
        assert "the simulated GPU could not map" in str(e), e
    else:
        raise AssertionError("a device without an arena")


def fault_host_read():
    """Reading device memory from the host must crash (the caller expects SIGSEGV)."""
    t = m.ones(16, device="cuda")
    ctypes.c_float.from_address(t.data_ptr()).value   # noqa: B018


if __name__ == "__main__":
    assert os.environ.get("MPAMP_CUDA_SIM") == "1"
    globals()[sys.argv[1]]()
    print("ok")
