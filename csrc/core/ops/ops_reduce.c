/* ops_reduce.c - sum, mean, max/min (over one dim or everything) and argmax/argmin, with
 * backward.
 * sum/mean run on mp_reduce_sum (double accumulator); mean divides the fp32 sum and rounds to
 * a half dtype once, as torch's CPU kernel. max/min/argmax/argmin scan rows along the reduced dim
 * (rows.h): ties give the first occurrence and the first NaN wins over numbers, as torch.
 * Integer inputs are compared as integers, never through fp32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "../elementwise.h"
#include "ops.h"
#include "../reduce.h"
#include "../reduce_rows.h"
#include "../rows.h"
#include "../view.h"

static uint32_t all_dims(int ndim)
{
    return ndim >= 32 ? ~0u : (1u << ndim) - 1u;
}

/* out = in / args[0] */
static void f_div_scalar(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    float d = (float)args[0];
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] / d;
}

/* ---- sum / mean ---- */

/* sum/mean backward: g (reduced shape) expanded over the reduced dims, divided by the count. */
static mp_status sum_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int nd;
    const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
    uint32_t mask = (uint32_t)n->iargs[0];
    int64_t kshape[MP_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        kshape[d] = mask & (1u << d) ? 1 : ishape[d];
    mp_tensor *g = gout[0], *gk = NULL, *ge = NULL;
    mp_status st = mp_view_reshape(g, kshape, nd, 0, &gk);
    if (st == MP_OK)
        st = mp_view_expand(gk, ishape, nd, &ge);
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    if (st == MP_OK)
        st = mp_tensor_empty(ishape, nd, dt, g->storage->device, &gin[0]);
    if (st == MP_OK)
        st = mp_map_with_op(gin[0], &ge, 1, f_div_scalar, MP_MAP_OP_DIV_SCALAR,
                            &n->fargs[0]);
    mp_tensor_decref(gk);
    mp_tensor_decref(ge);
    return st;
}

/* Whether summing a converted to dt equals summing a and storing as dt (the conversion is
 * exact), so the cast can be skipped. */
static int exact_widening(mp_dtype from, mp_dtype to)
{
    if (from == to || from == MP_DTYPE_BOOL || from == MP_DTYPE_UINT8)
        return 1;        /* 0..255 is exact in every dtype */
    return mp_dtype_is_float(from) ? to == MP_DTYPE_FLOAT32 : 0;
}

static mp_status check_sum_dtype(int mean, mp_tensor *a, int dtype, mp_dtype *odt)
{
    const char *what = mean ? "mean" : "sum";
    if (dtype >= MP_DTYPE_COUNT)
        return mp_error(MP_ERR_VALUE, "%s(): unknown dtype %d", what, dtype);
    if (mean && dtype < 0 && !mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "mean(): could not infer output dtype. Input dtype "
                        "must be either a floating point or complex dtype. Got: %s",
                        mp_dtype_torch_name(a->dtype));
    if (mean && dtype >= 0 && !mp_dtype_is_float((mp_dtype)dtype))
        return mp_error(MP_ERR_RUNTIME, "mean(): could not infer output dtype. Optional "
                        "dtype must be either a floating point or complex dtype. Got: %s",
                        mp_dtype_torch_name((mp_dtype)dtype));
    *odt = dtype >= 0 ? (mp_dtype)dtype
                      : mp_dtype_is_float(a->dtype) ? a->dtype : MP_DTYPE_INT64;
    return MP_OK;
}

/* The fp32 sum s divided by count into a tensor of dtype odt (s itself when fp32). */
static mp_status divide_sum(mp_tensor *s, double count, mp_dtype odt, mp_tensor **out)
{
    double args[1] = {count};
    if (odt == MP_DTYPE_FLOAT32) {
        mp_tensor_incref(s);
        *out = s;
    } else {
        mp_status st = mp_tensor_empty(s->shape, s->ndim, odt, s->storage->device, out);
        if (st != MP_OK)
            return st;
    }
    return mp_map_with_op(*out, &s, 1, f_div_scalar, MP_MAP_OP_DIV_SCALAR, args);
}

