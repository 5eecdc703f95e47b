/* ops_rmsnorm.c - rms_norm over the last n dims, with backward for input and weight. The
 * input is viewed as (rows, M), M = prod(normalized_shape): per row the mean square is summed
 * in double, y = x * rstd * w in fp32 (rstd = 1 / sqrt(mean(x^2) + eps)), output in the input
 * dtype. weight may have any float dtype (used as fp32); its gradient is returned in fp32.
 * eps defaults to float32's machine epsilon, which is what torch uses for every float input
 * (its math runs in fp32 for fp16/bf16 too). Same layout as layer_norm (ops_norm.c). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "ops_attention.h"
#include "../rows.h"
#include "../view.h"

typedef struct {
    const float *w;             /* fp32, M elements, or NULL */
    float *rstd;                /* one per row */
    double eps;
    double *dw;                 /* backward: per-column sums, or NULL */
} rms_ctx;

static double sum_sq(const float *x, int64_t m)
{
    double s0 = 0.0, s1 = 0.0;
    int64_t i = 0;
    for (; i + 2 <= m; i += 2) {
        s0 += (double)x[i] * x[i];
        s1 += (double)x[i + 1] * x[i + 1];
    }
    if (i < m)
        s0 += (double)x[i] * x[i];
    return s0 + s1;
}

static void rms_row(const float *const *in, float *out, int64_t m, int64_t row, void *vctx)
{
    rms_ctx *c = vctx;
    const float *x = in[0];
    float rstd = (float)(1.0 / sqrt(sum_sq(x, m) / (double)m + c->eps));
    for (int64_t i = 0; i < m; i++)
        out[i] = c->w ? x[i] * rstd * c->w[i] : x[i] * rstd;
    c->rstd[row] = rstd;
}

/* dx = rstd * (dy - xhat * mean(dy * xhat)) with dy = g * w; also dw += g * xhat */
static void rms_grad_row(const float *const *in, float *out, int64_t m, int64_t row,
                         void *vctx)
{
    rms_ctx *c = vctx;
    const float *x = in[0], *g = in[1];
    float rs = c->rstd[row];
    double s = 0.0;
    for (int64_t i = 0; i < m; i++) {
        float xhat = x[i] * rs, dy = c->w ? g[i] * c->w[i] : g[i];
        s += (double)dy * xhat;
        if (c->dw)
            c->dw[i] += (double)g[i] * xhat;
    }
    float a = (float)(s / (double)m);
    for (int64_t i = 0; i < m; i++) {
        float xhat = x[i] * rs, dy = c->w ? g[i] * c->w[i] : g[i];
        out[i] = rs * (dy - xhat * a);
    }
}

static mp_status rms_backward_run(mp_node *n, mp_tensor *g2, rms_ctx *c, mp_tensor **gin)
{
    mp_tensor *x2 = mp_node_saved(n, 0), *dx2 = NULL;
    if (!x2)
        return MP_ERR_RUNTIME;
    mp_tensor *ins[2] = {x2, g2};
    mp_dtype dt = mp_dtype_is_float(g2->dtype) ? g2->dtype : MP_DTYPE_FLOAT32;
    mp_row_aux serial = {.serial = c->dw != NULL};    /* dw sums over the rows in order */
    mp_status st = mp_rows_map_aux(ins, 2, 1, dt, rms_grad_row, c, &serial, &dx2);
    int nd;
    const int64_t *shape;
    if (st == MP_OK && n->next[0].node) {
        shape = mp_node_in_shape(n, 0, &nd);
        st = mp_view_reshape(dx2, shape, nd, 0, &gin[0]);
    }
    if (st == MP_OK && c->dw) {
        shape = mp_node_in_shape(n, 1, &nd);
        st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &gin[1]);
        float *p = st == MP_OK ? mp_tensor_data(gin[1]) : NULL;
        for (int64_t i = 0; p && i < n->iargs[1]; i++)
            p[i] = (float)c->dw[i];
    }
    mp_tensor_decref(dx2);
    return st;
}

static mp_status rms_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *wf = mp_node_saved(n, 1), *rstd = mp_node_saved(n, 2), *gc = NULL, *g2 = NULL;
    if (!rstd)
        return MP_ERR_RUNTIME;
    int64_t shape2[2] = {n->iargs[0], n->iargs[1]};
    rms_ctx c = {wf ? mp_tensor_data(wf) : NULL, mp_tensor_data(rstd), 0.0, NULL};
    mp_status st = MP_OK;
    if (n->next[1].node && !(c.dw = calloc((size_t)shape2[1] + 1, sizeof(double))))
        st = mp_error(MP_ERR_NOMEM, "out of memory in rms_norm backward");
    if (st == MP_OK)
        st = mp_tensor_contiguous(gout[0], &gc);
    if (st == MP_OK)
        st = mp_view_reshape(gc, shape2, 2, 0, &g2);
    if (st == MP_OK)
        st = rms_backward_run(n, g2, &c, gin);
    free(c.dw);
    mp_tensor_decref(gc);
    mp_tensor_decref(g2);
    return st;
}

