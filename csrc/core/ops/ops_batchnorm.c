/* ops_batchnorm.c - batch_norm (ops_cnn.h) and the helpers of norm_common.h. The input is
 * made contiguous and seen as (N, C, S) planes (csrc/cpu/norm_planes.h): in training, the
 * per-channel mean and biased variance (double; Chan's combination of per-plane moments)
 * normalise, and the running stats take the unbiased variance, in their own dtype; in eval
 * the running stats normalise. Output in the input dtype; weight/bias gradients fp32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu/norm_planes.h"
#include "../backend.h"
#include "../copy.h"
#include "norm_common.h"
#include "ops_cnn.h"
#include "../rows.h"
#include "../view.h"

mp_status mp_norm_check_param_dtypes(mp_tensor *x, mp_tensor *const *params, int n)
{
    MP_HOST_ONLY("norm_check_param_dtypes", x);
    mp_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!params[i])
            continue;
        if (!first)
            first = params[i];
        else if (params[i]->dtype != first->dtype)
            return mp_error(MP_ERR_RUNTIME, "expected scalar type %s but found %s",
                            mp_dtype_torch_name(first->dtype),
                            mp_dtype_torch_name(params[i]->dtype));
    }
    if (first && first->dtype != x->dtype &&
        (x->dtype == MP_DTYPE_FLOAT32 || first->dtype != MP_DTYPE_FLOAT32))
        return mp_error(MP_ERR_RUNTIME, "mixed dtype (CPU): expect parameter to have scalar "
                        "type of Float");
    return MP_OK;
}

mp_status mp_norm_f32(mp_tensor *t, int64_t n, float fill, mp_tensor **out)
{
    MP_HOST_ONLY("norm_f32", t);
    if (t)
        return mp_tensor_cast(t, MP_DTYPE_FLOAT32, out);
    mp_status st = mp_tensor_empty(&n, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, out);
    float *p = st == MP_OK ? mp_tensor_data(*out) : NULL;
    for (int64_t i = 0; p && i < n; i++)
        p[i] = fill;
    return st;
}

void mp_norm_combine(const double *mean, const double *m2, int64_t k, int64_t step, int64_t s,
                     double *out_mean, double *out_var)
{
    double mu = 0.0, acc = 0.0;
    for (int64_t i = 0; i < k; i++) {
        double na = (double)(i * s), nb = (double)s, delta = mean[i * step] - mu;
        if (na + nb == 0.0)
            continue;
        mu += delta * nb / (na + nb);
        acc += m2[i * step] + delta * delta * na * nb / (na + nb);
    }
    *out_mean = mu;
    *out_var = k * s > 0 ? acc / (double)(k * s) : 0.0;
}

/* ---- checks ---- */

static mp_status check_size(mp_tensor *t, const char *what, int64_t c)
{
    if (t && mp_tensor_numel(t) != c)
        return mp_error(MP_ERR_RUNTIME, "%s should contain %lld elements not %lld", what,
                        (long long)c, (long long)mp_tensor_numel(t));
    if (t && !mp_dtype_is_float(t->dtype))
        return mp_error(MP_ERR_TYPE, "batch_norm: %s must be a floating point tensor, got %s",
                        what, mp_dtype_torch_name(t->dtype));
    return MP_OK;
}

static mp_status check_bn(mp_tensor *x, mp_tensor *w, mp_tensor *b, mp_tensor *rm,
                          mp_tensor *rv, int training)
{
    if (x->ndim < 2) {
        char s[256];
        mp_format_shape(s, sizeof s, x->shape, x->ndim);
        return mp_error(MP_ERR_RUNTIME, "batch_norm: expected an input of at least 2 dimensions "
                        "(N, C, ...), but got input of size %s", s);
    }
    if (!mp_dtype_is_float(x->dtype))
        return mp_error(MP_ERR_TYPE, "\"batch_norm\" not implemented for '%s'",
                        mp_dtype_torch_name(x->dtype));
    if (!rm != !rv)
        return mp_error(MP_ERR_VALUE, "running_mean and running_var must either both be None "
                        "or neither be None");
    if (!training && !rm)
        return mp_error(MP_ERR_RUNTIME, "running_mean must be defined in evaluation mode");
    int64_t c = x->shape[1];
    mp_tensor *ps[4] = {w, b, rm, rv};
    const char *names[4] = {"weight", "bias", "running_mean", "running_var"};
    for (int i = 0; i < 4; i++) {
        mp_status st = check_size(ps[i], names[i], c);
        if (st != MP_OK)
            return st;
    }
    return mp_norm_check_param_dtypes(x, ps, 4);
}

