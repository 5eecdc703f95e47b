/* pool.h - pooling over one fp32 plane (H, W) contiguous, forward and backward: max pooling
 * (with dilation; torch's int64 index of the chosen element in the flattened plane, NaN
 * propagating), average pooling (count_include_pad, divisor override) and adaptive average
 * pooling (torch's bins: floor(o*in/out) to ceil((o+1)*in/out)). 1-d pooling is a plane of
 * height 1. Window bounds come from the caller (csrc/core/ops/ops_pool.c), which checks them;
 * backward functions add into a zeroed gradient plane. */
#ifndef MP_CPU_POOL_H
#define MP_CPU_POOL_H

#include <stdint.h>

typedef struct {
    int64_t h, w, oh, ow;          /* input and output plane sizes */
    int64_t kh, kw, sh, sw;        /* window and step */
    int64_t ph, pw, dh, dw;        /* padding (leading) and dilation */
    int count_include_pad;         /* average pooling */
    int64_t divisor;               /* average pooling: 0 none */
} mp_pool_desc;

void mp_max_pool_plane(const mp_pool_desc *d, const float *x, float *y, int64_t *idx);
void mp_max_pool_plane_backward(const mp_pool_desc *d, const float *gy, const int64_t *idx,
                                float *gx);
void mp_avg_pool_plane(const mp_pool_desc *d, const float *x, float *y);
void mp_avg_pool_plane_backward(const mp_pool_desc *d, const float *gy, float *gx);
/* only h, w, oh, ow of d are read */
void mp_adaptive_avg_plane(const mp_pool_desc *d, const float *x, float *y);
void mp_adaptive_avg_plane_backward(const mp_pool_desc *d, const float *gy, float *gx);

#endif
