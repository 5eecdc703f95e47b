/* mp_optim.h - one-element bodies of loss scaling and of the optimizer updates (SGD; Adam and
 * AdamW sharing one body with an L2-vs-decoupled flag; RMSprop, Adagrad, Adadelta), plus bf16
 * stochastic rounding.
 * Compiled by cc (csrc/core/amp/optim.c, scaler.c) and nvcc; all math in fp32, following the
 * order of operations of torch's single-tensor reference implementations.
 * No loops and no memory management here: the drivers walk tensors and call these. */
#ifndef MP_OPTIM_H
#define MP_OPTIM_H

#include <math.h>

#include "mp_half.h"

/* Checks one scaled gradient value and unscales it. Non-finite values are still multiplied
 * (inf stays inf, NaN stays NaN), as torch's _amp_foreach_non_finite_check_and_unscale_. */
MP_HD float mp_unscale_check(float v, float inv_scale, int *found_inf)
{
    if (!mp_f32_isfinite(v))
        *found_inf = 1;
    return inv_scale == 1.0f ? v : v * inv_scale;
}

typedef struct {
    float lr, momentum, dampening, weight_decay;
    int nesterov, maximize;
    float one_minus_dampening;      /* computed in double, as torch's Python scalar */
} mp_sgd_hyper;

/* SGD: returns the new parameter. `buf` is the momentum buffer (always written: drivers pass
 * scratch memory when momentum is 0); `first` says it holds no value yet (torch then
 * initialises it to the gradient, without dampening). Branch-free selects so loops vectorize;
 * each select keeps torch's result exactly (terms are skipped, not multiplied by zero). */
MP_HD float mp_sgd_update(float p, float g, float *buf, int first, const mp_sgd_hyper *h)
{
    g = h->maximize ? -g : g;
    g = h->weight_decay != 0.0f ? g + h->weight_decay * p : g;
    float b = first ? g : h->momentum * *buf + h->one_minus_dampening * g;
    *buf = b;
    float d = h->nesterov ? g + h->momentum * b : b;
    d = h->momentum != 0.0f ? d : g;
    return p - h->lr * d;
}

typedef struct {
    float beta1, beta2, eps, weight_decay;
    float step_size;                /* lr / (1 - beta1^step), computed in double */
    float bias_correction2_sqrt;    /* sqrt(1 - beta2^step), computed in double */
    float decay;                    /* 1 - lr * weight_decay, computed in double (AdamW) */
    int decoupled;                  /* AdamW: p *= 1 - lr*wd; Adam: g += wd*p */
    int amsgrad, maximize;
    float one_minus_beta1, one_minus_beta2;   /* computed in double, as torch's */
} mp_adam_hyper;

/* Adam / AdamW: returns the new parameter and updates the moments; *vmax is always written
 * (the running max for amsgrad; drivers pass scratch memory otherwise).
 * Same formula as torch's _single_tensor_adam (non-capturable):
 *   denom = sqrt(v) / sqrt(bc2) + eps;  p -= (lr / bc1) * m / denom. */
MP_HD float mp_adam_update(float p, float g, float *m, float *v, float *vmax,
                           const mp_adam_hyper *h)
{
    int l2 = h->weight_decay != 0.0f && !h->decoupled;
    int decay = h->weight_decay != 0.0f && h->decoupled;
    g = h->maximize ? -g : g;
    g = l2 ? g + h->weight_decay * p : g;
    p = decay ? p * h->decay : p;
    float mn = *m + (g - *m) * h->one_minus_beta1;      /* torch: exp_avg.lerp_(grad, 1-beta1) */
    float vn = *v * h->beta2 + h->one_minus_beta2 * g * g;
    *m = mn;
    *v = vn;
    float old = *vmax;
    float vu = old > vn ? old : vn;
    vu = old != old ? old : vu;                         /* torch.maximum: NaN propagates */
    vu = h->amsgrad ? vu : vn;
    *vmax = vu;
    float denom = sqrtf(vu) / h->bias_correction2_sqrt + h->eps;
    return p - h->step_size * (mn / denom);
}

