"""The namespaces training scripts touch at import or setup: mpamp.backends.cuda/cudnn/mps,
mpamp.accelerator, mpamp.compile, the float32 matmul precision, mpamp.cuda's memory and device
calls, mpamp.nn.parallel, mpamp.distributed, mpamp.utils.data's module paths. Each works or is
an honest no-op with the values torch's CPU build returns (compared with torch when installed,
on a machine without a GPU)."""
import importlib
import warnings

import pytest

import mpamp
from conftest import run_python

no_gpu = pytest.mark.skipif(mpamp.cuda.is_available(), reason="a CUDA device is present")


@pytest.fixture
def restore_flags():
    b = mpamp.backends
    saved = (mpamp.get_float32_matmul_precision(), b.cudnn.benchmark, b.cudnn.deterministic,
             b.cudnn.allow_tf32, b.cudnn.enabled, dict(b.cuda._sdp),
             b.cuda.matmul.allow_fp16_reduced_precision_reduction)
    yield
    mpamp.set_float32_matmul_precision(saved[0])
    b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32, b.cudnn.enabled = saved[1:5]
    b.cuda._sdp.update(saved[5])
    b.cuda.matmul.allow_fp16_reduced_precision_reduction = saved[6]


def test_nanogpt_style_setup_lines_run(restore_flags):
    mpamp.manual_seed(1337)
    mpamp.cuda.manual_seed(1337)
    mpamp.backends.cuda.matmul.allow_tf32 = True
    mpamp.backends.cudnn.allow_tf32 = True
    mpamp.backends.cudnn.benchmark = True
    mpamp.backends.cudnn.deterministic = False
    assert mpamp.backends.cuda.matmul.allow_tf32 is True
    assert mpamp.get_float32_matmul_precision() == "high"       # tied, as in torch
    mpamp.backends.cuda.matmul.allow_tf32 = False
    assert mpamp.get_float32_matmul_precision() == "highest"
    mpamp.set_float32_matmul_precision("medium")
    assert mpamp.backends.cuda.matmul.allow_tf32 is True
    ctx = mpamp.autocast(device_type="cpu", dtype=mpamp.bfloat16)
    with ctx:
        pass
    dev = mpamp.device("cuda")
    assert dev.type == "cuda" and str(mpamp.device("cuda:1")) == "cuda:1"


def test_matmul_flags_and_unknown_attributes(restore_flags):
    m = mpamp.backends.cuda.matmul
    assert m.allow_fp16_reduced_precision_reduction is True
    assert m.allow_bf16_reduced_precision_reduction is True
    m.allow_fp16_reduced_precision_reduction = False
    assert m.allow_fp16_reduced_precision_reduction is False
    with pytest.raises(AttributeError, match="Unknown attribute bogus"):
        m.bogus = 1
    with pytest.raises(AttributeError, match="Unknown attribute bogus"):
        m.bogus
    with pytest.warns(UserWarning, match="bogus is not one of 'highest', 'high', or 'medium'"):
        mpamp.set_float32_matmul_precision("bogus")
    assert mpamp.get_float32_matmul_precision() == "highest"
    assert mpamp.backends.cuda.is_built() is mpamp.cuda.is_built()


def test_sdp_flags_and_context(restore_flags):
    bc = mpamp.backends.cuda
    for name in ("flash", "mem_efficient", "math", "cudnn"):
        assert getattr(bc, f"{name}_sdp_enabled")() is True
        assert getattr(bc, f"enable_{name}_sdp")(False) is None
        assert getattr(bc, f"{name}_sdp_enabled")() is False
        getattr(bc, f"enable_{name}_sdp")(True)
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        with bc.sdp_kernel(enable_flash=False, enable_math=True):
            assert bc.flash_sdp_enabled() is False and bc.math_sdp_enabled() is True
    assert bc.flash_sdp_enabled() is True


