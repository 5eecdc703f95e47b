"""Every collective of mpamp.distributed on every dtype and reduce op, on each rank of an MPI
job (started by tests/test_distributed.py with plain mpiexec). Each rank writes
<out>/rank<r>.npz (results as NumPy arrays) and <out>/rank<r>.json (rank variables seen after
`import mpamp`, misuse errors, object collectives, Work states); the test compares them with
NumPy references built from the same inputs (common.py). Usage: collectives_job.py OUT"""
import json
import os
import sys

import numpy as np

import mpamp
import mpamp.distributed as dist
from common import DTYPES, SHAPES, ops_for, rank_input

ENV = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
out_dir = sys.argv[1]
dist.init_process_group(backend="gloo")
rank, world = dist.get_rank(), dist.get_world_size()
DT = {name: getattr(mpamp, name) for name in DTYPES}
results, info = {}, {"env": ENV, "errors": {}}


def make(dtype, shape, salt=0, r=None):
    return mpamp.tensor(rank_input(dtype, rank if r is None else r, shape, salt)).to(DT[dtype])


def arr(t):
    if t.dtype == mpamp.bfloat16:
        return t.float().numpy()
    a = t.numpy()
    return a.astype(np.int64) if a.dtype == np.uint8 else a


def collectives(dtype):
    for op in ops_for(dtype):
        t = make(dtype, SHAPES["odd"])
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        results[f"all_reduce/{dtype}/{op}"] = arr(t)
    for shape_name in ("scalar", "empty"):
        t = make(dtype, SHAPES[shape_name])
        dist.all_reduce(t)
        results[f"all_reduce/{dtype}/SUM/{shape_name}"] = arr(t)
        t = make(dtype, SHAPES[shape_name])
        dist.broadcast(t, src=world - 1)
        results[f"broadcast/{dtype}/{shape_name}"] = arr(t)
    view = make(dtype, (5, 7)).t()                    # a non-contiguous (7, 5) view
    dist.all_reduce(view)
    results[f"all_reduce_noncontig/{dtype}"] = arr(view)
    t = make(dtype, SHAPES["odd"])
    work = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
    info[f"work/{dtype}"] = [work.wait(), work.is_completed(), work.is_success(),
                             work.result()[0] is t]
    results[f"all_reduce_async/{dtype}"] = arr(t)
    t = make(dtype, SHAPES["odd"])
    dist.reduce(t, dst=world - 1)
    results[f"reduce/{dtype}"] = arr(t)
    t = make(dtype, SHAPES["odd"])
    dist.broadcast(t, src=1)
    results[f"broadcast/{dtype}"] = arr(t)
    base = mpamp.zeros((5, 7), dtype=DT[dtype])
    base.t().copy_(make(dtype, SHAPES["odd"]))
    dist.broadcast(base.t(), src=1)                   # into a non-contiguous destination
    results[f"broadcast_noncontig/{dtype}"] = arr(base.t())
    outs = [mpamp.zeros(SHAPES["odd"], dtype=DT[dtype]) for _ in range(world)]
    dist.all_gather(outs, make(dtype, SHAPES["odd"]))
    results[f"all_gather/{dtype}"] = np.stack([arr(o) for o in outs])
    big = mpamp.zeros((world * 7, 5), dtype=DT[dtype])
    dist.all_gather_into_tensor(big, make(dtype, SHAPES["odd"]))
    results[f"agt/{dtype}"] = arr(big)
    for op in ("SUM", "AVG" if dtype.startswith(("float", "bfloat")) else "BXOR"):
        o = mpamp.zeros((3, 5), dtype=DT[dtype])
        dist.reduce_scatter_tensor(o, make(dtype, (world * 3, 5), salt=1),
                                   op=getattr(dist.ReduceOp, op))
        results[f"rst/{dtype}/{op}"] = arr(o)
    o = mpamp.zeros((3, 5), dtype=DT[dtype])
    dist.reduce_scatter(o, [make(dtype, (3, 5), salt=2 + i) for i in range(world)],
                        op=dist.ReduceOp.MAX)
    results[f"rs/{dtype}"] = arr(o)


def record_error(name, fn):
    try:
        fn()
        info["errors"][name] = None
    except Exception as exc:        # the test asserts type and message
        info["errors"][name] = [type(exc).__name__, str(exc)]


def misuse():
    f, i = mpamp.ones(2), mpamp.ones(2, dtype=mpamp.int64)
    record_error("list", lambda: dist.all_reduce([f]))
    record_error("band_float", lambda: dist.all_reduce(f, op=dist.ReduceOp.BAND))
    record_error("avg_int", lambda: dist.all_reduce(i, op=dist.ReduceOp.AVG))
    record_error("avg_bool", lambda: dist.all_reduce(f.bool(), op=dist.ReduceOp.AVG))
    record_error("op_string", lambda: dist.all_reduce(f, op="sum"))
    record_error("premul", lambda: dist.all_reduce(f, op=dist.ReduceOp.PREMUL_SUM))
    record_error("root", lambda: dist.broadcast(f, src=world))
    record_error("ag_len", lambda: dist.all_gather([f] * (world + 1), f))
    record_error("ag_dtype", lambda: dist.all_gather([i] * world, f))
    record_error("ag_size", lambda: dist.all_gather([mpamp.ones(3)] * world, f))
    record_error("agt_size", lambda: dist.all_gather_into_tensor(mpamp.ones(3), f))
    record_error("agt_dtype", lambda: dist.all_gather_into_tensor(i.repeat(world), f))
    record_error("rst_size", lambda: dist.reduce_scatter_tensor(f, mpamp.ones(3)))
    record_error("rs_len", lambda: dist.reduce_scatter(f, [f]))
    record_error("twice", lambda: dist.init_process_group("gloo"))
    record_error("new_group_rank", lambda: dist.new_group([0, world]))


for name in DTYPES:
    collectives(name)
big = mpamp.full((40,), 2 ** 62 + rank, dtype=mpamp.int64)   # int64 sums wrap, as torch's
dist.all_reduce(big)
results["all_reduce/int64/wrap"] = arr(big)
u8 = mpamp.full((64,), 200, dtype=mpamp.uint8)              # past Open MPI's saturating AVX op
dist.all_reduce(u8)
results["all_reduce/uint8/wrap"] = arr(u8)
misuse()
sub = dist.new_group([0, world - 1])
info["group_rank"] = dist.get_rank(sub)
info["group_size"] = dist.get_world_size(sub)
if rank in (0, world - 1):
    for name in ("float32", "int64"):
        t = make(name, SHAPES["odd"])
        dist.all_reduce(t, group=sub)
        results[f"group/{name}"] = arr(t)
    t = make("float32", SHAPES["odd"])
    dist.broadcast(t, src=world - 1, group=sub)
    results["group_broadcast"] = arr(t)
    info["group_ranks"] = dist.get_process_group_ranks(sub)
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank, "tuple": (rank, "x")})
info["objects"] = [[o["rank"], list(o["tuple"])] for o in objs]
lst = [f"from {rank}", rank] if rank == 1 else [None, None]
dist.broadcast_object_list(lst, src=1)
info["broadcast_objects"] = lst
info["backend"] = dist.get_backend()
dist.barrier()
dist.destroy_process_group()
info["initialized_after_destroy"] = dist.is_initialized()
np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **results)
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
    json.dump(info, fh)
