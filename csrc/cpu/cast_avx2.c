/* cast_avx2.c - fp32 <-> fp16/bf16 conversion kernels for AVX2 + F16C (8 lanes).
 * Bit-identical to cast_scalar.c for every input (cast_check.c checks all patterns): F16C does
 * the fp16 rounding, bf16 rounds with integer ops, and lanes where the hardware's NaN differs
 * from mp_half.h are patched. Tails (< 8 elements) use the scalar per-element functions.
 * cast_avx512.c is the same algorithm on 16 lanes with masked tails: keep the two in step.
 * Large outputs are written with non-temporal stores; the source is prefetched (cast_simd.h). */
#include <immintrin.h>

#include "cast_simd.h"
#include "dispatch.h"

#define MP_INLINE static inline __attribute__((always_inline))

/* Explicit round-to-nearest-even: vcvtps2ph then ignores MXCSR's rounding mode. FTZ does not
 * apply to it, and DAZ can only turn fp32 subnormals (which round to +-0 in fp16 anyway) into
 * +-0, so flags set by other libraries cannot change a result (checked on Zen 3). */
#define F16_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* `nt` is a compile-time constant at every call site, so each loop gets one kind of store. */
MP_INLINE void store256(void *p, __m256i v, int nt)
{
    if (nt)
        _mm256_stream_si256((__m256i *)p, v);
    else
        _mm256_storeu_si256((__m256i *)p, v);
}

MP_INLINE void prefetch(const void *p)
{
    _mm_prefetch((const char *)p + MP_CAST_PREFETCH_BYTES, _MM_HINT_T0);
}

/* ---- fp32 -> fp16 ----
 * vcvtps2ph gives exactly mp_f32_to_half, NaNs included: it quiets a NaN and keeps its top ten
 * payload bits, as the scalar code does, so no fix-up is needed. */

MP_INLINE void f32_to_f16_run(const float *src, mp_half *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 16 <= n; i += 16) {
        if (i < pf_end)
            prefetch(src + i);
        __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), F16_RNE);
        __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8), F16_RNE);
        store256(dst + i, _mm256_set_m128i(b, a), nt);
    }
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), F16_RNE));
    for (; i < n; i++)
        dst[i] = mp_f32_to_half(src[i]);
}

/* ---- fp16 -> fp32 ----
 * vcvtph2ps is exact for numbers and inf, but it sets the quiet bit of a signalling NaN;
 * mp_half_to_f32 (like NumPy's astype(float32)) keeps the bits as they are. Lanes that held a
 * signalling NaN (exponent all ones, quiet bit clear, payload non-zero: 0x7c00 < |h| < 0x7e00)
 * get that bit flipped back. */

/* 0xffff in the 16-bit lanes that hold a signalling NaN. */
MP_INLINE __m128i f16x8_snan(__m128i h)
{
    __m128i a = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    return _mm_and_si128(_mm_cmpgt_epi16(a, _mm_set1_epi16(0x7c00)),
                         _mm_cmplt_epi16(a, _mm_set1_epi16(0x7e00)));
}

MP_INLINE __m256i f16x16_snan(__m256i h)
{
    __m256i a = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    return _mm256_and_si256(_mm256_cmpgt_epi16(a, _mm256_set1_epi16(0x7c00)),
                            _mm256_cmpgt_epi16(_mm256_set1_epi16(0x7e00), a));
}

/* Clears the quiet bit vcvtph2ps set in the fp32 lanes whose fp16 input was a signalling NaN. */
MP_INLINE __m256 unquiet(__m256 f, __m128i snan)
{
    __m256i fix = _mm256_and_si256(_mm256_cvtepi16_epi32(snan), _mm256_set1_epi32(0x00400000));
    return _mm256_xor_ps(f, _mm256_castsi256_ps(fix));
}

MP_INLINE __m256 f16x8_to_f32(__m128i h)
{
    return unquiet(_mm256_cvtph_ps(h), f16x8_snan(h));
}

