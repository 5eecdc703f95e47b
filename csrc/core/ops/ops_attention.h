/* ops_attention.h - the attention-and-masking ops of the core (ops_mask.c, ops_attention.c,
 * ops_rmsnorm.c), kept apart from ops.h: masked_fill, tril/triu, fused scaled dot-product
 * attention and rms_norm. Each checks its arguments with torch's messages, runs its kernel and
 * records its autograd node, as the ops of ops.h do. */
#ifndef MP_OPS_ATTENTION_H
#define MP_OPS_ATTENTION_H

#include "../copy.h"
#include "ops.h"

/* out = a with `value` where mask (bool, broadcast with a) is True; out has the broadcast
 * shape and a's dtype. vt: a 0-d tensor value (its gradient is the masked sum), else NULL
 * and `value` is used. */
mp_status mp_op_masked_fill(mp_tensor *a, mp_tensor *mask, mp_scalar value, mp_tensor *vt,
                            mp_tensor **out);

/* tril (upper 0) keeps j <= i + k of the last two dims, triu (upper 1) j >= i + k */
mp_status mp_op_triangle(mp_tensor *a, int upper, int64_t k, mp_tensor **out);

typedef struct {
    mp_tensor *mask;            /* NULL, bool (True takes part) or float (added) */
    double dropout_p;           /* <= 0: none */
    int is_causal, enable_gqa;
    int has_scale;
    double scale;               /* used when has_scale, else 1 / sqrt(E) */
    uint64_t seed, offset;      /* the Philox stream of the dropout mask */
} mp_sdpa_opts;

/* softmax(q k^T * scale + mask) v for q (..., L, E), k (..., S, E), v (..., S, Ev); batch
 * dims broadcast (k/v heads repeated for groups of query heads with enable_gqa). *blocks_used
 * reports the Philox blocks the dropout mask took. */
mp_status mp_op_sdpa(mp_tensor *q, mp_tensor *k, mp_tensor *v, const mp_sdpa_opts *o,
                     mp_tensor **out, uint64_t *blocks_used);

/* x / sqrt(mean(x^2) + eps) * weight over the last n dims; has_eps 0: eps = the input
 * dtype's machine epsilon (torch's eps=None) */
mp_status mp_op_rms_norm(mp_tensor *a, const int64_t *normalized_shape, int n,
                         mp_tensor *weight, int has_eps, double eps, mp_tensor **out);

#endif
