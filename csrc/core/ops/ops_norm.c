/* ops_norm.c - layer_norm over the last n dims, with backward for input, weight and bias.
 * The input is viewed as (rows, M) with M = prod(normalized_shape); per-row mean and biased
 * variance are summed in double, the normalised values in fp32, output in the input dtype.
 * weight/bias may have any float dtype (used as fp32); their gradients are returned in fp32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu/dispatch.h"
#include "../../cpu/parallel.h"
#include "../../shared/mp_half.h"
#include "../amp/autocast.h"
#include "../copy.h"
#include "../reduce.h"
#include "../backend.h"
#include "ops.h"
#include "../rows.h"
#include "../view.h"

typedef struct {
    const float *w, *b;         /* fp32, M elements, or NULL */
    float *mean, *rstd;         /* one per row */
    double eps;
} ln_ctx;

#define LN_SEG 256

/* mean and biased variance as double sums of the dispatch table's vector reductions: the
 * mean of x, then the sum of squares of the centred values (x - mean in fp32, the values the
 * output is made of; each square exact in double), a segment of LN_SEG at a time */
static void ln_row(const float *const *in, float *out, int64_t m, int64_t row, void *vctx)
{
    ln_ctx *c = vctx;
    const float *x = in[0];
    const mp_vmath *vm = &mp_cpu()->vm;
    float mu = (float)(vm->sum(x, (size_t)m) / (double)m), xc[LN_SEG];
    double v = 0.0;
    for (int64_t i0 = 0; i0 < m; i0 += LN_SEG) {
        int64_t n = m - i0 < LN_SEG ? m - i0 : LN_SEG;
        for (int64_t i = 0; i < n; i++)
            xc[i] = x[i0 + i] - mu;
        v += vm->dot(xc, xc, (size_t)n);
    }
    float rstd = (float)(1.0 / sqrt(v / (double)m + c->eps));
    const float *w = c->w, *b = c->b;
    for (int64_t i = 0; i < m; i++) {
        float y = (x[i] - mu) * rstd;
        if (w)
            y *= w[i];
        if (b)
            y += b[i];
        out[i] = y;
    }
    c->mean[row] = mu;
    c->rstd[row] = rstd;
}

/* dx = rstd * (dy - mean(dy) - xhat * mean(dy * xhat)) with dy = g * w. The row goes in
 * segments through stack buffers of xhat and dy so that the two row sums are the dispatch
 * table's vector reductions (double partials in a fixed order, the same bits on every ISA)
 * instead of two dependent chains of double adds. Rows are independent: they run on the
 * thread pool; the weight and bias gradients are the column kernel below. */
static void ln_grad_row(const float *const *in, float *out, int64_t m, int64_t row, void *vctx)
{
    ln_ctx *c = vctx;
    const float *x = in[0], *g = in[1], *w = c->w;
    const mp_vmath *vm = &mp_cpu()->vm;
    float mu = c->mean[row], rs = c->rstd[row], xh[LN_SEG], dy[LN_SEG];
    double s1 = 0.0, s2 = 0.0;
    for (int64_t i0 = 0; i0 < m; i0 += LN_SEG) {
        int64_t n = m - i0 < LN_SEG ? m - i0 : LN_SEG;
        const float *xs = x + i0, *gs = g + i0;
        for (int64_t i = 0; i < n; i++)
            xh[i] = (xs[i] - mu) * rs;
        if (w)
            for (int64_t i = 0; i < n; i++)
                dy[i] = gs[i] * w[i0 + i];
        const float *d = w ? dy : gs;
        s1 += vm->sum(d, (size_t)n);
        s2 += vm->dot(d, xh, (size_t)n);
    }
    float a1 = (float)(s1 / (double)m), a2 = (float)(s2 / (double)m);
    for (int64_t i = 0; i < m; i++) {
        float xhat = (x[i] - mu) * rs, d = w ? g[i] * w[i] : g[i];
        out[i] = rs * (d - a1 - xhat * a2);
    }
}

/* The MP_KERNEL_NORM_PARAM_GRADS kernel: dw[j] = sum over rows of g * xhat and db[j] = sum of
 * g, in double, each column summed over the rows in order (the same bits for any thread
 * count: threads take ranges of columns). Buffers: x and g (rows, m) contiguous, mean and
 * rstd (rows) fp32, dw and db (m) doubles or NULL. */
typedef struct {
    int64_t rows, m;
    mp_dtype xdt, gdt;
} ln_param_args;