def test_cudnn_and_mps(restore_flags):
    c = mpamp.backends.cudnn
    assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (True, False, False, True)
    assert c.is_available() is False and c.version() is None and c.benchmark_limit is None
    with c.flags(enabled=False, deterministic=True):
        assert c.enabled is False and c.deterministic is True
    assert c.enabled is True and c.deterministic is False
    assert mpamp.backends.mps.is_available() is False and mpamp.backends.mps.is_built() is False
    import mpamp.backends.cudnn as cudnn_mod
    assert cudnn_mod is c


def test_compile_returns_the_model_with_one_warning():
    model = mpamp.nn.Linear(3, 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert mpamp.compile(model) is model
        assert mpamp.compile(model, mode="max-autotune", fullgraph=True) is model

        @mpamp.compile
        def f(x):
            return x + 1

        @mpamp.compile(dynamic=True)
        def g(x):
            return x * 2
    assert f(1) == 2 and g(2) == 4
    msgs = [x for x in w if "mpamp.compile() returns the model unchanged" in str(x.message)]
    assert len(msgs) == 4 and all(x.filename == __file__ for x in msgs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mpamp.compile(model, disable=True) is model
    with pytest.raises(RuntimeError, match="must be a callable"):
        mpamp.compile(3)


@no_gpu
def test_accelerator_without_a_gpu():
    a = mpamp.accelerator
    assert a.is_available() is False and a.current_accelerator() is None
    assert a.current_accelerator(check_available=True) is None and a.device_count() == 0
    for fn in (a.current_device_index, a.current_device_idx, a.synchronize,
               lambda: a.set_device_index(0)):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is "
                                               "available."):
            fn()
    assert a.empty_cache() is None and a.memory_allocated() == 0
    assert a.max_memory_allocated() == 0 and a.reset_peak_memory_stats() is None
    # pytorch/examples mnist: device = accelerator if available else cpu
    dev = a.current_accelerator() if a.is_available() else mpamp.device("cpu")
    assert mpamp.zeros(2).to(dev).device == mpamp.device("cpu")


@no_gpu
def test_cuda_calls_without_a_gpu():
    c = mpamp.cuda
    assert c.empty_cache() is None
    for fn in (c.memory_allocated, c.max_memory_allocated, c.memory_reserved,
               c.max_memory_reserved):
        assert fn() == 0 and fn(0) == 0
    for fn in (c.reset_peak_memory_stats, c.reset_max_memory_allocated,
               c.reset_max_memory_cached, c.reset_accumulated_memory_stats):
        assert fn() is None
    assert dict(c.memory_stats()) == {} and "no CUDA memory" in c.memory_summary()
    assert c.is_bf16_supported() is False and c.is_initialized() is False
    for fn in (c.synchronize, c.current_device, c.get_device_name, lambda: c.get_device_name(0),
               c.get_device_capability, lambda: c.get_device_properties(0), c.mem_get_info,
               lambda: c.set_device(0), c.init):
        with pytest.raises(RuntimeError, match="CUDA not available"):
            fn()
    with c.device(0) as d:
        assert d.idx == 0
    assert c.device(mpamp.device("cuda", 1)).idx == 1


@no_gpu
def test_values_equal_torch_cpu_build():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU")
    pairs = [
        ("backends.cudnn.enabled", None), ("backends.cudnn.benchmark", None),
        ("backends.cudnn.deterministic", None), ("backends.cudnn.allow_tf32", None),
        ("backends.cudnn.is_available", ()), ("backends.cudnn.version", ()),
        ("backends.mps.is_available", ()), ("backends.cuda.flash_sdp_enabled", ()),
        ("backends.cuda.math_sdp_enabled", ()), ("backends.cuda.mem_efficient_sdp_enabled", ()),
        ("backends.cuda.matmul.allow_fp16_reduced_precision_reduction", None),
        ("accelerator.is_available", ()), ("accelerator.current_accelerator", ()),
        ("accelerator.device_count", ()), ("cuda.is_available", ()), ("cuda.device_count", ()),
        ("cuda.memory_allocated", ()), ("cuda.max_memory_allocated", ()),
        ("cuda.memory_reserved", ()), ("cuda.max_memory_reserved", ()),
        ("cuda.empty_cache", ()), ("cuda.is_bf16_supported", ()), ("cuda.manual_seed", (1,)),
        ("cuda.manual_seed_all", (1,)), ("cuda.seed", ()), ("cuda.seed_all", ()),
        ("cuda.get_rng_state_all", ()), ("cuda.is_initialized", ()),
        ("get_float32_matmul_precision", ()),
    ]
    for path, args in pairs:
        vals = []
        for root in (torch, mpamp):
            obj = root
            for part in path.split("."):
                obj = getattr(obj, part)
            vals.append(obj if args is None else obj(*args))
        t, m = vals
        assert (t if not isinstance(t, dict) else dict(t)) == m, path
    assert dict(torch.cuda.memory_stats()) == dict(mpamp.cuda.memory_stats())
    assert torch.backends.cuda.matmul.allow_tf32 == mpamp.backends.cuda.matmul.allow_tf32


def test_parallel_and_distributed_imports():
    from mpamp.distributed import destroy_process_group, init_process_group
    from mpamp.nn.parallel import DataParallel
    from mpamp.nn.parallel import DistributedDataParallel as DDP
    import importlib.util
    import mpamp.distributed as dist
    assert dist.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    assert dist.is_initialized() is False and dist.ReduceOp.SUM.name == "SUM"
    # before init_process_group: torch's error (tests/test_distributed*.py run real jobs)
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(mpamp.ones(2))
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        destroy_process_group()
    assert init_process_group.__name__ == "init_process_group"
    model = mpamp.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(model)
    dp = DataParallel(model)
    x = mpamp.ones(4, 3)
    assert dp(x).tolist() == model(x).tolist() and dp.module is model
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]      # as torch's
    assert mpamp.nn.parallel.DataParallel is DataParallel


