"""mpamp.distributed.fsdp: only what sharded mixed-precision setups need from AMP, at torch's
path: ShardedGradScaler (no FullyShardedDataParallel)."""
from .sharded_grad_scaler import ShardedGradScaler

__all__ = ["ShardedGradScaler"]