typedef struct {
    const ln_param_args *a;
    void *const *buf;
} ln_param_job;

/* elements [at, at + n) of contiguous data of dtype dt as fp32: buf, or the data itself */
static const float *load_span(mp_dtype dt, const void *data, int64_t at, int64_t n, float *buf)
{
    const mp_cpu_kernels *k = mp_cpu();
    const char *p = (const char *)data + (size_t)at * mp_dtype_size(dt);
    if (dt == MP_DTYPE_FLOAT16)
        k->f16_to_f32((const mp_half *)(const void *)p, buf, (size_t)n);
    else if (dt == MP_DTYPE_BFLOAT16)
        k->bf16_to_f32((const mp_bf16 *)(const void *)p, buf, (size_t)n);
    else
        return (const float *)(const void *)p;
    return buf;
}

/* Columns [c0, c1): the sums run in local buffers (the shared ones start at 0, so adding
 * each total at the end gives the same bits), as the threads' column ranges would otherwise
 * share the cache line at their boundary in every row. */
static void ln_param_cols(void *vjob, int64_t c0, int64_t c1)
{
    const ln_param_job *j = vjob;
    const ln_param_args *a = j->a;
    const mp_vmath *vm = &mp_cpu()->vm;
    const float *mean = j->buf[2], *rstd = j->buf[3];
    float xb[LN_SEG], gb[LN_SEG], xh[LN_SEG];
    double dw[LN_SEG], db[LN_SEG];
    int want_w = j->buf[4] != NULL, want_b = j->buf[5] != NULL;
    for (int64_t s0 = c0; s0 < c1; s0 += LN_SEG) {
        int64_t n = c1 - s0 < LN_SEG ? c1 - s0 : LN_SEG;
        memset(dw, 0, sizeof dw);
        memset(db, 0, sizeof db);
        for (int64_t r = 0; r < a->rows; r++) {
            const float *g = load_span(a->gdt, j->buf[1], r * a->m + s0, n, gb);
            if (want_w) {
                const float *x = load_span(a->xdt, j->buf[0], r * a->m + s0, n, xb);
                float mu = mean[r], rs = rstd[r];
                for (int64_t i = 0; i < n; i++)
                    xh[i] = (x[i] - mu) * rs;
                vm->acc_mul(dw, g, xh, (size_t)n);
            }
            if (want_b)
                vm->acc(db, g, (size_t)n);
        }
        for (int k = 0; k < 2; k++) {
            double *dst = j->buf[4 + k], *src = k ? db : dw;
            if (dst)
                for (int64_t i = 0; i < n; i++)
                    dst[s0 + i] += src[i];
        }
    }
}

#define LN_PARAM_GRAIN 16384    /* elements per thread's share of the column sums, at least */

static mp_status run_ln_params(void *const *buf, const void *vargs, mp_msg *msg)
{
    (void)msg;
    const ln_param_args *a = vargs;
    ln_param_job j = {a, buf};
    int64_t grain = LN_PARAM_GRAIN / (a->rows > 0 ? a->rows : 1);
    mp_parallel_for(a->m, grain > 1 ? grain : 1, ln_param_cols, &j);
    return MP_OK;
}

static mp_status ln_param_grads(mp_tensor *x2, mp_tensor *g2, mp_tensor *mean, mp_tensor *rstd,
                                mp_tensor *const acc[2])
{
    ln_param_args a = {x2->shape[0], x2->shape[1], x2->dtype, g2->dtype};
    void *ptr[6] = {mp_tensor_data(x2), mp_tensor_data(g2), mp_tensor_data(mean),
                    mp_tensor_data(rstd), acc[0] ? mp_tensor_data(acc[0]) : NULL,
                    acc[1] ? mp_tensor_data(acc[1]) : NULL};
    int64_t n = a.rows * a.m;
    int64_t nbytes[6] = {n * (int64_t)mp_dtype_size(x2->dtype),
                         n * (int64_t)mp_dtype_size(g2->dtype), a.rows * 4, a.rows * 4,
                         acc[0] ? a.m * 8 : 0, acc[1] ? a.m * 8 : 0};
    return mp_launch_bufs(x2->storage->device, MP_KERNEL_NORM_PARAM_GRADS, 6, ptr, nbytes,
                          run_ln_params, &a);
}

