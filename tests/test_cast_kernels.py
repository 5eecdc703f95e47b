"""Every vector cast kernel this CPU can run against the scalar oracle, bit for bit.

Exhaustive over the input domain through the C helper (all 2^32 fp32 patterns for the
down-casts, all 65536 for the up-casts), then lengths, tails, unaligned starts and the
streaming (non-temporal store) path through the Python-visible entry points, and the active
dispatch path (.half(), .float(), copy_) including MPAMP_CPU_ISA=scalar in a subprocess.
Levels the CPU lacks are skipped; tests/test_cast_avx512_emulated.py covers their logic.
"""

import numpy as np
import pytest

import mpamp
from conftest import bits_of, run_python, tensor_from_bits
from mpamp import _C

VECTOR_ISAS = ("avx2", "avx512", "avx512bf16")
KINDS = ("f32_to_f16", "f16_to_f32", "f32_to_bf16", "bf16_to_f32")
DTYPES = {"f32": mpamp.float32, "f16": mpamp.float16, "bf16": mpamp.bfloat16}


def isa_param(isa):
    supported = isa in _C._supported_isas()
    return pytest.param(isa, marks=pytest.mark.skipif(
        not supported, reason=f"this CPU cannot run the {isa} kernels"))


ISAS = [isa_param(i) for i in VECTOR_ISAS]


def kind_dtypes(kind):
    src, dst = kind.split("_to_")
    return DTYPES[src], DTYPES[dst]


def random_bits(n, dtype, seed):
    """Random bit patterns, with every kind of special value mixed in."""
    rng = np.random.default_rng(seed)
    if dtype is mpamp.float32:
        u = rng.integers(0, 1 << 32, size=n, dtype=np.uint32)
        specials = np.array([0, 1, 0x7F800000, 0x7F800001, 0x7FC00000, 0x477FF000, 0x33000000,
                             0x00008000, 0x7F7FFFFF, 0x387FC000], dtype=np.uint32)
        specials = np.concatenate([specials, specials | np.uint32(0x80000000)])
    else:
        u = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
        specials = np.array([0, 1, 0x3FF, 0x7C00, 0x7C01, 0x7DFF, 0x7E00, 0x7F80, 0x7F81, 0x7FC0,
                             0x8001, 0xFC01, 0xFF81], dtype=np.uint16)
    k = min(n, len(specials))
    if k:
        u[rng.choice(n, size=k, replace=False)] = specials[:k]
    return u


def cast(isa, t, dtype):
    return bits_of(_C._cast_with_isa(isa, t, dtype))


# ---- exhaustive, through the C helper ----

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("isa", ISAS)
def test_exhaustive_matches_scalar(isa, kind):
    mismatches, first_bad = _C._check_cast_exhaustive(isa, kind)
    first = None if first_bad is None else hex(first_bad)
    assert (mismatches, first) == (0, None)


def test_exhaustive_check_rejects_bad_arguments():
    with pytest.raises(ValueError):
        _C._check_cast_exhaustive("avx9000", "f32_to_f16")
    with pytest.raises(ValueError):
        _C._check_cast_exhaustive("scalar", "f32_to_f8")
    with pytest.raises(TypeError):
        _C._check_cast_exhaustive("scalar")
    assert _C._check_cast_exhaustive("scalar", "f16_to_f32") == (0, None)


# ---- lengths, tails, unaligned starts, streaming ----

