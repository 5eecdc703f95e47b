/* ops_binary.c - add, sub, mul, div (tensor or wrapped scalar operands, broadcasting, torch's
 * type promotion) with their backward, and the in-place forms. The pattern every pointwise op
 * follows: promote, broadcast, map in fp32, record. */
#include <math.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../chunk.h"
#include "../backend.h"
#include "../copy.h"
#include "../elementwise.h"
#include "op_table.h"
#include "ops.h"
#include "../rows.h"

static void f_add(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *a = in[0], *b = in[1];
    float alpha = (float)args[0];
    if (alpha == 1.0f)
        for (int64_t i = 0; i < n; i++)
            out[i] = a[i] + b[i];
    else
        for (int64_t i = 0; i < n; i++)
            out[i] = a[i] + alpha * b[i];
}

static void f_mul(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] * in1_[i];
}

static void f_div(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] / in1_[i];
}

static void d_add(const double *const *in, double *out, int64_t n, const double *args)
{
    const double *in0_ = in[0];
    const double *in1_ = in[1], alpha = args[0];
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] + alpha * in1_[i];
}

static void d_mul(const double *const *in, double *out, int64_t n, const double *args)
{
    const double *in0_ = in[0];
    const double *in1_ = in[1];
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = in0_[i] * in1_[i];
}

static mp_map_fn const fns[] = {f_add, f_add, f_mul, f_div};
static const int map_ops[] = {MP_MAP_OP_ADD, MP_MAP_OP_ADD, MP_MAP_OP_MUL, MP_MAP_OP_DIV};
static mp_map_f64_fn const fns64[] = {d_add, d_add, d_mul, NULL};
/* names and grad_fns: the op table's rows (MP_OP_ADD + MP_BIN_*) */
#define BIN_ROW(which) mp_op_info(MP_OP_ADD + (which))

/* Output dtype of a binary op: torch's result type; true division of integers gives float. */
static mp_dtype binary_dtype(int which, mp_tensor *a, mp_tensor *b)
{
    mp_tensor *ts[2] = {a, b};
    mp_dtype dt = mp_result_type(ts, 2);
    if (which == MP_BIN_DIV && !mp_dtype_is_float(dt))
        dt = MP_DTYPE_FLOAT32;
    if (which == MP_BIN_SUB && dt == MP_DTYPE_BOOL)
        dt = MP_DTYPE_INT64;     /* (refused by check_sub before it is computed) */
    return dt;
}

/* out = kernel(a, b) with broadcasting into a new tensor of dtype dt. */
static mp_status compute(int which, mp_tensor *a, mp_tensor *b, double alpha, mp_dtype dt,
                         mp_tensor **out)
{
    mp_tensor *in[2] = {a, b}, *ex[2];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(in, 2, shape, &nd, ex, BIN_ROW(which)->name);
    if (st != MP_OK)
        return st;
    st = mp_tensor_empty(shape, nd, dt, mp_any_device(in, 2), out);
    double args[1] = {which == MP_BIN_SUB ? -alpha : alpha};
    if (st == MP_OK) {
        if (!mp_dtype_is_float(dt) && fns64[which])
            st = mp_map_f64(*out, ex, 2, fns64[which], args);
        else
            st = mp_map_with_op(*out, ex, 2, fns[which], map_ops[which], args);
        if (st != MP_OK) {      /* operands on different devices */
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    mp_decref_all(ex, 2);
    return st;
}

/* grad of input i from g (in the output's shape): summed over broadcast dimensions. */
static mp_status reduce_grad(mp_node *n, int i, mp_tensor *g, mp_tensor **out)
{
    int nd;
    const int64_t *shape = mp_node_in_shape(n, i, &nd);
    return mp_sum_to_shape(g, shape, nd, out);
}

static mp_status add_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *g = gout[0];
    mp_status st = MP_OK;
    if (n->next[0].node)
        st = reduce_grad(n, 0, g, &gin[0]);
    if (st == MP_OK && n->next[1].node) {
        double alpha = n->fargs[0];
        mp_tensor *scaled = NULL, *s = NULL;
        if (alpha == 1.0) {
            mp_tensor_incref(scaled = g);
        } else if ((st = mp_scalar_tensor(alpha, MP_DTYPE_FLOAT32, &s)) == MP_OK) {
            st = mp_op_mul(g, s, &scaled);
        }
        mp_tensor_decref(s);
        if (st == MP_OK)
            st = reduce_grad(n, 1, scaled, &gin[1]);
        mp_tensor_decref(scaled);
    }
    return st;
}

/* mul and div save only what the wanted gradients read (a for b's, b for a's; div's b for
 * both): a tensor that is not needed is not kept alive, nor refused when written in place */
static mp_status mul_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *a = n->next[1].node ? mp_node_saved(n, 0) : NULL;
    mp_tensor *b = n->next[0].node ? mp_node_saved(n, 1) : NULL, *g = gout[0], *t = NULL;
    if ((n->next[1].node && !a) || (n->next[0].node && !b))
        return MP_ERR_RUNTIME;
    mp_status st = MP_OK;
    if (n->next[0].node && (st = mp_op_mul(g, b, &t)) == MP_OK) {
        st = reduce_grad(n, 0, t, &gin[0]);
        mp_tensor_decref(t);
        t = NULL;
    }
    if (st == MP_OK && n->next[1].node && (st = mp_op_mul(g, a, &t)) == MP_OK) {
        st = reduce_grad(n, 1, t, &gin[1]);
        mp_tensor_decref(t);
    }
    return st;
}

