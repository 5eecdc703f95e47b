/* attention_bwd.c - the backward pass of fused attention (attention.h). Nothing of the
 * forward is kept but its output and the per-row logsumexp: each (query block, key block)
 * recomputes P = exp(S - lse), regenerates the dropout factors Z from the same stream, and
 *     dV_j += (P Z)^T dO_i,  dP = (dO_i V_j^T) Z,  dS = P (dP - rowsum(dO O)),
 *     dK_j += (scale dS)^T Q_i,  dQ_i += (scale dS) K_j   (dS is also the float mask's
 * gradient; scaling dS once, in the loop that makes it, leaves the two products plain
 * accumulations into fp32, with no epilogue pass).
 * Key blocks run in order and query blocks in order inside them, so every accumulator sums
 * its terms in one fixed order; the split mode (keys in one pass, queries in another, for
 * more parallel work when there are few batch entries) gives the same bits. */
#include "attention.h"

#include <string.h>

#include "attention_impl.h"
#include "dispatch.h"
#include "gemm.h"

/* n values of dtype dt at src as fp32: src itself, or converted into buf */
static const float *row_f32(mp_dtype dt, const void *src, float *buf, int64_t n)
{
    const mp_cpu_kernels *k = mp_cpu();
    if (dt == MP_DTYPE_FLOAT16)
        k->f16_to_f32(src, buf, (size_t)n);
    else if (dt == MP_DTYPE_BFLOAT16)
        k->bf16_to_f32(src, buf, (size_t)n);
    else
        return src;
    return buf;
}

/* delta[row] = rowsum(dout * out) for the rows of entry `item` */
static mp_status delta_item(const mp_attn_args *a, void *vg, int64_t item, float *ws)
{
    const mp_attn_grads *g = vg;
    int64_t ev = a->Ev;
    size_t osz = mp_dtype_size(a->dtype), gsz = mp_dtype_size(g->dout_dtype);
    float *x = ws, *y = ws + ev + 16;
    for (int64_t r = item * a->L; r < (item + 1) * a->L; r++) {
        const float *xo = row_f32(a->dtype, (const char *)g->out + (size_t)(r * ev) * osz, x,
                                  ev);
        const float *yd = row_f32(g->dout_dtype,
                                  (const char *)g->dout + (size_t)(r * ev) * gsz, y, ev);
        g->delta[r] = (float)mp_cpu()->vm.dot(xo, yd, (size_t)ev);
    }
    return MP_OK;
}

static mp_status gemm1(mp_gemm_args g)
{
    return mp_gemm_at(&g, mp_cpu()->isa, 1);
}

typedef struct {
    int64_t b, i0, br, j0, bc;
    int dq, dkv;
} blk;

