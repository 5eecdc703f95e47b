/* gemm_pack.c - panel packing for the GEMM (see gemm_pack.h). A run that is contiguous in the
 * source is converted with the dispatch table's vector casts: along the panel (rs == 1) one run
 * per k lands directly in the panel; along k (ks == 1) one run per row goes through a small
 * buffer and is scattered with the panel's stride. Padding rows and k are zero. */
#include "gemm_pack.h"

#include <string.h>

#define PACK_RUN 256        /* k per conversion run through the stack buffer */

int64_t mp_gemm_panel_elems(mp_panel_format fmt, int w, int64_t kc)
{
    switch (fmt) {
    case MP_PANEL_BF16_PAIRS: return (int64_t)w * ((kc + 1) & ~(int64_t)1);
    case MP_PANEL_BF16_PAIRS32:
    case MP_PANEL_BF16_ROWS32: return (int64_t)w * ((kc + 31) & ~(int64_t)31);
    default: return (int64_t)w * kc;
    }
}

size_t mp_gemm_panel_elem_size(mp_panel_format fmt)
{
    return fmt == MP_PANEL_F32 ? 4 : 2;
}

/* n contiguous source elements starting at element offset off -> fp32. */
static void to_f32(const mp_pack_src *s, int64_t off, float *dst, int64_t n)
{
    switch (s->dtype) {
    case MP_DTYPE_FLOAT16:
        s->cvt->f16_to_f32((const mp_half *)s->base + off, dst, (size_t)n);
        break;
    case MP_DTYPE_BFLOAT16:
        s->cvt->bf16_to_f32((const mp_bf16 *)s->base + off, dst, (size_t)n);
        break;
    default:
        memcpy(dst, (const float *)s->base + off, sizeof(float) * (size_t)n);
        break;
    }
}

/* One fp32 panel: rows [r0, r0 + rows), rows <= w. */
static void pack_f32_panel(const mp_pack_src *s, int w, int64_t r0, int64_t rows, int64_t k0,
                           int64_t kc, float *restrict dst)
{
    if (s->rs == 1 || rows == 1) {
        for (int64_t p = 0; p < kc; p++) {
            float *row = dst + p * w;
            to_f32(s, r0 * s->rs + (k0 + p) * s->ks, row, rows);
            for (int64_t r = rows; r < w; r++)
                row[r] = 0.0f;
        }
        return;
    }
    float buf[PACK_RUN];
    for (int64_t q0 = 0; q0 < kc; q0 += PACK_RUN) {
        int64_t run = kc - q0 < PACK_RUN ? kc - q0 : PACK_RUN;
        float *base = dst + q0 * w;
        for (int64_t r = 0; r < rows; r++) {
            const float *src = buf;
            int64_t off = (r0 + r) * s->rs + (k0 + q0) * s->ks;
            if (s->dtype == MP_DTYPE_FLOAT32)
                src = (const float *)s->base + off;
            else
                to_f32(s, off, buf, run);
            for (int64_t p = 0; p < run; p++)
                base[p * w + r] = src[p];
        }
        for (int64_t r = rows; r < w; r++)
            for (int64_t p = 0; p < run; p++)
                base[p * w + r] = 0.0f;
    }
}

/* One bf16-pair panel: (k pair q, row r) -> dst[(q * w + r) * 2 + (k & 1)]. */
static void pack_pairs_panel(const mp_pack_src *s, int w, int64_t r0, int64_t rows, int64_t k0,
                             int64_t kc, uint16_t *restrict dst)
{
    const uint16_t *src = (const uint16_t *)s->base;
    int64_t kp = (kc + 1) & ~(int64_t)1;
    for (int64_t p = 0; p < kp; p++) {
        uint16_t *col = dst + (p >> 1) * w * 2 + (p & 1);
        for (int64_t r = 0; r < w; r++)
            col[r * 2] = p < kc && r < rows ? src[(r0 + r) * s->rs + (k0 + p) * s->ks] : 0;
    }
}

/* One rows32 panel: (k chunk c, row r, k % 32) -> dst[(c * w + r) * 32 + k % 32]. */
static void pack_rows32_panel(const mp_pack_src *s, int w, int64_t r0, int64_t rows, int64_t k0,
                              int64_t kc, uint16_t *restrict dst)
{
    const uint16_t *src = (const uint16_t *)s->base;
    int64_t chunks = (kc + 31) / 32;
    for (int64_t c = 0; c < chunks; c++)
        for (int64_t r = 0; r < w; r++) {
            uint16_t *out = dst + (c * w + r) * 32;
            int64_t n = r < rows ? (kc - c * 32 < 32 ? kc - c * 32 : 32) : 0;
            const uint16_t *in = src + (r0 + r) * s->rs + (k0 + c * 32) * s->ks;
            if (s->ks == 1 && n > 0)
                memcpy(out, in, sizeof *out * (size_t)n);
            else
                for (int64_t q = 0; q < n; q++)
                    out[q] = in[q * s->ks];
            for (int64_t q = n; q < 32; q++)
                out[q] = 0;
        }
}

/* The pairs of one panel, then zero k pairs up to the next multiple of 32 k. */
void mp_gemm_pad_pairs32(int w, int64_t kc, uint16_t *panel)
{
    int64_t have = (int64_t)w * ((kc + 1) & ~(int64_t)1), want = mp_gemm_panel_elems(
        MP_PANEL_BF16_PAIRS32, w, kc);
    memset(panel + have, 0, sizeof *panel * (size_t)(want - have));
}

void mp_gemm_pack(const mp_pack_src *s, mp_panel_format fmt, int w, int64_t r0,
                  int64_t rows, int64_t k0, int64_t kc, void *dst)
{
    int64_t step = mp_gemm_panel_elems(fmt, w, kc);
    for (int64_t i = 0; i < rows; i += w) {
        int64_t n = rows - i < w ? rows - i : w;
        uint16_t *d16 = (uint16_t *)dst + (i / w) * step;
        if (fmt == MP_PANEL_BF16_PAIRS) {
            pack_pairs_panel(s, w, r0 + i, n, k0, kc, d16);
        } else if (fmt == MP_PANEL_BF16_PAIRS32) {
            pack_pairs_panel(s, w, r0 + i, n, k0, kc, d16);
            mp_gemm_pad_pairs32(w, kc, d16);
        } else if (fmt == MP_PANEL_BF16_ROWS32) {
            pack_rows32_panel(s, w, r0 + i, n, k0, kc, d16);
        } else {
            pack_f32_panel(s, w, r0 + i, n, k0, kc, (float *)dst + (i / w) * step);
        }
    }
}