MP_INLINE void f16_to_f32_run(const mp_half *src, float *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 16 <= n; i += 16) {
        if (i < pf_end)
            prefetch(src + i);
        __m256i h = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256 a = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
        __m256 b = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
        /* signalling NaNs are rare: one test per 16 lanes instead of the fix-up every time
         * (the fix-up is most of the work when the data is in cache) */
        __m256i snan = f16x16_snan(h);
        if (!_mm256_testz_si256(snan, snan)) {
            a = unquiet(a, _mm256_castsi256_si128(snan));
            b = unquiet(b, _mm256_extracti128_si256(snan, 1));
        }
        store256(dst + i, _mm256_castps_si256(a), nt);
        store256(dst + i + 8, _mm256_castps_si256(b), nt);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, f16x8_to_f32(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = mp_half_to_f32(src[i]);
}

/* ---- fp32 -> bf16 ----
 * The scalar algorithm on 8 lanes: add 0x7fff plus the lowest kept bit and keep the top half
 * (no lane can wrap: the largest non-NaN pattern is 0xff800000); NaN lanes instead take
 * (bits >> 16) | 0x0040. Result in the low 16 bits of each 32-bit lane. */

MP_INLINE __m256i f32x8_to_bf16_epi32(__m256i u)
{
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i bias = _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)),
                                    _mm256_set1_epi32(0x7fff));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    /* unordered with itself: exactly the NaNs (DAZ cannot turn a NaN into anything else) */
    __m256 f = _mm256_castsi256_ps(u);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
    return _mm256_blendv_epi8(rounded, quiet, nan);
}

MP_INLINE void f32_to_bf16_run(const float *src, mp_bf16 *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 16 <= n; i += 16) {
        if (i < pf_end)
            prefetch(src + i);
        __m256i a = f32x8_to_bf16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m256i b = f32x8_to_bf16_epi32(_mm256_loadu_si256((const __m256i *)(src + i + 8)));
        /* packus works per 128-bit half (values are <= 0xffff, so it never saturates):
         * [a0-3 b0-3 | a4-7 b4-7] -> reorder the 64-bit quarters to [a0-3 a4-7 b0-3 b4-7] */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), _MM_SHUFFLE(3, 1, 2, 0));
        store256(dst + i, p, nt);
    }
    for (; i + 8 <= n; i += 8) {
        __m256i a = f32x8_to_bf16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        _mm_storeu_si128((__m128i *)(dst + i), p);
    }
    for (; i < n; i++)
        dst[i] = mp_f32_to_bf16(src[i]);
}

/* ---- bf16 -> fp32: the 16 bits become the top half ---- */

MP_INLINE __m256i bf16x8_to_f32_epi32(const mp_bf16 *p)
{
    return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16);
}

MP_INLINE void bf16_to_f32_run(const mp_bf16 *src, float *dst, size_t n, int nt)
{
    size_t i = 0, pf_end = mp_cast_prefetch_end(n, sizeof *src);
    for (; i + 16 <= n; i += 16) {
        if (i < pf_end)
            prefetch(src + i);
        store256(dst + i, bf16x8_to_f32_epi32(src + i), nt);
        store256(dst + i + 8, bf16x8_to_f32_epi32(src + i + 8), nt);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_si256((__m256i *)(dst + i), bf16x8_to_f32_epi32(src + i));
    for (; i < n; i++)
        dst[i] = mp_bf16_to_f32(src[i]);
}

/* The exported kernels: plain stores for outputs that fit in cache; otherwise a plain-store
 * head up to a 32-byte boundary of dst, then streaming stores in the main loop. */
#define MP_CAST_KERNEL(name, src_t, dst_t)                                               \
    static void name##_avx2(const src_t *src, dst_t *dst, size_t n)                      \
    {                                                                                    \
        size_t head;                                                                     \
        if (!mp_cast_stream_head(dst, n, sizeof *dst, 32, &head)) {                      \
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

void mp_cpu_fill_avx2(mp_cpu_kernels *k)
{
    k->f32_to_f16 = f32_to_f16_avx2;
    k->f16_to_f32 = f16_to_f32_avx2;
    k->f32_to_bf16 = f32_to_bf16_avx2;
    k->bf16_to_f32 = bf16_to_f32_avx2;
}
