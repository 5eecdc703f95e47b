/* ops_clamp.c - clamp(a, min, max) and where(cond, a, b), the pointwise ops with a selection
 * in them, and their backward. clamp follows torch: min(max(x, lo), hi) (so hi wins when
 * lo > hi), NaN passes through, and the gradient flows where lo <= x <= hi (bounds included);
 * a uint8 input takes its bounds converted to uint8 (-1 is 255).
 * where promotes a and b as torch does (wrapped numbers lowest); its gradient is masked. */
#include <math.h>

#include "../chunk.h"
#include "../backend.h"
#include "../elementwise.h"
#include "matmul_core.h"
#include "ops.h"

/* args: has_min, min, has_max, max */
static void f_clamp(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *x = in[0];
    float lo = (float)args[1], hi = (float)args[3];
    int has_lo = args[0] != 0.0, has_hi = args[2] != 0.0;
    for (int64_t i = 0; i < n; i++)
        out[i] = mp_clamp(x[i], has_lo, lo, has_hi, hi);   /* shared/mp_pointwise.h */
}

static void d_clamp(const double *const *in, double *out, int64_t n, const double *args)
{
    const double *x = in[0];
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (args[0] != 0.0 && v < args[1])
            v = args[1];
        if (args[2] != 0.0 && v > args[3])
            v = args[3];
        out[i] = v;
    }
}

/* in: g, x -> g where the bounds hold (NaN inputs get no gradient) */
static void f_clamp_grad(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *g = in[0], *x = in[1];
    float lo = (float)args[1], hi = (float)args[3];
    int has_lo = args[0] != 0.0, has_hi = args[2] != 0.0;
    for (int64_t i = 0; i < n; i++) {
        int pass = (!has_lo || x[i] >= lo) && (!has_hi || x[i] <= hi);
        out[i] = pass ? g[i] : 0.0f;
    }
}

static mp_status clamp_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *g = gout[0];
    if (!x)
        return MP_ERR_RUNTIME;
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    mp_status st = mp_tensor_empty(g->shape, g->ndim, dt, g->storage->device, &gin[0]);
    if (st != MP_OK)
        return st;
    mp_tensor *ins[2] = {g, x};
    return mp_map(gin[0], ins, 2, f_clamp_grad, n->fargs);
}

/* A bound of a uint8 clamp (an integer: a float bound made the input float32 first) is
 * converted to uint8 as torch does: -1 is 255, beyond [-255, 255] is torch's error. */
static mp_status uint8_bound(mp_dtype dt, int has, double *v)
{
    if (dt != MP_DTYPE_UINT8 || !has)
        return MP_OK;
    int64_t i = *v >= -256.0 && *v <= 256.0 ? (int64_t)*v : 256;  /* no overflowing cast */
    mp_scalar s = {*v, i, 1};
    mp_status st = mp_check_scalar_fits(dt, s);
    if (st == MP_OK)
        *v = (double)(uint8_t)s.i;
    return st;
}

