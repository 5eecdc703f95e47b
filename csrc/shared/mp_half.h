/* mp_half.h - fp16 and bf16 storage types and their exact conversions to and from fp32.
 * One definition for the CPU scalar kernels and the CUDA kernels (compiled by cc and nvcc).
 * Rounding is round-to-nearest-even; subnormals are kept (never flushed); inf stays inf;
 * NaN stays NaN (quieted). Types are one-field structs so fp16 and bf16 cannot be mixed. */
#ifndef MP_HALF_H
#define MP_HALF_H

#include "mp_defs.h"

typedef struct { uint16_t bits; } mp_half;
typedef struct { uint16_t bits; } mp_bf16;

MP_HD uint32_t mp_f32_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

MP_HD float mp_f32_from_bits(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

/* Bit-level test: immune to compiler flags that assume finite math. */
MP_HD int mp_f32_isfinite(float f)
{
    return (mp_f32_bits(f) & 0x7f800000u) != 0x7f800000u;
}

/* ---- bfloat16: the top 16 bits of an fp32 ---- */

MP_HD float mp_bf16_to_f32(mp_bf16 h)
{
    return mp_f32_from_bits((uint32_t)h.bits << 16);
}

MP_HD mp_bf16 mp_f32_to_bf16(float f)
{
    uint32_t u = mp_f32_bits(f);
    mp_bf16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) {          /* NaN: keep sign/payload, force quiet */
        r.bits = (uint16_t)((u >> 16) | 0x0040u);
        return r;
    }
    /* Round to nearest even: add 0x7fff plus the lowest kept bit; carries into the exponent
     * are correct (they round up to the next binade or to inf). */
    u += 0x7fffu + ((u >> 16) & 1u);
    r.bits = (uint16_t)(u >> 16);
    return r;
}

/* ---- IEEE binary16 ---- */

MP_HD float mp_half_to_f32(mp_half h)
{
    uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16;
    uint32_t exp = (h.bits >> 10) & 0x1fu;
    uint32_t man = h.bits & 0x3ffu;
    if (exp == 0x1fu)                                  /* inf / NaN (quiet bit kept as is) */
        return mp_f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return mp_f32_from_bits(sign);
        /* subnormal: value = man * 2^-24, exact in fp32 */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return mp_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

MP_HD mp_half mp_f32_to_half(float f)
{
    uint32_t u = mp_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    mp_half r;
    if (a > 0x7f800000u) {                             /* NaN: quiet, keep top payload bits */
        r.bits = (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
        return r;
    }
    if (a >= 0x477ff000u) {                            /* rounds to >= 65520: overflow to inf */
        r.bits = (uint16_t)(sign | 0x7c00u);
        return r;
    }
    if (a < 0x38800000u) {                             /* below 2^-14: subnormal or zero */
        if (a < 0x33000000u) {                         /* < 2^-25: rounds to zero (ties too) */
            r.bits = (uint16_t)sign;
            return r;
        }
        uint32_t exp = a >> 23;                        /* 102..112 */
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - exp;                   /* 14..24 */
        uint32_t kept = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (kept & 1u)))
            kept += 1u;
        r.bits = (uint16_t)(sign | kept);
        return r;
    }
    /* normal: rebias exponent (127 -> 15) and round the 13 dropped bits to nearest even */
    a += ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u);
    r.bits = (uint16_t)(sign | (a >> 13));
    return r;
}

#endif
