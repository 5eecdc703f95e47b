/* ops_minmax.c - amax/amin over a set of dims, and the elementwise maximum/minimum/fmax/fmin,
 * with backward. amax/amin scan rows of reduce_rows.h (first NaN wins, values copied as bytes,
 * so exact in every dtype); their gradient is torch's: shared evenly among the elements equal
 * to the result (a NaN result spreads NaN over its slice, as torch's (g / count) * mask).
 * maximum/minimum map floats in fp32 (the result is one of the inputs, so exact) and compare
 * integers as integers; a tie sends half the gradient to each side, as torch. */
#include <stdlib.h>
#include <string.h>

#include "../copy.h"
#include "../backend.h"
#include "../elementwise.h"
#include "../iter.h"
#include "op_table.h"
#include "ops.h"
#include "../reduce_rows.h"
#include "../rows.h"

static uint32_t all_dims(int ndim)
{
    return ndim >= 32 ? ~0u : (1u << ndim) - 1u;
}

/* ---- amax / amin ---- */

/* values[r] = the extreme element of row r (bytes copied). */
static mp_status amax_rows(const mp_rowset *rs, int is_min, char *values)
{
    mp_dtype dt = rs->rows->dtype;
    size_t sz = mp_dtype_size(dt);
    const char *data = mp_tensor_data(rs->rows);
    float *buf = NULL;
    if (mp_dtype_is_float(dt) && !(buf = malloc(sizeof(float) * (size_t)(rs->len + 1))))
        return mp_error(MP_ERR_NOMEM, "out of memory for a row buffer");
    for (int64_t r = 0; r < rs->nrows; r++) {
        const char *p = data + (size_t)(r * rs->len) * sz;
        int64_t i = buf ? mp_row_extreme_f32(mp_row_load(dt, data, r, rs->len, buf), rs->len,
                                             is_min)
                        : mp_row_extreme_raw(dt, p, rs->len, is_min);
        memcpy(values + (size_t)r * sz, p + (size_t)i * sz, sz);
    }
    free(buf);
    return MP_OK;
}

/* grad_i = (g / count) * (x_i == result), per row */
static mp_status amax_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *res = mp_node_saved(n, 1);
    if (!x || !res)
        return MP_ERR_RUNTIME;
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
        const float *xp = mp_tensor_data(xr), *mp = mp_tensor_data(rv), *gp = mp_tensor_data(g);
        float *o = mp_tensor_data(grows);
        for (int64_t r = 0; r < rs.nrows; r++) {
            const float *row = xp + r * rs.len;
            int64_t count = 0;
            for (int64_t i = 0; i < rs.len; i++)
                count += row[i] == mp[r];
            float share = gp[r] / (float)count;
            for (int64_t i = 0; i < rs.len; i++)
                o[r * rs.len + i] = share * (row[i] == mp[r] ? 1.0f : 0.0f);
        }
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

static mp_status amax_check(const char *name, mp_tensor *a, uint32_t mask)
{
    if (mp_tensor_numel(a) == 0 && mask == 0)
        return mp_error(MP_ERR_RUNTIME, "%s(): Expected reduction dim to be specified for "
                        "input.numel() == 0. Specify the reduction dim with the 'dim' "
                        "argument.", name);
    return mp_check_reduced_nonempty(name, a, mask ? mask : all_dims(a->ndim));
}

