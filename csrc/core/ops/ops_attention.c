/* ops_attention.c - scaled_dot_product_attention: torch's argument checks and messages, the
 * batch geometry (q, k, v and the mask broadcast over the batch dims; with enable_gqa a
 * key/value head serves a group of query heads) turned into per-entry element offsets, and
 * the autograd node. The math is the fused kernel in csrc/cpu/attention*.c; the backward
 * (ops_attention_bwd.c) reruns it from the saved output and per-row logsumexp. */
#include "../amp/autocast.h"
#include "ops_attention.h"
#include "../backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu/parallel.h"
#include "../elementwise.h"
#include "ops_attention_impl.h"
#include "../random.h"
#include "../rows.h"
#include "../view.h"

const char *mp_sdpa_cpp_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return "float";
    case MP_DTYPE_FLOAT16: return "c10::Half";
    case MP_DTYPE_BFLOAT16: return "c10::BFloat16";
    case MP_DTYPE_INT64: return "long int";
    case MP_DTYPE_UINT8: return "unsigned char";
    default: return "bool";
    }
}

static mp_status check_inputs(mp_tensor *q, mp_tensor *k, mp_tensor *v, const mp_sdpa_opts *o)
{
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return mp_error(MP_ERR_RUNTIME, "Expected query, key, and value to have the same "
                        "dtype, but got query.dtype: %s key.dtype: %s and value.dtype: %s "
                        "instead.", mp_sdpa_cpp_name(q->dtype), mp_sdpa_cpp_name(k->dtype),
                        mp_sdpa_cpp_name(v->dtype));
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return mp_error(MP_ERR_RUNTIME, "Expected query, key, and value to all be  at least 2 "
                        "dimensional, but got query.dim: %d key.dim: %d and value.dim: %d "
                        "instead.", q->ndim, k->ndim, v->ndim);
    mp_tensor *m = o->mask;
    if (m && m->dtype != MP_DTYPE_BOOL && m->dtype != MP_DTYPE_FLOAT32 && m->dtype != q->dtype)
        return mp_error(MP_ERR_RUNTIME, "Expected attn_mask dtype to be bool or float or to "
                        "match query dtype, but got attn_mask.dtype: %s and  query.dtype: %s "
                        "instead.", mp_sdpa_cpp_name(m->dtype), mp_sdpa_cpp_name(q->dtype));
    if (m && o->is_causal)
        return mp_error(MP_ERR_RUNTIME, "_scaled_dot_product_attention: Explicit attn_mask "
                        "should not be set when is_causal=True");
    if (!mp_dtype_is_float(q->dtype))
        return mp_error(MP_ERR_RUNTIME, "expected scalar type Float but found %s",
                        mp_dtype_torch_name(q->dtype));
    if (o->dropout_p > 1.0)
        return mp_error(MP_ERR_RUNTIME, "dropout probability has to be between 0 and 1, but "
                        "got %g", o->dropout_p);
    return MP_OK;
}

/* group factors of the key and value heads (1 each without enable_gqa) */
static mp_status gqa_groups(mp_tensor *q, mp_tensor *k, mp_tensor *v, int enable,
                            sdpa_geom *g)
{
    g->gk = g->gv = 1;
    if (!enable)
        return MP_OK;
    mp_tensor *ts[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        if (ts[i]->ndim < 3)
            return mp_error(MP_ERR_INDEX, "Dimension out of range (expected to be in range of "
                            "[-%d, %d], but got -3)", ts[i]->ndim, ts[i]->ndim - 1);
    int64_t hq = q->shape[q->ndim - 3], hk = k->shape[k->ndim - 3], hv = v->shape[v->ndim - 3];
    if (hk == 0 || hv == 0 || hq % hk != 0 || hq % hv != 0)
        return mp_error(MP_ERR_RUNTIME, "Number of heads in key and value must divide the "
                        "number of heads in query");
    g->gk = hq / hk;
    g->gv = hq / hv;
    return MP_OK;
}

/* batch shape of t (its dims before the last two), the head dim taken as `heads` when the
 * group factor is above 1 */
static int batch_of(const mp_tensor *t, int group, int64_t *shape)
{
    int nb = t->ndim - 2;
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)nb);
    if (group > 1)
        shape[nb - 1] *= group;
    return nb;
}

