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
    # as torch: the device is named when it is not the default device's type
    m.set_default_device("cuda")
    try:
        host = repr(x[0, :2])
        assert host.endswith(", device='cpu')"), host
        assert repr(x.cuda()[0, :2]) == host[:-len(", device='cpu')")] + ")"
        assert "device" not in repr(x.cuda())
        w = m.ones(2, requires_grad=True)
        assert repr(w) == "tensor([1., 1.], requires_grad=True)" and w.is_cuda
    finally:
        m.set_default_device("cpu")
    assert "device" not in repr(x) and "device='cuda:0'" in repr(x.cuda())
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
    for op in (lambda t: t.max(), lambda t: t.topk(2), lambda t: t.long().abs()):
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
        x.cuda().sort()
    except NotImplementedError as e:
        assert "Could not run 'sort' with arguments from the 'CUDA' backend" in str(e), e
    else:
        raise AssertionError("sort on cuda accepted")
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


def _bytes(t):
    return t.detach().cpu().float().numpy().tobytes()


def _same(dev, host, what):
    assert dev.is_cuda, what
    assert dev.dtype == host.dtype and tuple(dev.shape) == tuple(host.shape), what
    assert _bytes(dev) == _bytes(host), what


def check_device_kernels_bit_identical():
    """GEMM, sum/mean and the pointwise losses run on the device through the backend's launch
    seam and give the CPU's bytes, forward and backward."""
    import mpamp.nn.functional as F
    m.manual_seed(3)
    for dt in (m.float32, m.float16, m.bfloat16):
        a, b = m.randn(37, 19).to(dt), m.randn(19, 23).to(dt)
        bias, c = m.randn(23).to(dt), m.randn(37, 23).to(dt)
        ba, bb = m.randn(3, 5, 19).to(dt), m.randn(3, 19, 7).to(dt)
        _same(a.cuda() @ b.cuda(), a @ b, ("mm", dt))
        _same(a.cuda().t().matmul(c.cuda()), a.t().matmul(c), ("mm of a view", dt))
        _same(m.bmm(ba.cuda(), bb.cuda()), m.bmm(ba, bb), ("bmm", dt))
        _same(ba.cuda() @ b.cuda(), ba @ b, ("broadcast matmul", dt))
        _same(F.linear(a.cuda(), b.t().cuda(), bias.cuda()), F.linear(a, b.t(), bias),
              ("linear", dt))
        _same(m.addmm(c.cuda(), a.cuda(), b.cuda(), beta=0.5, alpha=2.0),
              m.addmm(c, a, b, beta=0.5, alpha=2.0), ("addmm", dt))
        for dims in ((), (0,), (1,), (0, 1)):
            _same(c.cuda().sum(dims), c.sum(dims), ("sum", dims, dt))
            _same(c.cuda().mean(dims, keepdim=True), c.mean(dims, keepdim=True),
                  ("mean", dims, dt))
        _same(c.cuda().t().sum(0), c.t().sum(0), ("sum of a view", dt))
    losses = (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss)
    for dt in (m.float32, m.float16, m.bfloat16):
        x, y = m.randn(9, 11).to(dt), m.randn(9, 11).to(dt)
        for fn in losses:
            for red in ("mean", "sum", "none"):
                xh = x.clone().requires_grad_()
                xd = x.cuda().requires_grad_()
                lh, ld = fn(xh, y, reduction=red), fn(xd, y.cuda(), reduction=red)
                _same(ld, lh, (fn.__name__, red, dt))
                gh = m.ones_like(lh) * 0.75
                lh.backward(gh)
                ld.backward(gh.cuda())
                _same(xd.grad, xh.grad, (fn.__name__, "backward", red, dt))
    w = m.randn(6, 4, requires_grad=True)
    wd = w.detach().cuda().requires_grad_()
    xin = m.randn(5, 6)
    (xin @ w).sum().backward()
    (xin.cuda() @ wd).sum().backward()
    _same(wd.grad, w.grad, "matmul backward")


def _model(device):
    from mpamp import nn
    m.manual_seed(11)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
    return model.to(device)


