/* shim.h - test-only: lets csrc/cpu/cast_avx512.c compile and run on a CPU without AVX-512.
 * Included before the kernel file (cast_avx512_emu.c): SIMDe's portable versions stand in for the
 * AVX-512 intrinsics, and the ones SIMDe 0.7 lacks are written out below as lane loops. The
 * fp16 conversions run on the host's F16C, 8 lanes at a time (the EVEX forms are specified to
 * convert exactly as the VEX ones), so the NaN behaviour under test is the hardware's. */
#ifndef MP_AVX512_EMU_SHIM_H
#define MP_AVX512_EMU_SHIM_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <immintrin.h>
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

/* Replace whatever SIMDe (or GCC's headers) defined under these names. */
#undef _mm512_cvtps_ph
#undef _mm512_cvtph_ps
#undef _mm256_cmpgt_epi16_mask
#undef _mm256_cmplt_epi16_mask
#undef _mm512_cvtepi32_epi16
#undef _mm512_cvtepu16_epi32
#undef _mm512_maskz_loadu_ps
#undef _mm512_maskz_loadu_epi32
#undef _mm256_maskz_loadu_epi16
#undef _mm512_mask_storeu_ps
#undef _mm512_mask_storeu_epi32
#undef _mm256_mask_storeu_epi16
#undef _mm512_mask_cvtepi32_storeu_epi16
#undef _mm512_stream_si512
#define _mm512_cvtps_ph(a, imm) emu_cvtps_ph(a)     /* callers pass RNE | NO_EXC */
#define _mm512_cvtph_ps(a) emu_cvtph_ps(a)
#define _mm256_cmpgt_epi16_mask(a, b) emu_cmp_epi16_mask((a), (b), 1)
#define _mm256_cmplt_epi16_mask(a, b) emu_cmp_epi16_mask((a), (b), 0)
#define _mm512_cvtepi32_epi16(v) emu_cvtepi32_epi16(v)
#define _mm512_cvtepu16_epi32(v) emu_cvtepu16_epi32(v)
#define _mm512_maskz_loadu_ps(k, p) emu_maskz_loadu_ps((k), (p))
#define _mm512_maskz_loadu_epi32(k, p) emu_maskz_loadu_epi32((k), (p))
#define _mm256_maskz_loadu_epi16(k, p) emu_maskz_loadu_epi16((k), (p))
#define _mm512_mask_storeu_ps(p, k, v) emu_mask_storeu_ps((p), (k), (v))
#define _mm512_mask_storeu_epi32(p, k, v) emu_mask_storeu_epi32((p), (k), (v))
#define _mm256_mask_storeu_epi16(p, k, v) emu_mask_storeu_epi16((p), (k), (v))
#define _mm512_mask_cvtepi32_storeu_epi16(p, k, v) emu_mask_cvtepi32_storeu_epi16((p), (k), (v))
/* a plain store has the same visible effect as a streaming one */
#define _mm512_stream_si512(p, v) simde_mm512_storeu_si512((void *)(p), (v))

#endif
