/* optim_kernels.h - vector drivers of the optimizer bodies in shared/mp_optim.h, one per ISA
 * file (optim_avx2.c). They must give bit-identical results to the scalar loop over the body
 * (no FMA contraction, same operation order); csrc/core/optim.c picks them by mp_cpu()->isa. */
#ifndef MP_CPU_OPTIM_KERNELS_H
#define MP_CPU_OPTIM_KERNELS_H

#include "../shared/mp_optim.h"

/* p[i] = adam(p[i], g[i] * inv, ...) for i < n; vmax may be NULL when !h->amsgrad. */
void mp_adam_span_avx2(float *p, const float *g, float *m, float *v, float *vmax, int64_t n,
                       float inv, const mp_adam_hyper *h);

#endif
