/* gemm_pack_avx2.c - fp32 panel packing with AVX2 + F16C (this file gets -mavx2 -mf16c -mfma):
 * the same panels as gemm_pack.c's portable code, eight values at a time. A source contiguous
 * along k (a linear's weight as B, a row-major A) is read as 8 x 8 blocks and transposed in
 * registers; one contiguous along the panel is converted and stored directly. fp16 converts
 * with vcvtph2ps and bf16 by widening, both exact, so the panels equal the portable ones bit
 * for bit - except that vcvtph2ps quiets a signalling NaN, which cannot change a product (NaN
 * in, NaN out). Only products less than 8 deep along k go to the portable code. */
#include <immintrin.h>

#include "gemm_pack.h"

/* 8 source values at element offset off -> fp32 lanes. */
static inline __m256 load8(const mp_pack_src *s, int64_t off)
{
    switch (s->dtype) {
    case MP_DTYPE_FLOAT16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)s->base + off)));
    case MP_DTYPE_BFLOAT16: {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)s->base + off));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    default:
        return _mm256_loadu_ps((const float *)s->base + off);
    }
}

static inline void transpose8(__m256 *r)
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Rows r0.. (n of them, n <= 8, the rest zero) x k0..k0+8 -> r[p] = (row 0..7 at k0 + p). */
static inline void block8(const mp_pack_src *s, int64_t r0, int n, int64_t k0, __m256 *r)
{
    for (int i = 0; i < 8; i++)
        r[i] = i < n ? load8(s, (r0 + i) * s->rs + k0) : _mm256_setzero_ps();
    transpose8(r);
}

/* Lanes 0..n-1 of v to d, in at most three stores (no memcpy call: n is 6 for every A
 * panel, and a libc call per 24 bytes cost more than the transpose). */
static inline void store_lanes(float *d, __m256 v, int n)
{
    if (n == 8) {
        _mm256_storeu_ps(d, v);
        return;
    }
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(d, h);
        h = _mm256_extractf128_ps(v, 1);
        d += 4, n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)d, h);
        h = _mm_movehl_ps(h, h);
        d += 2, n -= 2;
    }
    if (n)
        _mm_store_ss(d, h);
}

/* w floats from s to d (w is a panel width: 6, 16, 32 ...), without a libc call. */
static inline void copy_floats(float *d, const float *s, int w)
{
    for (; w >= 8; w -= 8, s += 8, d += 8)
        _mm256_storeu_ps(d, _mm256_loadu_ps(s));
    if (w >= 4) {
        _mm_storeu_ps(d, _mm_loadu_ps(s));
        w -= 4, s += 4, d += 4;
    }
    if (w >= 2) {
        _mm_storel_pi((__m64 *)d, _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)s));
        w -= 2, s += 2, d += 2;
    }
    if (w)
        *d = *s;
}

/* Source rows of a panel with `rows` rows in its group of 8 from row g (0..8; the panel's
 * rows past `rows` are zeros). */
static inline int rows_in(int64_t rows, int g)
{
    return rows - g >= 8 ? 8 : rows - g > 0 ? (int)(rows - g) : 0;
}

/* One panel (`rows` <= w source rows, the rest zeros) of a source contiguous along k, rows
 * in groups of 8; returns the k handled: all of kc when it is 8 or more (the tail re-reads
 * the last 8 k, so a 10-deep fp16 product no longer sends one short conversion call per row
 * to the portable code), else 0. `ahead` rows after the panel (the next panel's, all inside
 * the block being packed) are prefetched at the same k: the rows lie a whole source row
 * apart, beyond the hardware prefetcher, and waiting for them took most of the packing time
 * of a row-major A (2048 x 2048 bf16: 6% of the product). */
static int64_t panel_along_k(const mp_pack_src *s, int w, int64_t r0, int64_t rows,
                             int64_t k0, int64_t kc, int ahead, float *dst)
{
    int64_t p = 0;
    size_t esz = mp_dtype_size(s->dtype);
    __m256 r[8];
    for (; p + 8 <= kc; p += 8) {
        float *d = dst + p * w;
        for (int i = 0; i < ahead; i++)
            _mm_prefetch(s->base + ((r0 + w + i) * s->rs + k0 + p) * (int64_t)esz,
                         _MM_HINT_T0);
        for (int g = 0; g < w; g += 8) {
            int lanes = w - g < 8 ? w - g : 8;
            block8(s, r0 + g, rows_in(rows, g), k0 + p, r);
            for (int q = 0; q < 8; q++)
                store_lanes(d + q * w + g, r[q], lanes);
        }
    }
    if (p < kc && p >= 8) {     /* the last kc % 8 k: the 8 k ending there, read again */
        int rem = (int)(kc - p);
        float *d = dst + p * w;
        for (int g = 0; g < w; g += 8) {
            int lanes = w - g < 8 ? w - g : 8;
            block8(s, r0 + g, rows_in(rows, g), k0 + kc - 8, r);
            for (int q = 0; q < rem; q++)
                store_lanes(d + q * w + g, r[8 - rem + q], lanes);
        }
        p = kc;
    }
    return p;
}

