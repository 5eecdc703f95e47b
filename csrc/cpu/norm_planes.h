/* norm_planes.h - the loops of batch_norm and group_norm on a contiguous (N, C, S) tensor
 * seen as N*C consecutive planes of S elements: per-plane statistics (mean and sum of squared
 * deviations, in double, two passes over each plane while it is in cache), per-plane sums for
 * backward, and the per-plane affine map both directions end with. Elements are float32,
 * float16 or bfloat16 (converted to fp32 in blocks); large inputs run on parallel threads
 * (parallel.h), each plane's arithmetic in a fixed order, so results do not depend on the
 * thread count. Coefficient k of plane p is k[p % cmod] (batch norm: cmod = C), or k[p] when
 * cmod is 0 (group norm). No tensors, no errors: buffers that cannot be allocated make the
 * function return -1. */
#ifndef MP_CPU_NORM_PLANES_H
#define MP_CPU_NORM_PLANES_H

#include "../shared/mp_defs.h"

/* mean[p], m2[p] = mean and sum of (x - mean)^2 over plane p */
int mp_planes_moments(mp_dtype dt, const void *x, int64_t nplanes, int64_t s, double *mean,
                      double *m2);
/* sg[p] = sum g, sgx[p] = sum g * (x - center[.]) over plane p */
int mp_planes_dot(mp_dtype dx, const void *x, mp_dtype dg, const void *g, int64_t nplanes,
                  int64_t s, int64_t cmod, const float *center, double *sg, double *sgx);
/* y = ka[.] * g + kb[.] * (x - kmu[.]) + kc[.] (g may be NULL: no first term; y of dy) */
int mp_planes_affine(mp_dtype dy, void *y, mp_dtype dx, const void *x, mp_dtype dg,
                     const void *g, int64_t nplanes, int64_t s, int64_t cmod, const float *ka,
                     const float *kb, const float *kmu, const float *kc);

#endif
