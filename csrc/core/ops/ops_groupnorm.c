/* ops_groupnorm.c - group_norm (ops_cnn.h): statistics per (sample, group) over C/G
 * consecutive planes of the contiguous (N, C, S) input (double, Chan's combination of the
 * per-plane moments of csrc/cpu/norm_planes.h), then a per-plane affine map with the channel's
 * weight and bias. Backward from per-plane sums of dy and dy * (x - mean): the same three
 * terms as layer_norm's, per group. Output in the input dtype; weight/bias gradients fp32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../../cpu/norm_planes.h"
#include "../backend.h"
#include "../copy.h"
#include "norm_common.h"
#include "ops_cnn.h"
#include "../rows.h"
#include "../view.h"

typedef struct {
    int64_t n, c, s, g, cg;
} gn_dims;

static mp_status check_param(mp_tensor *x, mp_tensor *p, const char *what)
{
    if (!p || (p->ndim == 1 && p->shape[0] == x->shape[1]))
        return MP_OK;
    char sp[256], sx[256];
    mp_format_shape(sp, sizeof sp, p->shape, p->ndim);
    mp_format_shape(sx, sizeof sx, x->shape, x->ndim);
    return mp_error(MP_ERR_RUNTIME, "Expected %s to be a vector of size equal to the number of "
                    "channels in input, but got %s of shape %s and input of shape %s", what,
                    what, sp, sx);
}

static mp_status check_gn(mp_tensor *x, int64_t g, mp_tensor *w, mp_tensor *b)
{
    if (x->ndim < 2)
        return mp_error(MP_ERR_RUNTIME, "Expected at least 2 dimensions for input tensor but "
                        "received %d", x->ndim);
    if (!mp_dtype_is_float(x->dtype))
        return mp_error(MP_ERR_TYPE, "\"group_norm\" not implemented for '%s'",
                        mp_dtype_torch_name(x->dtype));
    char sx[256];
    mp_format_shape(sx, sizeof sx, x->shape, x->ndim);
    if (g <= 0 || x->shape[1] % g)
        return mp_error(MP_ERR_RUNTIME, "Expected number of channels in input to be divisible "
                        "by num_groups, but got input of shape %s and num_groups=%lld", sx,
                        (long long)g);
    mp_status st = check_param(x, w, "weight");
    if (st == MP_OK)
        st = check_param(x, b, "bias");
    mp_tensor *ps[2] = {w, b};
    return st == MP_OK ? mp_norm_check_param_dtypes(x, ps, 2) : st;
}

/* mean, rstd per (n, g) */
static mp_status gn_stats(mp_tensor *xv, const gn_dims *d, double eps, float *mean, float *rstd)
{
    int64_t planes = d->n * d->c;
    double *pm = malloc(sizeof(double) * (size_t)(2 * planes + 1));
    if (!pm || mp_planes_moments(xv->dtype, mp_tensor_data(xv), planes, d->s, pm,
                                 pm + planes) < 0) {
        free(pm);
        return mp_error(MP_ERR_NOMEM, "group_norm: out of memory for the statistics");
    }
    for (int64_t r = 0; r < d->n * d->g; r++) {
        double mu, var;
        mp_norm_combine(pm + r * d->cg, pm + planes + r * d->cg, d->cg, 1, d->s, &mu, &var);
        mean[r] = (float)mu;
        rstd[r] = (float)(1.0 / sqrt(var + eps));
    }
    free(pm);
    return MP_OK;
}

/* 4 per-plane coefficient arrays (ka, kb, kmu, kc), N*C floats each */
static float *plane_coefs(const gn_dims *d)
{
    return malloc(sizeof(float) * (size_t)(4 * d->n * d->c + 1));
}

static mp_status gn_forward(mp_tensor *xv, const gn_dims *d, const float *w, const float *b,
                            const float *mean, const float *rstd, mp_tensor **y)
{
    int64_t np = d->n * d->c;
    float *k = plane_coefs(d);
    if (!k)
        return mp_error(MP_ERR_NOMEM, "group_norm: out of memory");
    for (int64_t p = 0; p < np; p++) {
        int64_t c = p % d->c, r = p / d->cg;
        k[np + p] = (w ? w[c] : 1.0f) * rstd[r];
        k[2 * np + p] = mean[r];
        k[3 * np + p] = b ? b[c] : 0.0f;
    }
    mp_status st = mp_tensor_empty(xv->shape, xv->ndim, xv->dtype, MP_DEVICE_CPU, y);
    if (st == MP_OK && mp_planes_affine(xv->dtype, mp_tensor_data(*y), xv->dtype,
                                        mp_tensor_data(xv), xv->dtype, NULL, np, d->s, 0, NULL,
                                        k + np, k + 2 * np, k + 3 * np) < 0)
        st = mp_error(MP_ERR_NOMEM, "group_norm: out of memory");
    free(k);
    return st;
}

