/* ops_cnn.h - the ops of convolutional networks, each with its autograd node: conv1d/conv2d
 * (ops_conv.c over conv_run.c), max/avg/adaptive-avg pooling in 1-d and 2-d (ops_pool.c),
 * batch_norm and group_norm (ops_batchnorm.c over norm_planes.c). Inputs are torch's layouts:
 * (N, C, L) / (C, L) for 1-d ops, (N, C, H, W) / (C, H, W) for 2-d ones; nsp (1 or 2) says
 * which, and names the op in messages. Math in fp32 (statistics in double), outputs in the
 * input dtype, parameter gradients in fp32 (the engine casts them to the parameter dtype). */
#ifndef MP_OPS_CNN_H
#define MP_OPS_CNN_H

#include "../autograd/autograd.h"

/* stride, padding, dilation: nsp values each; pad_same: torch's padding="same" (padding is
 * then ignored; the extra pad of an even total goes after, as torch); mode: MP_PAD_* of
 * csrc/cpu/im2col.h (nn.Conv*d's padding_mode). bias may be NULL. */
mp_status mp_op_conv(mp_tensor *x, mp_tensor *w, mp_tensor *bias, int nsp,
                     const int64_t *stride, const int64_t *padding, int pad_same,
                     const int64_t *dilation, int64_t groups, int mode, mp_tensor **out);

/* kernel, stride, padding, dilation: nsp values each. indices (NULL: not wanted) receives
 * torch's int64 indices into each input plane (H * W flattened). */
mp_status mp_op_max_pool(mp_tensor *x, int nsp, const int64_t *kernel, const int64_t *stride,
                         const int64_t *padding, const int64_t *dilation, int ceil_mode,
                         mp_tensor **out, mp_tensor **indices);
/* divisor: 0 for none (torch's divisor_override=None) */
mp_status mp_op_avg_pool(mp_tensor *x, int nsp, const int64_t *kernel, const int64_t *stride,
                         const int64_t *padding, int ceil_mode, int count_include_pad,
                         int64_t divisor, mp_tensor **out);
/* output_size: nsp values, MP_POOL_KEEP keeps that input size (torch's None) */
#define MP_POOL_KEEP INT64_MIN
mp_status mp_op_adaptive_avg_pool(mp_tensor *x, int nsp, const int64_t *output_size,
                                  mp_tensor **out);

/* x (N, C, *). running_mean/var (C) may be NULL (then training must be set); in training
 * they are updated in place with the batch statistics (unbiased variance), as torch. */
mp_status mp_op_batch_norm(mp_tensor *x, mp_tensor *weight, mp_tensor *bias,
                           mp_tensor *running_mean, mp_tensor *running_var, int training,
                           double momentum, double eps, mp_tensor **out);
mp_status mp_op_group_norm(mp_tensor *x, int64_t groups, mp_tensor *weight, mp_tensor *bias,
                           double eps, mp_tensor **out);

#endif
