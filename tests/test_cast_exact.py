"""The scalar fp32 <-> fp16/bf16 conversions (the oracle of every vector kernel) against NumPy
and ml_dtypes, bit for bit.

Everything that is a number (zeros, subnormals, normals, inf, overflow to inf) must equal
NumPy's ``astype(np.float16)`` / ``astype(np.float32)`` and ``ml_dtypes.bfloat16`` exactly.
NaN is where mpamp states its own bits (csrc/shared/mp_half.h), since the references differ:
- fp16 -> fp32 keeps sign and payload and does not set the quiet bit: identical to NumPy.
- bf16 -> fp32 is a 16-bit shift: identical to ml_dtypes.
- fp32 -> fp16 gives sign | 0x7e00 | top ten payload bits (quiet, as F16C and CUDA do);
  NumPy keeps the payload unquieted (0x7f800001 -> 0x7c01), so only NaN-ness is shared.
- fp32 -> bf16 gives (bits >> 16) | 0x0040 (quiet, payload kept); ml_dtypes returns the
  canonical 0x7fc0, so again only NaN-ness is shared.
"""
import numpy as np
import pytest

import mpamp
from conftest import bits_of, tensor_from_bits
from mpamp import _C

U16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def scalar_cast(bits, src_dtype, dst_dtype):
    return bits_of(_C._cast_with_isa("scalar", tensor_from_bits(bits, src_dtype), dst_dtype))


def f32_is_nan(u32):
    return (u32 & 0x7FFFFFFF) > 0x7F800000


def f16_is_nan(u16):
    return (u16 & 0x7FFF) > 0x7C00


def with_both_signs(u32):
    u32 = np.asarray(u32, dtype=np.uint32)
    return np.concatenate([u32, u32 | np.uint32(0x80000000)])


def special_f32():
    """Zeros, fp32 subnormals and normal extremes, inf, NaNs of every kind."""
    pats = [0x00000000, 0x00000001, 0x00000002, 0x0000ffff, 0x00400000, 0x007fffff,
            0x00800000, 0x00800001, 0x3f800000, 0x7f7fffff, 0x7f800000,
            0x7f800001, 0x7f801fff, 0x7f802000, 0x7fbfffff, 0x7fc00000, 0x7fc00001,
            0x7fffe000, 0x7fffffff, 0x7f80ffff, 0x7f810000, 0x7fff0000,
            # fp16 edges: min subnormal, min normal, max finite, the overflow threshold
            0x33000000, 0x33000001, 0x337fffff, 0x33800000, 0x387fc000, 0x38800000,
            0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x7f812345,
            # bf16 edges: subnormal ties, rounding past the largest finite value
            0x00008000, 0x00018000, 0x00017fff, 0x7f7f7fff, 0x7f7f8000]
    return with_both_signs(pats)


def random_f32(n, seed):
    return np.random.default_rng(seed).integers(0, 1 << 32, size=n, dtype=np.uint32)


# ---- fp16 -> fp32 ----

def test_f16_to_f32_all_patterns_equal_numpy():
    got = scalar_cast(U16, mpamp.float16, mpamp.float32)
    want = U16.view(np.float16).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(got, want)


def test_f16_to_f32_nan_keeps_payload_without_quieting():
    nan = f16_is_nan(U16)
    got = scalar_cast(U16, mpamp.float16, mpamp.float32)
    u = U16.astype(np.uint32)
    spec = ((u & 0x8000) << 16) | 0x7F800000 | ((u & 0x3FF) << 13)
    np.testing.assert_array_equal(got[nan], spec[nan])
    assert nan.sum() == 2 * 1023


# ---- fp32 -> fp16 ----

def f16_rounding_boundaries():
    """For every pair of adjacent non-negative fp16 patterns (the one past 65504 counting as
    2^16), the fp32 midpoint and its fp32 neighbours one ulp either side; both signs."""
    lo = np.arange(0, 0x7C00, dtype=np.uint16)
    a = lo.view(np.float16).astype(np.float64)
    b = np.append(a[1:], 65536.0)
    mid = ((a + b) / 2).astype(np.float32).view(np.uint32)   # exact: 12 significant bits
    assert np.array_equal(mid.view(np.float32).astype(np.float64), (a + b) / 2)
    exact = a.astype(np.float32).view(np.uint32)
    return with_both_signs(np.concatenate([mid - 1, mid, mid + 1, exact]))


