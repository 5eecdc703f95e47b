/* ops_math.c - remainder (Python's %: the result takes the divisor's sign) and fmod (C's:
 * the dividend's sign), tensor or wrapped-scalar on either side, in torch's promoted dtype:
 * floats in fp32 with the operands rounded to the common dtype first, int64 and uint8 exactly
 * (a uint8 op wraps a Python int or 0-d int64 operand modulo 256 first, as torch; a zero
 * divisor is torch's "ZeroDivisionError" RuntimeError); and round(decimals=) on floats.
 * Backward: d/da = g, d/db = -g * floor(a / b) (remainder) or -g * trunc(a / b) (fmod);
 * round's gradient is zero. */
#include <math.h>
#include <string.h>

#include "../chunk.h"
#include "../backend.h"
#include "../elementwise.h"
#include "../iter.h"
#include "ops.h"
#include "ops_compare.h"
#include "../rows.h"

#define MATH_GRAIN (1 << 15)

typedef struct {
    int is_fmod, is_float;
    mp_dtype dt, in_dt[2];
    int *zero_div;          /* set by any thread that met an integer zero divisor */
} rem_ctx;

static inline float rem_f32(float a, float b, int is_fmod)
{
    float m = fmodf(a, b);
    if (!is_fmod && m != 0.0f && ((b < 0.0f) != (m < 0.0f)))
        m += b;
    return m;
}

static inline int64_t rem_i64(int64_t a, int64_t b, int is_fmod)
{
    if (b == -1)            /* INT64_MIN % -1 traps on x86; the answer is 0 */
        return 0;
    int64_t m = a % b;
    if (!is_fmod && m != 0 && ((m < 0) != (b < 0)))
        m += b;
    return m;
}

static void rem_chunk_int(const rem_ctx *c, const char *pa, const char *pb, int64_t sa,
                          int64_t sb, char *po, int64_t so, int64_t m)
{
    int64_t ba[MP_CHUNK], bb[MP_CHUNK], r[MP_CHUNK];
    const int64_t *x = mp_chunk_i64_as(pa, sa, c->in_dt[0], c->dt, m, ba);
    const int64_t *y = mp_chunk_i64_as(pb, sb, c->in_dt[1], c->dt, m, bb);
    int zero = 0;
    for (int64_t i = 0; i < m; i++) {
        zero |= y[i] == 0;
        r[i] = y[i] == 0 ? 0 : rem_i64(x[i], y[i], c->is_fmod);
    }
    if (zero)
        __atomic_store_n(c->zero_div, 1, __ATOMIC_RELAXED);
    mp_chunk_store_i64(po, so, c->dt, r, m);
}

static void rem_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const rem_ctx *c = vctx;
    int64_t sa = (int64_t)mp_dtype_size(c->in_dt[0]), sb = (int64_t)mp_dtype_size(c->in_dt[1]);
    int64_t so = (int64_t)mp_dtype_size(c->dt);
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        const char *pa = ptrs[1] + i0 * strides[1] * sa, *pb = ptrs[2] + i0 * strides[2] * sb;
        char *po = ptrs[0] + i0 * strides[0] * so;
        if (!c->is_float) {
            rem_chunk_int(c, pa, pb, strides[1], strides[2], po, strides[0], m);
            continue;
        }
        float ba[MP_CHUNK], bb[MP_CHUNK], r[MP_CHUNK];
        const float *x = mp_chunk_f32(pa, strides[1], c->in_dt[0], c->dt, m, ba);
        const float *y = mp_chunk_f32(pb, strides[2], c->in_dt[1], c->dt, m, bb);
        for (int64_t i = 0; i < m; i++)
            r[i] = rem_f32(x[i], y[i], c->is_fmod);
        mp_chunk_store_f32(po, strides[0], c->dt, r, m);
    }
}

static mp_status rem_compute(int is_fmod, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    const char *name = is_fmod ? "fmod" : "remainder";
    mp_tensor *in[2] = {a, b}, *ex[2];
    mp_dtype dt = mp_result_type(in, 2);
    if (dt == MP_DTYPE_BOOL)
        return mp_error(MP_ERR_NOT_IMPLEMENTED, "\"%s_cpu\" not implemented for 'Bool'", name);
    int64_t shape[MP_MAX_DIMS];
    int nd, zero_div = 0;
    mp_status st = mp_broadcast_all(in, 2, shape, &nd, ex, name);
    if (st != MP_OK)
        return st;
    rem_ctx c = {is_fmod, mp_dtype_is_float(dt), dt, {a->dtype, b->dtype}, &zero_div};
    st = mp_tensor_empty(shape, nd, dt, MP_DEVICE_CPU, out);
    if (st == MP_OK) {
        mp_tensor *ops[3] = {*out, ex[0], ex[1]};
        mp_iter it;
        mp_iter_init(&it, ops, 3);
        mp_iter_run_parallel(&it, rem_run, &c, MATH_GRAIN);
        if (zero_div) {
            mp_tensor_decref(*out);
            *out = NULL;
            st = mp_error(MP_ERR_RUNTIME, "ZeroDivisionError");
        }
    }
    mp_decref_all(ex, 2);
    return st;
}