def _train(device, opt_name, steps, explicit_casts, init_scale=2.0**16):
    """A few AMP steps of one model; explicit_casts applies CUDA's autocast policy by hand
    (fp16 linears, fp32 loss), which is what autocast does to CUDA tensors."""
    import mpamp.nn.functional as F
    from mpamp import optim
    from mpamp.amp import GradScaler
    model = _model(device)
    params = list(model.parameters())
    opt = {"adam": lambda: optim.Adam(params, lr=1e-2),
           "adamw": lambda: optim.AdamW(params, lr=1e-2, amsgrad=True),
           "sgd": lambda: optim.SGD(params, lr=1e-2, momentum=0.9)}[opt_name]()
    scaler = GradScaler(device, init_scale=init_scale, growth_interval=3)
    g = m.Generator().manual_seed(5)
    data = [(m.randn(16, 12, generator=g), m.randn(16, 1, generator=g)) for _ in range(steps)]
    trace = []
    for x, y in data:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        if explicit_casts:
            w1, b1, w2, b2 = params
            h = F.linear(x.half(), w1.half(), b1.half()).relu()
            out = F.linear(h, w2.half(), b2.half())
            loss = F.mse_loss(out.float(), y)
        else:
            with m.autocast(device_type=device, dtype=m.float16):
                loss = F.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        trace.append(scaler._scale)
    trace = [t.cpu().item() for t in trace]    # read after the loop: no copy inside it
    return model, opt, scaler, trace


def check_amp_training_matches_cpu():
    """Autocast fp16 + GradScaler + fused Adam/AdamW/SGD on the device give the CPU run's
    weights bit for bit (the CPU run applying CUDA's autocast policy explicitly), skipped
    steps included (a huge initial scale overflows the first steps)."""
    for opt_name in ("adam", "adamw", "sgd"):
        for init_scale in (2.0**16, 2.0**40):
            md, od, sd, td = _train("cuda", opt_name, 8, False, init_scale)
            mh, oh, sh, th = _train("cpu", opt_name, 8, True, init_scale)
            assert td == th, (opt_name, td, th)
            for pd, ph in zip(md.parameters(), mh.parameters()):
                _same(pd, ph, (opt_name, init_scale))
            for pd, ph in zip(md.parameters(), mh.parameters()):
                for key, vh in oh.state[ph].items():
                    vd = od.state[pd][key]
                    if opt_name.startswith("adam") or key != "step":
                        assert vd.device.type == "cuda", (opt_name, key)
                    assert _bytes(vd) == _bytes(vh), (opt_name, key)
            assert sd.stats() == sh.stats(), (sd.stats(), sh.stats())
            if init_scale > 2.0**30:
                assert sd.stats()["skipped_steps"] > 0


def check_fused_amp_step_makes_no_device_to_host_copy():
    """The document's training step with a fused optimizer on the device: forward under
    autocast, scaled backward, scaler.step, scaler.update make no device-to-host copy and no
    synchronisation; only what the user asks for (loss.item(), get_scale()) copies."""
    import mpamp.cuda as c
    import mpamp.nn.functional as F
    from mpamp import optim
    from mpamp.amp import GradScaler

    def amp_step(model, opt, scaler, x, y):
        opt.zero_grad()
        with m.autocast(device_type="cuda"):
            loss = F.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss
    for make in (lambda p: optim.Adam(p, lr=1e-3), lambda p: optim.AdamW(p, lr=1e-3),
                 lambda p: optim.SGD(p, lr=1e-3, momentum=0.9)):
        model = _model("cuda")
        opt = make(model.parameters())
        scaler = GradScaler()
        assert scaler._device == "cuda"
        x, y = m.randn(16, 12).cuda(), m.randn(16, 1).cuda()
        for i in range(4):
            before = c.sim_stats()
            loss = amp_step(model, opt, scaler, x, y)
            after = c.sim_stats()
            assert after["d2h"] == before["d2h"], (i, before, after)
            assert after["syncs"] == before["syncs"], (i, before, after)
        loss.item()
        assert c.sim_stats()["d2h"] == after["d2h"] + 1
        assert 0 < scaler.get_scale() <= 2.0**16
        assert c.sim_stats()["d2h"] == after["d2h"] + 2
    # an optimizer that cannot fuse the unscale: GradScaler reads found_inf once per step
    model = _model("cuda")
    # (its step counts live on the host, so the skip must be known there)
    opt = optim.RMSprop(model.parameters(), lr=1e-3)
    scaler = GradScaler(init_scale=2.0)
    for i in range(2):
        before = c.sim_stats()
        amp_step(model, opt, scaler, x, y)
        assert c.sim_stats()["d2h"] - before["d2h"] == 1, i
    state = opt.state[next(model.parameters())]
    assert state["square_avg"].is_cuda and not state["step"].is_cuda
    assert state["step"].item() == 2.0


