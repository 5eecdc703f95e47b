"""ShardedGradScaler (torch.distributed.fsdp.sharded_grad_scaler): a GradScaler whose inf/NaN
check is agreed across a process group. When each rank holds different gradients (sharded
parameters, or any setup without DDP's all-reduce), a rank that overflowed alone would skip its
step while the others step and the scales drift apart; here every per-device found_inf is
all-reduced with MAX right after the local check, so all ranks skip together and back off the
same scale. Everything else is mpamp.amp.GradScaler's (extra keywords pass through to it)."""
import mpamp
from ...amp.grad_scaler import GradScaler
from ... import distributed as dist

__all__ = ["ShardedGradScaler"]


class ShardedGradScaler(GradScaler):
    """GradScaler with found_inf all-reduced (MAX) over process_group (None: the default)."""

    def __init__(self, device=None, init_scale=2.0**16, backoff_factor=0.5, growth_factor=2.0,
                 growth_interval=2000, enabled=True, process_group=None, **kwargs):
        super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled, **kwargs)
        self.process_group = process_group

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device = super()._unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16)
        if not dist.is_initialized():
            return per_device
        # One collective per call on every rank, even one without gradients (its found_inf
        # is 0), so the ranks' collectives always match.
        combined = mpamp.zeros((), dtype=mpamp.float32, device=found_inf.device)
        for f in per_device.values():
            combined = combined + f.to(device=combined.device)
        dist.all_reduce(combined, op=dist.ReduceOp.MAX, group=self.process_group)
        if not per_device:
            per_device[str(combined.device)] = combined
        for key in list(per_device):
            per_device[key].copy_(combined.to(device=per_device[key].device))
        return per_device