/* torch.lerp's two-sided form: a + w * (b - a) for w < 0.5, else b - (b - a) * (1 - w) */
MP_HD float mp_lerp(float a, float b, float w)
{
    return w < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}

typedef struct {
    float lr, alpha, eps, weight_decay, momentum;
    int centered, maximize;
    float one_minus_alpha;          /* computed in double, as torch's Python scalar */
} mp_rmsprop_hyper;

/* RMSprop (torch's _single_tensor_rmsprop): returns the new parameter. sq is square_avg;
 * ga (grad_avg, read when centered) and buf (momentum_buffer, read when momentum > 0) are
 * always written, so drivers pass scratch memory for the unused ones.
 *   sq = sq * alpha + (1 - alpha) * g * g;  ga = lerp(ga, g, 1 - alpha)
 *   avg = sqrt(centered ? sq - ga * ga : sq) + eps
 *   momentum: buf = buf * momentum + g / avg; p -= lr * buf;  else p -= lr * (g / avg) */
MP_HD float mp_rmsprop_update(float p, float g, float *sq, float *ga, float *buf,
                              const mp_rmsprop_hyper *h)
{
    g = h->maximize ? -g : g;
    g = h->weight_decay != 0.0f ? g + h->weight_decay * p : g;
    float s = *sq * h->alpha + h->one_minus_alpha * g * g;
    float a = mp_lerp(*ga, g, h->one_minus_alpha);
    *sq = s;
    *ga = a;
    float avg = sqrtf(h->centered ? s + (-1.0f * a) * a : s) + h->eps;
    float b = *buf * h->momentum + g / avg;
    *buf = b;
    return h->momentum > 0.0f ? p + (-h->lr) * b : p + (-h->lr) * (g / avg);
}

typedef struct {
    float clr;                      /* lr / (1 + (step - 1) * lr_decay), computed in double */
    float weight_decay, eps;
    int maximize;
} mp_adagrad_hyper;

/* Adagrad (torch's _single_tensor_adagrad, dense gradients): sum += g * g;
 * p -= clr * g / (sqrt(sum) + eps). */
MP_HD float mp_adagrad_update(float p, float g, float *sum, const mp_adagrad_hyper *h)
{
    g = h->maximize ? -g : g;
    g = h->weight_decay != 0.0f ? g + h->weight_decay * p : g;
    float s = *sum + g * g;
    *sum = s;
    return p + (-h->clr) * (g / (sqrtf(s) + h->eps));
}

typedef struct {
    float lr, rho, eps, weight_decay;
    int maximize;
    float one_minus_rho;            /* computed in double */
} mp_adadelta_hyper;

/* Adadelta (torch's _single_tensor_adadelta):
 *   sq = sq * rho + (1 - rho) * g * g;  delta = sqrt(acc + eps) / sqrt(sq + eps) * g
 *   acc = acc * rho + (1 - rho) * delta * delta;  p -= lr * delta */
MP_HD float mp_adadelta_update(float p, float g, float *sq, float *acc,
                               const mp_adadelta_hyper *h)
{
    g = h->maximize ? -g : g;
    g = h->weight_decay != 0.0f ? g + h->weight_decay * p : g;
    float s = *sq * h->rho + h->one_minus_rho * g * g;
    *sq = s;
    float delta = sqrtf(*acc + h->eps) / sqrtf(s + h->eps) * g;
    *acc = *acc * h->rho + h->one_minus_rho * delta * delta;
    return p + (-h->lr) * delta;
}

/* Rounds x to bf16 stochastically: adds 16 random low bits before truncation, so the result
 * is one of the two neighbours with probability proportional to closeness (unbiased).
 * inf and NaN go through the ordinary conversion. */
MP_HD mp_bf16 mp_f32_to_bf16_stochastic(float x, uint32_t rnd)
{
    if (!mp_f32_isfinite(x))
        return mp_f32_to_bf16(x);
    uint32_t u = mp_f32_bits(x);
    uint32_t r = u + (rnd & 0xffffu);
    if ((r & 0x7f800000u) == 0x7f800000u)           /* would round past the largest finite */
        r = u;
    mp_bf16 h;
    h.bits = (uint16_t)(r >> 16);
    return h;
}

#endif
