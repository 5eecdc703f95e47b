/* conv_run.c - forward and backward of conv_core.h. Images are independent in forward and
 * for the input gradient; the weight and bias gradients are summed over images in a fixed
 * number of blocks (set by the sizes, never by the thread count), each with its own fp32
 * partial, added in block order: results do not depend on the number of threads. Large
 * batches run images (blocks) on parallel threads with one-thread GEMMs; small ones run
 * one image at a time with the GEMM's own threads. A 1x1, stride-1, unpadded conv whose
 * image is contiguous per channel reads x itself as the column matrix. */
#include "conv_core.h"

#include <stdlib.h>
#include <string.h>

#include "../../cpu/dispatch.h"
#include "../../cpu/gemm.h"
#include "../../cpu/im2col.h"
#include "../../cpu/parallel.h"
#include "../alloc.h"
#include "../rows.h"

#define CONV_PARALLEL_MACS 4.0e6           /* below: one thread for the whole op */
#define CONV_MAX_BLOCKS 16
#define CONV_PARTIAL_BYTES ((double)(64 << 20))

typedef struct {
    const mp_conv_geom *g;
    int64_t cg, og, k, l;          /* per group: channels, outputs, GEMM K; l = OH * OW */
    int64_t *hmap, *wmap;
    int direct_cols;               /* x is the column matrix: ld below, no im2col */
    int64_t direct_ld;
    int pointwise;                 /* col2im is the identity: dX comes straight from a GEMM */
    int threads;                   /* per GEMM: 0 all, 1 when images run in parallel */
    mp_im2col_desc d;              /* one whole image */
} conv_plan;

static mp_status plan_init(conv_plan *p, const mp_conv_geom *g)
{
    memset(p, 0, sizeof *p);
    p->g = g;
    p->cg = g->c / g->groups, p->og = g->o / g->groups;
    p->k = p->cg * g->kh * g->kw, p->l = g->oh * g->ow;
    p->hmap = malloc(sizeof(int64_t) * (size_t)(g->kh * g->oh + g->kw * g->ow + 1));
    if (!p->hmap)
        return mp_error(MP_ERR_NOMEM, "conv: out of memory for the padding maps");
    p->wmap = p->hmap + g->kh * g->oh;
    mp_conv_index_map(g->h, g->oh, g->kh, g->stride[0], g->pad_lo[0], g->dil[0], g->mode,
                      p->hmap);
    mp_conv_index_map(g->w, g->ow, g->kw, g->stride[1], g->pad_lo[1], g->dil[1], g->mode,
                      p->wmap);
    p->pointwise = g->kh == 1 && g->kw == 1 && g->stride[0] == 1 && g->stride[1] == 1 &&
                   !g->pad_lo[0] && !g->pad_hi[0] && !g->pad_lo[1] && !g->pad_hi[1];
    int flat = (g->h == 1 || g->sh == g->w) && (g->w == 1 || g->sw == 1);
    p->direct_ld = p->cg == 1 ? p->l : g->sc;
    p->direct_cols = p->pointwise && flat && p->direct_ld >= p->l;
    p->d = (mp_im2col_desc){g->c, g->h, g->w, g->sc, g->sh, g->sw, g->kh, g->kw, g->oh, g->ow,
                            p->hmap, p->wmap};
    return MP_OK;
}

static void set_failed(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELAXED); }

static int gemm(const conv_plan *p, mp_gemm_args *a, mp_dtype adt, mp_dtype bdt, float beta)
{
    a->a_dtype = adt, a->b_dtype = bdt, a->c_dtype = MP_DTYPE_FLOAT32;
    a->beta = beta;
    return mp_gemm_at(a, mp_cpu()->isa, p->threads) == MP_OK ? 0 : -1;
}

/* ---- forward ---- */

typedef struct {
    const conv_plan *p;
    const char *x, *w;
    const float *bias;
    char *y;
    int failed;
} fwd_ctx;

