/* ops_stats.c - var/std (and var_mean/std_mean, one node with two outputs) and logsumexp over
 * a set of dims, with backward. Rows come from reduce_rows.h; every row is summed in double
 * (two passes for var: the mean, then squared deviations) and rounded once to the output
 * dtype. The divisor is max(0, N - correction) as torch (0 gives inf or NaN); backward uses
 * torch's formulas, including N - correction unclamped and std's gradient 0 where std is 0.
 * logsumexp subtracts the row max unless it is infinite, so +-inf rows give +-inf, not NaN. */
#include <math.h>
#include <stdlib.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "ops.h"
#include "../reduce_rows.h"
#include "../rows.h"

static uint32_t all_dims(int ndim)
{
    return ndim >= 32 ? ~0u : (1u << ndim) - 1u;
}

static double row_mean(const float *x, int64_t len)
{
    return mp_sum_f32(x, len) / (double)len;
}

/* ---- var / std ---- */

typedef struct {
    double *var, *mean;     /* nrows each */
} var_res;

static mp_status var_rows(const mp_rowset *rs, double correction, int take_sqrt, var_res *v)
{
    mp_dtype dt = rs->rows->dtype;
    const void *data = mp_tensor_data(rs->rows);
    float *buf = malloc(sizeof(float) * (size_t)(rs->len + 1));
    if (!buf)
        return mp_error(MP_ERR_NOMEM, "out of memory for a row buffer");
    double dof = (double)rs->len - correction;
    for (int64_t r = 0; r < rs->nrows; r++) {
        const float *x = rs->len ? mp_row_load(dt, data, r, rs->len, buf) : buf;
        double mean = row_mean(x, rs->len);
        double var = mp_sum_sq_dev_f32(x, rs->len, mean) / (dof > 0.0 ? dof : 0.0);
        v->mean[r] = mean;
        v->var[r] = take_sqrt ? sqrt(var) : var;
    }
    free(buf);
    return MP_OK;
}

/* d var / dx_i = 2 (x_i - mean) / (N - correction); std: times 1 / (2 std), 0 where std is 0;
 * the mean output adds g_mean / N. x: fp32 rows; gv/gm NULL: no gradient for that output. */
static void var_grad_rows(const mp_node *n, const float *x, int64_t nrows, int64_t len,
                          const float *res, const float *gv, const float *gm, float *o)
{
    double dof = (double)len - n->fargs[0];
    int take_sqrt = (int)n->iargs[1];
    for (int64_t r = 0; r < nrows; r++) {
        const float *xr = x + r * len;
        float *out = o + r * len;
        double mean = row_mean(xr, len), gmean = gm ? gm[r] / (double)len : 0.0;
        if (!gv) {
            for (int64_t i = 0; i < len; i++)
                out[i] = (float)gmean;
            continue;
        }
        double gvar = gv[r];
        if (take_sqrt)
            gvar = res[r] == 0.0f ? 0.0 : gvar / (2.0 * res[r]);
        double scale = 2.0 / dof * gvar;
        for (int64_t i = 0; i < len; i++)
            out[i] = (float)(scale * ((double)xr[i] - mean) + gmean);
    }
}

static mp_status var_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *res = mp_node_saved(n, 1);
    if (!x || !res)
        return MP_ERR_RUNTIME;
    uint32_t mask = (uint32_t)n->iargs[0];
    mp_rowset rs = {0};
    mp_tensor *xr = NULL, *rv = NULL, *gv = NULL, *gm = NULL, *grows = NULL;
    mp_status st = mp_rowset_of(x, mask, 0, &rs);
    if (st == MP_OK)
        st = mp_as_f32(rs.rows, &xr);
    if (st == MP_OK)
        st = mp_as_f32(res, &rv);
    if (st == MP_OK && gout[0])
        st = mp_as_f32(gout[0], &gv);
    if (st == MP_OK && n->n_outputs > 1 && gout[1])
        st = mp_as_f32(gout[1], &gm);
    int64_t total = rs.nrows * rs.len;
    if (st == MP_OK)
        st = mp_tensor_empty(&total, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &grows);
    if (st == MP_OK) {
        var_grad_rows(n, mp_tensor_data(xr), rs.nrows, rs.len, mp_tensor_data(rv),
                      gv ? mp_tensor_data(gv) : NULL, gm ? mp_tensor_data(gm) : NULL,
                      mp_tensor_data(grows));
        int nd;
        const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
        st = mp_rowset_restore(grows, ishape, nd, mask, &gin[0]);
    }
    mp_rowset_release(&rs);
    mp_tensor_decref(xr);
    mp_tensor_decref(rv);
    mp_tensor_decref(gv);
    mp_tensor_decref(gm);
    mp_tensor_decref(grows);
    return st;
}

static mp_status var_outputs(mp_tensor *a, const mp_rowset *rs, double correction,
                             int take_sqrt, mp_tensor **out, mp_tensor **mean_out)
{
    double *buf = malloc(sizeof(double) * 2 * (size_t)(rs->nrows + 1));
    if (!buf)
        return mp_error(MP_ERR_NOMEM, "out of memory for a reduction buffer");
    var_res v = {buf, buf + rs->nrows + 1};
    mp_status st = var_rows(rs, correction, take_sqrt, &v);
    if (st == MP_OK)
        st = mp_tensor_from_f64(v.var, rs->oshape, rs->ond, a->dtype, out);
    if (st == MP_OK && mean_out)
        st = mp_tensor_from_f64(v.mean, rs->oshape, rs->ond, a->dtype, mean_out);
    free(buf);
    return st;
}

