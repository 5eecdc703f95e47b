/* ops_pow.c - pow(a, b) for tensor or wrapped-scalar operands, with torch's backward:
 * d/da = b * a^(b-1) (0 where b == 0), d/db = a^b * log(a) (0 where a == 0 and b >= 0).
 * Integer results (int64, uint8) are exact and wrap as torch's: square-and-multiply modulo
 * 2^64, a uint8 pow wraps a Python int or 0-d int64 operand modulo 256 first. */
#include <math.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../chunk.h"
#include "../copy.h"
#include "../backend.h"
#include "../elementwise.h"
#include "../iter.h"
#include "ops.h"

static void f_pow(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    (void)args;
    for (int64_t i = 0; i < n; i++)
        out[i] = powf(in0_[i], in1_[i]);
}

/* a^e for a Python-number exponent, args[0] = e: torch's special cases (2, 3, 0.5, -0.5,
 * -1, -2 as products, sqrt and divisions; the results torch gives, e.g. sqrt(-0) = -0) and
 * powf otherwise. The branch is outside the loops so that each one vectorises. */
static void f_pow_scalar(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *x = in[0];
    double e = args[0];
    float ef = (float)e;
    /* one loop per common exponent, with the shared body (shared/mp_pointwise.h), so each
       folds to its product or square root and vectorises */
    if (e == 2.0)
        for (int64_t i = 0; i < n; i++) out[i] = mp_pow_scalar(x[i], 2.0f);
    else if (e == 3.0)
        for (int64_t i = 0; i < n; i++) out[i] = mp_pow_scalar(x[i], 3.0f);
    else if (e == 0.5)
        for (int64_t i = 0; i < n; i++) out[i] = mp_pow_scalar(x[i], 0.5f);
    else if (e == -0.5)
        for (int64_t i = 0; i < n; i++) out[i] = mp_pow_scalar(x[i], -0.5f);
    else if (e == -1.0)
        for (int64_t i = 0; i < n; i++) out[i] = mp_pow_scalar(x[i], -1.0f);
    else if (e == -2.0)
        for (int64_t i = 0; i < n; i++) out[i] = mp_pow_scalar(x[i], -2.0f);
    else
        for (int64_t i = 0; i < n; i++) out[i] = powf(x[i], ef);
}

/* base^e wrapping modulo 2^64 as torch's integer pow; a negative e gives 1 for base 1,
 * +-1 for base -1 and 0 otherwise (the truncated value of 1 / base^-e) */
static int64_t ipow(int64_t base, int64_t e)
{
    if (e < 0)
        return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    for (uint64_t k = (uint64_t)e; k; k >>= 1, b *= b)
        if (k & 1)
            r *= b;
    return (int64_t)r;
}

typedef struct {
    mp_dtype dt, in_dt[2];
} ipow_ctx;

static void ipow_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const ipow_ctx *c = vctx;
    int64_t ba[MP_CHUNK], bb[MP_CHUNK], r[MP_CHUNK];
    int64_t sa = (int64_t)mp_dtype_size(c->in_dt[0]), sb = (int64_t)mp_dtype_size(c->in_dt[1]);
    int64_t so = (int64_t)mp_dtype_size(c->dt);
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        const int64_t *x = mp_chunk_i64_as(ptrs[1] + i0 * strides[1] * sa, strides[1],
                                           c->in_dt[0], c->dt, m, ba);
        const int64_t *y = mp_chunk_i64_as(ptrs[2] + i0 * strides[2] * sb, strides[2],
                                           c->in_dt[1], c->dt, m, bb);
        for (int64_t i = 0; i < m; i++)
            r[i] = ipow(x[i], y[i]);
        mp_chunk_store_i64(ptrs[0] + i0 * strides[0] * so, strides[0], c->dt, r, m);
    }
}

/* integer pow in dt (int64 or uint8; bool ** bool counts as integers, as before) */
static mp_status int_pow(mp_tensor *out, mp_tensor *const *ex)
{
    ipow_ctx c = {out->dtype, {ex[0]->dtype, ex[1]->dtype}};
    mp_tensor *ops[3] = {out, ex[0], ex[1]};
    return mp_run_iter(MP_KERNEL_INT_POW, ops, 3, ipow_run, &c, 1 << 17);
}

/* torch's checks on a Python-number exponent of an integer pow */
static mp_status check_exponent(mp_dtype dt, const mp_tensor *b)
{
    if (mp_dtype_is_float(dt) || !b->wrapped_number || mp_dtype_is_float(b->dtype))
        return MP_OK;
    mp_scalar e = mp_tensor_get_item(b, 0);
    if (e.i < 0)
        return mp_error(MP_ERR_RUNTIME, "Integers to negative integer powers are not allowed.");
    return mp_check_scalar_fits(dt, e);
}