static int fwd_image(const fwd_ctx *f, int64_t n, char *cols, float *scratch)
{
    const conv_plan *p = f->p;
    const mp_conv_geom *g = p->g;
    size_t es = mp_dtype_size(g->dt);
    const char *xn = f->x + (size_t)(n * g->sn) * es;
    char *yn = f->y + (size_t)(n * g->o * p->l) * es;
    if (!p->direct_cols)
        mp_im2col(&p->d, es, xn, cols);
    for (int64_t gi = 0; gi < g->groups; gi++) {
        const char *b = p->direct_cols ? xn + (size_t)(gi * p->cg * g->sc) * es
                                       : cols + (size_t)(gi * p->k * p->l) * es;
        float *c = scratch ? scratch : (float *)yn + gi * p->og * p->l;
        for (int64_t o = 0; f->bias && o < p->og; o++)
            for (int64_t j = 0; j < p->l; j++)
                c[o * p->l + j] = f->bias[gi * p->og + o];
        mp_gemm_args a = mp_gemm_plain(0, 0, p->og, p->l, p->k,
                                       f->w + (size_t)(gi * p->og * p->k) * es, p->k, b,
                                       p->direct_cols ? p->direct_ld : p->l, c, p->l);
        if (gemm(p, &a, g->dt, g->dt, f->bias ? 1.0f : 0.0f) < 0)
            return -1;
        if (scratch)
            mp_row_store(g->dt, yn + (size_t)(gi * p->og * p->l) * es, 0, p->og * p->l, c);
    }
    return 0;
}

static void fwd_range(void *vctx, int64_t n0, int64_t n1)
{
    fwd_ctx *f = vctx;
    const conv_plan *p = f->p;
    size_t cb = p->direct_cols ? 0 : (size_t)(p->g->groups * p->k * p->l) *
                                         mp_dtype_size(p->g->dt);
    size_t sb = p->g->dt != MP_DTYPE_FLOAT32 ? sizeof(float) * (size_t)(p->og * p->l) : 0;
    char *cols = cb ? mp_alloc(cb) : NULL;
    float *scratch = sb ? mp_alloc(sb) : NULL;
    if ((cb && !cols) || (sb && !scratch))
        set_failed(&f->failed);
    for (int64_t n = n0; n < n1 && !__atomic_load_n(&f->failed, __ATOMIC_RELAXED); n++)
        if (fwd_image(f, n, cols, scratch) < 0)
            set_failed(&f->failed);
    if (cols)
        mp_free(cols, cb);
    if (scratch)
        mp_free(scratch, sb);
}

/* Threads for `units` independent pieces of `macs` multiply-adds in all: pieces run in
 * parallel (one-thread GEMMs) when there are enough of them. */
static int parallel_units(conv_plan *p, int64_t units, double macs)
{
    int nt = mp_get_num_threads();
    int par = nt > 1 && units >= nt && macs >= CONV_PARALLEL_MACS;
    p->threads = par ? 1 : 0;
    return par;
}

mp_status mp_conv_forward(const mp_conv_geom *g, const void *x, const void *w,
                          const float *bias, void *y)
{
    conv_plan p;
    mp_status st = plan_init(&p, g);
    if (st != MP_OK)
        return st;
    fwd_ctx f = {&p, x, w, bias, y, 0};
    double macs = (double)g->n * (double)g->o * (double)p.k * (double)p.l;
    if (parallel_units(&p, g->n, macs))
        mp_parallel_for(g->n, 1, fwd_range, &f);
    else
        fwd_range(&f, 0, g->n);
    free(p.hmap);
    return f.failed ? mp_error(MP_ERR_NOMEM, "conv: out of memory for the im2col buffers")
                    : MP_OK;
}

/* ---- backward ---- */

typedef struct {
    const conv_plan *p;
    const char *x, *w, *dy;
    mp_dtype gdt;
    float *dx, **dwp;              /* dwp[b]: block b's weight-gradient partial */
    double *dbp;                   /* nblk * O bias-gradient partials, or NULL */
    int64_t nblk;
    int failed;
} bwd_ctx;

typedef struct {
    char *cols;
    float *dcols, *row;
} bwd_bufs;

