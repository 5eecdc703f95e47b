/* optim_kernels.h - vector drivers of the optimizer bodies in shared/mp_optim.h (Adam/AdamW,
 * RMSprop, Adagrad, Adadelta), one per ISA file (optim_avx2.c). They must give bit-identical
 * results to the scalar loop over the body (no FMA contraction, same operation order);
 * cpu/dispatch.c puts them in each level's table (mp_cpu()->optim). */
#ifndef MP_CPU_OPTIM_KERNELS_H
#define MP_CPU_OPTIM_KERNELS_H

#include "../shared/mp_optim.h"

/* For i < n: p[i] = adam(p[i], grad[i] * inv, m, v, vmax); grad is g (fp32) or, when g is
 * NULL, g16 (bf16). out16, when not NULL, receives p rounded to bf16 (nearest even): the
 * master-weight case. vmax may be NULL when !h->amsgrad. */
void mp_adam_span_avx2(float *p, const float *g, const mp_bf16 *g16, float *m, float *v,
                       float *vmax, mp_bf16 *out16, int64_t n, float inv,
                       const mp_adam_hyper *h);

/* fp32 spans of RMSprop (ga, buf may be NULL when unused), Adagrad and Adadelta: the scalar
 * body's results, eight lanes at a time (grad[i] * inv first, as the scalar drivers). */
void mp_rmsprop_span_avx2(float *p, const float *g, float *sq, float *ga, float *buf, int64_t n,
                          float inv, const mp_rmsprop_hyper *h);
void mp_adagrad_span_avx2(float *p, const float *g, float *sum, int64_t n, float inv,
                          const mp_adagrad_hyper *h);
void mp_adadelta_span_avx2(float *p, const float *g, float *sq, float *acc, int64_t n,
                           float inv, const mp_adadelta_hyper *h);

#endif