static mp_status check_rms_norm(mp_tensor *a, const int64_t *ns, int n, mp_tensor *w)
{
    char sa[256], sn[256];
    mp_format_shape(sn, sizeof sn, ns, n);
    if (n < 1)
        return mp_error(MP_ERR_SHAPE, "Expected normalized_shape to be at least "
                        "1-dimensional, i.e., containing at least one element, but got "
                        "normalized_shape = %s", sn);
    if (a->ndim < n)
        return mp_error(MP_ERR_SHAPE, "Input tensor must have at least %d dimensions, but got "
                        "%d", n, a->ndim);
    if (memcmp(a->shape + a->ndim - n, ns, sizeof(int64_t) * (size_t)n)) {
        mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
        return mp_error(MP_ERR_SHAPE, "Given normalized_shape=%s, expected input with shape "
                        "[*%s, but got input of size%s", sn, sn + 1, sa);
    }
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "\"rms_norm\" not implemented for '%s'",
                        mp_dtype_torch_name(a->dtype));
    if (w && (w->ndim != n || memcmp(w->shape, ns, sizeof(int64_t) * (size_t)n) != 0)) {
        mp_format_shape(sa, sizeof sa, w->shape, w->ndim);
        return mp_error(MP_ERR_SHAPE, "Expected weight to be of same shape as "
                        "normalized_shape, but got weight of shape %s and normalized_shape = "
                        "%s", sa, sn);
    }
    if (w && !mp_dtype_is_float(w->dtype))
        return mp_error(MP_ERR_TYPE, "rms_norm: weight must be a floating point tensor, got "
                        "%s", mp_dtype_torch_name(w->dtype));
    return MP_OK;
}

typedef struct {
    mp_tensor *x2, *wf, *rstd;
} rms_saved;

static mp_status rms_forward(mp_tensor *a, int64_t rows, int64_t m, mp_tensor *w, double eps,
                             rms_saved *s, mp_tensor **out)
{
    int64_t shape2[2] = {rows, m};
    mp_tensor *xc = NULL, *y2 = NULL;
    mp_status st = mp_tensor_contiguous(a, &xc);
    if (st == MP_OK)
        st = mp_view_reshape(xc, shape2, 2, 1, &s->x2);
    if (st == MP_OK && w)
        st = mp_tensor_cast(w, MP_DTYPE_FLOAT32, &s->wf);
    if (st == MP_OK)
        st = mp_tensor_empty(&rows, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &s->rstd);
    if (st == MP_OK) {
        rms_ctx c = {s->wf ? mp_tensor_data(s->wf) : NULL, mp_tensor_data(s->rstd), eps, NULL};
        st = mp_rows_map(&s->x2, 1, 1, a->dtype, rms_row, &c, &y2);
    }
    if (st == MP_OK)
        st = mp_view_reshape(y2, a->shape, a->ndim, 0, out);
    mp_tensor_decref(xc);
    mp_tensor_decref(y2);
    return st;
}

mp_status mp_op_rms_norm(mp_tensor *a, const int64_t *normalized_shape, int n,
                         mp_tensor *weight, int has_eps, double eps, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_RMS_NORM,
                      mp_op_rms_norm(ac_[0], normalized_shape, n, ac_[1], has_eps, eps, out),
                      a, weight);
    MP_HOST_ONLY("rms_norm", a, weight);
    *out = NULL;
    mp_status st = check_rms_norm(a, normalized_shape, n, weight);
    if (st != MP_OK)
        return st;
    int64_t rows = 1, m = 1;
    for (int d = 0; d < a->ndim; d++)
        *(d < a->ndim - n ? &rows : &m) *= a->shape[d];
    rms_saved s = {NULL, NULL, NULL};
    st = rms_forward(a, rows, m, weight, has_eps ? eps : (double)FLT_EPSILON, &s, out);
    mp_tensor *ins[2] = {a, weight};
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("FusedRmsNormBackward0", rms_backward, ins, 2, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = rows;
        node->iargs[1] = m;
        mp_tensor *keep[3] = {s.x2, s.wf, s.rstd};
        for (int i = 0; i < 3 && st == MP_OK; i++)
            st = mp_node_save(node, i, keep[i]);
    }
    mp_tensor_decref(s.x2);
    mp_tensor_decref(s.wf);
    mp_tensor_decref(s.rstd);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
