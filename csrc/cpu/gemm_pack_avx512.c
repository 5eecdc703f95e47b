/* gemm_pack_avx512.c - bf16-pair panel packing (gemm_ukr.h) with AVX-512F/BW (this file gets
 * -mavx512f -mavx512bw from setup.py): the panels the vdpbf16ps kernel reads, from a bfloat16
 * source, 32 values at a time instead of one. A source contiguous along k (a linear's weight
 * as B, a row-major A) already holds each k pair as one 32-bit word: 16 rows x 16 pairs are
 * loaded and transposed as 32-bit lanes. A source contiguous along the panel gives two rows
 * of the panel per k pair, interleaved by one permute. Masked loads and stores do the k tail,
 * the odd k of the last pair and the zero rows of a partial panel, so the panels are those of
 * gemm_pack.c bit for bit; other formats and layouts go there. */
#include <immintrin.h>

#include "gemm_pack.h"

/* Lanes past n of a 16-bit row (n <= 32) are masked off. */
static inline __mmask32 mask16(int64_t n)
{
    return n >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << n) - 1u);
}

/* r[i] = 16 32-bit values of row i -> r[j] = value j of rows 0..15 (unpacks within 128-bit
 * lanes, then a 4 x 4 transpose of the lanes). */
static inline void transpose16(__m512i *r)
{
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {       /* u[i + c], lane L: value 4L + c, rows i..i+3 */
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
        __m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
        __m512i x2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        __m512i x3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
        r[c] = _mm512_shuffle_i32x4(x0, x2, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(x0, x2, 0xDD);
        r[8 + c] = _mm512_shuffle_i32x4(x1, x3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(x1, x3, 0xDD);
    }
}

/* One panel (n <= w <= 32 rows, the rest zero) of a source contiguous along k: per 32 k,
 * each group of 16 rows is one transpose, stored as (pair, row) words. `ahead` rows of the
 * next panel are prefetched at the same k (they lie a source row apart). */
static void panel_along_k(const mp_pack_src *s, int w, int64_t r0, int64_t n, int64_t k0,
                          int64_t kc, int ahead, uint32_t *dst)
{
    const uint16_t *src = (const uint16_t *)s->base;
    for (int64_t p = 0; p < kc; p += 32) {
        int64_t rem = kc - p < 32 ? kc - p : 32, npairs = (rem + 1) / 2;
        __mmask32 km = mask16(rem);
        for (int i = 0; i < ahead; i++)
            _mm_prefetch((const char *)(src + (r0 + w + i) * s->rs + k0 + p), _MM_HINT_T0);
        for (int g = 0; g < w; g += 16) {
            __m512i r[16];
            for (int i = 0; i < 16; i++)
                r[i] = g + i < n ? _mm512_maskz_loadu_epi16(km, src + (r0 + g + i) * s->rs +
                                                                k0 + p)
                                 : _mm512_setzero_si512();
            transpose16(r);
            int lanes = w - g < 16 ? w - g : 16;
            __mmask16 sm = (__mmask16)((1u << lanes) - 1u);
            uint32_t *d = dst + (p / 2) * w + g;
            for (int64_t q = 0; q < npairs; q++)
                _mm512_mask_storeu_epi32(d + q * w, sm, r[q]);
        }
    }
}

/* Panels of a source contiguous along the panel: per k pair, rows k and k + 1 of the source
 * (w values each) are interleaved into the pair's 2w values. The source streams along rows. */
static void panels_along_rows(const mp_pack_src *s, int w, int64_t r0, int64_t rows,
                              int64_t k0, int64_t kc, uint16_t *dst)
{
    const uint16_t *src = (const uint16_t *)s->base;
    int64_t step = mp_gemm_panel_elems(MP_PANEL_BF16_PAIRS, w, kc);
    const __m512i lo_idx = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10,
                                            41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3,
                                            34, 2, 33, 1, 32, 0);
    const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
    __mmask32 lo_store = mask16(2 * w), hi_store = w > 16 ? mask16(2 * w - 32) : 0;
    for (int64_t p = 0; p < kc; p += 2) {
        const uint16_t *s0 = src + r0 + (k0 + p) * s->ks, *s1 = s0 + s->ks;
        int has1 = p + 1 < kc;
        uint16_t *d = dst + p * w;
        for (int64_t i = 0; i < rows; i += w, s0 += w, s1 += w, d += step) {
            __mmask32 m = mask16(rows - i < w ? rows - i : w);
            __m512i v0 = _mm512_maskz_loadu_epi16(m, s0);
            __m512i v1 = has1 ? _mm512_maskz_loadu_epi16(m, s1) : _mm512_setzero_si512();
            _mm512_mask_storeu_epi16(d, lo_store, _mm512_permutex2var_epi16(v0, lo_idx, v1));
            if (w > 16)
                _mm512_mask_storeu_epi16(d + 32, hi_store,
                                         _mm512_permutex2var_epi16(v0, hi_idx, v1));
        }
    }
}

void mp_gemm_pack_pairs_avx512(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                               int64_t rows, int64_t k0, int64_t kc, void *dst)
{
    if (fmt != MP_PANEL_BF16_PAIRS || s->dtype != MP_DTYPE_BFLOAT16 || w > 32 ||
        (s->rs != 1 && s->ks != 1)) {
        mp_gemm_pack(s, fmt, w, r0, rows, k0, kc, dst);
        return;
    }
    if (s->rs == 1) {
        panels_along_rows(s, w, r0, rows, k0, kc, (uint16_t *)dst);
        return;
    }
    int64_t step = mp_gemm_panel_elems(MP_PANEL_BF16_PAIRS, w, kc) / 2;    /* in pairs */
    for (int64_t i = 0; i < rows; i += w) {
        int64_t n = rows - i < w ? rows - i : w;
        int ahead = i + w < rows ? (int)(rows - i - w < w ? rows - i - w : w) : 0;
        panel_along_k(s, w, r0 + i, n, k0, kc, ahead, (uint32_t *)dst + (i / w) * step);
    }
}
