"""DistributedDataParallel (torch.nn.parallel.distributed): the module's parameters and buffers
are broadcast from rank 0 at construction, buffers again before each forward
(broadcast_buffers), and gradients are averaged across the ranks in buckets while backward
runs (_reducer.py). no_sync() / require_backward_grad_sync skip the reduction for gradient
accumulation. The wrapped module is `.module`, so state_dict() keys carry torch's `module.`
prefix and ddp.module.state_dict() loads into the plain model."""
import contextlib

import mpamp
from ... import distributed as dist
from ..modules.module import Module
from ._reducer import Reducer

__all__ = ["DistributedDataParallel"]


def _check_devices(module, device_ids, output_device):
    devices = {p.device for p in module.parameters()}
    if (device_ids or output_device is not None) and all(d.type == "cpu" for d in devices):
        raise ValueError(
            f"DistributedDataParallel device_ids and output_device arguments only work with "
            f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
            f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
    if any(d.type != "cpu" for d in devices):
        raise RuntimeError("DistributedDataParallel: CUDA modules need the NCCL backend, which "
                           "is not available yet; train the module on the CPU")


def _verify_same_model(pg, shapes):
    """torch's check that every rank wraps the same parameters."""
    every = [None] * pg.size()
    dist.all_gather_object(every, shapes, group=pg)
    first = every[0]
    for r, theirs in enumerate(every):
        if len(theirs) != len(first):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank 0 has "
                               f"{len(first)} params, while rank {r} has inconsistent "
                               f"{len(theirs)} params.")
        for i, (a, b) in enumerate(zip(first, theirs)):
            if a != b:
                raise RuntimeError(f"DDP expects same model across all ranks, but parameter "
                                   f"{i} ({a[0]}) has shape {list(a[1])} and dtype {a[2]} on "
                                   f"rank 0, shape {list(b[1])} and dtype {b[2]} on rank {r}.")


class DistributedDataParallel(Module):
    """Data parallelism over the ranks of a process group (CPU tensors, MPI)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        pg = dist._group.resolve(process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        _check_devices(module, device_ids, output_device)
        self.module = module
        self.process_group = pg
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = True if broadcast_buffers is None else bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        if pg.size() > 1:
            _verify_same_model(pg, [(n, tuple(p.shape), str(p.dtype)) for n, p in named])
        if init_sync:
            self._broadcast(list(module.parameters()) + list(module.buffers()))
        self._reducer = Reducer([p for _, p in named], [n for n, _ in named], pg,
                                max(self.bucket_bytes_cap, 1), self.find_unused_parameters)

    def _broadcast(self, tensors):
        """Rank 0's values into every rank's tensors (parameters and buffers)."""
        with mpamp.no_grad():
            works = [dist.broadcast(t.data, src=self.process_group._ranks[0],
                                    group=self.process_group, async_op=True)
                     for t in tensors]
            for w in works:
                w.wait()

    def forward(self, *inputs, **kwargs):
        self._reducer.check_prior_finished()
        if self.broadcast_buffers and self.require_forward_param_sync and \
                self.process_group.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        out = self.module(*inputs, **kwargs)
        if mpamp.is_grad_enabled() and self.require_backward_grad_sync:
            self._reducer.prepare(out if self.find_unused_parameters else None)
        else:
            self._reducer.skip()
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally, without communication."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def join(self, *args, **kwargs):
        raise NotImplementedError("DistributedDataParallel.join() (uneven inputs across ranks) "
                                  "is not supported by mpamp yet")

    def register_comm_hook(self, state, hook):
        raise NotImplementedError("DistributedDataParallel.register_comm_hook() is not "
                                  "supported by mpamp yet (gradients are always averaged in "
                                  "float32)")

    def extra_repr(self):
        return ""