mp_status mp_op_amax(mp_tensor *a, uint32_t dim_mask, int keepdim, int is_min,
                     mp_tensor **out)
{
    MP_HOST_ONLY("amax", a);
    const char *name = is_min ? "amin" : "amax";
    *out = NULL;
    dim_mask &= all_dims(a->ndim);
    mp_status st = amax_check(name, a, dim_mask);
    if (st != MP_OK)
        return st;
    uint32_t mask = dim_mask ? dim_mask : all_dims(a->ndim);
    mp_rowset rs = {0};
    st = mp_rowset_of(a, mask, keepdim, &rs);
    if (st == MP_OK)
        st = mp_tensor_empty(rs.oshape, rs.ond, a->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK && rs.len > 0)
        st = amax_rows(&rs, is_min, mp_tensor_data(*out));
    mp_rowset_release(&rs);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(is_min ? "AminBackward0" : "AmaxBackward0", amax_backward, &a,
                                1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        if ((st = mp_node_save(node, 0, a)) == MP_OK)
            st = mp_node_save(node, 1, *out);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- maximum / minimum / fmax / fmin ---- */

static void f_extreme(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *a = in[0], *b = in[1];
    switch ((int)args[0]) {
    case MP_EXT_MAXIMUM:     /* equal (-0.0 and 0.0 too): a, as torch */
        for (int64_t i = 0; i < n; i++)
            out[i] = a[i] != a[i] ? a[i] : b[i] != b[i] ? b[i] : a[i] < b[i] ? b[i] : a[i];
        break;
    case MP_EXT_MINIMUM:
        for (int64_t i = 0; i < n; i++)
            out[i] = a[i] != a[i] ? a[i] : b[i] != b[i] ? b[i] : a[i] > b[i] ? b[i] : a[i];
        break;
    case MP_EXT_FMAX:
        for (int64_t i = 0; i < n; i++)
            out[i] = a[i] != a[i] ? b[i] : b[i] != b[i] ? a[i] : a[i] < b[i] ? b[i] : a[i];
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            out[i] = a[i] != a[i] ? b[i] : b[i] != b[i] ? a[i] : a[i] > b[i] ? b[i] : a[i];
        break;
    }
}

typedef struct {
    int which;
    mp_dtype dt;
} ext_ctx;

/* integers (int64, bool): compared exactly; NaN-handling variants are the same here */
static void run_int(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const ext_ctx *c = vctx;
    int64_t sz = (int64_t)mp_dtype_size(c->dt);
    int is_max = c->which == MP_EXT_MAXIMUM || c->which == MP_EXT_FMAX;
    for (int64_t i = 0; i < n; i++) {
        const char *pa = ptrs[1] + i * strides[1] * sz, *pb = ptrs[2] + i * strides[2] * sz;
        char *po = ptrs[0] + i * strides[0] * sz;
        int64_t a = mp_load_i64(c->dt, pa), b = mp_load_i64(c->dt, pb);
        mp_scalar v = {0.0, is_max ? (a > b ? a : b) : (a < b ? a : b), 1};
        mp_store_scalar(c->dt, po, v);
    }
}

/* The integer path: both inputs converted to dt, broadcast, walked together. */
static mp_status extreme_int(int which, mp_tensor *a, mp_tensor *b, mp_dtype dt,
                             mp_tensor **out)
{
    mp_tensor *cast[2] = {NULL, NULL}, *in[2] = {a, b}, *ex[2] = {NULL, NULL};
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = MP_OK;
    for (int k = 0; k < 2 && st == MP_OK; k++)
        if (in[k]->dtype != dt && (st = mp_tensor_cast(in[k], dt, &cast[k])) == MP_OK)
            in[k] = cast[k];
    if (st == MP_OK)
        st = mp_broadcast_all(in, 2, shape, &nd, ex, which == MP_EXT_MAXIMUM ? "maximum"
                              : which == MP_EXT_MINIMUM ? "minimum"
                              : which == MP_EXT_FMAX ? "fmax" : "fmin");
    if (st == MP_OK)
        st = mp_tensor_empty(shape, nd, dt, MP_DEVICE_CPU, out);
    if (st == MP_OK) {
        mp_tensor *ops[3] = {*out, ex[0], ex[1]};
        mp_iter it;
        ext_ctx c = {which, dt};
        mp_iter_init(&it, ops, 3);
        mp_iter_run(&it, run_int, &c);
    }
    mp_decref_all(cast, 2);
    mp_decref_all(ex, 2);
    return st;
}

#define EXT_ROW(which) mp_op_info(MP_OP_MAXIMUM + (which))   /* the op table's rows */

static mp_status extreme_float(int which, mp_tensor *a, mp_tensor *b, mp_dtype dt,
                               mp_tensor **out)
{
    mp_tensor *in[2] = {a, b}, *ex[2];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(in, 2, shape, &nd, ex, EXT_ROW(which)->name);
    if (st != MP_OK)
        return st;
    double args[1] = {which};
    st = mp_tensor_empty(shape, nd, dt, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        st = mp_map(*out, ex, 2, f_extreme, args);
    mp_decref_all(ex, 2);
    return st;
}

/* in: g, a, b; args: which, side (0: a's gradient, 1: b's) */
static void f_extreme_grad(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    const float *in2_ = in[2];
    int which = (int)args[0], side = (int)args[1];
    for (int64_t i = 0; i < n; i++) {
        float g = in0_[i], a = in1_[i], b = in2_[i], w;
        if (which == MP_EXT_MAXIMUM || which == MP_EXT_MINIMUM) {
            int a_below = which == MP_EXT_MAXIMUM ? a < b : a > b;
            int b_below = which == MP_EXT_MAXIMUM ? b < a : b > a;
            w = a == b ? 0.5f : (side ? b_below : a_below) ? 0.0f : 1.0f;
        } else {
            int a_wins = (which == MP_EXT_FMAX ? a >= b : a <= b) || b != b;
            w = (side ? !a_wins : a_wins) ? 1.0f : 0.0f;
        }
        out[i] = w == 0.0f ? 0.0f : w == 1.0f ? g : g * 0.5f;
    }
}

static mp_status extreme_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *a = mp_node_saved(n, 0), *b = mp_node_saved(n, 1);
    if (!a || !b)
        return MP_ERR_RUNTIME;
    mp_tensor *in[3] = {gout[0], a, b}, *ex[3];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(in, 3, shape, &nd, ex, "maximum backward");
    if (st != MP_OK)
        return st;
    for (int side = 0; side < 2 && st == MP_OK; side++) {
        if (!n->next[side].node)
            continue;
        mp_tensor *t = NULL;
        double args[2] = {(double)n->iargs[0], side};
        int ind;
        const int64_t *ishape = mp_node_in_shape(n, side, &ind);
        if ((st = mp_tensor_empty(shape, nd, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &t)) == MP_OK &&
            (st = mp_map(t, ex, 3, f_extreme_grad, args)) == MP_OK)
            st = mp_sum_to_shape(t, ishape, ind, &gin[side]);
        mp_tensor_decref(t);
    }
    mp_decref_all(ex, 3);
    return st;
}

mp_status mp_op_maximum(int which, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_HOST_ONLY("maximum", a, b);
    mp_tensor *ts[2] = {a, b};
    mp_dtype dt = mp_result_type(ts, 2);
    *out = NULL;
    mp_status st = mp_dtype_is_float(dt) ? extreme_float(which, a, b, dt, out)
                                         : extreme_int(which, a, b, dt, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(EXT_ROW(which)->backward, extreme_backward, ts, 2, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = which;
        if ((st = mp_node_save(node, 0, a)) == MP_OK)
            st = mp_node_save(node, 1, b);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