def check_f32_to_f16(u32):
    got = scalar_cast(u32, mpamp.float32, mpamp.float16)
    with np.errstate(invalid="ignore", over="ignore"):
        want = u32.view(np.float32).astype(np.float16).view(np.uint16)
    nan = f32_is_nan(u32)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert f16_is_nan(got[nan]).all() and f16_is_nan(want[nan]).all()
    spec = ((u32 >> 16) & 0x8000) | 0x7E00 | ((u32 >> 13) & 0x3FF)
    np.testing.assert_array_equal(got[nan], spec[nan].astype(np.uint16))


def test_f32_to_f16_rounding_boundaries():
    check_f32_to_f16(f16_rounding_boundaries())


def test_f32_to_f16_special_values():
    u = special_f32()
    check_f32_to_f16(u)
    got = dict(zip(u.tolist(), scalar_cast(u, mpamp.float32, mpamp.float16).tolist()))
    assert got[0x477FEFFF] == 0x7BFF            # just below 65520: largest finite
    assert got[0x477FF000] == 0x7C00            # 65520 ties to even: inf
    assert got[0x33000000] == 0x0000            # 2^-25 ties to even: zero
    assert got[0x33000001] == 0x0001            # just above: smallest subnormal
    assert got[0x80000001] == 0x8000            # fp32 subnormal: signed zero
    assert got[0x7F800001] == 0x7E00            # sNaN whose payload truncates away: quiet
    assert got[0xFF812345] == 0xFE09


def test_f32_to_f16_every_fp32_subnormal_and_tiny_exponent():
    # every 251st pattern of the exponents that land on fp16 zero or subnormals
    u = np.arange(0, 0x38800000, 251, dtype=np.uint32)
    check_f32_to_f16(with_both_signs(u))


def test_f32_to_f16_random_patterns():
    check_f32_to_f16(random_f32(1 << 22, seed=1))


# ---- bfloat16 (against ml_dtypes) ----

def test_bf16_to_f32_all_patterns_are_a_shift():
    got = scalar_cast(U16, mpamp.bfloat16, mpamp.float32)
    np.testing.assert_array_equal(got, U16.astype(np.uint32) << 16)


def test_bf16_to_f32_all_patterns_equal_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    got = scalar_cast(U16, mpamp.bfloat16, mpamp.float32)
    want = U16.view(ml.bfloat16).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(got, want)


def bf16_rounding_boundaries():
    """Midpoints between adjacent non-negative bf16 patterns (past the largest finite one
    counting as 2^128) and their fp32 neighbours; the exact values; both signs."""
    hi = np.arange(0, 0x7F80, dtype=np.uint32) << 16
    mid = hi | 0x8000
    return with_both_signs(np.concatenate([mid - 1, mid, mid + 1, hi]))


def check_f32_to_bf16(u32, ml):
    got = scalar_cast(u32, mpamp.float32, mpamp.bfloat16)
    nan = f32_is_nan(u32)
    spec = ((u32 >> 16) | 0x40).astype(np.uint16)
    np.testing.assert_array_equal(got[nan], spec[nan])
    with np.errstate(invalid="ignore", over="ignore"):
        want = u32.view(np.float32).astype(ml.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert ((want[nan] & 0x7FFF) > 0x7F80).all()


def test_f32_to_bf16_rounding_boundaries():
    ml = pytest.importorskip("ml_dtypes")
    check_f32_to_bf16(bf16_rounding_boundaries(), ml)


def test_f32_to_bf16_special_values_and_subnormals():
    ml = pytest.importorskip("ml_dtypes")
    u = np.concatenate([special_f32(), with_both_signs(np.arange(0, 0x00800000, 97,
                                                                 dtype=np.uint32))])
    check_f32_to_bf16(u, ml)
    got = dict(zip(u.tolist(), scalar_cast(u, mpamp.float32, mpamp.bfloat16).tolist()))
    assert got[0x7F7FFFFF] == 0x7F80            # rounds up past the largest finite: inf
    assert got[0x00008000] == 0x0000            # subnormal tie to even: kept, not flushed
    assert got[0x00018000] == 0x0002
    assert got[0x7F800001] == 0x7FC0            # sNaN: quiet, top payload bits kept
    assert got[0xFF810000] == 0xFFC1


def test_f32_to_bf16_random_patterns():
    ml = pytest.importorskip("ml_dtypes")
    check_f32_to_bf16(random_f32(1 << 22, seed=2), ml)