static mp_status sum_mean(int mean, mp_tensor *a, uint32_t mask, int keepdim, int dtype,
                          mp_tensor **out)
{
    mp_dtype odt = MP_DTYPE_FLOAT32;
    mp_status st = check_sum_dtype(mean, a, dtype, &odt);
    if (st != MP_OK)
        return st;
    mask &= all_dims(a->ndim);
    mp_tensor *src = a, *res = NULL;
    if (exact_widening(a->dtype, odt))
        mp_tensor_incref(src);
    else if ((st = mp_op_to_dtype(a, odt, 0, &src)) != MP_OK)   /* torch casts first */
        return st;
    double count = 1.0;
    for (int d = 0; d < src->ndim; d++)
        if (mask & (1u << d))
            count *= (double)src->shape[d];
    if (!mean) {
        st = mp_reduce_sum(src, mask, keepdim, odt, &res);
    } else {
        mp_tensor *s = NULL;
        st = mp_reduce_sum(src, mask, keepdim, MP_DTYPE_FLOAT32, &s);
        if (st == MP_OK)
            st = divide_sum(s, count, odt, &res);
        mp_tensor_decref(s);
    }
    mp_node *node = NULL;
    int full = mask == all_dims(src->ndim) && !keepdim;
    const char *name = mean ? (full ? "MeanBackward0" : "MeanBackward1")
                            : (full ? "SumBackward0" : "SumBackward1");
    if (st == MP_OK)
        st = mp_autograd_record(name, sum_backward, &src, 1, &res, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        node->fargs[0] = mean ? count : 1.0;
    }
    mp_tensor_decref(src);
    if (st != MP_OK) {
        mp_tensor_decref(res);
        res = NULL;
    }
    *out = res;
    return st;
}

mp_status mp_op_sum(mp_tensor *a, uint32_t dim_mask, int keepdim, int dtype, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY_IF(dtype < 0, MP_OP_SUM, mp_op_sum(ac_[0], dim_mask, keepdim, dtype, out), a);
    return sum_mean(0, a, dim_mask, keepdim, dtype, out);
}

mp_status mp_op_mean(mp_tensor *a, uint32_t dim_mask, int keepdim, int dtype, mp_tensor **out)
{
    return sum_mean(1, a, dim_mask, keepdim, dtype, out);
}

/* ---- max / min / argmax / argmin: row scans (reduce_rows.h) ---- */

/* For each row of contiguous `rows` (nrows x len): idx[r] = position of its max (is_min: min),
 * and when values is not NULL, values[r] = that element (bytes copied, so exact in any dtype). */
static mp_status scan_rows(mp_tensor *rows, int64_t nrows, int64_t len, int is_min,
                           int64_t *idx, char *values)
{
    mp_dtype dt = rows->dtype;
    size_t sz = mp_dtype_size(dt);
    const char *data = mp_tensor_data(rows);
    float *buf = NULL;
    if (mp_dtype_is_float(dt) && !(buf = malloc(sizeof(float) * (size_t)(len + 1))))
        return mp_error(MP_ERR_NOMEM, "out of memory for a row buffer");
    for (int64_t r = 0; r < nrows; r++) {
        const char *p = data + (size_t)(r * len) * sz;
        int64_t i;
        if (buf)
            i = mp_row_extreme_f32(mp_row_load(dt, data, r, len, buf), len, is_min);
        else
            i = mp_row_extreme_raw(dt, p, len, is_min);
        idx[r] = i;
        if (values)
            memcpy(values + (size_t)r * sz, p + (size_t)i * sz, sz);
    }
    free(buf);
    return MP_OK;
}

/* Max (is_min: min) over dim d of a (values optional): the shared body of max(dim), min(dim),
 * argmax(dim) and argmin(dim). */