/* ---- statistics ---- */

static double get1(mp_tensor *t, int64_t i)
{
    return mp_load_f64(t->dtype, (const char *)mp_tensor_data(t) +
                                     (size_t)(i * t->strides[0]) * mp_dtype_size(t->dtype));
}

static void set1(mp_tensor *t, int64_t i, double v)
{
    mp_scalar s = {v, 0, 0};
    mp_store_scalar(t->dtype, (char *)mp_tensor_data(t) +
                                  (size_t)(i * t->strides[0]) * mp_dtype_size(t->dtype), s);
}

typedef struct {
    int64_t n, c, s;
    double momentum, eps;
} bn_dims;

/* mean[c], rstd[c] from the batch (running stats updated) or from the running stats. */
static mp_status bn_stats(mp_tensor *xc, const bn_dims *d, mp_tensor *rm, mp_tensor *rv,
                          int training, float *mean, float *rstd)
{
    int64_t planes = d->n * d->c, m = d->n * d->s;
    double *pm = NULL, *p2 = NULL;
    if (training && m > 0) {
        pm = malloc(sizeof(double) * (size_t)(2 * planes + 1));
        if (!pm || mp_planes_moments(xc->dtype, mp_tensor_data(xc), planes, d->s, pm,
                                     p2 = pm + planes) < 0) {
            free(pm);
            return mp_error(MP_ERR_NOMEM, "batch_norm: out of memory for the statistics");
        }
    }
    for (int64_t c = 0; c < d->c; c++) {
        double mu = 0.0, var = 0.0;
        if (training && m > 0) {
            mp_norm_combine(pm + c, p2 + c, d->n, d->c, d->s, &mu, &var);
            if (rm) {
                double unbiased = m > 1 ? var * (double)m / (double)(m - 1) : var;
                set1(rm, c, (1.0 - d->momentum) * get1(rm, c) + d->momentum * mu);
                set1(rv, c, (1.0 - d->momentum) * get1(rv, c) + d->momentum * unbiased);
            }
        } else if (!training) {
            mu = get1(rm, c), var = get1(rv, c);
        }
        mean[c] = (float)mu;
        rstd[c] = (float)(1.0 / sqrt(var + d->eps));
    }
    free(pm);
    return MP_OK;
}

/* ---- backward ---- */

/* Per-channel sums of dy and dy * (x - mean) over batch and space. */
static mp_status bn_sums(mp_tensor *xc, mp_tensor *dy, const float *mean, int64_t n,
                         int64_t c, int64_t s, double *sdy, double *sdyx)
{
    double *pg = malloc(sizeof(double) * (size_t)(2 * n * c + 1));
    if (!pg || mp_planes_dot(xc->dtype, mp_tensor_data(xc), dy->dtype, mp_tensor_data(dy),
                             n * c, s, c, mean, pg, pg + n * c) < 0) {
        free(pg);
        return mp_error(MP_ERR_NOMEM, "batch_norm backward: out of memory");
    }
    for (int64_t ch = 0; ch < c; ch++) {
        double a = 0.0, b = 0.0;
        for (int64_t i = 0; i < n; i++)
            a += pg[i * c + ch], b += pg[n * c + i * c + ch];
        sdy[ch] = a, sdyx[ch] = b;
    }
    free(pg);
    return MP_OK;
}

