/* conv_core.h - the arithmetic of conv1d/conv2d (ops_conv.c checks the arguments and records
 * autograd): per image, im2col (csrc/cpu/im2col.h) then one packed GEMM per group,
 *     Y[n, g] (O/G, OH*OW) = W[g] (O/G, K) @ cols[n, g] (K, OH*OW),   K = C/G * KH * KW,
 * and for backward dcols = W[g]^T @ dY (col2im'd into dX) and dW[g] += dY @ cols^T. The
 * columns are rebuilt in backward instead of kept from forward (one cheap gather per image
 * against keeping N * K * OH*OW elements alive between the passes). A 1-d conv is a 2-d one
 * with H = 1. fp16/bf16 operands go to the GEMM as they are (fp32 accumulation). */
#ifndef MP_CONV_CORE_H
#define MP_CONV_CORE_H

#include "../tensor.h"

typedef struct {
    int64_t n, c, h, w;              /* input (batch, channels, spatial); 1-d: h = 1 */
    int64_t sn, sc, sh, sw;          /* input strides, elements */
    int64_t o, groups, kh, kw, oh, ow;
    int64_t stride[2], pad_lo[2], pad_hi[2], dil[2];   /* [0]: height, [1]: width */
    int mode;                        /* MP_PAD_* of csrc/cpu/im2col.h */
    mp_dtype dt;                     /* input and weight dtype */
} mp_conv_geom;

/* y (N, O, OH, OW), contiguous, of g->dt = conv(x, w) + bias. x: data of element (0,0,0,0)
 * with g's strides; w: contiguous (O, C/G, KH, KW) of g->dt; bias: O floats or NULL. */
mp_status mp_conv_forward(const mp_conv_geom *g, const void *x, const void *w,
                          const float *bias, void *y);

/* Gradients from dy (N, O, OH*OW), contiguous, of dtype gdt; each output NULL when not
 * needed: dx (N, C, H, W) fp32 contiguous, dw (O, K) fp32, db (O) fp32. */
mp_status mp_conv_backward(const mp_conv_geom *g, const void *x, const void *w,
                           const void *dy, mp_dtype gdt, float *dx, float *dw, float *db);

#endif