static mp_status dim_scan(const char *name, mp_tensor *a, int d, int keepdim, int is_min,
                          mp_tensor **values, mp_tensor **indices)
{
    int64_t len = a->ndim ? a->shape[d] : 1, numel = mp_tensor_numel(a);
    if (len == 0)
        return mp_error(MP_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                        name, d);
    int64_t oshape[MP_MAX_DIMS];
    int ond;
    mp_reduced_shape(a, 1u << d, keepdim, oshape, &ond);
    mp_tensor *rows = NULL;
    *indices = NULL;
    if (values)
        *values = NULL;
    mp_status st = mp_rows_of(a, d, &rows);
    if (st == MP_OK)
        st = mp_tensor_empty(oshape, ond, MP_DTYPE_INT64, MP_DEVICE_CPU, indices);
    if (st == MP_OK && values)
        st = mp_tensor_empty(oshape, ond, a->dtype, MP_DEVICE_CPU, values);
    if (st == MP_OK)
        st = scan_rows(rows, numel / len, len, is_min, mp_tensor_data(*indices),
                       values ? mp_tensor_data(*values) : NULL);
    mp_tensor_decref(rows);
    if (st != MP_OK) {
        mp_tensor_decref(*indices);
        *indices = NULL;
        if (values) {
            mp_tensor_decref(*values);
            *values = NULL;
        }
    }
    return st;
}

/* max(dim) / min(dim) backward: g scattered to the selected index of each row. */
static mp_status max_dim_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *idx = mp_node_saved(n, 0), *gc = NULL, *ic = NULL, *grows = NULL;
    if (!idx)
        return MP_ERR_RUNTIME;
    int nd, d = (int)n->iargs[0];
    const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
    int64_t rshape[MP_MAX_DIMS], len = nd ? ishape[d] : 1;
    mp_rows_shape(ishape, nd, d, rshape);
    mp_status st = mp_tensor_cast(gout[0], MP_DTYPE_FLOAT32, &gc);
    if (st == MP_OK)
        st = mp_tensor_contiguous(idx, &ic);
    if (st == MP_OK)
        st = mp_tensor_full(rshape, nd, MP_DTYPE_FLOAT32, 0.0, &grows);
    if (st == MP_OK) {
        const float *g = mp_tensor_data(gc);
        const int64_t *ix = mp_tensor_data(ic);
        float *out = mp_tensor_data(grows);
        int64_t nrows = mp_tensor_numel(ic);
        for (int64_t r = 0; r < nrows; r++)
            out[r * len + ix[r]] = g[r];
        st = mp_rows_restore(grows, d, &gin[0]);
    }
    mp_tensor_decref(gc);
    mp_tensor_decref(ic);
    mp_tensor_decref(grows);
    return st;
}

static mp_status extreme_dim(int is_min, mp_tensor *a, int64_t dim, int keepdim,
                             mp_tensor **values, mp_tensor **indices)
{
    int d;
    *values = *indices = NULL;
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st == MP_OK)
        st = dim_scan(is_min ? "min" : "max", a, a->ndim ? d : 0, keepdim, is_min, values,
                      indices);
    mp_node *node = NULL;
    mp_tensor *outs[2] = {*values, *indices};
    if (st == MP_OK)
        st = mp_autograd_record(is_min ? "MinBackward0" : "MaxBackward0", max_dim_backward,
                                &a, 1, outs, 2, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = a->ndim ? d : 0;
        st = mp_node_save(node, 0, *indices);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*values);
        mp_tensor_decref(*indices);
        *values = *indices = NULL;
    }
    return st;
}

/* a flattened to one contiguous row (new reference). */
static mp_status flat_row(mp_tensor *a, mp_tensor **out)
{
    int64_t n = mp_tensor_numel(a);
    mp_tensor *f = NULL;
    mp_status st = mp_view_reshape(a, &n, 1, 0, &f);
    if (st == MP_OK)
        st = mp_tensor_contiguous(f, out);
    mp_tensor_decref(f);
    return st;
}

mp_status mp_op_max_dim(mp_tensor *a, int64_t dim, int keepdim, mp_tensor **values,
                        mp_tensor **indices)
{
    MP_HOST_ONLY("max_dim", a);
    return extreme_dim(0, a, dim, keepdim, values, indices);
}

mp_status mp_op_min_dim(mp_tensor *a, int64_t dim, int keepdim, mp_tensor **values,
                        mp_tensor **indices)
{
    MP_HOST_ONLY("min_dim", a);
    return extreme_dim(1, a, dim, keepdim, values, indices);
}

