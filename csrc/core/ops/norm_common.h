/* norm_common.h - what batch_norm (ops_batchnorm.c, which defines these) and group_norm
 * (ops_groupnorm.c) share: torch's CPU dtype rule for their parameters, per-channel fp32
 * copies of optional parameters, and combining per-plane statistics. */
#ifndef MP_NORM_COMMON_H
#define MP_NORM_COMMON_H

#include "../tensor.h"

/* The present params (NULL skipped) share one dtype, which is x's, or float32 when x is
 * float16/bfloat16 (torch's "mixed dtype" CPU path); torch's messages otherwise. */
mp_status mp_norm_check_param_dtypes(mp_tensor *x, mp_tensor *const *params, int n);

/* An fp32 tensor of t's n values (t: 1-D of any float dtype), or of `fill` when t is NULL. */
mp_status mp_norm_f32(mp_tensor *t, int64_t n, float fill, mp_tensor **out);

/* Chan's combination of count-weighted (mean, M2) pairs of `k` planes of `s` elements,
 * planes `step` apart starting at mean[0] / m2[0]: the mean and biased variance of all. */
void mp_norm_combine(const double *mean, const double *m2, int64_t k, int64_t step, int64_t s,
                     double *out_mean, double *out_var);

#endif