/* Adds tensor t (when present) to the row kernel's buffers, its address going to *slot. */
static void aux_add(mp_row_aux *aux, mp_tensor *t, void *slot)
{
    if (!t)
        return;
    aux->t[aux->n] = t;
    aux->slot[aux->n++] = (void **)slot;
}


/* gin[i] = the fp32 column sums acc in the shape of the node's input i. */
static mp_status column_sums(mp_node *n, int i, mp_tensor *acc, mp_tensor **gin)
{
    int nd;
    const int64_t *shape = mp_node_in_shape(n, i, &nd);
    mp_status st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, acc->storage->device, &gin[i]);
    return st == MP_OK ? mp_store_f64(acc, gin[i]) : st;
}

static mp_status ln_backward_run(mp_node *n, mp_tensor *g2, ln_ctx *c, mp_row_aux *aux,
                                 mp_tensor *const acc[2], mp_tensor **gin)
{
    mp_tensor *x2 = mp_node_saved(n, 0), *dx2 = NULL;
    if (!x2)
        return MP_ERR_RUNTIME;
    mp_tensor *ins[2] = {x2, g2};
    mp_dtype dt = mp_dtype_is_float(g2->dtype) ? g2->dtype : MP_DTYPE_FLOAT32;
    mp_status st = MP_OK;
    if (n->next[0].node)
        st = mp_rows_map_aux(ins, 2, 1, dt, ln_grad_row, c, aux, &dx2);
    if (st == MP_OK && (acc[0] || acc[1]))
        st = ln_param_grads(x2, g2, mp_node_saved(n, 2), mp_node_saved(n, 3), acc);
    if (st == MP_OK && n->next[0].node) {
        int nd;
        const int64_t *shape = mp_node_in_shape(n, 0, &nd);
        st = mp_view_reshape(dx2, shape, nd, 0, &gin[0]);
    }
    for (int i = 0; i < 2 && st == MP_OK; i++)
        if (acc[i])
            st = column_sums(n, 1 + i, acc[i], gin);
    mp_tensor_decref(dx2);
    return st;
}

static mp_status ln_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *wf = mp_node_saved(n, 1), *mean = mp_node_saved(n, 2);
    mp_tensor *rstd = mp_node_saved(n, 3), *gc = NULL, *g2 = NULL, *acc[2] = {NULL, NULL};
    if (!mean || !rstd)
        return MP_ERR_RUNTIME;
    int64_t shape2[2] = {n->iargs[0], n->iargs[1]};
    mp_device dev = mean->storage->device;
    ln_ctx c = {NULL, NULL, NULL, NULL, 0.0};
    mp_row_aux aux = {0};
    aux_add(&aux, wf, &c.w);
    aux_add(&aux, mean, &c.mean);
    aux_add(&aux, rstd, &c.rstd);
    mp_status st = MP_OK;
    for (int i = 0; i < 2 && st == MP_OK; i++)
        if (n->next[1 + i].node)
            st = mp_acc_zeros(&shape2[1], 1, dev, &acc[i]);
    if (st == MP_OK)
        st = mp_tensor_contiguous(gout[0], &gc);
    if (st == MP_OK)
        st = mp_view_reshape(gc, shape2, 2, 0, &g2);
    if (st == MP_OK)
        st = ln_backward_run(n, g2, &c, &aux, acc, gin);
    mp_tensor_decref(acc[0]);
    mp_tensor_decref(acc[1]);
    mp_tensor_decref(gc);
    mp_tensor_decref(g2);
    return st;
}

static mp_status check_param(mp_tensor *p, const char *what, const int64_t *ns, int n)
{
    if (!p)
        return MP_OK;
    if (p->ndim != n || memcmp(p->shape, ns, sizeof(int64_t) * (size_t)n) != 0) {
        char a[256], b[256];
        mp_format_shape(a, sizeof a, p->shape, p->ndim);
        mp_format_shape(b, sizeof b, ns, n);
        return mp_error(MP_ERR_SHAPE, "Expected %s to be of same shape as normalized_shape, "
                        "but got %s of shape %s and normalized_shape = %s", what, what, a, b);
    }
    if (!mp_dtype_is_float(p->dtype))
        return mp_error(MP_ERR_TYPE, "layer_norm: %s must be a floating point tensor, got %s",
                        what, mp_dtype_torch_name(p->dtype));
    return MP_OK;
}

