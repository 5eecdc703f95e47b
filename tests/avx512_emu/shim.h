/* shim.h - test-only: lets csrc/cpu/cast_avx512.c and the AVX-512 GEMM micro-kernels compile
 * and run on a CPU without AVX-512. Included before the kernel file (*_emu.c): SIMDe's portable
 * versions stand in for the AVX-512 intrinsics, and the ones SIMDe 0.7 lacks (or gets wrong,
 * vdpbf16ps) are written out below as lane loops. The fp16 conversions run on the host's F16C,
 * 8 lanes at a time (the EVEX forms are specified to convert exactly as the VEX ones), so the
 * NaN behaviour under test is the hardware's. */
#ifndef MP_AVX512_EMU_SHIM_H
#define MP_AVX512_EMU_SHIM_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Lane i of `src` (element size es) to `dst` where bit i of k is set. */
static inline void emu_masked_copy(void *dst, const void *src, simde__mmask16 k, size_t es)
{
    for (int i = 0; i < 16; i++)
        if (k & (1u << i))
            memcpy((char *)dst + es * (size_t)i, (const char *)src + es * (size_t)i, es);
}

static inline simde__m256i emu_cvtps_ph(simde__m512 a)
{
    float f[16];
    uint16_t h[16];
    simde_mm512_storeu_ps(f, a);
    for (int i = 0; i < 16; i += 8)
        _mm_storeu_si128((__m128i *)(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(f + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return simde_mm256_loadu_si256(h);
}

static inline simde__m512 emu_cvtph_ps(simde__m256i a)
{
    uint16_t h[16];
    float f[16];
    simde_mm256_storeu_si256(h, a);
    for (int i = 0; i < 16; i += 8)
        _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    return simde_mm512_loadu_ps(f);
}

static inline simde__mmask16 emu_cmp_epi16_mask(simde__m256i a, simde__m256i b, int greater)
{
    int16_t x[16], y[16];
    simde__mmask16 k = 0;
    simde_mm256_storeu_si256(x, a);
    simde_mm256_storeu_si256(y, b);
    for (int i = 0; i < 16; i++)
        if (greater ? x[i] > y[i] : x[i] < y[i])
            k |= (simde__mmask16)(1u << i);
    return k;
}

static inline simde__m256i emu_cvtepi32_epi16(simde__m512i v)
{
    uint32_t w[16];
    uint16_t h[16];
    simde_mm512_storeu_si512(w, v);
    for (int i = 0; i < 16; i++)
        h[i] = (uint16_t)w[i];                      /* vpmovdw truncates */
    return simde_mm256_loadu_si256(h);
}

static inline simde__m512i emu_cvtepu16_epi32(simde__m256i v)
{
    uint16_t h[16];
    uint32_t w[16];
    simde_mm256_storeu_si256(h, v);
    for (int i = 0; i < 16; i++)
        w[i] = h[i];
    return simde_mm512_loadu_si512(w);
}

static inline simde__m512 emu_maskz_loadu_ps(simde__mmask16 k, const void *p)
{
    float f[16] = {0};
    emu_masked_copy(f, p, k, 4);
    return simde_mm512_loadu_ps(f);
}

static inline simde__m512 emu_cvtepi32_ps(simde__m512i v)
{
    int32_t w[16];
    float f[16];
    simde_mm512_storeu_si512(w, v);
    for (int i = 0; i < 16; i++)
        f[i] = (float)w[i];       /* exact for the small integers vmath converts */
    return simde_mm512_loadu_ps(f);
}

static inline simde__m512i emu_srai_epi32(simde__m512i v, int n)
{
    int32_t w[16];
    simde_mm512_storeu_si512(w, v);
    for (int i = 0; i < 16; i++)
        w[i] = (int32_t)(w[i] < 0 ? ~(~(uint32_t)w[i] >> n) : (uint32_t)w[i] >> n);
    return simde_mm512_loadu_si512(w);
}

static inline simde__m512d emu_cvtps_pd(simde__m256 v)
{
    float f[8];
    double d[8];
    simde_mm256_storeu_ps(f, v);
    for (int i = 0; i < 8; i++)
        d[i] = (double)f[i];
    return simde_mm512_loadu_pd(d);
}

static inline simde__m512 emu_mask_loadu_ps(simde__m512 src, simde__mmask16 k, const void *p)
{
    float f[16];
    simde_mm512_storeu_ps(f, src);
    emu_masked_copy(f, p, k, 4);
    return simde_mm512_loadu_ps(f);
}

static inline simde__m512i emu_maskz_loadu_epi32(simde__mmask16 k, const void *p)
{
    uint32_t w[16] = {0};
    emu_masked_copy(w, p, k, 4);
    return simde_mm512_loadu_si512(w);
}

static inline simde__m256i emu_maskz_loadu_epi16(simde__mmask16 k, const void *p)
{
    uint16_t h[16] = {0};
    emu_masked_copy(h, p, k, 2);
    return simde_mm256_loadu_si256(h);
}

/* The 512-bit, 32-lane forms (gemm_pack_avx512.c), lane by lane. */
static inline simde__m512i emu_maskz_loadu_epi16_512(simde__mmask32 k, const void *p)
{
    uint16_t h[32] = {0};
    for (int i = 0; i < 32; i++)
        if (k & (1u << i))
            memcpy(h + i, (const uint16_t *)p + i, 2);
    return simde_mm512_loadu_si512(h);
}

static inline void emu_mask_storeu_epi16_512(void *p, simde__mmask32 k, simde__m512i v)
{
    uint16_t h[32];
    simde_mm512_storeu_si512(h, v);
    for (int i = 0; i < 32; i++)
        if (k & (1u << i))
            memcpy((uint16_t *)p + i, h + i, 2);
}

static inline void emu_mask_storeu_ps(void *p, simde__mmask16 k, simde__m512 v)
{
    float f[16];
    simde_mm512_storeu_ps(f, v);
    emu_masked_copy(p, f, k, 4);
}

static inline void emu_mask_storeu_epi32(void *p, simde__mmask16 k, simde__m512i v)
{
    uint32_t w[16];
    simde_mm512_storeu_si512(w, v);
    emu_masked_copy(p, w, k, 4);
}

static inline void emu_mask_storeu_epi16(void *p, simde__mmask16 k, simde__m256i v)
{
    uint16_t h[16];
    simde_mm256_storeu_si256(h, v);
    emu_masked_copy(p, h, k, 2);
}

static inline void emu_mask_cvtepi32_storeu_epi16(void *p, simde__mmask16 k, simde__m512i v)
{
    emu_mask_storeu_epi16(p, k, emu_cvtepi32_epi16(v));
}

/* vdpbf16ps as the Intel SDM specifies it (and Bochs implements it), which SIMDe 0.7 does not:
 * per lane i, acc += a[2i+1] * b[2i+1] first, then acc += a[2i] * b[2i], each an fp32 fused
 * multiply-add rounded to nearest even with input denormals treated as zero and tiny results
 * flushed to zero (tininess after rounding, as x86's FTZ), MXCSR ignored. SIMDe adds the even
 * product first, with a separate multiply and add and no DAZ/FTZ. The GEMM kernel relies on
 * the order, the single rounding per product and the flushing (gemm_avx512bf16.c); the test
 * checks this emulation on cases that tell the orders and the flushing apart. */
static inline float emu_daz(float x)
{
    return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x;   /* NaN compares false: kept */
}

static inline float emu_fma_daz_ftz(float a, float b, float c)
{
    a = emu_daz(a), b = emu_daz(b), c = emu_daz(c);
    float r = fmaf(a, b, c);
    if (!(fabsf(r) < 2.0f * FLT_MIN))
        return r;
    /* Near the underflow threshold, round again with 2^24 more exponent range: that is the
     * rounding "with unbounded exponent" whose result decides tininess. Here |a b + c| is
     * tiny, so the smaller factor and c are below 2^104 and the scaling is exact. */
    float s = fabsf(a) <= fabsf(b) ? fmaf(a * 0x1p24f, b, c * 0x1p24f)
                                   : fmaf(a, b * 0x1p24f, c * 0x1p24f);
    return fabsf(s) < 0x1p-102f ? copysignf(0.0f, s) : s * 0x1p-24f;
}

static inline float emu_bf16_as_f32(uint16_t h)
{
    uint32_t w = (uint32_t)h << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

static inline simde__m512 emu_dpbf16_ps(simde__m512 src, simde__m512bh a, simde__m512bh b)
{
    float acc[16];
    uint16_t x[32], y[32];
    simde_mm512_storeu_ps(acc, src);
    memcpy(x, &a, sizeof x);
    memcpy(y, &b, sizeof y);
    for (int i = 0; i < 16; i++) {
        acc[i] = emu_fma_daz_ftz(emu_bf16_as_f32(x[2 * i + 1]), emu_bf16_as_f32(y[2 * i + 1]),
                                 acc[i]);
        acc[i] = emu_fma_daz_ftz(emu_bf16_as_f32(x[2 * i]), emu_bf16_as_f32(y[2 * i]), acc[i]);
    }
    return simde_mm512_loadu_ps(acc);
}

/* Replace whatever SIMDe (or GCC's headers) defined under these names. */
#undef _mm512_cvtps_ph
#undef _mm512_cvtph_ps
#undef _mm256_cmpgt_epi16_mask
#undef _mm256_cmplt_epi16_mask
#undef _mm512_cvtepi32_epi16
#undef _mm512_cvtepu16_epi32
#undef _mm512_maskz_loadu_ps
#undef _mm512_maskz_loadu_epi32
#undef _mm512_mask_loadu_ps
#undef _mm512_cvtepi32_ps
#undef _mm512_srai_epi32
#undef _mm512_cvtps_pd
#undef _mm256_maskz_loadu_epi16
#undef _mm512_mask_storeu_ps
#undef _mm512_mask_storeu_epi32
#undef _mm256_mask_storeu_epi16
#undef _mm512_mask_cvtepi32_storeu_epi16
#undef _mm512_stream_si512
#undef _mm512_dpbf16_ps
#define _mm512_cvtps_ph(a, imm) emu_cvtps_ph(a)     /* callers pass RNE | NO_EXC */
#define _mm512_cvtph_ps(a) emu_cvtph_ps(a)
#define _mm256_cmpgt_epi16_mask(a, b) emu_cmp_epi16_mask((a), (b), 1)
#define _mm256_cmplt_epi16_mask(a, b) emu_cmp_epi16_mask((a), (b), 0)
#define _mm512_cvtepi32_epi16(v) emu_cvtepi32_epi16(v)
#define _mm512_cvtepu16_epi32(v) emu_cvtepu16_epi32(v)
#define _mm512_maskz_loadu_ps(k, p) emu_maskz_loadu_ps((k), (p))
#define _mm512_cvtepi32_ps(v) emu_cvtepi32_ps(v)
#define _mm512_srai_epi32(v, n) emu_srai_epi32((v), (n))
#define _mm512_cvtps_pd(v) emu_cvtps_pd(v)
#define _mm512_mask_loadu_ps(src, k, p) emu_mask_loadu_ps((src), (k), (p))
#define _mm512_maskz_loadu_epi32(k, p) emu_maskz_loadu_epi32((k), (p))
#define _mm256_maskz_loadu_epi16(k, p) emu_maskz_loadu_epi16((k), (p))
#define _mm512_mask_storeu_ps(p, k, v) emu_mask_storeu_ps((p), (k), (v))
#define _mm512_mask_storeu_epi32(p, k, v) emu_mask_storeu_epi32((p), (k), (v))
#define _mm256_mask_storeu_epi16(p, k, v) emu_mask_storeu_epi16((p), (k), (v))
#define _mm512_maskz_loadu_epi16(k, p) emu_maskz_loadu_epi16_512((k), (p))
#define _mm512_mask_storeu_epi16(p, k, v) emu_mask_storeu_epi16_512((p), (k), (v))
#define _mm512_mask_cvtepi32_storeu_epi16(p, k, v) emu_mask_cvtepi32_storeu_epi16((p), (k), (v))
#define _mm512_dpbf16_ps(src, a, b) emu_dpbf16_ps((src), (a), (b))
/* a plain store has the same visible effect as a streaming one */
#define _mm512_stream_si512(p, v) simde_mm512_storeu_si512((void *)(p), (v))

#endif
