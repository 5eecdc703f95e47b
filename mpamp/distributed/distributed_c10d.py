"""The collectives of mpamp.distributed, with torch.distributed's signatures (group=, async_op=,
src/dst as global ranks, group_src/group_dst as group ranks) and its errors for misuse. Each
call checks its arguments here, on the caller's thread, then runs on the group's
communication thread: with async_op=True it returns a Work at once, otherwise it waits.
Tensors of every dtype are accepted (float16/bfloat16 reduce in float32; see _mpi.py)."""
import warnings

import mpamp
from ._group import GroupMember, default_group, resolve
from ._reduce_op import ReduceOp, check_op

__all__ = ["get_rank", "get_world_size", "get_process_group_ranks", "get_global_rank",
           "get_group_rank", "all_reduce", "reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "barrier",
           "all_gather_object", "broadcast_object_list"]


def _check_tensor(t, param="tensor"):
    if not isinstance(t, mpamp.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"mpamp.Tensor but got {type(t)} instead.")
    if t.device.type != "cpu":
        raise RuntimeError(f"mpamp.distributed: {t.device.type} tensors need the NCCL backend, "
                           f"which is not available yet; collectives take CPU tensors")


def _check_list(ts, param):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, mpamp.Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"List[mpamp.Tensor] but got {type(ts)} instead.")
    for t in ts:
        _check_tensor(t, param)


def _group_for(group, name):
    """The ProcessGroup, or None (with torch's warning) when this rank is not in it."""
    pg = resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {name} on global rank {default_group()._global_rank} which "
                      f"does not belong to the given group.")
        return None
    return pg


def _root(pg, name, global_rank, group_rank):
    """The root's rank within pg from src/dst (global) or group_src/group_dst."""
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"{name}: pass either a global rank or a group rank, not both")
    if group_rank is None:
        g = 0 if global_rank is None else int(global_rank)
        if pg is not default_group() and g not in pg._ranks:
            raise ValueError(f"Global rank {g} is not part of group {pg}")
        group_rank = pg._ranks.index(g) if g in pg._ranks else g
    if not 0 <= group_rank < pg.size():
        raise RuntimeError(f"ProcessGroupMPI::{name}: invalid root rank: {group_rank}")
    return group_rank


def _shape(t):
    return "(" + ", ".join(str(d) for d in t.shape) + ")"


