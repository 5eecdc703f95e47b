"""The layers of csrc/ (DESIGN.md's picture), checked on the includes: backends (cpu/, sim/,
cuda/) and shared/ never include the core or the bindings; the core never includes the
bindings or Python; the engine reaches ops only through the op table; test and benchmark
hooks live in csrc/testing/ and nothing in the production layers includes them."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]', re.M)


def includes():
    """(file, resolved target) for every quoted include under csrc/ and cuda/ (paths relative
    to the repository root), and (file, <name>) for system includes."""
    files = glob.glob(os.path.join(ROOT, "csrc", "**", "*.[ch]"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "cuda", "*.cu*"))
    for f in files:
        rel = os.path.relpath(f, ROOT)
        for inc in INCLUDE.findall(open(f).read()):
            for base in (os.path.dirname(f), os.path.join(ROOT, "csrc")):
                t = os.path.normpath(os.path.join(base, inc))
                if os.path.exists(t):
                    yield rel, os.path.relpath(t, ROOT)
                    break
            else:
                yield rel, "<" + inc + ">"


def layer(path):
    parts = path.split(os.sep)
    if parts[0] == "cuda":
        return "cuda"
    return parts[1] if len(parts) > 2 else parts[0]


def test_backends_and_shared_never_include_the_core_or_the_bindings():
    bad = [(f, t) for f, t in includes() if layer(f) in ("cpu", "sim", "shared", "cuda")
           and layer(t) in ("core", "bindings", "testing")]
    assert not bad, bad


def test_the_core_knows_nothing_of_python_or_the_bindings():
    bad = [(f, t) for f, t in includes() if layer(f) == "core"
           and (layer(t) in ("bindings", "testing") or t == "<Python.h>")]
    assert not bad, bad


def test_the_core_is_grouped():
    core = os.path.join(ROOT, "csrc", "core")
    groups = sorted(d for d in os.listdir(core) if os.path.isdir(os.path.join(core, d)))
    assert groups == ["amp", "autograd", "ops"]
    top = os.listdir(core)
    assert "tensor.c" in top and "alloc.c" in top and "view.c" in top and "iter.c" in top
    assert not [f for f in top if f.endswith((".c", ".h"))
                and f.startswith(("ops", "autograd", "autocast", "optim", "scaler"))]
    assert "op_table.c" in os.listdir(os.path.join(core, "ops"))


def test_the_engine_reaches_ops_through_the_table():
    engine = [t for f, t in includes() if f.endswith(os.path.join("autograd", "autograd_engine.c"))
              or f.endswith(os.path.join("autograd", "autograd_hooks.c"))
              or f.endswith(os.path.join("autograd", "autograd.c"))]
    assert os.path.join("csrc", "core", "ops", "op_table.h") in engine
    assert os.path.join("csrc", "core", "ops", "ops.h") not in engine


def test_test_hooks_live_apart():
    hooks = ("cast_check", "vmath_check", "peak", "gemm_bind", "vmath_bind", "peak_bind")
    for d in ("cpu", "bindings", "core"):
        names = [os.path.basename(f) for f in
                 glob.glob(os.path.join(ROOT, "csrc", d, "**", "*.[ch]"), recursive=True)]
        assert not [n for n in names if n.startswith(hooks)], d
    bad = [(f, t) for f, t in includes() if layer(t) == "testing"
           and layer(f) not in ("testing", "bindings")]
    assert not bad, bad