static int bwd_dx(const bwd_ctx *c, int64_t gi, const char *dyg, float *dxn, float *dcols)
{
    const conv_plan *p = c->p;
    size_t es = mp_dtype_size(p->g->dt);
    float *dst = p->pointwise ? dxn + gi * p->cg * p->l : dcols;
    mp_gemm_args a = mp_gemm_plain(1, 0, p->k, p->l, p->og,
                                   c->w + (size_t)(gi * p->og * p->k) * es, p->k, dyg, p->l,
                                   dst, p->l);
    if (gemm(p, &a, p->g->dt, c->gdt, 0.0f) < 0)
        return -1;
    if (!p->pointwise) {
        mp_im2col_desc d = p->d;
        d.c = p->cg;
        mp_col2im_f32(&d, dcols, dxn + gi * p->cg * p->g->h * p->g->w);
    }
    return 0;
}

static int bwd_image(const bwd_ctx *c, int64_t n, int64_t b, const bwd_bufs *buf)
{
    const conv_plan *p = c->p;
    const mp_conv_geom *g = p->g;
    size_t es = mp_dtype_size(g->dt), gs = mp_dtype_size(c->gdt);
    const char *xn = c->x + (size_t)(n * g->sn) * es;
    const char *dyn = c->dy + (size_t)(n * g->o * p->l) * gs;
    float *dxn = c->dx ? c->dx + n * g->c * g->h * g->w : NULL;
    if (dxn && !p->pointwise)
        memset(dxn, 0, sizeof(float) * (size_t)(g->c * g->h * g->w));
    if (c->dwp && !p->direct_cols)
        mp_im2col(&p->d, es, xn, buf->cols);
    for (int64_t gi = 0; gi < g->groups; gi++) {
        const char *dyg = dyn + (size_t)(gi * p->og * p->l) * gs;
        if (dxn && bwd_dx(c, gi, dyg, dxn, buf->dcols) < 0)
            return -1;
        if (c->dwp) {
            const char *bm = p->direct_cols ? xn + (size_t)(gi * p->cg * g->sc) * es
                                            : buf->cols + (size_t)(gi * p->k * p->l) * es;
            mp_gemm_args a = mp_gemm_plain(0, 1, p->og, p->k, p->l, dyg, p->l, bm,
                                           p->direct_cols ? p->direct_ld : p->l,
                                           c->dwp[b] + gi * p->og * p->k, p->k);
            if (gemm(p, &a, c->gdt, g->dt, 1.0f) < 0)
                return -1;
        }
        for (int64_t o = 0; c->dbp && o < p->og; o++) {
            const float *r = mp_row_load(c->gdt, dyg, o, p->l, buf->row);
            c->dbp[b * g->o + gi * p->og + o] += mp_sum_f32(r, p->l);
        }
    }
    return 0;
}

static void *alloc_or_fail(size_t bytes, int *failed)
{
    void *q = bytes ? mp_alloc(bytes) : NULL;
    if (bytes && !q)
        set_failed(failed);
    return q;
}

static void bwd_range(void *vctx, int64_t b0, int64_t b1)
{
    bwd_ctx *c = vctx;
    const conv_plan *p = c->p;
    const mp_conv_geom *g = p->g;
    size_t cb = c->dwp && !p->direct_cols
                    ? (size_t)(g->groups * p->k * p->l) * mp_dtype_size(g->dt) : 0;
    size_t db = c->dx && !p->pointwise ? sizeof(float) * (size_t)(p->k * p->l) : 0;
    size_t rb = c->dbp && c->gdt != MP_DTYPE_FLOAT32 ? sizeof(float) * (size_t)p->l : 0;
    bwd_bufs buf = {alloc_or_fail(cb, &c->failed), alloc_or_fail(db, &c->failed),
                    alloc_or_fail(rb, &c->failed)};
    for (int64_t b = b0; b < b1; b++) {
        int64_t n0 = g->n * b / c->nblk, n1 = g->n * (b + 1) / c->nblk;
        for (int64_t n = n0; n < n1 && !__atomic_load_n(&c->failed, __ATOMIC_RELAXED); n++)
            if (bwd_image(c, n, b, &buf) < 0)
                set_failed(&c->failed);
    }
    if (buf.cols)
        mp_free(buf.cols, cb);
    if (buf.dcols)
        mp_free(buf.dcols, db);
    if (buf.row)
        mp_free(buf.row, rb);
}

