/* ops_attention_impl.h - what ops_attention.c (forward, node) and ops_attention_bwd.c share:
 * the batch geometry of one call, kept as the node's ctx so the backward lays the saved
 * tensors out exactly as the forward did. */
#ifndef MP_OPS_ATTENTION_IMPL_H
#define MP_OPS_ATTENTION_IMPL_H

#include "../../cpu/attention.h"
#include "../autograd/autograd.h"

typedef struct {
    int nbd;                        /* batch dims of the output */
    int64_t bshape[MP_MAX_DIMS];
    int64_t nb, L, S, E, Ev;        /* batch entries, query rows, keys, widths */
    int64_t *offs;                  /* 4 * nb element offsets: q, k, v, mask */
    int gk, gv;                     /* query heads per key / value head (enable_gqa) */
    int mask_kind, causal;
    int64_t m_rs, m_cs;
    float scale;
    double p;                       /* dropout probability (0: none) */
    uint64_t seed, offset;
} sdpa_geom;

void mp_sdpa_geom_free(void *g);
mp_attn_args mp_sdpa_args(const sdpa_geom *g, mp_tensor *q, mp_tensor *k, mp_tensor *v,
                          mp_tensor *m);
/* a fp32 tensor of the kernel's scratch for a->threads threads (counted by the allocator) */
mp_status mp_sdpa_scratch(const mp_attn_args *a, int backward, mp_tensor **ws);
mp_status mp_sdpa_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin);
const char *mp_sdpa_cpp_name(mp_dtype dt);

#endif
