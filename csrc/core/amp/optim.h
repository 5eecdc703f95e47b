/* optim.h - loss-scaler kernels (scaler.c) and fused multi-tensor optimizer steps (optim.c).
 * A group is a list of contiguous CPU tensors walked in one call; math is fp32 through the
 * one-element bodies of shared/mp_optim.h. Optimizer state (moments, momentum buffers, fp32
 * master weights) is always fp32. Python owns the step counters and the hyper-parameters. */
#ifndef MP_OPTIM_CORE_H
#define MP_OPTIM_CORE_H

#include "../tensor.h"
#include "../../shared/mp_optim.h"

/* ---- scaler.c ---- */

/* For every grad: found_inf = 1 when a value is inf/NaN, then grad *= inv_scale in place.
 * inv_scale NULL: check only, grads untouched. found_inf is never cleared here.
 * Grads may mix fp32/fp16/bf16; each must be contiguous. */
mp_status mp_scaler_unscale_(mp_tensor **grads, int n, mp_tensor *found_inf,
                             mp_tensor *inv_scale);
/* torch's _amp_update_scale_: backoff on found_inf, grow after growth_interval clean steps
 * (only to a finite value). scale, found_inf: 1-element fp32; tracker: 1-element int64. */
mp_status mp_scaler_update(mp_tensor *scale, mp_tensor *tracker, mp_tensor *found_inf,
                           double growth_factor, double backoff_factor, int64_t interval);

/* out = 1 / scale (reciprocal in double, stored as fp32, as torch); both 1-element fp32 on one
 * device. */
mp_status mp_scaler_inv_scale(mp_tensor *out, mp_tensor *scale);

/* ---- optim.c ---- */

typedef struct {
    int n;
    mp_tensor **params;     /* the model's weights: fp32, fp16 or bf16 */
    mp_tensor **grads;      /* same numel, any float dtype */
    mp_tensor **masters;    /* NULL, or fp32 masters that are updated and rounded into params */
    mp_tensor *grad_scale;  /* NULL, or 1-element fp32: grads are multiplied by 1/grad_scale */
    mp_tensor *found_inf;   /* NULL, or 1-element fp32: non-zero skips the whole step */
    int stochastic;         /* round into bf16 params stochastically */
    uint64_t seed, offset;  /* Philox stream for stochastic rounding */
} mp_optim_group;

/* bufs: n fp32 momentum buffers (ignored when momentum == 0); first: they hold no value yet.
 * *blocks_used: Philox blocks consumed (0 without stochastic rounding). */
mp_status mp_optim_sgd_step(const mp_optim_group *g, mp_tensor **bufs, int first,
                            const mp_sgd_hyper *h, uint64_t *blocks_used);
/* Adam's step counts kept on the parameters' device (torch's fused/capturable layout): one
 * 1-element fp32 tensor per parameter, incremented in the kernel unless found_inf is set, and
 * step_size / bias_correction2_sqrt computed there from it (lr, beta1, beta2 in double). */
typedef struct {
    mp_tensor **t;
    double lr, beta1, beta2;
} mp_adam_steps;

/* m, v: n fp32 moments; vmax: n fp32 (amsgrad) or NULL. steps: NULL (h carries step_size and
 * bias_correction2_sqrt for the step count Python holds), or device step counts. */
mp_status mp_optim_adam_step(const mp_optim_group *g, mp_tensor **m, mp_tensor **v,
                             mp_tensor **vmax, const mp_adam_hyper *h,
                             const mp_adam_steps *steps, uint64_t *blocks_used);

/* RMSprop: sq (square_avg) always; ga (grad_avg) when centered, bufs (momentum_buffer) when
 * momentum > 0, else NULL. */
mp_status mp_optim_rmsprop_step(const mp_optim_group *g, mp_tensor **sq, mp_tensor **ga,
                                mp_tensor **bufs, const mp_rmsprop_hyper *h,
                                uint64_t *blocks_used);
mp_status mp_optim_adagrad_step(const mp_optim_group *g, mp_tensor **sums,
                                const mp_adagrad_hyper *h, uint64_t *blocks_used);
mp_status mp_optim_adadelta_step(const mp_optim_group *g, mp_tensor **sq, mp_tensor **acc,
                                 const mp_adadelta_hyper *h, uint64_t *blocks_used);

#endif