static mp_status check_layer_norm(mp_tensor *a, const int64_t *ns, int n, mp_tensor *w,
                                  mp_tensor *b)
{
    char sa[256], sn[256];
    mp_format_shape(sn, sizeof sn, ns, n);
    if (n < 1)
        return mp_error(MP_ERR_SHAPE, "Expected normalized_shape to be at least "
                        "1-dimensional, i.e., containing at least one element, but got "
                        "normalized_shape = %s", sn);
    if (a->ndim < n || memcmp(a->shape + a->ndim - n, ns, sizeof(int64_t) * (size_t)n)) {
        mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
        return mp_error(MP_ERR_SHAPE, "Given normalized_shape=%s, expected input with shape "
                        "[*, %s, but got input of size%s", sn, sn + 1, sa);
    }
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "\"LayerNormKernelImpl\" not implemented for '%s'",
                        mp_dtype_torch_name(a->dtype));
    mp_status st = check_param(w, "weight", ns, n);
    return st == MP_OK ? check_param(b, "bias", ns, n) : st;
}

typedef struct {
    mp_tensor *x2, *wf, *bf, *mean, *rstd;
} ln_saved;

static void ln_saved_free(ln_saved *s)
{
    mp_tensor_decref(s->x2);
    mp_tensor_decref(s->wf);
    mp_tensor_decref(s->bf);
    mp_tensor_decref(s->mean);
    mp_tensor_decref(s->rstd);
}

static mp_status ln_forward(mp_tensor *a, int64_t rows, int64_t m, mp_tensor *w, mp_tensor *b,
                            double eps, ln_saved *s, mp_tensor **out)
{
    int64_t shape2[2] = {rows, m};
    mp_tensor *xc = NULL, *y2 = NULL;
    mp_status st = mp_tensor_contiguous(a, &xc);
    if (st == MP_OK)
        st = mp_view_reshape(xc, shape2, 2, 1, &s->x2);
    if (st == MP_OK && w)
        st = mp_tensor_cast(w, MP_DTYPE_FLOAT32, &s->wf);
    if (st == MP_OK && b)
        st = mp_tensor_cast(b, MP_DTYPE_FLOAT32, &s->bf);
    mp_device dev = a->storage->device;
    if (st == MP_OK)
        st = mp_tensor_empty(&rows, 1, MP_DTYPE_FLOAT32, dev, &s->mean);
    if (st == MP_OK)
        st = mp_tensor_empty(&rows, 1, MP_DTYPE_FLOAT32, dev, &s->rstd);
    if (st == MP_OK) {
        ln_ctx c = {NULL, NULL, NULL, NULL, eps};
        mp_row_aux aux = {0};
        aux_add(&aux, s->wf, &c.w);
        aux_add(&aux, s->bf, &c.b);
        aux_add(&aux, s->mean, &c.mean);
        aux_add(&aux, s->rstd, &c.rstd);
        st = mp_rows_map_aux(&s->x2, 1, 1, a->dtype, ln_row, &c, &aux, &y2);
    }
    if (st == MP_OK)
        st = mp_view_reshape(y2, a->shape, a->ndim, 0, out);
    mp_tensor_decref(xc);
    mp_tensor_decref(y2);
    return st;
}

mp_status mp_op_layer_norm(mp_tensor *a, const int64_t *normalized_shape, int n,
                           mp_tensor *weight, mp_tensor *bias, double eps, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_LAYER_NORM,
                      mp_op_layer_norm(ac_[0], normalized_shape, n, ac_[1], ac_[2], eps, out), a,
                      weight, bias);
    *out = NULL;
    mp_tensor *devs[3] = {a, weight, bias};
    mp_status st = mp_check_same_device(devs, 3, a->storage->device, 0);
    if (st == MP_OK)
        st = check_layer_norm(a, normalized_shape, n, weight, bias);
    if (st != MP_OK)
        return st;
    int64_t rows = 1, m = 1;
    for (int d = 0; d < a->ndim; d++)
        *(d < a->ndim - n ? &rows : &m) *= a->shape[d];
    ln_saved s = {NULL, NULL, NULL, NULL, NULL};
    st = ln_forward(a, rows, m, weight, bias, eps, &s, out);
    mp_tensor *ins[3] = {a, weight, bias};
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("NativeLayerNormBackward0", ln_backward, ins, 3, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = rows;
        node->iargs[1] = m;
        mp_tensor *keep[4] = {s.x2, s.wf, s.mean, s.rstd};
        for (int i = 0; i < 4 && st == MP_OK; i++)
            st = mp_node_save(node, i, keep[i]);
    }
    ln_saved_free(&s);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