/* ---- backward ---- */

/* dx = rstd * (w dy - mean(w dy) - xhat * mean(w dy xhat)) over each group's elements, with
 * sg[p] = sum dy and sa[p] = sum dy * xhat per plane; k: plane_coefs (kmu already filled) */
static mp_status gn_dx(mp_node *node, const gn_dims *d, mp_tensor *xv, mp_tensor *dy,
                       const float *w, const float *rstd, const double *sg, const double *sa,
                       float *k, mp_tensor **dx)
{
    int64_t np = d->n * d->c;
    double m = (double)(d->cg * d->s);
    for (int64_t r = 0; r < d->n * d->g; r++) {
        double m1 = 0.0, m2 = 0.0;
        for (int64_t p = r * d->cg; p < (r + 1) * d->cg; p++) {
            double wc = w ? w[p % d->c] : 1.0;
            m1 += wc * sg[p], m2 += wc * sa[p];
        }
        m1 /= m, m2 /= m;
        for (int64_t p = r * d->cg; p < (r + 1) * d->cg; p++) {
            k[p] = (w ? w[p % d->c] : 1.0f) * rstd[r];
            k[np + p] = (float)(-(double)rstd[r] * rstd[r] * m2);
            k[3 * np + p] = (float)(-(double)rstd[r] * m1);
        }
    }
    int nd;
    const int64_t *shape = mp_node_in_shape(node, 0, &nd);
    mp_status st = mp_tensor_empty(shape, nd, node->in_dtypes[0], MP_DEVICE_CPU, dx);
    if (st == MP_OK && mp_planes_affine((*dx)->dtype, mp_tensor_data(*dx), xv->dtype,
                                        mp_tensor_data(xv), dy->dtype, mp_tensor_data(dy), np,
                                        d->s, 0, k, k + np, k + 2 * np, k + 3 * np) < 0)
        st = mp_error(MP_ERR_NOMEM, "group_norm backward: out of memory");
    return st;
}

/* dw[c] = sum_n sa[n, c], db[c] = sum_n sg[n, c], as fp32 tensors of the inputs' shapes */
static mp_status gn_param_grads(mp_node *node, const gn_dims *d, const double *sg,
                                const double *sa, mp_tensor **gin)
{
    mp_status st = MP_OK;
    for (int i = 1; i < 3 && st == MP_OK; i++) {
        if (!node->next[i].node)
            continue;
        int nd;
        const int64_t *shape = mp_node_in_shape(node, i, &nd);
        st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &gin[i]);
        float *p = st == MP_OK ? mp_tensor_data(gin[i]) : NULL;
        for (int64_t c = 0; p && c < d->c; c++) {
            double acc = 0.0;
            for (int64_t n = 0; n < d->n; n++)
                acc += (i == 1 ? sa : sg)[n * d->c + c];
            p[c] = (float)acc;
        }
    }
    return st;
}

