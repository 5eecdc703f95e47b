/* attention.h - fused scaled dot-product attention on raw pointers (attention_fwd.c,
 * attention_bwd.c): softmax(scale * q k^T + mask) v, blocked over query rows (ATTN_BR) and
 * keys (ATTN_BC), block products by the packed GEMM (gemm.h, one thread per call), an online
 * softmax in fp32, and a backward that recomputes the scores block by block from the saved
 * per-row logsumexp. Shapes, broadcasting and allocation are the core's business
 * (csrc/core/ops/ops_attention.c): here a batch entry b has its own element offsets into q, k,
 * v and the mask, rows of q/k/v have unit column stride, outputs are contiguous. */
#ifndef MP_CPU_ATTENTION_H
#define MP_CPU_ATTENTION_H

#include "../shared/mp_defs.h"

#define ATTN_BR 64          /* query rows per block */
#define ATTN_BC 128         /* keys per block */

enum { MP_ATTN_MASK_NONE = 0, MP_ATTN_MASK_BOOL, MP_ATTN_MASK_FLOAT };

/* z[0..n) = the dropout factor (0 or 1/(1-p)) of attention elements idx0 .. idx0+n-1 of the
 * row-major (batch, L, S) order; supplied by the core (its Philox stream). */
typedef void (*mp_attn_keep_fn)(const void *ctx, int64_t idx0, int64_t n, float *z);

typedef struct {
    int64_t nb, L, S, E, Ev;        /* batch entries; query rows, keys, q/k width, v width */
    mp_dtype dtype;                 /* of q, k, v (float32, float16 or bfloat16) */
    const char *q, *k, *v;          /* element 0 of each storage view */
    const int64_t *q_off, *k_off, *v_off;   /* per batch entry, in elements */
    int64_t q_rs, k_rs, v_rs;       /* row strides in elements (columns are unit-stride) */
    int mask_kind;                  /* MP_ATTN_MASK_* */
    const char *m;                  /* bool: True takes part; float: added to the scores */
    mp_dtype m_dtype;
    const int64_t *m_off;
    int64_t m_rs, m_cs;             /* row (query) and column (key) strides of the mask */
    int causal;                     /* key j > query i is masked (top-left aligned) */
    float scale;
    mp_attn_keep_fn keep;           /* NULL: no dropout */
    const void *keep_ctx;
    int threads;                    /* chunks run in parallel (each its own scratch) */
    float *scratch;                 /* threads * mp_attn_scratch_floats(...) floats */
} mp_attn_args;

/* fp32 scratch one thread needs (forward or backward). */
size_t mp_attn_scratch_floats(const mp_attn_args *a, int backward);

/* out: (nb, L, Ev) contiguous in a->dtype; lse: (nb, L) per-row logsumexp of the scaled and
 * masked scores (+inf for a row that no key takes part in; its output row is 0).
 * Returns MP_ERR_NOMEM (no message) when a product cannot get its packing buffers. */
mp_status mp_attn_forward(const mp_attn_args *a, void *out, float *lse);

typedef struct {
    const void *out, *dout;         /* (nb, L, Ev) contiguous: the forward's output (a->dtype)
                                       and its gradient (dout_dtype) */
    mp_dtype dout_dtype;
    const float *lse;               /* (nb, L) from the forward */
    float *delta;                   /* (nb, L) scratch: rowsum(dout * out) */
    float *dq;                      /* (nb, L, E), fp32 */
    float *dk, *dv;                 /* (nb, S, E) and (nb, S, Ev), fp32, one per batch entry
                                       (the core sums over broadcast and grouped heads) */
    float *dmask;                   /* (nb, L, S) fp32 (gradient of the added mask) or NULL */
    int split;                      /* 0: one pass per batch entry; 1: keys and queries in
                                       separate passes (more parallel work, same bits) */
} mp_attn_grads;

mp_status mp_attn_backward(const mp_attn_args *a, const mp_attn_grads *g);

/* shared by the two files: the scores block S = scale * q_i k_j^T with the mask and causal
 * rule applied, rows [i0, i0+br), keys [j0, j0+bc), row stride ATTN_BC */
mp_status mp_attn_scores(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br, int64_t j0,
                         int64_t bc, float *s);
#endif
