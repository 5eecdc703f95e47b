/* im2col.h - the lowering of a convolution to a matrix product, on raw pointers: im2col
 * gathers one image (C, H, W, any strides) into a (C*KH*KW, OH*OW) column matrix, col2im
 * adds such a matrix back into a contiguous fp32 image (the input gradient). Padding is an
 * index map per spatial dim (mp_conv_index_map: zeros, reflect, replicate or circular), so
 * every padding mode and asymmetric padding cost the same. No tensors, no errors here: the
 * caller (csrc/core/ops/conv_run.c) owns shapes, buffers and threads. */
#ifndef MP_CPU_IM2COL_H
#define MP_CPU_IM2COL_H

#include <stddef.h>
#include <stdint.h>

enum { MP_PAD_ZEROS = 0, MP_PAD_REFLECT, MP_PAD_REPLICATE, MP_PAD_CIRCULAR };

/* map[k * n_out + o] = the input index read by kernel tap k at output o along one dim of
 * n_in elements (-1: a zero), for taps at o * stride - pad_lo + k * dilation. */
void mp_conv_index_map(int64_t n_in, int64_t n_out, int64_t taps, int64_t stride,
                       int64_t pad_lo, int64_t dilation, int mode, int64_t *map);

typedef struct {
    int64_t c, h, w;            /* channels and spatial size of one input image */
    int64_t sc, sh, sw;         /* its strides, in elements (im2col only) */
    int64_t kh, kw, oh, ow;     /* kernel taps and output size */
    const int64_t *hmap;        /* kh * oh input rows, -1 for padding */
    const int64_t *wmap;        /* kw * ow input columns, -1 for padding */
} mp_im2col_desc;

/* cols[(c*kh + i)*kw + j][oh*ow] = x[c, hmap[i], wmap[j]] (0 where a map says -1), for
 * elements of esize bytes (2 or 4); the bits are copied, so any float dtype works. */
void mp_im2col(const mp_im2col_desc *d, size_t esize, const void *x, void *cols);
/* dx[c, h, w] (contiguous) += every entry of cols that im2col would have read from there. */
void mp_col2im_f32(const mp_im2col_desc *d, const float *cols, float *dx);

#endif
