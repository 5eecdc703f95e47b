/* attention_fwd.c - the forward pass of fused attention (attention.h) and what the backward
 * shares with it: the scores block (GEMM, then mask and causal rule) and the chunked
 * parallel loop. Per query block the keys are streamed in blocks: the running row maximum m
 * and sum l rescale the fp32 output accumulator (online softmax), so the L x S matrix never
 * exists. A row no key takes part in (all masked) gives 0 and logsumexp +inf, as torch. */
#include "attention.h"

#include <math.h>
#include <string.h>

#include "../shared/mp_half.h"
#include "attention_impl.h"
#include "dispatch.h"
#include "gemm.h"
#include "parallel.h"

size_t mp_attn_scratch_floats(const mp_attn_args *a, int backward)
{
    size_t blk = (size_t)ATTN_BR * ATTN_BC;
    if (backward)
        return 3 * blk + 2 * (size_t)(a->Ev + 16);
    /* scores, dropout factors, output accumulator, m, l as doubles, then the rows'
     * exponent arguments and results */
    return 2 * blk + (size_t)ATTN_BR * (size_t)(a->Ev + 1) + 4 * ATTN_BR + 16;
}

static float mask_value(mp_dtype dt, const char *p)
{
    switch (dt) {
    case MP_DTYPE_FLOAT16: return mp_half_to_f32(*(const mp_half *)p);
    case MP_DTYPE_BFLOAT16: return mp_bf16_to_f32(*(const mp_bf16 *)p);
    default: return *(const float *)p;
    }
}

/* The scale (here rather than as the product's alpha, which costs the GEMM an epilogue pass:
 * the same single rounding of scale * acc), then the mask and the causal rule. */
static void apply_mask(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br, int64_t j0,
                       int64_t bc, float *s)
{
    size_t msz = a->mask_kind ? mp_dtype_size(a->m_dtype) : 0;
    const float scale = a->E > 0 ? a->scale : 1.0f;   /* E = 0: no products, scores 0 */
    for (int64_t r = 0; r < br; r++) {
        float *row = s + r * ATTN_BC;
        int64_t i = i0 + r;
        if (scale != 1.0f)
            for (int64_t c = 0; c < bc; c++)
                row[c] = scale * row[c];
        if (a->mask_kind != MP_ATTN_MASK_NONE) {
            const char *mp = a->m + (a->m_off[b] + i * a->m_rs + j0 * a->m_cs) * (int64_t)msz;
            int64_t cs = a->m_cs * (int64_t)msz;
            if (a->mask_kind == MP_ATTN_MASK_BOOL) {
                for (int64_t c = 0; c < bc; c++)
                    if (!mp[c * cs])
                        row[c] = -INFINITY;
            } else {
                for (int64_t c = 0; c < bc; c++)
                    row[c] += mask_value(a->m_dtype, mp + c * cs);
            }
        }
        if (a->causal)
            for (int64_t c = i - j0 + 1 > 0 ? i - j0 + 1 : 0; c < bc; c++)
                row[c] = -INFINITY;
    }
}

mp_status mp_attn_scores(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br, int64_t j0,
                         int64_t bc, float *s)
{
    int64_t esz = (int64_t)mp_dtype_size(a->dtype);
    const char *qp = a->q + (a->q_off[b] + i0 * a->q_rs) * esz;
    const char *kp = a->k + (a->k_off[b] + j0 * a->k_rs) * esz;
    mp_gemm_args g = mp_gemm_plain(0, 1, br, bc, a->E, qp, a->q_rs, kp, a->k_rs, s, ATTN_BC);
    g.a_dtype = g.b_dtype = a->dtype;
    mp_status st = mp_gemm_at(&g, mp_cpu()->isa, 1);
    if (st == MP_OK)
        apply_mask(a, b, i0, br, j0, bc, s);
    return st;
}

int64_t mp_attn_row_keys(const mp_attn_args *a, int64_t i, int64_t j0, int64_t bc)
{
    if (!a->causal)
        return bc;
    int64_t n = i - j0 + 1;
    return n < 0 ? 0 : n < bc ? n : bc;
}

