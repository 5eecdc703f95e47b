/* im2col.c - im2col / col2im and the padding index maps of im2col.h. The gather copies bits
 * (2- or 4-byte elements), so fp32, fp16 and bf16 share one loop; col2im accumulates fp32.
 * Columns are written row by row (one kernel tap of one channel per row), the order the
 * GEMM reads them in. */
#include "im2col.h"

#include <string.h>

static int64_t map_one(int64_t q, int64_t n, int mode)
{
    if (q >= 0 && q < n)
        return q;
    switch (mode) {
    case MP_PAD_REFLECT:
        if (n == 1)
            return 0;
        while (q < 0 || q >= n)          /* one reflection suffices when pad < n */
            q = q < 0 ? -q : 2 * (n - 1) - q;
        return q;
    case MP_PAD_REPLICATE:
        return q < 0 ? 0 : n - 1;
    case MP_PAD_CIRCULAR:
        q %= n;
        return q < 0 ? q + n : q;
    default:
        return -1;
    }
}

void mp_conv_index_map(int64_t n_in, int64_t n_out, int64_t taps, int64_t stride,
                       int64_t pad_lo, int64_t dilation, int mode, int64_t *map)
{
    for (int64_t k = 0; k < taps; k++)
        for (int64_t o = 0; o < n_out; o++)
            map[k * n_out + o] = n_in > 0 ? map_one(o * stride - pad_lo + k * dilation, n_in,
                                                    mode) : -1;
}

#define DEFINE_IM2COL(name, T)                                                               \
    static void name(const mp_im2col_desc *d, const T *x, T *cols)                           \
    {                                                                                        \
        int64_t oh = d->oh, ow = d->ow;                                                      \
        T *dst = cols;                                                                       \
        for (int64_t c = 0; c < d->c; c++)                                                   \
            for (int64_t i = 0; i < d->kh; i++)                                              \
                for (int64_t j = 0; j < d->kw; j++) {                                        \
                    const int64_t *wm = d->wmap + j * ow;                                    \
                    for (int64_t y = 0; y < oh; y++, dst += ow) {                            \
                        int64_t r = d->hmap[i * oh + y];                                     \
                        if (r < 0) {                                                         \
                            memset(dst, 0, sizeof(T) * (size_t)ow);                          \
                            continue;                                                        \
                        }                                                                    \
                        const T *src = x + c * d->sc + r * d->sh;                            \
                        for (int64_t o = 0; o < ow; o++)                                     \
                            dst[o] = wm[o] >= 0 ? src[wm[o] * d->sw] : (T)0;                 \
                    }                                                                        \
                }                                                                            \
    }

DEFINE_IM2COL(im2col_u16, uint16_t)
DEFINE_IM2COL(im2col_u32, uint32_t)

void mp_im2col(const mp_im2col_desc *d, size_t esize, const void *x, void *cols)
{
    if (esize == 2)
        im2col_u16(d, x, cols);
    else
        im2col_u32(d, x, cols);
}

void mp_col2im_f32(const mp_im2col_desc *d, const float *cols, float *dx)
{
    int64_t oh = d->oh, ow = d->ow, plane = d->h * d->w;
    const float *src = cols;
    for (int64_t c = 0; c < d->c; c++)
        for (int64_t i = 0; i < d->kh; i++)
            for (int64_t j = 0; j < d->kw; j++) {
                const int64_t *wm = d->wmap + j * ow;
                for (int64_t y = 0; y < oh; y++, src += ow) {
                    int64_t r = d->hmap[i * oh + y];
                    if (r < 0)
                        continue;
                    float *row = dx + c * plane + r * d->w;
                    for (int64_t o = 0; o < ow; o++)
                        if (wm[o] >= 0)
                            row[wm[o]] += src[o];
                }
            }
}