/* max() / min() backward, as torch's evenly_distribute_backward: the gradient is shared
 * equally by every element equal to the result (every NaN when the result is NaN). */
static mp_status max_all_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *v = mp_node_saved(n, 1);
    if (!x || !v)
        return MP_ERR_RUNTIME;
    float m = (float)mp_load_f64(v->dtype, mp_tensor_data(v));
    float g = (float)mp_load_f64(gout[0]->dtype, mp_tensor_data(gout[0]));
    mp_status st = mp_tensor_cast(x, MP_DTYPE_FLOAT32, &gin[0]);    /* a fresh copy */
    if (st != MP_OK)
        return st;
    float *p = mp_tensor_data(gin[0]);
    int64_t numel = mp_tensor_numel(x), count = 0;
    int nan = m != m;
    for (int64_t i = 0; i < numel; i++)
        count += nan ? p[i] != p[i] : p[i] == m;
    float share = g / (float)count;
    for (int64_t i = 0; i < numel; i++)
        p[i] = (nan ? p[i] != p[i] : p[i] == m) ? share : 0.0f;
    return MP_OK;
}

static mp_status extreme_all(int is_min, mp_tensor *a, mp_tensor **out)
{
    *out = NULL;
    if (mp_tensor_numel(a) == 0)
        return mp_error(MP_ERR_RUNTIME, "%s(): Expected reduction dim to be specified for "
                        "input.numel() == 0. Specify the reduction dim with the 'dim' "
                        "argument.", is_min ? "min" : "max");
    mp_tensor *row = NULL;
    int64_t idx;
    mp_status st = flat_row(a, &row);
    if (st == MP_OK)
        st = mp_tensor_empty(NULL, 0, a->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        st = scan_rows(row, 1, row->shape[0], is_min, &idx, mp_tensor_data(*out));
    mp_tensor_decref(row);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(is_min ? "MinBackward1" : "MaxBackward1", max_all_backward,
                                &a, 1, out, 1, &node);
    if (st == MP_OK && node && (st = mp_node_save(node, 0, a)) == MP_OK)
        st = mp_node_save(node, 1, *out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_max_all(mp_tensor *a, mp_tensor **out)
{
    MP_HOST_ONLY("max_all", a);
    return extreme_all(0, a, out);
}

mp_status mp_op_min_all(mp_tensor *a, mp_tensor **out)
{
    MP_HOST_ONLY("min_all", a);
    return extreme_all(1, a, out);
}

static mp_status arg_extreme(int is_min, mp_tensor *a, int has_dim, int64_t dim, int keepdim,
                             mp_tensor **out)
{
    const char *name = is_min ? "argmin" : "argmax";
    *out = NULL;
    if (has_dim) {
        int d;
        mp_status st = mp_wrap_dim(dim, a->ndim, &d);
        return st == MP_OK ? dim_scan(name, a, a->ndim ? d : 0, keepdim, is_min, NULL, out)
                           : st;
    }
    if (mp_tensor_numel(a) == 0)
        return mp_error(MP_ERR_INDEX, "%s(): Expected reduction dim to be specified for "
                        "input.numel() == 0.", name);
    int64_t ones[MP_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++)
        ones[d] = 1;
    mp_tensor *row = NULL;
    mp_status st = flat_row(a, &row);
    if (st == MP_OK)
        st = mp_tensor_empty(ones, keepdim ? a->ndim : 0, MP_DTYPE_INT64, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        st = scan_rows(row, 1, row->shape[0], is_min, mp_tensor_data(*out), NULL);
    mp_tensor_decref(row);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_argmax(mp_tensor *a, int has_dim, int64_t dim, int keepdim, mp_tensor **out)
{
    MP_HOST_ONLY("argmax", a);
    return arg_extreme(0, a, has_dim, dim, keepdim, out);
}

mp_status mp_op_argmin(mp_tensor *a, int has_dim, int64_t dim, int keepdim, mp_tensor **out)
{
    MP_HOST_ONLY("argmin", a);
    return arg_extreme(1, a, has_dim, dim, keepdim, out);
}