mp_status mp_op_clamp(mp_tensor *a, int has_min, double min, int has_max, double max,
                      mp_tensor **out)
{
    if (!has_min && !has_max)
        return mp_error(MP_ERR_RUNTIME, "clamp: At least one of 'min' or 'max' must not be "
                        "None");
    if (a->dtype == MP_DTYPE_BOOL)
        return mp_error(MP_ERR_TYPE, "clamp: \"clamp\" is not implemented for 'Bool'");
    mp_status st = uint8_bound(a->dtype, has_min, &min);
    if (st != MP_OK || (st = uint8_bound(a->dtype, has_max, &max)) != MP_OK)
        return st;
    double args[4] = {has_min ? 1.0 : 0.0, has_min ? min : 0.0, has_max ? 1.0 : 0.0,
                      has_max ? max : 0.0};
    st = mp_tensor_empty(a->shape, a->ndim, a->dtype, a->storage->device, out);
    if (st != MP_OK)
        return st;
    if (mp_dtype_is_float(a->dtype))
        st = mp_map_with_op(*out, &a, 1, f_clamp, MP_MAP_OP_CLAMP, args);
    else
        st = mp_map_f64(*out, &a, 1, d_clamp, args);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("ClampBackward1", clamp_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        for (int i = 0; i < 4; i++)
            node->fargs[i] = args[i];
        st = mp_node_save(node, 0, a);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- where ---- */

/* in: cond (as 0/1), a, b -> a where cond else b (the backward passes g and a zero). */
static void f_where(const float *const *in, float *out, int64_t n, const double *args)
{
    (void)args;
    const float *c = in[0], *a = in[1], *b = in[2];
    for (int64_t i = 0; i < n; i++)
        out[i] = c[i] != 0.0f ? a[i] : b[i];
}

static void d_where(const double *const *in, double *out, int64_t n, const double *args)
{
    const double *in0_ = in[0];
    const double *in1_ = in[1];
    const double *in2_ = in[2];
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] != 0.0 ? in1_[i] : in2_[i];
}

/* out (dtype dt) = where(cond, a, b) over the broadcast shape */
static mp_status select3(mp_tensor *cond, mp_tensor *a, mp_tensor *b, mp_dtype dt,
                         mp_tensor **out)
{
    mp_tensor *in[3] = {cond, a, b}, *ex[3];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(in, 3, shape, &nd, ex, "where");
    if (st != MP_OK)
        return st;
    st = mp_tensor_empty(shape, nd, dt, mp_any_device(in, 3), out);
    if (st == MP_OK)
        st = mp_dtype_is_float(dt) ? mp_map(*out, ex, 3, f_where, NULL)
                                   : mp_map_f64(*out, ex, 3, d_where, NULL);
    mp_decref_all(ex, 3);
    return st;
}

/* gradient of input i (1: a, 2: b): g where cond selects it, 0 elsewhere, reduced to its shape */
static mp_status where_grad(mp_node *n, int i, mp_tensor *cond, mp_tensor *g, mp_tensor **out)
{
    mp_tensor *zero = NULL, *full = NULL;
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    mp_status st = mp_scalar_tensor(0.0, dt, &zero);
    if (st == MP_OK)
        st = select3(cond, i == 1 ? g : zero, i == 1 ? zero : g, dt, &full);
    if (st == MP_OK) {
        int nd;
        const int64_t *shape = mp_node_in_shape(n, i, &nd);
        st = mp_sum_to_shape(full, shape, nd, out);
    }
    mp_tensor_decref(zero);
    mp_tensor_decref(full);
    return st;
}

static mp_status where_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *cond = mp_node_saved(n, 0);
    if (!cond)
        return MP_ERR_RUNTIME;
    mp_status st = MP_OK;
    for (int i = 1; i <= 2 && st == MP_OK; i++)
        if (n->next[i].node)
            st = where_grad(n, i, cond, gout[0], &gin[i]);
    return st;
}

mp_status mp_op_where(mp_tensor *cond, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    /* a uint8 condition is torch's deprecated byte mask (the bindings warn) */
    if (cond->dtype != MP_DTYPE_BOOL && cond->dtype != MP_DTYPE_UINT8)
        return mp_error(MP_ERR_RUNTIME, "where expected condition to be a boolean tensor, but "
                        "got a tensor with dtype %s", mp_dtype_name(cond->dtype));
    mp_tensor *ab[2] = {a, b};
    mp_dtype dt = mp_result_type(ab, 2);
    mp_status st = MP_OK;
    for (int i = 0; i < 2 && st == MP_OK; i++)     /* where(c, u8, 300): torch's error */
        if (ab[i]->wrapped_number)
            st = mp_check_scalar_fits(dt, mp_tensor_get_item(ab[i], 0));
    if (st == MP_OK)
        st = select3(cond, a, b, dt, out);
    if (st != MP_OK)
        return st;
    mp_tensor *ins[3] = {cond, a, b};
    mp_node *node = NULL;
    st = mp_autograd_record("WhereBackward0", where_backward, ins, 3, out, 1, &node);
    if (st == MP_OK && node)
        st = mp_node_save(node, 0, cond);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