static int64_t product(const int64_t *s, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= s[i];
    return p;
}

/* The batch shape of q, k and v, then the sizes torch's bmm checks, then the mask's
 * broadcast over (batch, L, S), which may add batch dims. */
static mp_status batch_shape(mp_tensor *q, mp_tensor *k, mp_tensor *v, mp_tensor *m,
                             sdpa_geom *g)
{
    int64_t a[MP_MAX_DIMS], b[MP_MAX_DIMS], full[MP_MAX_DIMS];
    int na = batch_of(q, 1, a), nb = batch_of(k, g->gk, b), nf;
    mp_status st = mp_broadcast_shapes(a, na, b, nb, full, &nf);
    if (st != MP_OK)       /* nf is unset then: copying by it read past the stack */
        return st;
    memcpy(a, full, sizeof(int64_t) * (size_t)nf);
    na = nf;
    nb = batch_of(v, g->gv, b);
    if (st == MP_OK)
        st = mp_broadcast_shapes(a, na, b, nb, full, &nf);
    if (st != MP_OK)
        return st;
    long long n = (long long)product(full, nf);
    g->L = q->shape[q->ndim - 2], g->E = q->shape[q->ndim - 1];
    g->S = k->shape[k->ndim - 2], g->Ev = v->shape[v->ndim - 1];
    int64_t ek = k->shape[k->ndim - 1], sv = v->shape[v->ndim - 2];
    if (ek != g->E || sv != g->S)
        return mp_error(MP_ERR_SHAPE, "Expected size for first two dimensions of batch2 tensor "
                        "to be: [%lld, %lld] but got: [%lld, %lld].", n,
                        (long long)(ek != g->E ? g->E : g->S), n,
                        (long long)(ek != g->E ? ek : sv));
    full[nf] = g->L, full[nf + 1] = g->S;
    g->nbd = nf;
    if (!m) {
        memcpy(g->bshape, full, sizeof(int64_t) * (size_t)nf);
        return MP_OK;
    }
    if ((st = mp_broadcast_shapes(full, nf + 2, m->shape, m->ndim, b, &nb)) != MP_OK)
        return st;
    if (b[nb - 2] != g->L || b[nb - 1] != g->S) {
        char sm[256];
        mp_format_shape(sm, sizeof sm, m->shape, m->ndim);
        return mp_error(MP_ERR_SHAPE, "scaled_dot_product_attention: attn_mask of shape %s "
                        "does not broadcast to the attention weights' [..., %lld, %lld]", sm,
                        (long long)g->L, (long long)g->S);
    }
    g->nbd = nb - 2;
    memcpy(g->bshape, b, sizeof(int64_t) * (size_t)g->nbd);
    return MP_OK;
}

/* offs[b] for every batch entry: t's batch dims aligned right to the batch shape, size-1
 * dims broadcast, the head dim of a grouped key/value divided by its group factor */
static void entry_offsets(const sdpa_geom *g, const mp_tensor *t, int tail, int group,
                          int64_t *offs)
{
    int nt = t->ndim - tail, lead = g->nbd - nt;
    int64_t idx[MP_MAX_DIMS] = {0};
    for (int64_t e = 0; e < g->nb; e++) {
        int64_t off = 0;
        for (int d = lead > 0 ? lead : 0; d < g->nbd; d++) {
            int dt = d - lead;
            int64_t i = idx[d];
            if (group > 1 && d == g->nbd - 1)
                i /= group;
            if (dt >= 0 && t->shape[dt] != 1)
                off += i * t->strides[dt];
        }
        offs[e] = off;
        for (int d = g->nbd - 1; d >= 0; d--) {     /* next index, row-major */
            if (++idx[d] < g->bshape[d])
                break;
            idx[d] = 0;
        }
    }
}

