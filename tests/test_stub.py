"""mpamp/_C.pyi lists what the built extension offers (regenerate with tools/gen_stub.py)."""
import os
import subprocess
import sys

import mpamp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_stub_matches_extension():
    stub = os.path.join(os.path.dirname(mpamp.__file__), "_C.pyi")
    gen = os.path.join(ROOT, "tools", "gen_stub.py")
    if not os.path.exists(gen):           # tests run from an installed copy without tools/
        gen = None
    with open(stub) as f:
        text = f.read()
    for name in dir(mpamp._C):
        if callable(getattr(mpamp._C, name)) and not isinstance(getattr(mpamp._C, name), type):
            assert f"def {name}(" in text, f"{name} missing from _C.pyi: run tools/gen_stub.py"
    for name, obj in vars(mpamp._C.TensorBase).items():
        if not name.startswith("__") and callable(obj):
            assert f"def {name}(" in text, f"TensorBase.{name} missing from _C.pyi"
    if gen:
        fresh = subprocess.run([sys.executable, gen], capture_output=True, text=True,
                               cwd="/", env={**os.environ, "PYTHONPATH": os.path.dirname(
                                   os.path.dirname(mpamp.__file__))}).stdout
        assert fresh == text, "mpamp/_C.pyi is stale: python tools/gen_stub.py > mpamp/_C.pyi"