/* npan full panels of a source contiguous along the panel, k by k: each k reads one
 * contiguous run of the source (a row of B), so the reads stream instead of striding. Widths
 * that are a multiple of 8 convert straight into the panels; fp16 and bf16 runs of other
 * widths are converted in one call per RUN values, then dealt out. */
#define RUN 1536
static void panels_along_rows(const mp_pack_src *s, int w, int64_t r0, int64_t npan,
                              int64_t k0, int64_t kc, float *dst)
{
    int64_t step = (int64_t)w * kc, per = RUN / w;
    float run[RUN];
    for (int64_t p = 0; p < kc; p++) {
        int64_t off = r0 + (k0 + p) * s->ks;
        float *d = dst + p * w;
        if (w % 8 == 0) {           /* B panels: convert straight into the panel */
            for (int64_t i = 0; i < npan; i++, off += w, d += step)
                for (int v = 0; v < w; v += 8)
                    _mm256_storeu_ps(d + v, load8(s, off + v));
            continue;
        }
        if (s->dtype == MP_DTYPE_FLOAT32) {
            for (int64_t i = 0; i < npan; i++, off += w, d += step)
                copy_floats(d, (const float *)s->base + off, w);
            continue;
        }
        for (int64_t i0 = 0; i0 < npan; i0 += per) {
            int64_t np = npan - i0 < per ? npan - i0 : per;
            if (s->dtype == MP_DTYPE_FLOAT16)
                s->cvt->f16_to_f32((const mp_half *)s->base + off + i0 * w, run,
                                   (size_t)(np * w));
            else
                s->cvt->bf16_to_f32((const mp_bf16 *)s->base + off + i0 * w, run,
                                    (size_t)(np * w));
            for (int64_t i = 0; i < np; i++)
                copy_floats(d + (i0 + i) * step, run + i * w, w);
        }
    }
}

/* The last, partial panel (rows < w) of a source contiguous along the panel: per k, the
 * rows' values in 8-value steps - the last step (rows >= 8) re-reading the 8 ending at the
 * panel's last row, fewer than 8 through a zeroed buffer - then zeros up to w. Before, one
 * conversion call per k: a 10-row panel of a 256-deep fp16 product made 256 of them. */
static void partial_along_rows(const mp_pack_src *s, int w, int64_t r0, int64_t rows,
                               int64_t k0, int64_t kc, float *dst)
{
    size_t esz = mp_dtype_size(s->dtype);
    for (int64_t p = 0; p < kc; p++) {
        int64_t off = r0 + (k0 + p) * s->ks;
        float *d = dst + p * w;
        int64_t v = 0;
        for (; v + 8 <= rows; v += 8)
            _mm256_storeu_ps(d + v, load8(s, off + v));
        if (v < rows && rows >= 8) {
            _mm256_storeu_ps(d + rows - 8, load8(s, off + rows - 8));
        } else if (v < rows) {
            _Alignas(32) char buf[8 * sizeof(float)] = {0};
            const char *src = s->base + off * (int64_t)esz;
            for (size_t b = 0; b < (size_t)rows * esz; b++)
                buf[b] = src[b];
            mp_pack_src t = *s;
            t.base = buf;
            store_lanes(d, load8(&t, 0), (int)rows);    /* the panel may be under 8 wide */
        }
        for (int64_t q = rows; q < w; q++)
            d[q] = 0.0f;
    }
}

void mp_gemm_pack_avx2(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                       int64_t rows, int64_t k0, int64_t kc, void *dst)
{
    if (fmt != MP_PANEL_F32 || (s->rs != 1 && s->ks != 1)) {
        mp_gemm_pack(s, fmt, w, r0, rows, k0, kc, dst);
        return;
    }
    int64_t full = rows / w * w;
    if (s->rs == 1) {
        panels_along_rows(s, w, r0, full / w, k0, kc, (float *)dst);
        if (full < rows)
            partial_along_rows(s, w, r0 + full, rows - full, k0, kc, (float *)dst + full * kc);
        return;
    }
    for (int64_t i = 0; i < rows; i += w) {
        int64_t n = rows - i < w ? rows - i : w;
        float *d = (float *)dst + i * kc;
        int ahead = i + w < rows ? (int)(rows - i - w < w ? rows - i - w : w) : 0;
        if (panel_along_k(s, w, r0 + i, n, k0, kc, ahead, d) < kc)   /* kc < 8: portable */
            mp_gemm_pack(s, fmt, w, r0 + i, n, k0, kc, d);
    }
}