LENGTHS = list(range(71)) + [1023, 4097]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("isa", ISAS)
def test_every_length_and_offset(isa, kind):
    src_dt, dst_dt = kind_dtypes(kind)
    for n in LENGTHS:
        base = tensor_from_bits(random_bits(n + 3, src_dt, seed=n), src_dt)
        for off in range(4):                      # t[off:] is contiguous, storage offset off
            t = base[off:off + n]
            assert t.is_contiguous()
            np.testing.assert_array_equal(cast(isa, t, dst_dt), cast("scalar", t, dst_dt),
                                          err_msg=f"n={n} offset={off}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("isa", ISAS)
def test_large_arrays_streaming_path(isa, kind):
    # destinations >= 8 MiB are written with non-temporal stores after an aligning head
    src_dt, dst_dt = kind_dtypes(kind)
    n = (4 << 20) + 37
    base = tensor_from_bits(random_bits(n + 8, src_dt, seed=7), src_dt)
    for off in (0, 3):
        t = base[off:off + n]
        np.testing.assert_array_equal(cast(isa, t, dst_dt), cast("scalar", t, dst_dt))


# ---- the active path: what users call ----

CONVERT = {"f32_to_f16": "half", "f32_to_bf16": "bfloat16", "f16_to_f32": "float",
           "bf16_to_f32": "float"}


@pytest.mark.parametrize("kind", KINDS)
def test_tensor_methods_match_scalar(kind):
    src_dt, dst_dt = kind_dtypes(kind)
    for n in (0, 1, 15, 16, 17, 1000, 70000, (4 << 20) + 5):
        t = tensor_from_bits(random_bits(n, src_dt, seed=n), src_dt)
        want = cast("scalar", t, dst_dt)
        np.testing.assert_array_equal(bits_of(getattr(t, CONVERT[kind])()), want)
        np.testing.assert_array_equal(bits_of(t.to(dst_dt)), want)


@pytest.mark.parametrize("kind", KINDS)
def test_copy_into_unaligned_destination_matches_scalar(kind):
    src_dt, dst_dt = kind_dtypes(kind)
    for n in (33, 4097, (4 << 20) + 9):
        src = tensor_from_bits(random_bits(n + 5, src_dt, seed=3), src_dt)
        dst = mpamp.zeros(n + 5, dtype=dst_dt)
        for s_off, d_off in ((0, 1), (1, 3), (2, 0), (5, 5)):
            s = src[s_off:s_off + n]
            d = dst[d_off:d_off + n]
            d.copy_(s)
            np.testing.assert_array_equal(bits_of(d), cast("scalar", s, dst_dt))


def test_tensor_factory_roundtrip_matches_scalar():
    vals = [0.0, -0.0, 1.0, 1e-8, 6.1e-5, 65504.0, 65520.0, 1e30, float("inf"), float("-inf"),
            3.14159, -2.5e-6, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11]
    t = mpamp.tensor(vals * 5)
    np.testing.assert_array_equal(bits_of(t.half()), cast("scalar", t, mpamp.float16))
    np.testing.assert_array_equal(bits_of(t.bfloat16()), cast("scalar", t, mpamp.bfloat16))
    h = t.half()
    np.testing.assert_array_equal(bits_of(h.float()), cast("scalar", h, mpamp.float32))


SUBPROCESS_SCRIPT = r"""
import hashlib, sys
import numpy as np
import mpamp
rng = np.random.default_rng(11)
u32 = rng.integers(0, 1 << 32, size=100003, dtype=np.uint32)
u32[:4] = [0x7F800001, 0x00008000, 0x477FF000, 0x33000000]
u16 = rng.integers(0, 1 << 16, size=100003, dtype=np.uint32).astype(np.uint16)
u16[:3] = [0x7C01, 0x7F81, 0x0001]
def raw(t):
    return bytes(mpamp._C._memoryview(t))
f = mpamp.from_numpy(u32.view(np.float32))
h = mpamp.from_numpy(u16.view(np.float16))
b = mpamp.empty(len(u16), dtype=mpamp.bfloat16)
np.asarray(mpamp._C._memoryview(b))[...] = u16
parts = [raw(f.half()), raw(f.bfloat16()), raw(h.float()), raw(b.float())]
print(mpamp.backends.cpu.get_isa())
print(hashlib.sha256(b"".join(parts)).hexdigest())
"""


def run_script(isa=None):
    env = {"MPAMP_CPU_ISA": isa or ""}          # empty: the detected level
    out = run_python(SUBPROCESS_SCRIPT, **env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_forced_scalar_gives_identical_results():
    isa_default, digest_default = run_script()
    isa_scalar, digest_scalar = run_script("scalar")
    assert isa_default == mpamp.backends.cpu.get_isa()
    assert isa_scalar == "scalar"
    assert digest_scalar == digest_default


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512"])
def test_forced_level_keeps_the_process_below_it(isa):
    """A forced MPAMP_CPU_ISA fills (and offers) no table above it: the fill functions of a
    level are compiled for its instructions, which an emulator or valgrind may lack."""
    detected = _C._supported_isas()
    out = run_python("from mpamp import _C; print(' '.join(_C._supported_isas()))",
                     MPAMP_CPU_ISA=isa)
    assert out.returncode == 0, out.stderr
    want = detected[:detected.index(isa) + 1] if isa in detected else detected
    assert out.stdout.split() == want