/* One key block of br rows: p (scores in, probabilities out, row stride ATTN_BC) joins the
 * running maxima m and sums l; the accumulator rows o are rescaled to the new maxima. z:
 * dropout factors or NULL. t, e: br floats of scratch. The rescale factors of all rows are
 * one vector exp (a one-element call per row cost as much as the row's own exponentials). */
static void online_block(const mp_attn_args *a, const mp_vmath *vm, float *p, int64_t i0,
                         int64_t br, int64_t j0, int64_t bc, float *m, double *l, float *o,
                         const float *z, float *t, float *e)
{
    int64_t ev = a->Ev;
    unsigned char none[ATTN_BR];        /* no key of the row takes part yet */
    for (int64_t r = 0; r < br; r++) {
        float *pr = p + r * ATTN_BC;
        int64_t n = mp_attn_row_keys(a, i0 + r, j0, bc);
        none[r] = 0;
        float mo = m[r], mx = n > 0 ? vm->max(pr, (size_t)n) : -INFINITY;
        float mn = mx > mo ? mx : mo;
        if (mn == -INFINITY) {
            int nan = 0;
            for (int64_t c = 0; c < n; c++)
                nan |= pr[c] != pr[c];
            if (!nan) {                 /* nothing takes part yet: no contribution */
                memset(pr, 0, sizeof(float) * (size_t)bc);
                t[r] = 0.0f;            /* e^0: nothing to rescale */
                none[r] = 1;
                continue;
            }
            mn = 0.0f;                  /* let the NaNs through the exponentials */
        }
        t[r] = mo - mn;
        m[r] = mn;
    }
    vm->map[MP_VM_EXP](t, e, (size_t)br);
    for (int64_t r = 0; r < br; r++) {
        if (none[r])
            continue;
        float *pr = p + r * ATTN_BC, alpha = e[r], *orow = o + r * ev;
        int64_t n = mp_attn_row_keys(a, i0 + r, j0, bc);
        double sum = vm->exp_sum(pr, m[r], pr, (size_t)n);
        memset(pr + n, 0, sizeof(float) * (size_t)(bc - n));   /* causally masked: e^-inf */
        l[r] = l[r] * alpha + sum;
        if (alpha != 1.0f)
            for (int64_t c = 0; c < ev; c++)
                orow[c] *= alpha;
        if (z)
            for (int64_t c = 0; c < bc; c++)
                pr[c] *= z[r * ATTN_BC + c];
    }
}

/* the dropout factors of rows [i0, i0+br), keys [j0, j0+bc) of batch entry b */
void mp_attn_keep_block(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br, int64_t j0,
                        int64_t bc, float *z)
{
    for (int64_t r = 0; r < br; r++)
        a->keep(a->keep_ctx, ((b * a->L) + i0 + r) * a->S + j0, bc, z + r * ATTN_BC);
}