def get_rank(group=None):
    """This process's rank in group (the default one when None); -1 outside the group."""
    pg = resolve(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.rank()


def get_world_size(group=None):
    """Number of ranks in group (the default one when None); -1 outside the group."""
    pg = resolve(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.size()


def get_process_group_ranks(group):
    """The global ranks of group, in group order."""
    pg = resolve(group)
    return list(pg._ranks)


def get_global_rank(group, group_rank):
    """The global rank of group's rank group_rank."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank):
    """group's rank of the process with global rank global_rank."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce tensor across the group's ranks, in place on every rank."""
    _check_tensor(tensor)
    pg = _group_for(group, "all_reduce")
    if pg is None:
        return None
    check_op(op, tensor.dtype, "all_reduce")
    return pg._submit("all_reduce", lambda: pg._backend.all_reduce(tensor, op), async_op,
                      [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce tensor across the ranks into dst's tensor."""
    _check_tensor(tensor)
    pg = _group_for(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, "reduce", dst, group_dst)
    check_op(op, tensor.dtype, "reduce")
    return pg._submit("reduce", lambda: pg._backend.reduce(tensor, root, op), async_op,
                      [tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy src's tensor into every rank's tensor (bit for bit, any dtype)."""
    _check_tensor(tensor)
    pg = _group_for(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, "broadcast", src, group_src)
    return pg._submit("broadcast", lambda: pg._backend.broadcast(tensor, root), async_op,
                      [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's tensor, on every rank."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor)
    pg = _group_for(group, "all_gather")
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise RuntimeError(f"ProcessGroupMPI::allgather: invalid output tensor list at index 0 "
                           f"(expected length {pg.size()}, got {len(tensor_list)})")
    for i, out in enumerate(tensor_list):
        if out.dtype != tensor.dtype:
            raise ValueError(f"Invalid usage of tensors with different dtypes. Found "
                             f"{out.dtype} and {tensor.dtype}")
        if tuple(out.shape) != tuple(tensor.shape):
            raise RuntimeError(f"ProcessGroupMPI::allgather: invalid tensor size at index {i} "
                               f"(expected {_shape(tensor)}, got {_shape(out)})")
    return pg._submit("all_gather", lambda: pg._backend.all_gather(tensor_list, tensor),
                      async_op, tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor = the ranks' input tensors concatenated (dim 0) or stacked."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group_for(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError("output tensor must have the same type as input tensor")
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise RuntimeError("output tensor size must be equal to world_size times input tensor "
                           "size")
    return pg._submit("all_gather_into_tensor",
                      lambda: pg._backend.all_gather_into_tensor(output_tensor, input_tensor),
                      async_op, [output_tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None,  # noqa: A002
                          async_op=False):
    """output = this rank's block of input reduced across the ranks."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group_for(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if output.dtype != input.dtype:
        raise RuntimeError("input tensor must be the same type as the output tensor.")
    if input.numel() != pg.size() * output.numel():
        raise RuntimeError("input tensor must be the same size as output size times world "
                           "size")
    check_op(op, output.dtype, "reduce_scatter_tensor")
    return pg._submit("reduce_scatter_tensor",
                      lambda: pg._backend.reduce_scatter_tensor(output, input, op), async_op,
                      [output])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = input_list[rank] reduced across the ranks."""
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    pg = _group_for(group, "reduce_scatter")
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise RuntimeError(f"ProcessGroupMPI::reduce_scatter: invalid input tensor list "
                           f"(expected length {pg.size()}, got {len(input_list)})")
    for i, t in enumerate(input_list):
        if t.dtype != output.dtype:
            raise ValueError(f"Invalid usage of tensors with different dtypes. Found "
                             f"{t.dtype} and {output.dtype}")
        if tuple(t.shape) != tuple(output.shape):
            raise RuntimeError(f"ProcessGroupMPI::reduce_scatter: invalid tensor size at index "
                               f"{i} (expected {_shape(output)}, got {_shape(t)})")
    check_op(op, output.dtype, "reduce_scatter")
    inputs = list(input_list)
    return pg._submit("reduce_scatter",
                      lambda: pg._backend.reduce_scatter(output, inputs, op), async_op,
                      [output])


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier."""
    pg = _group_for(group, "barrier")
    if pg is None:
        return None
    return pg._submit("barrier", pg._backend.barrier, async_op)


def all_gather_object(object_list, obj, group=None):
    """object_list[i] = rank i's obj (picklable objects)."""
    pg = _group_for(group, "all_gather_object")
    if pg is None:
        return
    if len(object_list) < pg.size():
        raise ValueError(f"all_gather_object: object_list needs one slot per rank "
                         f"({pg.size()}), got {len(object_list)}")
    out = []
    pg._submit("all_gather_object", lambda: out.extend(pg._backend.all_gather_object(obj)),
               False)
    object_list[:len(out)] = out


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Fill object_list on every rank with src's objects (picklable)."""
    pg = _group_for(group, "broadcast_object_list")
    if pg is None:
        return
    root = _root(pg, "broadcast_object_list", src, group_src)
    out = []
    mine = list(object_list) if pg.rank() == root else None
    pg._submit("broadcast_object_list",
               lambda: out.append(pg._backend.broadcast_object(mine, root)), False)
    if len(out[0]) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {root} sent {len(out[0])} objects, this "
                         f"rank's list has {len(object_list)} slots")
    object_list[:] = out[0]