def check_optimizer_state_follows_parameters():
    """State lives with the parameters; load_state_dict moves loaded state there (Adam's
    steps included; the host-step optimizers keep theirs on the CPU, as torch)."""
    from mpamp import optim
    for make in (lambda p: optim.Adam(p, lr=1e-2), lambda p: optim.SGD(p, lr=1e-2, momentum=0.5),
                 lambda p: optim.Adagrad(p), lambda p: optim.RMSprop(p, centered=True),
                 lambda p: optim.Adadelta(p)):
        host = _model("cpu")
        oh = make(host.parameters())
        host(m.randn(4, 12)).sum().backward()
        oh.step()
        dev = _model("cuda")
        od = make(dev.parameters())
        od.load_state_dict(oh.state_dict())
        for p in dev.parameters():
            for key, v in od.state[p].items():
                if not isinstance(v, m.Tensor):
                    continue
                want = "cuda" if key != "step" or isinstance(od, optim.Adam) else "cpu"
                assert v.device.type == want, (type(od).__name__, key, v.device)
        dev(m.randn(4, 12).cuda()).sum().backward()
        od.step()
        back = _model("cpu")
        ob = make(back.parameters())
        ob.load_state_dict(od.state_dict())
        for p in back.parameters():
            for v in ob.state[p].values():
                assert not isinstance(v, m.Tensor) or v.device.type == "cpu"


def check_device_kernel_errors():
    """Mixed devices in the device kernels' ops name both devices; the scaler and fused
    optimizer entry points say which tensor is on the wrong device."""
    import mpamp.nn.functional as F
    from mpamp import _C
    msg = ("Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:0 and cpu!")
    a, b = m.randn(3, 4), m.randn(4, 2)
    calls = [lambda: a.cuda() @ b, lambda: m.bmm(a.cuda()[None], b[None]),
             lambda: F.linear(a.cuda(), b.t()), lambda: m.addmm(m.zeros(3, 2), a.cuda(), b.cuda()),
             lambda: F.mse_loss(a.cuda(), a), lambda: F.l1_loss(a, a.cuda()),
             lambda: F.huber_loss(a.cuda(), a)]
    for i, call in enumerate(calls):
        try:
            call()
        except RuntimeError as e:
            assert str(e).startswith(msg[:60]) and "cuda:0" in str(e) and "cpu" in str(e), (i, e)
        else:
            raise AssertionError(f"call {i} mixed devices")
    g = m.ones(3, device="cuda")

    def expect(call, text):
        try:
            call()
        except RuntimeError as e:
            assert text in str(e), (text, str(e))
        else:
            raise AssertionError(text)
    expect(lambda: _C._amp_foreach_non_finite_check_and_unscale_([g], m.zeros(()), None),
           "scaled_grads must be on the same device.")
    expect(lambda: _C._foreach_sum_squares([m.ones(3, device="cuda"), m.ones(2)]),
           "_foreach_sum_squares: all tensors must be on the same device")
    expect(lambda: _C._amp_foreach_non_finite_check_and_unscale_(
        [g], m.zeros((), device="cuda"), m.ones(())), "inv_scale must be a CUDA tensor.")
    expect(lambda: _C._amp_update_scale_(m.ones((), device="cuda"), m.zeros((), dtype=m.int64),
                                         m.zeros((), device="cuda"), 2.0, 0.5, 10),
           "growth_tracker must be a CUDA tensor.")
    expect(lambda: _C._amp_inv_scale_(m.zeros(()), m.ones((), device="cuda")),
           "inv_scale must be a CUDA tensor.")
    p = m.ones(3, device="cuda")
    expect(lambda: _C._fused_sgd_([p], [m.ones(3)], None, None, None, False, 0, 0, None, True,
                                  0.1, 0.0, 0.0, 0.0, False, False),
           "fused optimizer step: grad 0 is on cpu, the parameters on cuda:0")
    expect(lambda: _C._fused_sgd_([p], [p.clone()], None, None, m.zeros(()), False, 0, 0, None,
                                  True, 0.1, 0.0, 0.0, 0.0, False, False),
           "found_inf must be on the same device as the parameters (cuda:0).")
    expect(lambda: _C._fused_adam_([p], [p.clone()], None, None, None, False, 0, 0,
                                   [m.zeros(3, device="cuda")], [m.zeros(3, device="cuda")],
                                   None, 0.9, 0.999, 1e-8, 0.0, 0.0, 0.0, 1.0, False, False,
                                   False, [m.zeros(())], 1e-3),
           "state_steps must be on the same device as the parameters (cuda:0).")