static mp_status gn_backward(mp_node *node, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *xv = mp_node_saved(node, 0), *mt = mp_node_saved(node, 1);
    mp_tensor *rt = mp_node_saved(node, 2), *wt = mp_node_saved(node, 3), *dy = NULL;
    if (!xv || !mt || !rt)
        return MP_ERR_RUNTIME;
    gn_dims d = {xv->shape[0], xv->shape[1], xv->shape[2], node->iargs[0], 0};
    d.cg = d.c / d.g;
    int64_t np = d.n * d.c;
    const float *mean = mp_tensor_data(mt), *rstd = mp_tensor_data(rt);
    double *sums = malloc(sizeof(double) * (size_t)(2 * np + 1));
    float *k = plane_coefs(&d);
    mp_status st = sums && k ? mp_tensor_contiguous(gout[0], &dy)
                             : mp_error(MP_ERR_NOMEM, "group_norm backward: out of memory");
    for (int64_t p = 0; st == MP_OK && p < np; p++)
        k[2 * np + p] = mean[p / d.cg];
    if (st == MP_OK && mp_planes_dot(xv->dtype, mp_tensor_data(xv), dy->dtype,
                                     mp_tensor_data(dy), np, d.s, 0, k + 2 * np, sums,
                                     sums + np) < 0)
        st = mp_error(MP_ERR_NOMEM, "group_norm backward: out of memory");
    for (int64_t p = 0; st == MP_OK && p < np; p++)
        sums[np + p] *= rstd[p / d.cg];                 /* sum of dy * xhat */
    if (st == MP_OK && node->next[0].node)
        st = gn_dx(node, &d, xv, dy, wt ? mp_tensor_data(wt) : NULL, rstd, sums, sums + np, k,
                   &gin[0]);
    if (st == MP_OK)
        st = gn_param_grads(node, &d, sums, sums + np, gin);
    free(sums);
    free(k);
    mp_tensor_decref(dy);
    return st;
}

/* ---- the op ---- */

static mp_status gn_record(mp_tensor *x, mp_tensor *w, mp_tensor *b, mp_tensor *const *keep,
                           int64_t g, mp_tensor **out)
{
    mp_tensor *ins[3] = {x, w, b};
    mp_node *node = NULL;
    mp_status st = mp_autograd_record("NativeGroupNormBackward0", gn_backward, ins, 3, out, 1,
                                      &node);
    if (st != MP_OK || !node)
        return st;
    node->iargs[0] = g;
    for (int i = 0; i < 4 && st == MP_OK; i++)
        st = mp_node_save(node, i, keep[i]);
    return st;
}

static mp_status gn_run(mp_tensor *xv, const gn_dims *d, mp_tensor *w, mp_tensor *b,
                        double eps, mp_tensor **keep, mp_tensor **y)
{
    int64_t rows = d->n * d->g;
    mp_tensor *bf = NULL;
    mp_status st = mp_tensor_empty(&rows, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &keep[1]);
    if (st == MP_OK)
        st = mp_tensor_empty(&rows, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &keep[2]);
    if (st == MP_OK && w)
        st = mp_norm_f32(w, d->c, 1.0f, &keep[3]);
    if (st == MP_OK && b)
        st = mp_norm_f32(b, d->c, 0.0f, &bf);
    if (st == MP_OK)
        st = gn_stats(xv, d, eps, mp_tensor_data(keep[1]), mp_tensor_data(keep[2]));
    if (st == MP_OK)
        st = gn_forward(xv, d, keep[3] ? mp_tensor_data(keep[3]) : NULL,
                        bf ? mp_tensor_data(bf) : NULL, mp_tensor_data(keep[1]),
                        mp_tensor_data(keep[2]), y);
    mp_tensor_decref(bf);
    return st;
}

mp_status mp_op_group_norm(mp_tensor *x, int64_t groups, mp_tensor *weight, mp_tensor *bias,
                           double eps, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_GROUP_NORM,
                      mp_op_group_norm(ac_[0], groups, ac_[1], ac_[2], eps, out), x, weight,
                      bias);
    MP_HOST_ONLY("group_norm", x, weight, bias);
    *out = NULL;
    mp_status st = check_gn(x, groups, weight, bias);
    if (st != MP_OK)
        return st;
    gn_dims d = {x->shape[0], x->shape[1], 1, groups, x->shape[1] / groups};
    for (int i = 2; i < x->ndim; i++)
        d.s *= x->shape[i];
    int64_t shape3[3] = {d.n, d.c, d.s};
    mp_tensor *xc = NULL, *y = NULL, *keep[4] = {NULL, NULL, NULL, NULL};
    st = mp_tensor_contiguous(x, &xc);
    if (st == MP_OK)
        st = mp_view_reshape(xc, shape3, 3, 1, &keep[0]);
    if (st == MP_OK)
        st = gn_run(keep[0], &d, weight, bias, eps, keep, &y);
    if (st == MP_OK)
        st = mp_view_reshape(y, x->shape, x->ndim, 1, out);
    if (st == MP_OK)
        st = gn_record(x, weight, bias, keep, groups, out);
    mp_tensor_decref(xc);
    mp_tensor_decref(y);
    for (int i = 0; i < 4; i++)
        mp_tensor_decref(keep[i]);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
