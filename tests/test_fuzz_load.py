"""The mpamp.load fuzz target (tests/fuzz/): every seed and every saved regression input holds
the property, the property's detectors work, and a short coverage-guided session (atheris,
~20 s; skipped without atheris) finds nothing. Long runs: see tests/fuzz/fuzz_load.py."""
import os
import subprocess
import sys

import pytest

from conftest import run_python

FUZZ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz")
sys.path.insert(0, FUZZ)
import load_check  # noqa: E402
import load_seeds  # noqa: E402

REGRESSIONS = os.path.join(FUZZ, "regressions")


def _inputs():
    seeds = load_seeds.all_seeds()
    for name in sorted(os.listdir(REGRESSIONS)):
        with open(os.path.join(REGRESSIONS, name), "rb") as fh:
            seeds[f"regression-{name}"] = fh.read()
    return seeds


INPUTS = _inputs()


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_input_loads_or_fails_cleanly(name):
    load_check.check(INPUTS[name])


def test_seeds_cover_success_and_refusal():
    loaded = {n for n, data in INPUTS.items() if load_check.load_once(data)[1] is None}
    assert {"mpamp-dtypes", "mpamp-training", "good", "deflated"} <= loaded
    assert not {"canary-reduce", "os-system", "expand-huge", "overlap-huge"} & loaded


def test_canary_fires_for_a_loader_that_runs_code():
    # The hostile seeds are live: plain pickle.loads imports the canary module and calls it.
    code = (f"import io, os, pickle, sys, zipfile; sys.path.insert(0, {FUZZ!r}); "
            "import load_seeds; "
            "zf = zipfile.ZipFile(io.BytesIO(load_seeds.hostile_seeds()['canary-reduce'])); "
            "pickle.loads(zf.read('archive/data.pkl')); "
            "print(os.environ.get('MPAMP_FUZZ_CANARY'))")
    out = run_python(code)
    assert out.stdout.strip() == "fired", out.stderr


def test_check_catches_execution_and_bad_errors(monkeypatch):
    def runs_code(f, **kw):
        return compile("1", "<checkpoint>", "eval")
    monkeypatch.setattr(load_check.mpamp, "load", runs_code)
    with pytest.raises(load_check.PropertyViolation, match="ran something.*compile"):
        load_check.check(b"")

    def system_error(f, **kw):
        try:
            raise SystemError("NULL result without error")
        except SystemError:
            raise RuntimeError(f"{load_check.NAME}: corrupted") from None
    monkeypatch.setattr(load_check.mpamp, "load", system_error)
    with pytest.raises(load_check.PropertyViolation, match="SystemError"):
        load_check.check(b"")

    def key_error(f, **kw):
        raise KeyError("x")
    monkeypatch.setattr(load_check.mpamp, "load", key_error)
    with pytest.raises(load_check.PropertyViolation, match="unexpected KeyError"):
        load_check.check(b"")


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="under a preloaded ASan runtime (.ci/sanitize.sh) atheris gets its "
                           "coverage callbacks from libasan (no guidance) and hangs at exit; "
                           "the seed and regression replays above run against that build")
def test_short_fuzz_session(tmp_path):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    load_seeds.write_corpus(str(corpus))     # here, so the child need not import torch
    cmd = [sys.executable, os.path.join(FUZZ, "fuzz_load.py"), "-max_total_time=20",
           "-runs=200000", "-seed=1", "-rss_limit_mb=2048", "-timeout=20",
           f"-artifact_prefix={tmp_path}/", str(corpus)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    tail = out.stderr[-4000:]
    assert out.returncode == 0, tail
    assert "Done" in tail and not list(tmp_path.glob("crash-*")), tail
    assert len(os.listdir(corpus)) >= len(load_seeds.all_seeds()), tail