def check_serialization_of_cuda_tensors():
    """save/load keep CUDA tensors on CUDA (or map them with every map_location form); pickle
    and deepcopy copy through the host and come back on the device."""
    import copy
    import pickle
    import tempfile
    x = m.randn(4, 3)
    t = x.cuda()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.pt")
        m.save({"t": t, "h": x}, path)
        forms = {None: "cuda", "cpu": "cpu", "cuda": "cuda", "cuda:0": "cuda",
                 m.device("cpu"): "cpu", m.device("cuda", 0): "cuda",
                 "dict": "cpu", "callable": "cpu"}
        for form, want in forms.items():
            ml = {"dict": {"cuda:0": "cpu"}, "callable": lambda s, loc: s}.get(form, form)
            got = m.load(path, map_location=ml) if form is not None else m.load(path)
            assert got["t"].device.type == want, (form, got["t"].device)
            assert got["t"].cpu().tolist() == x.tolist(), form
        got = m.load(path, map_location={"cpu": "cuda:0"})
        assert got["h"].is_cuda and got["t"].is_cuda
    u = pickle.loads(pickle.dumps(t.requires_grad_()))
    assert u.is_cuda and u.requires_grad and u.cpu().tolist() == x.tolist()
    v = copy.deepcopy(t)
    assert v.is_cuda and v.cpu().tolist() == x.tolist()


def check_dlpack_of_cuda_tensors():
    """DLPack exports and imports kDLCUDA memory zero-copy (device 0, the legacy default
    stream), keeps dtypes and strides, copies on the device with copy=True, synchronises for a
    consumer's own stream, and refuses streams and devices it cannot serve."""
    x = m.arange(12, dtype=m.float32).reshape(3, 4)
    t = x.cuda()
    assert t.__dlpack_device__() == (2, 0)
    for kw in ({}, {"stream": None}, {"stream": 1}, {"stream": -1},
               {"max_version": (1, 0), "dl_device": (2, 0)}):
        u = m.from_dlpack(t.__dlpack__(**kw))
        assert u.is_cuda and u.data_ptr() == t.data_ptr() and u.stride() == (4, 1), kw
    u = m.from_dlpack(t)                     # the producer is asked for stream=1
    assert u.is_cuda and u.data_ptr() == t.data_ptr()
    u.add_(1.0)                              # shared memory: t sees the write
    assert t.cpu().tolist() == (x + 1).tolist()
    tt = m.from_dlpack(t.t())
    assert tt.is_cuda and tt.stride() == (1, 4) and tt.cpu().tolist() == (x + 1).t().tolist()
    for dt in (m.float16, m.bfloat16, m.int64, m.bool, m.uint8):
        v = m.from_dlpack(t.to(dt))
        assert v.dtype is dt and v.is_cuda and v.cpu().tolist() == (x + 1).to(dt).tolist()
    # copy=True: new device memory, flagged as copied
    cap = t.__dlpack__(copy=True, max_version=(1, 0))
    c = m.from_dlpack(cap)
    assert c.is_cuda and c.data_ptr() != t.data_ptr() and c.cpu().tolist() == t.cpu().tolist()
    assert m.from_dlpack(t, copy=True).data_ptr() != t.data_ptr()
    # a consumer on its own stream: the export waits for the device
    before = m.cuda.sim_stats()["syncs"]
    m.from_dlpack(t.__dlpack__(stream=12345))
    assert m.cuda.sim_stats()["syncs"] == before + 1
    before = m.cuda.sim_stats()["syncs"]
    m.from_dlpack(t.__dlpack__(stream=1))
    assert m.cuda.sim_stats()["syncs"] == before
    # device= moves, copy=False refuses a move
    h = m.from_dlpack(t, device="cpu")
    assert not h.is_cuda and h.tolist() == t.cpu().tolist()
    d = m.from_dlpack(x, device="cuda")
    assert d.is_cuda and d.cpu().tolist() == x.tolist()
    assert m.from_dlpack(t, device="cuda").data_ptr() == t.data_ptr()
    for call, exc, msg in [
            (lambda: t.__dlpack__(stream=2), BufferError, "per-thread default stream"),
            (lambda: t.__dlpack__(stream=0), ValueError, "unsupported stream on cuda:0: 0"),
            (lambda: t.__dlpack__(stream=2**80), ValueError, "unsupported stream on cuda:0"),
            (lambda: t.__dlpack__(dl_device=(1, 0)), BufferError, r"dl_device=(1, 0)"),
            (lambda: x.__dlpack__(dl_device=(2, 0)), BufferError, r"dl_device=(2, 0)"),
            (lambda: x.__dlpack__(stream=1), ValueError, "stream must be None for CPU"),
            (lambda: m.from_dlpack(t, device="cpu", copy=False), BufferError, "copy=False"),
            (lambda: t.requires_grad_().__dlpack__(), BufferError, "require gradient")]:
        try:
            call()
        except exc as e:
            assert msg in str(e), (msg, e)
        else:
            raise AssertionError(f"no {exc.__name__} for {msg}")
    t.requires_grad_(False)
    # a producer on another device is refused before it is asked for a capsule
    class Other:
        def __dlpack__(self, **kw):
            raise AssertionError("must not be asked")

        def __dlpack_device__(self):
            return (2, 1)
    try:
        m.from_dlpack(Other())
    except BufferError as e:
        assert "device (2, 1)" in str(e), e
    else:
        raise AssertionError("cuda:1 imported")
    # the export outlives the tensor; the memory is freed with the last consumer
    cap = m.ones(1 << 16).cuda().__dlpack__()
    used = m.cuda.memory_allocated()
    w = m.from_dlpack(cap)
    del cap
    assert m.cuda.memory_allocated() == used and w.sum().item() == 1 << 16
    del w
    assert m.cuda.memory_allocated() <= used - 4 * (1 << 16)


