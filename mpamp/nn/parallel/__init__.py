"""mpamp.nn.parallel: torch.nn.parallel's names. DataParallel without devices runs the module
itself (what torch does with no GPU); DistributedDataParallel averages gradients across the
ranks of an mpamp.distributed process group (distributed.py)."""
from ..modules.module import Module
from .distributed import DistributedDataParallel


class DataParallel(Module):
    """Runs module on the CPU as it is (torch's DataParallel without GPUs does the same)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


__all__ = ["DataParallel", "DistributedDataParallel"]