mp_status mp_op_var(mp_tensor *a, uint32_t dim_mask, double correction, int keepdim,
                    int take_sqrt, mp_tensor **out, mp_tensor **mean_out)
{
    MP_HOST_ONLY("var", a);
    *out = NULL;
    if (mean_out)
        *mean_out = NULL;
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "std and var only support floating point and complex "
                        "dtypes");
    uint32_t mask = dim_mask & all_dims(a->ndim);
    mp_rowset rs = {0};
    mp_status st = mp_rowset_of(a, mask, keepdim, &rs);
    if (st == MP_OK)
        st = var_outputs(a, &rs, correction, take_sqrt, out, mean_out);
    mp_rowset_release(&rs);
    const char *name = take_sqrt ? (mean_out ? "StdMeanBackward0" : "StdBackward0")
                                 : (mean_out ? "VarMeanBackward0" : "VarBackward0");
    mp_tensor *outs[2] = {*out, mean_out ? *mean_out : NULL};
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(name, var_backward, &a, 1, outs, mean_out ? 2 : 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        node->iargs[1] = take_sqrt;
        node->fargs[0] = correction;
        if ((st = mp_node_save(node, 0, a)) == MP_OK)
            st = mp_node_save(node, 1, *out);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
        if (mean_out) {
            mp_tensor_decref(*mean_out);
            *mean_out = NULL;
        }
    }
    return st;
}

/* ---- logsumexp ---- */

static double lse_row(const float *x, int64_t len)
{
    float m = -INFINITY;
    for (int64_t i = 0; i < len; i++)
        if (x[i] > m)
            m = x[i];
    double c = isinf(m) ? 0.0 : (double)m, s = 0.0;
    for (int64_t i = 0; i < len; i++)
        s += exp((double)x[i] - c);
    return log(s) + c;
}

/* grad_i = g * exp(x_i - result) */
static mp_status lse_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *res = mp_node_saved(n, 1);
    if (!x || !res)
        return MP_ERR_RUNTIME;
    uint32_t mask = (uint32_t)n->iargs[0];
    mp_rowset rs = {0};
    mp_tensor *xr = NULL, *rv = NULL, *g = NULL;
    mp_status st = mp_rowset_of(x, mask, 0, &rs);
    if (st == MP_OK)        /* a fresh fp32 copy: the gradient is written over it */
        st = mp_tensor_cast(rs.rows, MP_DTYPE_FLOAT32, &xr);
    if (st == MP_OK)
        st = mp_as_f32(res, &rv);
    if (st == MP_OK)
        st = mp_as_f32(gout[0], &g);
    if (st == MP_OK) {
        float *o = mp_tensor_data(xr);
        const float *rp = mp_tensor_data(rv), *gp = mp_tensor_data(g);
        for (int64_t r = 0; r < rs.nrows; r++)
            for (int64_t i = 0; i < rs.len; i++) {
                float *e = o + r * rs.len + i;
                *e = (float)((double)gp[r] * exp((double)*e - (double)rp[r]));
            }
        int nd;
        const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
        st = mp_rowset_restore(xr, ishape, nd, mask, &gin[0]);
    }
    mp_rowset_release(&rs);
    mp_tensor_decref(xr);
    mp_tensor_decref(rv);
    mp_tensor_decref(g);
    return st;
}

static mp_status lse_forward(mp_tensor *a, uint32_t mask, int keepdim, mp_tensor **out)
{
    mp_rowset rs = {0};
    double *v = NULL;
    float *buf = NULL;
    mp_status st = mp_rowset_of(a, mask, keepdim, &rs);
    if (st == MP_OK && (!(v = malloc(sizeof(double) * (size_t)(rs.nrows + 1))) ||
                        !(buf = malloc(sizeof(float) * (size_t)(rs.len + 1)))))
        st = mp_error(MP_ERR_NOMEM, "out of memory for a reduction buffer");
    if (st == MP_OK) {
        const void *data = mp_tensor_data(rs.rows);
        for (int64_t r = 0; r < rs.nrows; r++)
            v[r] = lse_row(rs.len ? mp_row_load(a->dtype, data, r, rs.len, buf) : buf, rs.len);
        st = mp_tensor_from_f64(v, rs.oshape, rs.ond, a->dtype, out);
    }
    free(v);
    free(buf);
    mp_rowset_release(&rs);
    return st;
}

mp_status mp_op_logsumexp(mp_tensor *a, uint32_t dim_mask, int keepdim, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_LOGSUMEXP, mp_op_logsumexp(ac_[0], dim_mask, keepdim, out), a);
    MP_HOST_ONLY("logsumexp", a);
    *out = NULL;
    mp_tensor *src = NULL;    /* integers are summed as float32, as torch */
    mp_status st = mp_op_to_dtype(a, mp_dtype_is_float(a->dtype) ? a->dtype
                                                                 : MP_DTYPE_FLOAT32, 0, &src);
    uint32_t mask = dim_mask & all_dims(a->ndim);
    if (st == MP_OK)
        st = lse_forward(src, mask, keepdim, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("LogsumexpBackward0", lse_backward, &src, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        if ((st = mp_node_save(node, 0, src)) == MP_OK)
            st = mp_node_save(node, 1, *out);
    }
    mp_tensor_decref(src);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