def check_like_and_new_factories_follow_the_input():
    """*_like factories and Tensor.new_* make their tensor on the input's device unless
    device= says otherwise (torch), with the input's dtype and the values asked for."""
    t = m.ones(2, 3, dtype=m.float16, device="cuda")
    made = {"zeros_like": m.zeros_like(t), "ones_like": m.ones_like(t),
            "empty_like": m.empty_like(t), "full_like": m.full_like(t, 2.5),
            "rand_like": m.rand_like(t), "randn_like": m.randn_like(t),
            "randint_like": m.randint_like(t, 7), "new_zeros": t.new_zeros(4),
            "new_ones": t.new_ones((4,)), "new_empty": t.new_empty(4),
            "new_full": t.new_full((4,), 3.0), "new_tensor": t.new_tensor([1.0, 2.0])}
    for name, u in made.items():
        assert u.is_cuda and u.dtype is m.float16, (name, u.device, u.dtype)
    assert m.full_like(t, 2.5).cpu().tolist() == [[2.5] * 3] * 2
    assert t.new_full((4,), 3.0).cpu().tolist() == [3.0] * 4
    drawn = m.randint_like(t, 7).cpu()
    assert 0 <= drawn.min().item() and drawn.max().item() < 7
    assert m.rand_like(t, requires_grad=True).requires_grad
    for u in (m.zeros_like(t, device="cpu"), t.new_zeros(2, device="cpu"),
              m.randn_like(t, device="cpu"), m.zeros_like(m.ones(2))):
        assert not u.is_cuda, u.device
    assert m.zeros_like(m.ones(2), device="cuda").is_cuda


def _gpt_module():
    """tests/clients/gpt.py (a nanoGPT-shaped model written for torch) with its imports
    rewritten to mpamp, as tests/test_clients.py runs it."""
    import types
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, here)
    from test_clients import rewrite_imports
    with open(os.path.join(here, "clients", "gpt.py")) as f:
        code = rewrite_imports(f.read())
    mod = types.ModuleType("gpt_on_mpamp")
    exec(compile(code, "gpt.py", "exec"), mod.__dict__)
    return mod


