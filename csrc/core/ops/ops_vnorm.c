/* ops_vnorm.c - linalg.vector_norm over a set of dims (the body of norm, linalg.norm and dist),
 * with backward. ord: 2, 1, +-inf (max/min of |x|, NaN propagates), 0 (count of non-zeros),
 * any other p ((sum |x|^p)^(1/p)). Rows from reduce_rows.h are reduced in double and rounded
 * once. The backward follows torch's formulas branch by branch (2: g x / norm, 0 where the norm
 * is 0; inf: shared evenly among the elements at the norm; p < 1: 0 where x is 0; ord 0 has no
 * gradient), so edge cases (zeros, ties, NaN) give torch's numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../amp/autocast.h"
#include "../elementwise.h"
#include "../backend.h"
#include "ops.h"
#include "../reduce_rows.h"
#include "../rows.h"

static uint32_t all_dims(int ndim)
{
    return ndim >= 32 ? ~0u : (1u << ndim) - 1u;
}

static double norm_row(const float *x, int64_t len, double p)
{
    double s = 0.0;
    if (p == 2.0) {
        for (int64_t i = 0; i < len; i++)
            s += (double)x[i] * x[i];
        return sqrt(s);
    }
    if (isinf(p)) {
        double m = fabs((double)x[0]);
        for (int64_t i = 0; i < len; i++) {
            double v = fabs((double)x[i]);
            if (v != v)
                return v;
            if (p > 0 ? v > m : v < m)
                m = v;
        }
        return m;
    }
    for (int64_t i = 0; i < len; i++) {
        double v = fabs((double)x[i]);
        s += p == 1.0 ? v : p == 0.0 ? (double)(x[i] != 0.0f) : pow(v, p);
    }
    return p == 1.0 || p == 0.0 ? s : pow(s, 1.0 / p);
}

static double sgn(double v)
{
    return (double)(v > 0.0) - (double)(v < 0.0);
}

/* The gradient of one row (x: fp32, r: the norm as stored, g: its gradient) into o. */
static void norm_grad_row(const float *x, int64_t len, double p, double r, double g, float *o)
{
    if (isinf(p)) {
        int64_t count = 0;
        for (int64_t i = 0; i < len; i++) {
            double v = fabs((double)x[i]);
            count += v == r || v != v;
        }
        double share = g / (double)count;
        for (int64_t i = 0; i < len; i++) {
            double v = fabs((double)x[i]);
            o[i] = (float)(sgn(x[i]) * (share * (v == r || v != v ? 1.0 : 0.0)));
        }
        return;
    }
    for (int64_t i = 0; i < len; i++) {
        double v = x[i], a = fabs(v), d;
        if (p == 1.0)
            d = sgn(v) * g;
        else if (p == 2.0)
            d = r == 0.0 ? 0.0 : g * v / r;
        else if (p < 1.0)
            d = (v == 0.0 ? 0.0 : sgn(v) * pow(a, p - 1.0)) * g * pow(r, 1.0 - p);
        else if (p < 2.0)
            d = sgn(v) * pow(a, p - 1.0) * (r == 0.0 ? 0.0 : g / pow(r, p - 1.0));
        else
            d = v * pow(a, p - 2.0) * (r == 0.0 ? 0.0 : g / pow(r, p - 1.0));
        o[i] = (float)d;
    }
}

static mp_status vnorm_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *res = mp_node_saved(n, 1);
    if (!x || !res)
        return MP_ERR_RUNTIME;
    double p = n->fargs[0];
    if (p == 0.0)
        return MP_OK;             /* a count: no gradient (torch leaves .grad None) */
    uint32_t mask = (uint32_t)n->iargs[0];
    mp_rowset rs = {0};
    mp_tensor *xr = NULL, *rv = NULL, *g = NULL, *grows = NULL;
    mp_status st = mp_rowset_of(x, mask, 0, &rs);
    if (st == MP_OK)
        st = mp_as_f32(rs.rows, &xr);
    if (st == MP_OK)
        st = mp_as_f32(res, &rv);
    if (st == MP_OK)
        st = mp_as_f32(gout[0], &g);
    int64_t total = rs.nrows * rs.len;
    if (st == MP_OK)
        st = mp_tensor_empty(&total, 1, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &grows);
    if (st == MP_OK) {
        const float *xp = mp_tensor_data(xr), *rp = mp_tensor_data(rv), *gp = mp_tensor_data(g);
        float *o = mp_tensor_data(grows);
        for (int64_t r = 0; r < rs.nrows; r++)
            norm_grad_row(xp + r * rs.len, rs.len, p, rp[r], gp[r], o + r * rs.len);
        int nd;
        const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
        st = mp_rowset_restore(grows, ishape, nd, mask, &gin[0]);
    }
    mp_rowset_release(&rs);
    mp_tensor_decref(xr);
    mp_tensor_decref(rv);
    mp_tensor_decref(g);
    mp_tensor_decref(grows);
    return st;
}