/* t = scale dS of the block from p = P (and z = Z); the products that need P Z come first */
static mp_status block_grads(const mp_attn_args *a, const mp_attn_grads *g, const blk *k,
                             float *p, float *t, float *z)
{
    int64_t ev = a->Ev, gsz = (int64_t)mp_dtype_size(g->dout_dtype);
    const char *dop = (const char *)g->dout + (k->b * a->L + k->i0) * ev * gsz;
    mp_status st = MP_OK;
    if (a->keep) {
        mp_attn_keep_block(a, k->b, k->i0, k->br, k->j0, k->bc, z);
        for (int64_t r = 0; r < k->br; r++)
            for (int64_t c = 0; c < k->bc; c++)
                t[r * ATTN_BC + c] = p[r * ATTN_BC + c] * z[r * ATTN_BC + c];
    }
    if (k->dkv) {                                  /* dV_j += (P Z)^T dO_i */
        mp_gemm_args m = mp_gemm_plain(1, 0, k->bc, ev, k->br, a->keep ? t : p, ATTN_BC, dop,
                                       ev, g->dv + (k->b * a->S + k->j0) * ev, ev);
        m.b_dtype = g->dout_dtype;
        m.beta = 1.0f;
        st = gemm1(m);
    }
    int64_t esz = (int64_t)mp_dtype_size(a->dtype);
    const char *vp = a->v + (a->v_off[k->b] + k->j0 * a->v_rs) * esz;
    mp_gemm_args m = mp_gemm_plain(0, 1, k->br, k->bc, ev, dop, ev, vp, a->v_rs, t, ATTN_BC);
    m.a_dtype = g->dout_dtype;
    m.b_dtype = a->dtype;
    if (st == MP_OK)
        st = gemm1(m);                             /* t = dO_i V_j^T */
    /* on locals: through the args (no strict aliasing) every element reloaded them, and the
     * loops stayed scalar */
    const int64_t bc = k->bc, ldm = a->S;
    const int keep = a->keep != NULL;
    const float sc = a->E > 0 ? a->scale : 1.0f;
    float *dm = g->dmask && k->dkv ? g->dmask + (k->b * a->L + k->i0) * ldm + k->j0 : NULL;
    const float *delta = g->delta + k->b * a->L + k->i0;
    for (int64_t r = 0; r < k->br && st == MP_OK; r++) {
        float d = delta[r], *tr = t + r * ATTN_BC;
        const float *pr = p + r * ATTN_BC, *zr = z + r * ATTN_BC;
        if (keep)
            for (int64_t c = 0; c < bc; c++)
                tr[c] = pr[c] * (tr[c] * zr[c] - d);
        else
            for (int64_t c = 0; c < bc; c++)
                tr[c] = pr[c] * (tr[c] - d);
        if (dm)
            memcpy(dm + r * ldm, tr, sizeof(float) * (size_t)bc);
        if (sc != 1.0f)
            for (int64_t c = 0; c < bc; c++)
                tr[c] *= sc;
    }
    return st;
}

static mp_status backward_block(const mp_attn_args *a, const mp_attn_grads *g, const blk *k,
                                float *ws)
{
    float *p = ws, *t = p + ATTN_BR * ATTN_BC, *z = t + ATTN_BR * ATTN_BC;
    mp_status st = mp_attn_scores(a, k->b, k->i0, k->br, k->j0, k->bc, p);
    if (st != MP_OK)
        return st;
    for (int64_t r = 0; r < k->br; r++) {          /* P = exp(S - lse); lse = +inf: 0 */
        float *pr = p + r * ATTN_BC;
        int64_t n = mp_attn_row_keys(a, k->i0 + r, k->j0, k->bc);
        mp_cpu()->vm.exp_sum(pr, g->lse[k->b * a->L + k->i0 + r], pr, (size_t)n);
        memset(pr + n, 0, sizeof(float) * (size_t)(k->bc - n));
    }
    if ((st = block_grads(a, g, k, p, t, z)) != MP_OK)
        return st;
    int64_t esz = (int64_t)mp_dtype_size(a->dtype), E = a->E;
    if (k->dkv) {                                  /* dK_j += scale dS^T Q_i */
        const char *qp = a->q + (a->q_off[k->b] + k->i0 * a->q_rs) * esz;
        mp_gemm_args m = mp_gemm_plain(1, 0, k->bc, E, k->br, t, ATTN_BC, qp, a->q_rs,
                                       g->dk + (k->b * a->S + k->j0) * E, E);
        m.b_dtype = a->dtype;
        m.beta = 1.0f;
        st = gemm1(m);
    }
    if (k->dq && st == MP_OK) {                    /* dQ_i += scale dS K_j */
        const char *kp = a->k + (a->k_off[k->b] + k->j0 * a->k_rs) * esz;
        mp_gemm_args m = mp_gemm_plain(0, 0, k->br, E, k->bc, t, ATTN_BC, kp, a->k_rs,
                                       g->dq + (k->b * a->L + k->i0) * E, E);
        m.b_dtype = a->dtype;
        m.beta = 1.0f;
        st = gemm1(m);
    }
    return st;
}