/* in: g, a, b -> -g * q, q = floor(a / b) (remainder) or trunc(a / b) (fmod); the floor
 * quotient is taken from fmod so that a = q * b + remainder holds where a / b rounds up */
static void f_rem_grad_b(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    const float *in1_ = in[1];
    const float *in2_ = in[2];
    int is_fmod = args[0] != 0.0;
    for (int64_t i = 0; i < n; i++) {
        float a = in1_[i], b = in2_[i], q;
        if (is_fmod || b == 0.0f || !isfinite(a) || !isfinite(b)) {
            q = is_fmod ? truncf(a / b) : floorf(a / b);
        } else {
            float m = fmodf(a, b), d = (a - m) / b;
            if (m != 0.0f && ((b < 0.0f) != (m < 0.0f)))
                d -= 1.0f;
            q = floorf(d);
            if (d - q > 0.5f)
                q += 1.0f;
        }
        out[i] = -in0_[i] * q;
    }
}

static mp_status rem_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *a = mp_node_saved(n, 0), *b = mp_node_saved(n, 1), *g = gout[0];
    if (!a || !b)
        return MP_ERR_RUNTIME;
    int nd;
    const int64_t *shape;
    mp_status st = MP_OK;
    if (n->next[0].node) {
        shape = mp_node_in_shape(n, 0, &nd);
        st = mp_sum_to_shape(g, shape, nd, &gin[0]);
    }
    if (st != MP_OK || !n->next[1].node)
        return st;
    mp_tensor *in[3] = {g, a, b}, *ex[3], *t = NULL;
    int64_t full[MP_MAX_DIMS];
    if ((st = mp_broadcast_all(in, 3, full, &nd, ex, "remainder backward")) != MP_OK)
        return st;
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    if ((st = mp_tensor_empty(full, nd, dt, MP_DEVICE_CPU, &t)) == MP_OK &&
        (st = mp_map(t, ex, 3, f_rem_grad_b, n->fargs)) == MP_OK) {
        shape = mp_node_in_shape(n, 1, &nd);
        st = mp_sum_to_shape(t, shape, nd, &gin[1]);
    }
    mp_tensor_decref(t);
    mp_decref_all(ex, 3);
    return st;
}

mp_status mp_op_remainder(int is_fmod, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_HOST_ONLY("remainder", a, b);
    mp_status st = rem_compute(is_fmod, a, b, out);
    if (st != MP_OK)
        return st;
    /* torch: Backward0 for a Scalar divisor, Backward1 for a Tensor one */
    static const char *const names[2][2] = {{"RemainderBackward1", "RemainderBackward0"},
                                            {"FmodBackward1", "FmodBackward0"}};
    mp_tensor *ins[2] = {a, b};
    mp_node *node = NULL;
    st = mp_autograd_record(names[!!is_fmod][b->wrapped_number != 0], rem_backward, ins, 2,
                            out, 1, &node);
    if (st == MP_OK && node) {
        node->fargs[0] = is_fmod ? 1.0 : 0.0;
        if ((st = mp_node_save(node, 0, a)) == MP_OK)
            st = mp_node_save(node, 1, b);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_remainder_(int is_fmod, mp_tensor *a, mp_tensor *b)
{
    MP_HOST_ONLY("remainder_", a, b);
    const char *name = is_fmod ? "fmod_" : "remainder_";
    mp_tensor *ins[2] = {a, b}, *res = NULL;
    mp_status st = mp_check_inplace(a, name);
    if (st == MP_OK && (st = mp_check_result_cast(mp_result_type(ins, 2), a->dtype)) == MP_OK &&
        (st = mp_op_remainder(is_fmod, a, b, &res)) == MP_OK)
        st = mp_inplace_commit(a, res, name);
    mp_tensor_decref(res);
    return st;
}

/* ---- round(decimals=) ---- */

/* args: decimals. As torch: x * 10^d rounded to even, / 10^d (d < 0: / 10^-d, * 10^-d),
 * in fp32 */
static void f_round_dec(const float *const *in, float *out, int64_t n, const double *args)
{
    const float *in0_ = in[0];
    int neg = args[0] < 0;
    float p = (float)pow(10.0, neg ? -args[0] : args[0]);
    for (int64_t i = 0; i < n; i++)
        out[i] = neg ? nearbyintf(in0_[i] / p) * p : nearbyintf(in0_[i] * p) / p;
}

static mp_status zero_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    (void)n;
    mp_tensor *g = gout[0];
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    return mp_tensor_full_on(g->shape, g->ndim, dt, 0.0, g->storage->device, &gin[0]);
}

mp_status mp_op_round_decimals(mp_tensor *a, int64_t decimals, mp_tensor **out)
{
    MP_HOST_ONLY("round_decimals", a);
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                        decimals ? "round_cpu" : "round_vml_cpu",
                        mp_dtype_torch_name(a->dtype));
    mp_status st = mp_tensor_empty(a->shape, a->ndim, a->dtype, MP_DEVICE_CPU, out);
    if (st != MP_OK)
        return st;
    double args[1] = {(double)decimals};
    mp_node *node = NULL;
    if ((st = mp_map(*out, &a, 1, f_round_dec, args)) == MP_OK)
        st = mp_autograd_record("RoundBackward1", zero_backward, &a, 1, out, 1, &node);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
