"""Shared by the distributed jobs in this folder (run on every rank under mpiexec) and by
tests/test_distributed.py (which rebuilds the same inputs to compute NumPy references)."""
import numpy as np

DTYPES = ["float32", "float16", "bfloat16", "int64", "uint8", "bool"]
FLOAT_OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
INT_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
SHAPES = {"odd": (7, 5), "scalar": (), "empty": (0, 3)}


def ops_for(dtype):
    return FLOAT_OPS if dtype.startswith(("float", "bfloat")) else INT_OPS


def rank_input(dtype, rank, shape, salt=0):
    """Rank's input as float32/int64/bool NumPy data, exactly representable in dtype."""
    rng = np.random.default_rng(1000 * salt + 17 * rank + DTYPES.index(dtype))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int64":
        return rng.integers(-40, 40, shape).astype(np.int64)
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.int64)
    x = np.asarray(rng.integers(-64, 64, shape), dtype=np.float32) / 8   # exact in 16 bits
    return np.where(x == 0, np.float32(0.5), x).astype(np.float32)     # PRODUCT informative


def reduce_ref(arrays, op, dtype):
    """NumPy reference for reducing the ranks' arrays with op, in dtype's arithmetic."""
    a = np.stack(arrays)
    if dtype == "bool":
        return {"SUM": a.any(0), "MAX": a.any(0), "BOR": a.any(0), "PRODUCT": a.all(0),
                "MIN": a.all(0), "BAND": a.all(0),
                "BXOR": np.logical_xor.reduce(a, 0)}[op]
    if dtype == "uint8":
        a = a.astype(np.uint8)
    ref = {"SUM": lambda: a.sum(0, dtype=a.dtype), "AVG": lambda: a.sum(0) / len(arrays),
           "PRODUCT": lambda: a.prod(0, dtype=a.dtype), "MIN": lambda: a.min(0),
           "MAX": lambda: a.max(0), "BAND": lambda: np.bitwise_and.reduce(a, 0),
           "BOR": lambda: np.bitwise_or.reduce(a, 0),
           "BXOR": lambda: np.bitwise_xor.reduce(a, 0)}[op]()
    return ref.astype(np.int64) if dtype == "uint8" else ref


def mlp_batch(step, batch, d_in=12, d_out=4):
    """The global batch of a training step (every rank draws the same one)."""
    rng = np.random.default_rng(500 + step)
    return (rng.standard_normal((batch, d_in)).astype(np.float32),
            rng.standard_normal((batch, d_out)).astype(np.float32))