static double scalar_value(const mp_tensor *b)
{
    mp_scalar v = mp_tensor_get_item(b, 0);
    return v.is_int ? (double)v.i : v.f;
}

/* in: g, a, b -> g * b * a^(b-1) */
static void f_grad_base(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    const float *in2_ = in[2];
    (void)args;
    for (int64_t i = 0; i < n; i++) {
        float b = in2_[i];
        out[i] = b == 0.0f ? 0.0f : in0_[i] * b * powf(in1_[i], b - 1.0f);
    }
}

/* in: g, a, b -> g * a^b * log(a) */
static void f_grad_exp(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    const float *in2_ = in[2];
    (void)args;
    for (int64_t i = 0; i < n; i++) {
        float a = in1_[i], b = in2_[i];
        out[i] = (a == 0.0f && b >= 0.0f) ? 0.0f : in0_[i] * powf(a, b) * logf(a);
    }
}

/* in: g, a; args[0] = b, a Python number -> g * (b * a^(b-1)), the power through
 * f_pow_scalar's cases as torch's backward computes it (so 3 gives g * (3 * (a * a))) */
static void f_grad_base_scalar(const float *const *in, float *out, int64_t n,
                               const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    double b = args[0], bm1 = b - 1.0;
    float bf = (float)b;
    if (b == 0.0) {
        for (int64_t i = 0; i < n; i++)
            out[i] = 0.0f;
        return;
    }
    if (bm1 == 1.0)
        for (int64_t i = 0; i < n; i++) out[i] = in0_[i] * (bf * in1_[i]);
    else if (bm1 == 0.0)
        for (int64_t i = 0; i < n; i++) out[i] = in0_[i] * bf;
    else {
        f_pow_scalar(&in[1], out, n, &bm1);
        for (int64_t i = 0; i < n; i++)
            out[i] = in0_[i] * (bf * out[i]);
    }
}

static mp_status grad_of(mp_node *n, int which, mp_tensor *g, mp_tensor *a, mp_tensor *b,
                         mp_tensor **out)
{
    if (which == 0 && b->wrapped_number && a->ndim == g->ndim &&
        !memcmp(a->shape, g->shape, sizeof(int64_t) * (size_t)a->ndim)) {
        double e = scalar_value(b);
        mp_tensor *ga[2] = {g, a};
        mp_dtype gdt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
        mp_status st = mp_tensor_empty(a->shape, a->ndim, gdt, g->storage->device, out);
        if (st == MP_OK)
            st = mp_map(*out, ga, 2, f_grad_base_scalar, &e);
        return st;
    }

    mp_tensor *in[3] = {g, a, b}, *ex[3], *full;
    int64_t shape[MP_MAX_DIMS];
    int nd, ind;
    mp_status st = mp_broadcast_all(in, 3, shape, &nd, ex, "pow backward");
    if (st != MP_OK)
        return st;
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    st = mp_tensor_empty(shape, nd, dt, g->storage->device, &full);
    if (st == MP_OK) {
        st = mp_map(full, ex, 3, which == 0 ? f_grad_base : f_grad_exp, NULL);
        const int64_t *ishape = mp_node_in_shape(n, which, &ind);
        if (st == MP_OK)
            st = mp_sum_to_shape(full, ishape, ind, out);
        mp_tensor_decref(full);
    }
    mp_decref_all(ex, 3);
    mp_device home = (which ? b : a)->storage->device;
    if (st == MP_OK && (*out)->storage->device != home) {   /* a CPU scalar beside CUDA ones */
        mp_tensor *moved = NULL;
        st = mp_tensor_empty((*out)->shape, (*out)->ndim, (*out)->dtype, home, &moved);
        if (st == MP_OK)
            st = mp_tensor_copy_(moved, *out);
        mp_tensor_decref(*out);
        *out = st == MP_OK ? moved : NULL;
        if (st != MP_OK)
            mp_tensor_decref(moved);
    }
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
    MP_AUTOCAST_ENTRY(MP_OP_POW, mp_op_pow(ac_[0], ac_[1], out), a, b);
    mp_tensor *in[2] = {a, b}, *ex[2];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_dtype dt = mp_result_type(in, 2);
    mp_status st = check_exponent(dt, b);
    if (st != MP_OK || (st = mp_broadcast_all(in, 2, shape, &nd, ex, "pow")) != MP_OK)
        return st;
    st = mp_tensor_empty(shape, nd, dt, mp_any_device(in, 2), out);
    double e = 0.0;
    if (st == MP_OK && mp_dtype_is_float(dt) && b->wrapped_number) {
        e = scalar_value(b);
        st = mp_map_with_op(*out, ex, 1, f_pow_scalar, MP_MAP_OP_POW_SCALAR, &e);
    } else if (st == MP_OK && mp_dtype_is_float(dt))
        st = mp_map(*out, ex, 2, f_pow, NULL);
    else if (st == MP_OK)
        st = int_pow(*out, ex);
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