static mp_status geometry(mp_tensor *q, mp_tensor *k, mp_tensor *v, const mp_sdpa_opts *o,
                          sdpa_geom *g)
{
    mp_status st = gqa_groups(q, k, v, o->enable_gqa, g);
    if (st == MP_OK)
        st = batch_shape(q, k, v, o->mask, g);
    if (st != MP_OK)
        return st;
    g->nb = product(g->bshape, g->nbd);
    if (!(g->offs = malloc(sizeof(int64_t) * 4 * (size_t)(g->nb ? g->nb : 1))))
        return mp_error(MP_ERR_NOMEM, "out of memory in scaled_dot_product_attention");
    entry_offsets(g, q, 2, 1, g->offs);
    entry_offsets(g, k, 2, g->gk, g->offs + g->nb);
    entry_offsets(g, v, 2, g->gv, g->offs + 2 * g->nb);
    mp_tensor *m = o->mask;
    if (m) {
        int md = m->ndim;
        g->mask_kind = m->dtype == MP_DTYPE_BOOL ? MP_ATTN_MASK_BOOL : MP_ATTN_MASK_FLOAT;
        g->m_rs = md >= 2 && m->shape[md - 2] != 1 ? m->strides[md - 2] : 0;
        g->m_cs = md >= 1 && m->shape[md - 1] != 1 ? m->strides[md - 1] : 0;
        entry_offsets(g, m, md >= 2 ? 2 : md, 1, g->offs + 3 * g->nb);
    }
    g->causal = o->is_causal;
    g->scale = (float)(o->has_scale ? o->scale : 1.0 / sqrt((double)g->E));
    g->p = o->dropout_p > 0.0 ? o->dropout_p : 0.0;
    g->seed = o->seed, g->offset = o->offset;
    return MP_OK;
}

void mp_sdpa_geom_free(void *vg)
{
    sdpa_geom *g = vg;
    if (g)
        free(g->offs);
    free(g);
}

/* ---- dropout factors from the Philox stream, element idx of (batch, L, S) row-major from
 * block offset + idx / 4, word idx % 4 (as dropout) ---- */

static void keep_factors(const void *vg, int64_t idx0, int64_t n, float *z)
{
    const sdpa_geom *g = vg;
    double keep = 1.0 - g->p;
    float scale = g->p < 1.0 ? (float)(1.0 / keep) : 0.0f;
    if (g->p >= 1.0) {
        memset(z, 0, sizeof(float) * (size_t)n);
        return;
    }
    uint32_t w[4];
    int64_t have = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t idx = idx0 + i;
        if (idx / 4 != have) {
            have = idx / 4;
            mp_philox(g->seed, g->offset + (uint64_t)have, w);
        }
        double u = (double)(w[idx % 4] >> 8) * (1.0 / 16777216.0);
        z[i] = u < keep ? scale : 0.0f;
    }
}

/* the kernel's arguments for tensors q, k, v, mask as laid out in g */
mp_attn_args mp_sdpa_args(const sdpa_geom *g, mp_tensor *q, mp_tensor *k, mp_tensor *v,
                          mp_tensor *m)
{
    mp_attn_args a;
    memset(&a, 0, sizeof a);
    a.nb = g->nb, a.L = g->L, a.S = g->S, a.E = g->E, a.Ev = g->Ev;
    a.dtype = q->dtype;
    a.q = mp_tensor_data(q), a.k = mp_tensor_data(k), a.v = mp_tensor_data(v);
    a.q_off = g->offs, a.k_off = g->offs + g->nb, a.v_off = g->offs + 2 * g->nb;
    a.q_rs = q->strides[q->ndim - 2], a.k_rs = k->strides[k->ndim - 2];
    a.v_rs = v->strides[v->ndim - 2];
    a.mask_kind = g->mask_kind;
    if (m) {
        a.m = mp_tensor_data(m), a.m_dtype = m->dtype, a.m_off = g->offs + 3 * g->nb;
        a.m_rs = g->m_rs, a.m_cs = g->m_cs;
    }
    a.causal = g->causal;
    a.scale = g->scale;
    if (g->p > 0.0)
        a.keep = keep_factors, a.keep_ctx = g;
    a.threads = mp_get_num_threads();
    return a;
}

/* a (new reference) when its last dim has unit stride (the kernel reads rows), else a
 * contiguous copy */
static mp_status rows_readable(mp_tensor *a, mp_tensor **out)
{
    if (a->shape[a->ndim - 1] <= 1 || a->strides[a->ndim - 1] == 1) {
        mp_tensor_incref(a);
        *out = a;
        return MP_OK;
    }
    return mp_tensor_contiguous(a, out);
}

mp_status mp_sdpa_scratch(const mp_attn_args *a, int backward, mp_tensor **ws)
{
    int64_t n = (int64_t)(mp_attn_scratch_floats(a, backward) * (size_t)a->threads);
    return mp_tensor_empty(&n, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, ws);
}

