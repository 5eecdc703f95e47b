"""Canary for the mpamp.load fuzz target: hostile seed checkpoints name this module's fire()
as a pickle global. A loader that ran code from a file would import this module and call it;
load_check asserts that never happens. Never import it from a test except to prove the
canary is live (tests/test_fuzz_load.py)."""
import os

os.environ["MPAMP_FUZZ_CANARY"] = "imported"


def fire(*args, **kwargs):
    """What a malicious pickle would run."""
    os.environ["MPAMP_FUZZ_CANARY"] = "fired"
    return args