class _CudaPolicyF:
    """nn.functional for the CPU run, with CUDA's autocast policy for the two ops of the GPT
    whose policy differs between the devices: layer_norm and softmax run in fp32 under CUDA
    autocast (the CPU leaves them in their input's dtype)."""

    def __init__(self, F):
        self._F = F

    def __getattr__(self, name):
        return getattr(self._F, name)

    def _fp32(self, fn, x, *args, **kwargs):
        if m.is_autocast_enabled("cpu"):
            with m.autocast("cpu", enabled=False):
                return fn(x.float(), *[a.float() if isinstance(a, m.Tensor) else a
                                       for a in args],
                          **{k: v.float() if isinstance(v, m.Tensor) else v
                             for k, v in kwargs.items()})
        return fn(x, *args, **kwargs)

    def layer_norm(self, x, *args, **kwargs):
        return self._fp32(self._F.layer_norm, x, *args, **kwargs)

    def softmax(self, x, *args, **kwargs):
        return self._fp32(self._F.softmax, x, *args, **kwargs)


def _train_gpt(device, dtype, dropout, steps=3):
    from mpamp.amp import GradScaler
    gpt = _gpt_module()
    if device == "cpu":
        gpt.F = _CudaPolicyF(gpt.F)
    m.manual_seed(7)
    cfg = gpt.GPTConfig(block_size=16, vocab_size=40, n_layer=2, n_head=2, n_embd=32,
                        dropout=dropout, bias=True, flash=False)
    model = gpt.GPT(cfg).to(device)
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    scaler = GradScaler(device, enabled=dtype == m.float16)
    g = m.Generator().manual_seed(3)
    losses = []
    for _ in range(steps):
        x = m.randint(0, 40, (4, 16), generator=g).to(device)
        y = m.randint(0, 40, (4, 16), generator=g).to(device)
        with m.autocast(device_type=device, dtype=dtype or m.bfloat16, enabled=dtype is not None):
            _, loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss)
    return model, [float(v.item()) for v in losses]


def check_gpt_training_matches_cpu():
    """The GPT client model (embedding, causal self-attention through masked_fill + softmax,
    GELU MLP, layer norm, weight tying, dropout, cross_entropy, AdamW with decay groups, grad
    clipping) trains on the device as on the CPU, bit for bit, in fp32, under bf16 autocast,
    and under fp16 autocast with GradScaler; the CPU run applies CUDA's autocast policy
    explicitly where it differs from the CPU's (layer_norm and softmax in fp32)."""
    for dtype, dropout in ((None, 0.0), (None, 0.1), (m.bfloat16, 0.0), (m.float16, 0.1)):
        md, ld = _train_gpt("cuda", dtype, dropout)
        mh, lh = _train_gpt("cpu", dtype, dropout)
        assert ld == lh, (dtype, dropout, ld, lh)
        for (name, pd), ph in zip(md.named_parameters(), mh.parameters()):
            assert pd.is_cuda
            _same(pd, ph, (dtype, dropout, name))