/* key blocks [jb0, jb1) x query blocks [ib0, ib1) of entry b; zeroes what it accumulates */
static mp_status backward_range(const mp_attn_args *a, const mp_attn_grads *g, blk k,
                                int64_t jb0, int64_t jb1, int64_t ib0, int64_t ib1, float *ws)
{
    int64_t L = a->L, S = a->S;
    int64_t jlo = jb0 * ATTN_BC, jhi = jb1 * ATTN_BC < S ? jb1 * ATTN_BC : S;
    int64_t ilo = ib0 * ATTN_BR, ihi = ib1 * ATTN_BR < L ? ib1 * ATTN_BR : L;
    if (k.dkv) {
        memset(g->dk + (k.b * S + jlo) * a->E, 0, sizeof(float) * (size_t)((jhi - jlo) * a->E));
        memset(g->dv + (k.b * S + jlo) * a->Ev, 0,
               sizeof(float) * (size_t)((jhi - jlo) * a->Ev));
    }
    if (k.dq)
        memset(g->dq + (k.b * L + ilo) * a->E, 0, sizeof(float) * (size_t)((ihi - ilo) * a->E));
    for (int64_t jb = jb0; jb < jb1; jb++) {
        k.j0 = jb * ATTN_BC;
        k.bc = S - k.j0 < ATTN_BC ? S - k.j0 : ATTN_BC;
        for (int64_t ib = ib0; ib < ib1; ib++) {
            k.i0 = ib * ATTN_BR;
            k.br = L - k.i0 < ATTN_BR ? L - k.i0 : ATTN_BR;
            if (a->causal && k.j0 > k.i0 + k.br - 1)
                continue;                          /* every key of the block is masked */
            mp_status st = backward_block(a, g, &k, ws);
            if (st != MP_OK)
                return st;
        }
    }
    return MP_OK;
}

typedef struct {
    const mp_attn_grads *g;
    int64_t nqb, nkb;
    int pass;                   /* 0: whole entries, 1: key blocks, 2: query blocks */
} bwd_ctx;

static mp_status backward_item(const mp_attn_args *a, void *vctx, int64_t item, float *ws)
{
    const bwd_ctx *c = vctx;
    blk k = {0, 0, 0, 0, 0, c->pass != 1, c->pass != 2};
    if (c->pass == 0) {
        k.b = item;
        return backward_range(a, c->g, k, 0, c->nkb, 0, c->nqb, ws);
    }
    if (c->pass == 1) {
        k.b = item / c->nkb;
        return backward_range(a, c->g, k, item % c->nkb, item % c->nkb + 1, 0, c->nqb, ws);
    }
    k.b = item / c->nqb;
    return backward_range(a, c->g, k, 0, c->nkb, item % c->nqb, item % c->nqb + 1, ws);
}

mp_status mp_attn_backward(const mp_attn_args *a, const mp_attn_grads *g)
{
    size_t per = mp_attn_scratch_floats(a, 1);
    mp_status st = mp_attn_run_chunks(a, a->nb, per, delta_item, (void *)g);
    bwd_ctx c = {g, (a->L + ATTN_BR - 1) / ATTN_BR, (a->S + ATTN_BC - 1) / ATTN_BC, 0};
    if (st != MP_OK || a->L == 0)
        return st;
    if (a->S == 0) {                               /* no keys: dq is 0, dk and dv are empty */
        memset(g->dq, 0, sizeof(float) * (size_t)(a->nb * a->L * a->E));
        return MP_OK;
    }
    if (!g->split)
        return mp_attn_run_chunks(a, a->nb, per, backward_item, &c);
    c.pass = 1;
    st = mp_attn_run_chunks(a, a->nb * c.nkb, per, backward_item, &c);
    c.pass = 2;
    if (st == MP_OK)
        st = mp_attn_run_chunks(a, a->nb * c.nqb, per, backward_item, &c);
    return st;
}