/* out and lse (nb, L) from the kernel */
static mp_status run_forward(sdpa_geom *g, mp_tensor *const *t, mp_tensor *m, mp_tensor **out,
                             mp_tensor **lse)
{
    int64_t shape[MP_MAX_DIMS], nl = g->nb * g->L;
    memcpy(shape, g->bshape, sizeof(int64_t) * (size_t)g->nbd);
    shape[g->nbd] = g->L, shape[g->nbd + 1] = g->Ev;
    mp_tensor *ws = NULL;
    mp_attn_args a = mp_sdpa_args(g, t[0], t[1], t[2], m);
    mp_status st = mp_tensor_empty(shape, g->nbd + 2, t[0]->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        st = mp_tensor_empty(&nl, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, lse);
    if (st == MP_OK)
        st = mp_sdpa_scratch(&a, 0, &ws);
    if (st == MP_OK) {
        a.scratch = mp_tensor_data(ws);
        if (mp_attn_forward(&a, mp_tensor_data(*out), mp_tensor_data(*lse)) != MP_OK)
            st = mp_error(MP_ERR_NOMEM, "out of memory in scaled_dot_product_attention");
    }
    mp_tensor_decref(ws);
    return st;
}

static mp_status record(sdpa_geom *g, mp_tensor *const *in, mp_tensor *const *t, mp_tensor *m,
                        mp_tensor *out, mp_tensor *lse, int *owned)
{
    mp_tensor *ins[4] = {in[0], in[1], in[2], g->mask_kind == MP_ATTN_MASK_FLOAT ? m : NULL};
    mp_node *node = NULL;
    mp_status st = mp_autograd_record("ScaledDotProductFlashAttentionForCpuBackward0",
                                      mp_sdpa_backward, ins, 4, &out, 1, &node);
    if (st != MP_OK || !node)
        return st;
    mp_tensor *keep[6] = {t[0], t[1], t[2], out, lse, m};
    for (int i = 0; i < 6 && st == MP_OK; i++)
        st = mp_node_save(node, i, keep[i]);
    node->ctx = g;
    node->release_ctx = mp_sdpa_geom_free;
    *owned = 1;
    return st;
}

/* mp_op_sdpa with the mask autocast chose */
static mp_status sdpa_masked(mp_tensor *q, mp_tensor *k, mp_tensor *v, mp_tensor *mask,
                             const mp_sdpa_opts *o, mp_tensor **out, uint64_t *blocks_used)
{
    mp_sdpa_opts with = *o;
    with.mask = mask;
    return mp_op_sdpa(q, k, v, &with, out, blocks_used);
}

mp_status mp_op_sdpa(mp_tensor *q, mp_tensor *k, mp_tensor *v, const mp_sdpa_opts *o,
                     mp_tensor **out, uint64_t *blocks_used)
{
    MP_AUTOCAST_ENTRY(MP_OP_SDPA,
                      sdpa_masked(ac_[0], ac_[1], ac_[2], ac_[3], o, out, blocks_used), q, k, v,
                      o->mask);
    MP_HOST_ONLY("sdpa", q, k, v);
    *out = NULL;
    *blocks_used = 0;
    mp_status st = check_inputs(q, k, v, o);
    sdpa_geom *g = st == MP_OK ? calloc(1, sizeof *g) : NULL;
    if (st == MP_OK && !g)
        st = mp_error(MP_ERR_NOMEM, "out of memory in scaled_dot_product_attention");
    if (st == MP_OK)
        st = geometry(q, k, v, o, g);
    mp_tensor *in[3] = {q, k, v}, *t[3] = {NULL, NULL, NULL}, *lse = NULL;
    for (int i = 0; i < 3 && st == MP_OK; i++)
        st = rows_readable(in[i], &t[i]);
    if (st == MP_OK)
        st = run_forward(g, t, o->mask, out, &lse);
    int owned = 0;
    if (st == MP_OK)
        st = record(g, in, t, o->mask, *out, lse, &owned);
    if (st == MP_OK && g->p > 0.0 && g->p < 1.0)
        *blocks_used = (uint64_t)((g->nb * g->L * g->S + 3) / 4);
    if (!owned)
        mp_sdpa_geom_free(g);
    mp_decref_all(t, 3);
    mp_tensor_decref(lse);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
