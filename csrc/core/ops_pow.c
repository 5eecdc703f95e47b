/* ops_pow.c - pow(a, b) for tensor or wrapped-scalar operands, with torch's backward:
 * d/da = b * a^(b-1) (0 where b == 0), d/db = a^b * log(a) (0 where a == 0 and b >= 0). */
#include <math.h>

#include "elementwise.h"
#include "ops.h"

static void f_pow(const float *const *in, float *out, int64_t n, const double *args)
{
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = powf(in[0][i], in[1][i]);
}

static void d_pow(const double *const *in, double *out, int64_t n, const double *args)
{
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = pow(in[0][i], in[1][i]);
}

/* in: g, a, b -> g * b * a^(b-1) */
static void f_grad_base(const float *const *in, float *out, int64_t n, const double *args)
{
    (void)args;
    for (int64_t i = 0; i < n; i++) {
        float b = in[2][i];
        out[i] = b == 0.0f ? 0.0f : in[0][i] * b * powf(in[1][i], b - 1.0f);
    }
}

/* in: g, a, b -> g * a^b * log(a) */
static void f_grad_exp(const float *const *in, float *out, int64_t n, const double *args)
{
    (void)args;
    for (int64_t i = 0; i < n; i++) {
        float a = in[1][i], b = in[2][i];
        out[i] = (a == 0.0f && b >= 0.0f) ? 0.0f : in[0][i] * powf(a, b) * logf(a);
    }
}

static mp_status grad_of(mp_node *n, int which, mp_tensor *g, mp_tensor *a, mp_tensor *b,
                         mp_tensor **out)
{
    mp_tensor *in[3] = {g, a, b}, *ex[3], *full;
    int64_t shape[MP_MAX_DIMS];
    int nd, ind;
    mp_status st = mp_broadcast_all(in, 3, shape, &nd, ex, "pow backward");
    if (st != MP_OK)
        return st;
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    st = mp_tensor_empty(shape, nd, dt, MP_DEVICE_CPU, &full);
    if (st == MP_OK) {
        st = mp_map(full, ex, 3, which == 0 ? f_grad_base : f_grad_exp, NULL);
        const int64_t *ishape = mp_node_in_shape(n, which, &ind);
        if (st == MP_OK)
            st = mp_sum_to_shape(full, ishape, ind, out);
        mp_tensor_decref(full);
    }
    mp_decref_all(ex, 3);
    return st;
}

static mp_status pow_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *a = mp_node_saved(n, 0), *b = mp_node_saved(n, 1);
    if (!a || !b)
        return MP_ERR_RUNTIME;
    mp_status st = MP_OK;
    if (n->next[0].node)
        st = grad_of(n, 0, gout[0], a, b, &gin[0]);
    if (st == MP_OK && n->next[1].node)
        st = grad_of(n, 1, gout[0], a, b, &gin[1]);
    return st;
}

mp_status mp_op_pow(mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    mp_tensor *in[2] = {a, b}, *ex[2];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_dtype dt = mp_result_type(in, 2);
    mp_status st = mp_broadcast_all(in, 2, shape, &nd, ex, "pow");
    if (st != MP_OK)
        return st;
    st = mp_tensor_empty(shape, nd, dt, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        st = mp_dtype_is_float(dt) ? mp_map(*out, ex, 2, f_pow, NULL)
                                   : mp_map_f64(*out, ex, 2, d_pow, NULL);
    mp_decref_all(ex, 2);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("PowBackward0", pow_backward, in, 2, out, 1, &node);
    if (st == MP_OK && node && (st = mp_node_save(node, 0, a)) == MP_OK)
        st = mp_node_save(node, 1, b);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
