/* cast_avx512.c - fp32 <-> fp16/bf16 conversion kernels for AVX-512 F/BW/VL (16 lanes).
 * The algorithm of cast_avx2.c on 512-bit registers, so the same bit-exactness argument holds
 * (cast_check.c compares every input pattern with scalar); tails are masked vector ops
 * instead of scalar loops. Keep the two files in step. Large outputs are written with
 * non-temporal stores and the source is prefetched (cast_simd.h).
 * Also used by the AVX512_BF16 level (cast_avx512bf16.c says why). */
#include <immintrin.h>

#include "cast_simd.h"
#include "dispatch.h"

#define MP_INLINE static inline __attribute__((always_inline))

/* Explicit round-to-nearest-even: vcvtps2ph then ignores MXCSR's rounding mode. FTZ does not
 * apply to it, and DAZ can only turn fp32 subnormals (which round to +-0 in fp16 anyway) into
 * +-0, so flags set by other libraries cannot change a result (checked on Zen 3). */
#define F16_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* `nt` is a compile-time constant at every call site, so each loop gets one kind of store. */
MP_INLINE void store512(void *p, __m512i v, int nt)
{
    if (nt)
        _mm512_stream_si512((__m512i *)p, v);
    else
        _mm512_storeu_si512(p, v);
}

MP_INLINE void prefetch(const void *p)
{
    _mm_prefetch((const char *)p + MP_CAST_PREFETCH_BYTES, _MM_HINT_T0);
}

/* Lanes 0 .. r-1 of a tail of r < 16 elements. */
MP_INLINE __mmask16 tail_mask(size_t r)
{
    return (__mmask16)((1u << r) - 1u);
}

MP_INLINE __m512i join256(__m256i lo, __m256i hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* ---- fp32 -> fp16 ----
 * vcvtps2ph gives exactly mp_f32_to_half, NaNs included: it quiets a NaN and keeps its top ten
 * payload bits, as the scalar code does, so no fix-up is needed. */

MP_INLINE void f32_to_f16_run(const float *src, mp_half *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 32 <= n; i += 32) {
        if (i < pf_end) {
            prefetch(src + i);
            prefetch(src + i + 16);
        }
        __m256i a = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), F16_RNE);
        __m256i b = _mm512_cvtps_ph(_mm512_loadu_ps(src + i + 16), F16_RNE);
        store512(dst + i, join256(a, b), nt);
    }
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), F16_RNE));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), F16_RNE);
        _mm256_mask_storeu_epi16(dst + i, m, h);
    }
}

/* ---- fp16 -> fp32 ----
 * vcvtph2ps is exact for numbers and inf, but it sets the quiet bit of a signalling NaN;
 * mp_half_to_f32 (like NumPy's astype(float32)) keeps the bits as they are. Lanes that held a
 * signalling NaN (exponent all ones, quiet bit clear, payload non-zero: 0x7c00 < |h| < 0x7e00)
 * get that bit flipped back. (cast_avx2.c skips the fix-up when no lane needs it; here it is
 * a single masked xor, no dearer than the test would be.) */

MP_INLINE __m512 f16x16_to_f32(__m256i h)
{
    __m256i a = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    __mmask16 snan = _mm256_cmpgt_epi16_mask(a, _mm256_set1_epi16(0x7c00)) &
                     _mm256_cmplt_epi16_mask(a, _mm256_set1_epi16(0x7e00));
    __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
    return _mm512_castsi512_ps(_mm512_mask_xor_epi32(f, snan, f, _mm512_set1_epi32(0x00400000)));
}

