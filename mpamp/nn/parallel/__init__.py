"""mpamp.nn.parallel: torch.nn.parallel's names. DataParallel without devices runs the module
itself (what torch does with no GPU); DistributedDataParallel needs mpamp.distributed, which
is not available yet, so constructing it raises a RuntimeError saying so."""
from ..modules.module import Module


class DataParallel(Module):
    """Runs module on the CPU as it is (torch's DataParallel without GPUs does the same)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Unavailable until mpamp.distributed exists: raises RuntimeError."""

    def __init__(self, module, *args, **kwargs):
        raise RuntimeError("DistributedDataParallel: distributed training is not available in "
                           "mpamp yet (mpamp.distributed.is_available() is False); train the "
                           "module in a single process")


__all__ = ["DataParallel", "DistributedDataParallel"]