/* Blocks of images whose weight/bias gradients are summed apart: a function of the sizes. */
static int64_t block_count(const mp_conv_geom *g, const conv_plan *p, int need_sums, int dw)
{
    if (!need_sums)
        return g->n;
    int64_t nb = g->n < CONV_MAX_BLOCKS ? g->n : CONV_MAX_BLOCKS;
    double bytes = dw ? (double)g->o * (double)p->k * sizeof(float) : 0.0;
    if (bytes > 0 && (double)nb * bytes > CONV_PARTIAL_BYTES)
        nb = (int64_t)(CONV_PARTIAL_BYTES / bytes);
    return nb < 1 ? 1 : nb;
}

/* The partials beyond block 0 (which is dw itself), zeroed; dbp zeroed. */
static mp_status alloc_partials(bwd_ctx *c, float *dw, float *db, size_t wsize)
{
    c->dwp = dw ? calloc((size_t)c->nblk, sizeof(float *)) : NULL;
    c->dbp = db ? calloc((size_t)(c->nblk * c->p->g->o), sizeof(double)) : NULL;
    if ((dw && !c->dwp) || (db && !c->dbp))
        return mp_error(MP_ERR_NOMEM, "conv backward: out of memory");
    for (int64_t b = 0; dw && b < c->nblk; b++) {
        c->dwp[b] = b ? calloc(wsize, sizeof(float)) : dw;
        if (!c->dwp[b])
            return mp_error(MP_ERR_NOMEM, "conv backward: out of memory for the weight-"
                            "gradient partials");
    }
    return MP_OK;
}

static void finish_partials(bwd_ctx *c, float *dw, float *db, size_t wsize)
{
    for (int64_t b = 1; c->dwp && b < c->nblk; b++) {
        for (size_t i = 0; c->dwp[b] && i < wsize; i++)
            dw[i] += c->dwp[b][i];
        free(c->dwp[b]);
    }
    for (int64_t o = 0; c->dbp && o < c->p->g->o; o++) {
        double s = 0.0;
        for (int64_t b = 0; b < c->nblk; b++)
            s += c->dbp[b * c->p->g->o + o];
        db[o] = (float)s;
    }
    free(c->dwp);
    free(c->dbp);
}

mp_status mp_conv_backward(const mp_conv_geom *g, const void *x, const void *w,
                           const void *dy, mp_dtype gdt, float *dx, float *dw, float *db)
{
    conv_plan p;
    mp_status st = plan_init(&p, g);
    if (st != MP_OK)
        return st;
    size_t wsize = (size_t)(g->o * p.k);
    if (dw)
        memset(dw, 0, sizeof(float) * wsize);
    bwd_ctx c = {&p, x, w, dy, gdt, dx, NULL, NULL, block_count(g, &p, dw || db, dw != NULL),
                 0};
    st = g->n > 0 ? alloc_partials(&c, dw, db, wsize) : MP_OK;
    double macs = (double)g->n * (double)g->o * (double)p.k * (double)p.l;
    if (st == MP_OK && g->n > 0 && parallel_units(&p, c.nblk, macs * (!!dx + !!dw)))
        mp_parallel_for(c.nblk, 1, bwd_range, &c);
    else if (st == MP_OK && g->n > 0)
        bwd_range(&c, 0, c.nblk);
    if (g->n > 0)
        finish_partials(&c, dw, db, wsize);
    else if (db)
        memset(db, 0, sizeof(float) * (size_t)g->o);
    free(p.hmap);
    if (st == MP_OK && c.failed)
        st = mp_error(MP_ERR_NOMEM, "conv backward: out of memory for the im2col buffers");
    return st;
}