def check_transformer_ops_bit_identical():
    """softmax/log_softmax, layer_norm, comparisons, isfinite, pow, split, where,
    masked_fill, tril/triu, embedding, dropout and cross_entropy/nll_loss run on the device
    with the CPU's bytes, forward and backward; bad indices fail with the CPU's message."""
    import mpamp.nn.functional as F
    m.manual_seed(5)
    for dt in (m.float32, m.float16, m.bfloat16):
        x = m.randn(3, 4, 6).to(dt)
        g = m.randn(3, 4, 6).to(dt)
        w, b = m.randn(6).to(dt), m.randn(6).to(dt)
        mask = m.randn(4, 6) > 0
        fns = [lambda t: m.softmax(t, -1), lambda t: m.log_softmax(t, 1),
               lambda t: F.layer_norm(t, (6,)), lambda t: t.masked_fill(mask_of(t), -1e4),
               lambda t: m.where(mask_of(t), t, t * 2), lambda t: m.tril(t, -1) + m.triu(t, 2),
               lambda t: t ** 2 + t.abs() ** 0.5 + 2 ** t,
               lambda t: m.cat(t.split([2, 4], dim=-1)[::-1], dim=-1) * 1.5,
               lambda t: t.unbind(1)[2] * 3]
        for i, fn in enumerate(fns):
            def mask_of(t):
                return mask.to(t.device)
            xh = x.clone().requires_grad_()
            xd = x.cuda().requires_grad_()
            yh, yd = fn(xh), fn(xd)
            _same(yd, yh, ("forward", i, dt))
            gh = g if yh.shape == g.shape else m.ones_like(yh)
            yh.backward(gh)
            yd.backward(gh.cuda())
            _same(xd.grad, xh.grad, ("backward", i, dt))
        wh, bh = w.clone().requires_grad_(), b.clone().requires_grad_()
        wd, bd = w.cuda().requires_grad_(), b.cuda().requires_grad_()
        xh, xd = x.clone().requires_grad_(), x.cuda().requires_grad_()
        F.layer_norm(xh, (6,), wh, bh).backward(g)
        F.layer_norm(xd, (6,), wd, bd).backward(g.cuda())
        for a, c in ((xh, xd), (wh, wd), (bh, bd)):
            _same(c.grad, a.grad, ("layer_norm affine", dt))
        for op in ("eq", "ne", "lt", "le", "gt", "ge"):
            _same(getattr(x.cuda(), op)(0.25), getattr(x, op)(0.25), (op, dt))
            _same(getattr(x.cuda(), op)(g.cuda()), getattr(x, op)(g), (op, dt))
        inf = m.tensor([1.0, float("inf"), float("nan"), -float("inf")]).to(dt)
        for op in ("isfinite", "isinf", "isnan", "isposinf", "isneginf"):
            _same(getattr(inf.cuda(), op)(), getattr(inf, op)(), (op, dt))
        emb = m.randn(10, 5).to(dt)
        idx = m.tensor([[1, 3, 3], [0, 9, 1]])
        eh, ed = emb.clone().requires_grad_(), emb.cuda().requires_grad_()
        oh, od = F.embedding(idx, eh, padding_idx=0), F.embedding(idx.cuda(), ed, padding_idx=0)
        _same(od, oh, ("embedding", dt))
        gg = m.randn(2, 3, 5).to(dt)
        oh.backward(gg)
        od.backward(gg.cuda())
        _same(ed.grad, eh.grad, ("embedding backward", dt))
        m.manual_seed(9)
        dh = F.dropout(x.clone().requires_grad_(), 0.3, True)
        m.manual_seed(9)
        dd = F.dropout(x.cuda().requires_grad_(), 0.3, True)
        _same(dd, dh, ("dropout", dt))
        logits = m.randn(7, 5).to(dt)
        tgt = m.tensor([0, 4, 2, -1, 1, 1, 3])
        cw = m.rand(5)
        for kw in (dict(ignore_index=-1), dict(ignore_index=-1, weight=cw),
                   dict(ignore_index=-1, label_smoothing=0.2, reduction="sum"),
                   dict(ignore_index=-1, reduction="none")):
            lh_, ld_ = logits.clone().requires_grad_(), logits.cuda().requires_grad_()
            kwd = dict(kw, weight=kw["weight"].cuda()) if "weight" in kw else kw
            ch, cd = F.cross_entropy(lh_, tgt, **kw), F.cross_entropy(ld_, tgt.cuda(), **kwd)
            _same(cd, ch, ("cross_entropy", kw, dt))
            gc = m.ones_like(ch) * 0.5
            ch.backward(gc)
            cd.backward(gc.cuda())
            _same(ld_.grad, lh_.grad, ("cross_entropy backward", kw, dt))
        lp = m.log_softmax(logits.float(), -1)
        _same(F.nll_loss(lp.cuda(), tgt.cuda(), ignore_index=-1),
              F.nll_loss(lp, tgt, ignore_index=-1), ("nll_loss", dt))
    for call, text in ((lambda: F.embedding(m.tensor([3, 10]).cuda(), m.randn(10, 2).cuda()),
                        "index out of range in self (embedding: index 10 with 10 rows)"),
                       (lambda: F.cross_entropy(m.randn(2, 3).cuda(), m.tensor([1, 3]).cuda()),
                        "Target 3 is out of bounds."),
                       (lambda: F.embedding(m.tensor([1]).cuda(), m.randn(4, 2)),
                        "Expected all tensors to be on the same device"),
                       (lambda: F.cross_entropy(m.randn(2, 3).cuda(), m.tensor([1, 0])),
                        "Expected all tensors to be on the same device"),
                       (lambda: F.layer_norm(m.randn(2, 3).cuda(), (3,), m.ones(3)),
                        "Expected all tensors to be on the same device"),
                       (lambda: m.randn(2, 3).cuda().masked_fill(m.ones(2, 3) > 0, 1.0),
                        "Expected all tensors to be on the same device")):
        try:
            call()
        except (IndexError, RuntimeError) as e:
            assert text in str(e), (text, str(e))
        else:
            raise AssertionError(text)


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
                 lambda: x.cpu(), mpamp.cuda.synchronize, lambda: x.sum(),
                 lambda: x.reshape(1, 3) @ x2.reshape(3, 1)]
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