/* in: g, a, b -> -g * a / b^2, in fp32 with one rounding (not three chained ops) */
static void f_div_grad_b(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    const float *in2_ = in[2];
    (void)args;
    for (int64_t i = 0; i < n; i++) {
        float b = in2_[i];
        out[i] = -in0_[i] * in1_[i] / (b * b);
    }
}

/* d(a/b)/da = g/b; d(a/b)/db = -g*a/b^2 */
static mp_status div_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *a = n->next[1].node ? mp_node_saved(n, 0) : NULL, *b = mp_node_saved(n, 1);
    mp_tensor *g = gout[0], *t = NULL;
    if (!b || (n->next[1].node && !a))
        return MP_ERR_RUNTIME;
    mp_status st = MP_OK;
    if (n->next[0].node && (st = mp_op_div(g, b, &t)) == MP_OK) {
        st = reduce_grad(n, 0, t, &gin[0]);
        mp_tensor_decref(t);
        t = NULL;
    }
    if (st != MP_OK || !n->next[1].node)
        return st;
    mp_tensor *in[3] = {g, a, b}, *ex[3];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    if ((st = mp_broadcast_all(in, 3, shape, &nd, ex, "div backward")) != MP_OK)
        return st;
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    if ((st = mp_tensor_empty(shape, nd, dt, mp_any_device(in, 3), &t)) == MP_OK &&
        (st = mp_map(t, ex, 3, f_div_grad_b, NULL)) == MP_OK)
        st = reduce_grad(n, 1, t, &gin[1]);
    mp_tensor_decref(t);
    mp_decref_all(ex, 3);
    return st;
}

static mp_backward_fn const backwards[] = {add_backward, add_backward, mul_backward,
                                           div_backward};

/* torch's checks on alpha for an integer result: a whole number, within uint8's range there */
static mp_status check_alpha(mp_dtype dt, double alpha)
{
    if (mp_dtype_is_float(dt) || alpha == 1.0)
        return MP_OK;
    if (alpha != trunc(alpha))
        return mp_error(MP_ERR_RUNTIME, "For integral input tensors, argument alpha must not be "
                        "a floating point number.");
    mp_scalar s = {alpha, alpha >= -256.0 && alpha <= 256.0 ? (int64_t)alpha : 256, 1};
    return mp_check_scalar_fits(dt, s);
}

/* torch refuses a bool operand of subtraction (uint8 - mask included) */
static mp_status check_sub(int which, const mp_tensor *a, const mp_tensor *b)
{
    int na = a->dtype == MP_DTYPE_BOOL, nb = b->dtype == MP_DTYPE_BOOL;
    if (which != MP_BIN_SUB || (!na && !nb))
        return MP_OK;
    if (na && nb)
        return mp_error(MP_ERR_RUNTIME, "Subtraction, the `-` operator, with two bool tensors "
                        "is not supported. Use the `^` or `logical_xor()` operator instead.");
    return mp_error(MP_ERR_RUNTIME, "Subtraction, the `-` operator, with a bool tensor is not "
                    "supported. If you are trying to invert a mask, use the `~` or "
                    "`logical_not()` operator instead.");
}

static mp_status binary(int which, mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    mp_dtype dt = binary_dtype(which, a, b);
    mp_status st = check_sub(which, a, b);
    if (st == MP_OK)
        st = check_alpha(dt, alpha);
    if (st == MP_OK)
        st = compute(which, a, b, alpha, dt, out);
    if (st != MP_OK)
        return st;
    mp_tensor *ins[2] = {a, b};
    mp_node *node;
    st = mp_autograd_record(BIN_ROW(which)->backward, backwards[which], ins, 2, out, 1, &node);
    if (st == MP_OK && node) {
        node->fargs[0] = which == MP_BIN_SUB ? -alpha : alpha;
        /* add/sub need only shapes (recorded by the node); mul/div need the values */
        int grad_b = node->next[1].node != NULL;
        if (which >= MP_BIN_MUL && grad_b)
            st = mp_node_save(node, 0, a);
        if (st == MP_OK && (which == MP_BIN_DIV || (which == MP_BIN_MUL && node->next[0].node)))
            st = mp_node_save(node, 1, b);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_add(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    return binary(MP_BIN_ADD, a, b, alpha, out);
}

mp_status mp_op_sub(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    return binary(MP_BIN_SUB, a, b, alpha, out);
}

mp_status mp_op_mul(mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    return binary(MP_BIN_MUL, a, b, 1.0, out);
}

mp_status mp_op_div(mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    return binary(MP_BIN_DIV, a, b, 1.0, out);
}

mp_status mp_op_binary_(int which, mp_tensor *a, mp_tensor *b, double alpha)
{
    static const char *const inplace_names[] = {"add_", "sub_", "mul_", "div_", "pow_"};
    mp_status st = mp_check_inplace(a, inplace_names[which]);
    if (st != MP_OK)
        return st;
    mp_tensor *ab[2] = {a, b};
    mp_dtype dt = which == MP_BIN_POW ? mp_result_type(ab, 2) : binary_dtype(which, a, b);
    if ((st = mp_check_result_cast(dt, a->dtype)) != MP_OK)   /* also uint8 into bool */
        return st;
    mp_tensor *res = NULL;
    if (which == MP_BIN_POW) {
        mp_autocast_exclude();         /* pow_ is not autocast (torch lists pow only) */
        st = mp_op_pow(a, b, &res);
        mp_autocast_include();
    } else {
        st = binary(which, a, b, alpha, &res);
    }   /* records autograd; commit rebases a */
    if (st != MP_OK)
        return st;
    st = mp_inplace_commit(a, res, inplace_names[which]);
    mp_tensor_decref(res);
    return st;
}