def test_data_module_paths():
    from mpamp.utils.data import DataLoader as A
    from mpamp.utils.data.dataloader import DataLoader as B
    from mpamp.utils.data.dataloader import default_collate
    from mpamp.utils.data.dataset import Dataset, TensorDataset
    from mpamp.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler
    assert A is B and default_collate is mpamp.utils.data.default_collate
    assert Dataset is mpamp.utils.data.Dataset
    assert TensorDataset is mpamp.utils.data.TensorDataset
    d = mpamp.utils.data
    assert (d.RandomSampler, d.SequentialSampler, d.BatchSampler) == \
        (RandomSampler, SequentialSampler, BatchSampler)
    for name in ("dataloader", "dataset", "sampler", "distributed"):
        assert importlib.import_module(f"mpamp.utils.data.{name}").__all__


def test_every_new_package_is_installed_by_pyproject():
    import pathlib
    import tomllib
    # the checkout's tree, not the installed copy (CI installs with `pip install .`, so
    # mpamp.__file__ lies in site-packages, where no pyproject.toml is)
    root = pathlib.Path(__file__).resolve().parent.parent
    pkgs = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
               ["packages"])
    found = {".".join(p.parent.relative_to(root).parts)
             for p in (root / "mpamp").rglob("__init__.py")}
    assert found <= pkgs, found - pkgs


def test_imports_in_a_fresh_process():
    # a script ported by rewriting its imports (from torch.x -> from mpamp.x): `from torch...`
    # after `import mpamp as torch` would import the real torch package
    code = ("import mpamp as torch\n"
            "from mpamp.nn.parallel import DistributedDataParallel as DDP\n"
            "from mpamp.distributed import init_process_group, destroy_process_group\n"
            "from mpamp.utils.data.dataloader import DataLoader\n"
            "import mpamp.backends.cudnn\n"
            "assert 'torch' not in __import__('sys').modules\n"
            "torch.backends.cuda.matmul.allow_tf32 = True\n"
            "torch.backends.cudnn.allow_tf32 = True\n"
            "print(torch.accelerator.is_available(), torch.cuda.empty_cache())\n")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[1] == "None"
