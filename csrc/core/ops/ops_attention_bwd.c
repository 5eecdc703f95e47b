/* ops_attention_bwd.c - the backward of scaled_dot_product_attention: fp32 gradients of q,
 * k, v (and of a float mask that requires grad) for every batch entry from the fused kernel,
 * then summed to each input's shape: over broadcast batch dims, and over the query heads a
 * key/value head served under enable_gqa. Only the output and the per-row logsumexp were
 * saved; scores and the dropout mask are recomputed block by block. */
#include <string.h>

#include "../../cpu/parallel.h"
#include "../copy.h"
#include "../elementwise.h"
#include "ops.h"
#include "ops_attention_impl.h"
#include "../view.h"

/* bshape + (rows, w) into shape; returns its rank */
static int entry_shape(const sdpa_geom *g, int64_t rows, int64_t w, int64_t *shape)
{
    memcpy(shape, g->bshape, sizeof(int64_t) * (size_t)g->nbd);
    shape[g->nbd] = rows, shape[g->nbd + 1] = w;
    return g->nbd + 2;
}

/* full (bshape, rows, w) summed to input i's shape, first over the groups of a grouped head */
static mp_status reduce_to(const sdpa_geom *g, mp_node *n, int i, mp_tensor *full, int group,
                           mp_tensor **out)
{
    mp_tensor *cur = full, *view = NULL;
    mp_status st = MP_OK;
    mp_tensor_incref(full);
    if (group > 1) {
        int64_t s[MP_MAX_DIMS + 1];
        int nd = g->nbd - 1;
        memcpy(s, g->bshape, sizeof(int64_t) * (size_t)nd);
        s[nd] = g->bshape[nd] / group, s[nd + 1] = group;
        s[nd + 2] = full->shape[g->nbd], s[nd + 3] = full->shape[g->nbd + 1];
        st = mp_view_reshape(full, s, nd + 4, 1, &view);
        mp_tensor_decref(cur);
        cur = NULL;
        if (st == MP_OK)
            st = mp_op_sum(view, 1u << (nd + 1), 0, -1, &cur);
        mp_tensor_decref(view);
    }
    int nd;
    const int64_t *shape = mp_node_in_shape(n, i, &nd);
    if (st == MP_OK)
        st = mp_sum_to_shape(cur, shape, nd, out);
    mp_tensor_decref(cur);
    return st;
}

typedef struct {
    mp_tensor *dq, *dk, *dv, *dmask, *delta, *dout, *ws;
} bwd_bufs;

static void bufs_free(bwd_bufs *b)
{
    mp_tensor *all[7] = {b->dq, b->dk, b->dv, b->dmask, b->delta, b->dout, b->ws};
    mp_decref_all(all, 7);
}

static mp_status alloc_bufs(const sdpa_geom *g, int want_mask, bwd_bufs *b)
{
    int64_t s[MP_MAX_DIMS + 2], nl = g->nb * g->L;
    int nd = entry_shape(g, g->L, g->E, s);
    mp_status st = mp_tensor_empty(s, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &b->dq);
    entry_shape(g, g->S, g->E, s);
    if (st == MP_OK)
        st = mp_tensor_empty(s, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &b->dk);
    entry_shape(g, g->S, g->Ev, s);
    if (st == MP_OK)
        st = mp_tensor_empty(s, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &b->dv);
    entry_shape(g, g->L, g->S, s);
    if (st == MP_OK && want_mask)
        st = mp_tensor_full(s, nd, MP_DTYPE_FLOAT32, 0.0, &b->dmask);
    if (st == MP_OK)
        st = mp_tensor_empty(&nl, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &b->delta);
    return st;
}

/* the gradient of the output, contiguous, in a float dtype */
static mp_status dout_of(mp_tensor *g, mp_tensor **out)
{
    if (mp_dtype_is_float(g->dtype))
        return mp_tensor_contiguous(g, out);
    return mp_tensor_cast(g, MP_DTYPE_FLOAT32, out);
}

static mp_status run_kernel(const sdpa_geom *g, mp_tensor *const *t, bwd_bufs *b)
{
    mp_attn_args a = mp_sdpa_args(g, t[0], t[1], t[2], t[5]);
    mp_status st = mp_sdpa_scratch(&a, 1, &b->ws);
    if (st != MP_OK)
        return st;
    a.scratch = mp_tensor_data(b->ws);
    mp_attn_grads gr;
    memset(&gr, 0, sizeof gr);
    gr.out = mp_tensor_data(t[3]);
    gr.dout = mp_tensor_data(b->dout);
    gr.dout_dtype = b->dout->dtype;
    gr.lse = mp_tensor_data(t[4]);
    gr.delta = mp_tensor_data(b->delta);
    gr.dq = mp_tensor_data(b->dq);
    gr.dk = mp_tensor_data(b->dk);
    gr.dv = mp_tensor_data(b->dv);
    gr.dmask = b->dmask ? mp_tensor_data(b->dmask) : NULL;
    /* few entries for the threads: keys and queries in separate passes (same bits) */
    gr.split = a.threads > 1 && g->nb < 2 * (int64_t)a.threads;
    if (mp_attn_backward(&a, &gr) != MP_OK)
        return mp_error(MP_ERR_NOMEM, "out of memory in scaled_dot_product_attention "
                        "backward");
    return MP_OK;
}

mp_status mp_sdpa_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    sdpa_geom *g = n->ctx;
    mp_tensor *t[6] = {NULL};
    for (int i = 0; i < 5; i++)
        if (!(t[i] = mp_node_saved(n, i)))
            return MP_ERR_RUNTIME;
    if (g->mask_kind && !(t[5] = mp_node_saved(n, 5)))
        return MP_ERR_RUNTIME;
    if (!gout[0])
        return MP_OK;
    bwd_bufs b;
    memset(&b, 0, sizeof b);
    mp_status st = dout_of(gout[0], &b.dout);
    if (st == MP_OK)
        st = alloc_bufs(g, n->next[3].node != NULL, &b);
    if (st == MP_OK)
        st = run_kernel(g, t, &b);
    if (st == MP_OK && n->next[0].node)
        st = reduce_to(g, n, 0, b.dq, 1, &gin[0]);
    if (st == MP_OK && n->next[1].node)
        st = reduce_to(g, n, 1, b.dk, g->gk, &gin[1]);
    if (st == MP_OK && n->next[2].node)
        st = reduce_to(g, n, 2, b.dv, g->gv, &gin[2]);
    if (st == MP_OK && b.dmask)
        st = reduce_to(g, n, 3, b.dmask, 1, &gin[3]);
    bufs_free(&b);
    return st;
}