static void store_row(mp_dtype dt, void *dst, const float *src, int64_t n)
{
    const mp_cpu_kernels *k = mp_cpu();
    if (dt == MP_DTYPE_FLOAT16)
        k->f32_to_f16(src, dst, (size_t)n);
    else if (dt == MP_DTYPE_BFLOAT16)
        k->f32_to_bf16(src, dst, (size_t)n);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

static void finish_rows(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br, float *o,
                        const float *m, const double *l, float *t, void *out, float *lse)
{
    int64_t ev = a->Ev;
    size_t esz = mp_dtype_size(a->dtype);
    for (int64_t r = 0; r < br; r++)
        t[r] = (float)l[r];
    mp_cpu()->vm.map[MP_VM_LOG](t, t + ATTN_BR, (size_t)br);   /* all rows' logs at once */
    for (int64_t r = 0; r < br; r++) {
        float *orow = o + r * ev, li = t[r];
        int64_t row = b * a->L + i0 + r;
        if (li == 0.0f) {
            memset(orow, 0, sizeof(float) * (size_t)ev);
            lse[row] = INFINITY;
        } else {
            for (int64_t c = 0; c < ev; c++)
                orow[c] /= li;
            lse[row] = m[r] + t[ATTN_BR + r];
        }
        store_row(a->dtype, (char *)out + (size_t)(row * ev) * esz, orow, ev);
    }
}

static mp_status forward_block(const mp_attn_args *a, int64_t b, int64_t i0, int64_t br,
                               float *ws, void *out, float *lse)
{
    const mp_vmath *vm = &mp_cpu()->vm;
    int64_t ev = a->Ev, esz = (int64_t)mp_dtype_size(a->dtype);
    float *s = ws, *z = s + ATTN_BR * ATTN_BC, *o = z + ATTN_BR * ATTN_BC;
    float *m = o + ATTN_BR * ev;
    double *l = (double *)(m + ATTN_BR);  /* every offset here is even: 8-byte aligned */
    float *t = (float *)(l + ATTN_BR);    /* 2 * ATTN_BR floats */
    for (int64_t r = 0; r < br; r++)
        m[r] = -INFINITY, l[r] = 0.0;
    memset(o, 0, sizeof(float) * (size_t)(br * ev));
    int64_t jend = a->causal && i0 + br < a->S ? i0 + br : a->S;
    for (int64_t j0 = 0; j0 < jend; j0 += ATTN_BC) {
        int64_t bc = jend - j0 < ATTN_BC ? jend - j0 : ATTN_BC;
        mp_status st = mp_attn_scores(a, b, i0, br, j0, bc, s);
        if (st != MP_OK)
            return st;
        if (a->keep)
            mp_attn_keep_block(a, b, i0, br, j0, bc, z);
        online_block(a, vm, s, i0, br, j0, bc, m, l, o, a->keep ? z : NULL, t, t + ATTN_BR);
        const char *vp = a->v + (a->v_off[b] + j0 * a->v_rs) * esz;
        mp_gemm_args g = mp_gemm_plain(0, 0, br, ev, bc, s, ATTN_BC, vp, a->v_rs, o, ev);
        g.b_dtype = a->dtype;
        g.beta = 1.0f;
        if ((st = mp_gemm_at(&g, mp_cpu()->isa, 1)) != MP_OK)
            return st;
    }
    finish_rows(a, b, i0, br, o, m, l, t, out, lse);
    return MP_OK;
}

typedef struct {
    const mp_attn_args *a;
    void *out;
    float *lse;
    int64_t nqb;
} fwd_ctx;

static mp_status forward_item(const mp_attn_args *a, void *vctx, int64_t item, float *ws)
{
    fwd_ctx *c = vctx;
    int64_t b = item / c->nqb, i0 = item % c->nqb * ATTN_BR;
    int64_t br = a->L - i0 < ATTN_BR ? a->L - i0 : ATTN_BR;
    return forward_block(a, b, i0, br, ws, c->out, c->lse);
}

typedef struct {
    const mp_attn_args *a;
    int64_t items, chunks;
    size_t per;
    mp_attn_item_fn fn;
    void *ctx;
    int failed;
    mp_status st;
} chunk_job;

/* chunk c: items [items * c / chunks, items * (c + 1) / chunks) with scratch slot c */
static void run_chunk(void *vjob, int64_t c0, int64_t c1)
{
    chunk_job *j = vjob;
    for (int64_t c = c0; c < c1; c++) {
        float *ws = j->a->scratch + (size_t)c * j->per;
        int64_t lo = j->items * c / j->chunks, hi = j->items * (c + 1) / j->chunks;
        for (int64_t it = lo; it < hi; it++) {
            mp_status st = j->fn(j->a, j->ctx, it, ws);
            if (st != MP_OK && !__atomic_exchange_n(&j->failed, 1, __ATOMIC_RELAXED))
                j->st = st;
            if (st != MP_OK)
                return;
        }
    }
}

mp_status mp_attn_run_chunks(const mp_attn_args *a, int64_t items, size_t per,
                             mp_attn_item_fn fn, void *ctx)
{
    if (items <= 0)
        return MP_OK;
    chunk_job j = {a, items, a->threads < items ? a->threads : items, per, fn, ctx, 0, MP_OK};
    if (j.chunks < 1)
        j.chunks = 1;
    mp_parallel_for(j.chunks, 1, run_chunk, &j);
    return j.st;
}

mp_status mp_attn_forward(const mp_attn_args *a, void *out, float *lse)
{
    fwd_ctx c = {a, out, lse, (a->L + ATTN_BR - 1) / ATTN_BR};
    return mp_attn_run_chunks(a, c.nqb * a->nb, mp_attn_scratch_floats(a, 0), forward_item,
                              &c);
}
