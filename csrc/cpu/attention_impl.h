/* attention_impl.h - what attention_fwd.c and attention_bwd.c share beyond attention.h: the
 * chunked parallel loop (chunk c of a->threads uses scratch slot c, so every thread has its
 * own scratch without knowing its id), the dropout block. */
#ifndef MP_CPU_ATTENTION_IMPL_H
#define MP_CPU_ATTENTION_IMPL_H

#include "attention.h"

typedef mp_status (*mp_attn_item_fn)(const mp_attn_args *a, void *ctx, int64_t item,
                                     float *ws);

/* fn for every item in [0, items), split into at most a->threads contiguous chunks;
 * per: scratch floats per chunk. Returns the first failure. */
mp_status mp_attn_run_chunks(const mp_attn_args *a, int64_t items, size_t per,
                             mp_attn_item_fn fn, void *ctx);

/* dropout factors of rows [i0, i0+br), keys [j0, j0+bc) of entry b (row stride ATTN_BC) */
void mp_attn_keep_block(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br, int64_t j0,
                        int64_t bc, float *z);

/* keys [j0, j0 + n) of the block [j0, j0 + bc) that query row i may see (the causal rule;
 * a mask may hide more of them): the rest need no exponential */
int64_t mp_attn_row_keys(const mp_attn_args *a, int64_t i, int64_t j0, int64_t bc);

#endif