/* torch's checks: a float input; dtype= may widen but not narrow. */
static mp_status vnorm_dtype(mp_tensor *a, int dtype, mp_dtype *odt)
{
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "linalg.vector_norm: Expected a floating point or "
                        "complex tensor as input. Got %s", mp_dtype_torch_name(a->dtype));
    *odt = a->dtype;
    if (dtype < 0)
        return MP_OK;
    if (!mp_dtype_is_float((mp_dtype)dtype))
        return mp_error(MP_ERR_RUNTIME, "linalg.vector_norm: dtype should be floating point or "
                        "complex, but got %s", mp_dtype_torch_name((mp_dtype)dtype));
    if (mp_promote_types(a->dtype, (mp_dtype)dtype) != (mp_dtype)dtype)
        return mp_error(MP_ERR_RUNTIME, "linalg.vector_norm: the dtype of the input (%s) "
                        "should be convertible without narrowing to the specified dtype (%s)",
                        mp_dtype_torch_name(a->dtype), mp_dtype_torch_name((mp_dtype)dtype));
    *odt = (mp_dtype)dtype;
    return MP_OK;
}

/* Norms without an identity (ord < 0 or inf) refuse empty reductions, as torch.
 * dim_mask 0 means dim=None. */
static mp_status vnorm_check_empty(mp_tensor *a, double ord, uint32_t dim_mask)
{
    if (!(ord < 0.0 || ord == INFINITY) || mp_tensor_numel(a) != 0)
        return MP_OK;
    char buf[64];
    snprintf(buf, sizeof buf, "%g", ord);
    if (dim_mask == 0)
        return mp_error(MP_ERR_RUNTIME, "linalg.vector_norm cannot compute the %s norm on an "
                        "empty tensor because the operation does not have an identity", buf);
    for (int d = 0; d < a->ndim; d++)      /* torch's message has no space after the dim */
        if ((dim_mask & (1u << d)) && a->shape[d] == 0)
            return mp_error(MP_ERR_RUNTIME, "linalg.vector_norm cannot compute the %s norm on "
                            "the dimension %dbecause this dimension is empty and the "
                            "operation does not have an identity", buf, d);
    return MP_OK;
}

static mp_status vnorm_forward(mp_tensor *a, double ord, uint32_t mask, int keepdim,
                               mp_tensor **out)
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
            v[r] = rs.len ? norm_row(mp_row_load(a->dtype, data, r, rs.len, buf), rs.len, ord)
                          : 0.0;
        st = mp_tensor_from_f64(v, rs.oshape, rs.ond, a->dtype, out);
    }
    free(v);
    free(buf);
    mp_rowset_release(&rs);
    return st;
}

mp_status mp_op_vector_norm(mp_tensor *a, double ord, uint32_t dim_mask, int keepdim,
                            int dtype, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY_IF(dtype < 0, MP_OP_LINALG_VECTOR_NORM,
                         mp_op_vector_norm(ac_[0], ord, dim_mask, keepdim, dtype, out), a);
    MP_HOST_ONLY("vector_norm", a);
    mp_dtype odt = a->dtype;
    *out = NULL;
    dim_mask &= all_dims(a->ndim);
    mp_status st = vnorm_dtype(a, dtype, &odt);
    if (st == MP_OK)
        st = vnorm_check_empty(a, ord, dim_mask);
    if (st != MP_OK)
        return st;
    uint32_t mask = dim_mask ? dim_mask : all_dims(a->ndim);
    mp_tensor *src = NULL;
    st = mp_op_to_dtype(a, odt, 0, &src);
    if (st == MP_OK)
        st = vnorm_forward(src, ord, mask, keepdim, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("LinalgVectorNormBackward0", vnorm_backward, &src, 1, out, 1,
                                &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        node->fargs[0] = ord;
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