MP_INLINE void f16_to_f32_run(const mp_half *src, float *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 32 <= n; i += 32) {
        if (i < pf_end)
            prefetch(src + i);
        __m512 a = f16x16_to_f32(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m512 b = f16x16_to_f32(_mm256_loadu_si256((const __m256i *)(src + i + 16)));
        store512(dst + i, _mm512_castps_si512(a), nt);
        store512(dst + i + 16, _mm512_castps_si512(b), nt);
    }
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, f16x16_to_f32(_mm256_loadu_si256((const __m256i *)(src + i))));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, m, f16x16_to_f32(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

/* ---- fp32 -> bf16 ----
 * The scalar algorithm on 16 lanes: add 0x7fff plus the lowest kept bit and keep the top half
 * (no lane can wrap: the largest non-NaN pattern is 0xff800000); NaN lanes instead take
 * (bits >> 16) | 0x0040. Result in the low 16 bits of each 32-bit lane. */

MP_INLINE __m512i f32x16_to_bf16_epi32(__m512i u)
{
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i bias = _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)),
                                    _mm512_set1_epi32(0x7fff));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    /* unordered with itself: exactly the NaNs (DAZ cannot turn a NaN into anything else) */
    __m512 f = _mm512_castsi512_ps(u);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(rounded, nan, hi, _mm512_set1_epi32(0x0040));
}

MP_INLINE void f32_to_bf16_run(const float *src, mp_bf16 *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 32 <= n; i += 32) {
        if (i < pf_end) {
            prefetch(src + i);
            prefetch(src + i + 16);
        }
        __m512i a = f32x16_to_bf16_epi32(_mm512_loadu_si512(src + i));
        __m512i b = f32x16_to_bf16_epi32(_mm512_loadu_si512(src + i + 16));
        /* vpmovdw keeps the low 16 bits of each lane, in order (values are <= 0xffff) */
        store512(dst + i, join256(_mm512_cvtepi32_epi16(a), _mm512_cvtepi32_epi16(b)), nt);
    }
    for (; i + 16 <= n; i += 16) {
        __m512i a = f32x16_to_bf16_epi32(_mm512_loadu_si512(src + i));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtepi32_epi16(a));
    }
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        __m512i a = f32x16_to_bf16_epi32(_mm512_maskz_loadu_epi32(m, src + i));
        _mm512_mask_cvtepi32_storeu_epi16(dst + i, m, a);
    }
}

/* ---- bf16 -> fp32: the 16 bits become the top half ---- */

MP_INLINE __m512i bf16x16_to_f32_epi32(__m256i h)
{
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
}

MP_INLINE void bf16_to_f32_run(const mp_bf16 *src, float *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 32 <= n; i += 32) {
        if (i < pf_end)
            prefetch(src + i);
        __m512i a = bf16x16_to_f32_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m512i b = bf16x16_to_f32_epi32(_mm256_loadu_si256((const __m256i *)(src + i + 16)));
        store512(dst + i, a, nt);
        store512(dst + i + 16, b, nt);
    }
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_si512(dst + i,
                            bf16x16_to_f32_epi32(_mm256_loadu_si256((const __m256i *)(src + i))));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        __m512i a = bf16x16_to_f32_epi32(_mm256_maskz_loadu_epi16(m, src + i));
        _mm512_mask_storeu_epi32(dst + i, m, a);
    }
}

/* The exported kernels: plain stores for outputs that fit in cache; otherwise a plain-store
 * head up to a 64-byte boundary of dst, then streaming stores in the main loop. */
#define MP_CAST_KERNEL(name, src_t, dst_t)                                               \
    static void name##_avx512(const src_t *src, dst_t *dst, size_t n)                    \
    {                                                                                    \
        size_t head;                                                                     \
        if (!mp_cast_stream_head(dst, n, sizeof *dst, 64, &head)) {                      \
            name##_run(src, dst, n, 0);                                                  \
            return;                                                                      \
        }                                                                                \
        name##_run(src, dst, head, 0);                                                   \
        name##_run(src + head, dst + head, n - head, 1);                                 \
        _mm_sfence();                                                                    \
    }

MP_CAST_KERNEL(f32_to_f16, float, mp_half)
MP_CAST_KERNEL(f16_to_f32, mp_half, float)
MP_CAST_KERNEL(f32_to_bf16, float, mp_bf16)
MP_CAST_KERNEL(bf16_to_f32, mp_bf16, float)

void mp_cpu_fill_avx512(mp_cpu_kernels *k)
{
    k->f32_to_f16 = f32_to_f16_avx512;
    k->f16_to_f32 = f16_to_f32_avx512;
    k->f32_to_bf16 = f32_to_bf16_avx512;
    k->bf16_to_f32 = bf16_to_f32_avx512;
}