/* fp32 tensor of the node's input i shape from n double values (times scale[c] if given) */
static mp_status channel_grad(mp_node *node, int i, const double *v, const float *scale,
                              int64_t n, mp_tensor **out)
{
    int nd;
    const int64_t *shape = mp_node_in_shape(node, i, &nd);
    mp_status st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, out);
    float *p = st == MP_OK ? mp_tensor_data(*out) : NULL;
    for (int64_t k = 0; p && k < n; k++)
        p[k] = (float)(scale ? v[k] * scale[k] : v[k]);
    return st;
}

static mp_status bn_dx(mp_node *node, mp_tensor *xc, mp_tensor *dy, const float *mean,
                       const float *rstd, const float *w, const double *sdy,
                       const double *sdyx, mp_tensor **dx)
{
    int64_t c = node->iargs[1], s = node->iargs[2], n = xc->shape[0];
    double m = (double)(n * s);
    float *k = malloc(sizeof(float) * (size_t)(3 * c + 1));
    if (!k)
        return mp_error(MP_ERR_NOMEM, "batch_norm backward: out of memory");
    for (int64_t ch = 0; ch < c; ch++) {
        float ka = (w ? w[ch] : 1.0f) * rstd[ch];
        k[ch] = ka;
        k[c + ch] = node->iargs[0] ? (float)(-ka * rstd[ch] * rstd[ch] * sdyx[ch] / m) : 0.0f;
        k[2 * c + ch] = node->iargs[0] ? (float)(-ka * sdy[ch] / m) : 0.0f;
    }
    int nd;
    const int64_t *shape = mp_node_in_shape(node, 0, &nd);
    mp_status st = mp_tensor_empty(shape, nd, node->in_dtypes[0], MP_DEVICE_CPU, dx);
    if (st == MP_OK && mp_planes_affine((*dx)->dtype, mp_tensor_data(*dx), xc->dtype,
                                        mp_tensor_data(xc), dy->dtype, mp_tensor_data(dy),
                                        n * c, s, c, k, k + c, mean, k + 2 * c) < 0)
        st = mp_error(MP_ERR_NOMEM, "batch_norm backward: out of memory");
    free(k);
    return st;
}

static mp_status bn_backward(mp_node *node, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *xc = mp_node_saved(node, 0), *mt = mp_node_saved(node, 1);
    mp_tensor *rt = mp_node_saved(node, 2), *wt = mp_node_saved(node, 3), *dy = NULL;
    if (!xc || !mt || !rt)
        return MP_ERR_RUNTIME;
    int64_t c = node->iargs[1], s = node->iargs[2], n = xc->shape[0];
    const float *mean = mp_tensor_data(mt), *rstd = mp_tensor_data(rt);
    int sums = node->next[1].node || node->next[2].node || (node->next[0].node && node->iargs[0]);
    double *acc = calloc((size_t)(2 * c + 1), sizeof(double));
    mp_status st = acc ? mp_tensor_contiguous(gout[0], &dy)
                       : mp_error(MP_ERR_NOMEM, "batch_norm backward: out of memory");
    if (st == MP_OK && sums)
        st = bn_sums(xc, dy, mean, n, c, s, acc, acc + c);
    if (st == MP_OK && node->next[0].node)
        st = bn_dx(node, xc, dy, mean, rstd, wt ? mp_tensor_data(wt) : NULL, acc, acc + c,
                   &gin[0]);
    if (st == MP_OK && node->next[1].node)
        st = channel_grad(node, 1, acc + c, rstd, c, &gin[1]);
    if (st == MP_OK && node->next[2].node)
        st = channel_grad(node, 2, acc, NULL, c, &gin[2]);
    free(acc);
    mp_tensor_decref(dy);
    return st;
}

/* ---- forward ---- */

static mp_status bn_forward(mp_tensor *xc, const bn_dims *d, mp_tensor *w, mp_tensor *b,
                            mp_tensor *mt, mp_tensor *rt, mp_tensor **wf, mp_tensor **out)
{
    mp_tensor *bf = NULL;
    mp_status st = mp_norm_f32(w, d->c, 1.0f, wf);
    if (st == MP_OK)
        st = mp_norm_f32(b, d->c, 0.0f, &bf);
    float *kb = st == MP_OK ? malloc(sizeof(float) * (size_t)(d->c + 1)) : NULL;
    if (st == MP_OK && !kb)
        st = mp_error(MP_ERR_NOMEM, "batch_norm: out of memory");
    if (st == MP_OK) {
        const float *wv = mp_tensor_data(*wf), *rs = mp_tensor_data(rt);
        for (int64_t c = 0; c < d->c; c++)
            kb[c] = wv[c] * rs[c];
        st = mp_tensor_empty(xc->shape, xc->ndim, xc->dtype, MP_DEVICE_CPU, out);
    }
    if (st == MP_OK && mp_planes_affine(xc->dtype, mp_tensor_data(*out), xc->dtype,
                                        mp_tensor_data(xc), xc->dtype, NULL, d->n * d->c, d->s,
                                        d->c, NULL, kb, mp_tensor_data(mt),
                                        mp_tensor_data(bf)) < 0)
        st = mp_error(MP_ERR_NOMEM, "batch_norm: out of memory");
    free(kb);
    mp_tensor_decref(bf);
    return st;
}

static mp_status bn_record(mp_tensor *x, mp_tensor *w, mp_tensor *b, mp_tensor *const *keep,
                           const bn_dims *d, int training, mp_tensor **out)
{
    mp_tensor *ins[3] = {x, w, b};
    mp_node *node = NULL;
    mp_status st = mp_autograd_record("NativeBatchNormBackward0", bn_backward, ins, 3, out, 1,
                                      &node);
    if (st != MP_OK || !node)
        return st;
    node->iargs[0] = training, node->iargs[1] = d->c, node->iargs[2] = d->s;
    for (int i = 0; i < 4 && st == MP_OK; i++)
        st = mp_node_save(node, i, keep[i]);
    return st;
}

mp_status mp_op_batch_norm(mp_tensor *x, mp_tensor *weight, mp_tensor *bias,
                           mp_tensor *running_mean, mp_tensor *running_var, int training,
                           double momentum, double eps, mp_tensor **out)
{
    MP_HOST_ONLY("batch_norm", x, weight, bias, running_mean, running_var);
    *out = NULL;
    mp_status st = check_bn(x, weight, bias, running_mean, running_var, training);
    if (st != MP_OK)
        return st;
    bn_dims d = {x->shape[0], x->shape[1], 1, momentum, eps};
    for (int i = 2; i < x->ndim; i++)
        d.s *= x->shape[i];
    mp_tensor *xc = NULL, *xv = NULL, *mt = NULL, *rt = NULL, *wf = NULL;
    int64_t shape3[3] = {d.n, d.c, d.s};
    st = mp_tensor_contiguous(x, &xc);
    if (st == MP_OK)    /* contiguous, so a plain relabelling to (N, C, S) */
        st = mp_view_reshape(xc, shape3, 3, 1, &xv);
    if (st == MP_OK)
        st = mp_tensor_empty(&d.c, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &mt);
    if (st == MP_OK)
        st = mp_tensor_empty(&d.c, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &rt);
    if (st == MP_OK)
        st = bn_stats(xv, &d, running_mean, running_var, training, mp_tensor_data(mt),
                      mp_tensor_data(rt));
    mp_tensor *y = NULL;
    if (st == MP_OK)
        st = bn_forward(xv, &d, weight, bias, mt, rt, &wf, &y);
    if (st == MP_OK)
        st = mp_view_reshape(y, x->shape, x->ndim, 1, out);
    mp_tensor *keep[4] = {xv, mt, rt, weight ? wf : NULL};
    if (st == MP_OK)
        st = bn_record(x, weight, bias, keep, &d, training, out);
    mp_tensor_decref(y);
    mp_tensor_decref(xc);
    mp_tensor_decref(xv);
    mp_tensor_decref(mt);
    mp_tensor_decref(rt);
    mp_tensor_decref(wf);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
