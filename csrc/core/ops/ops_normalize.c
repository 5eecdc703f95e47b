/* ops_normalize.c - F.normalize: x / max(||x||_p, eps) along one dim, with backward.
 * Each row along the dim (rows.h) is read as fp32; the p-norm is accumulated in double
 * (p = 0, 1, 2, inf, -inf special-cased, others through pow), the quotient is fp32 and the
 * output has the input dtype. The backward recomputes the row norm instead of saving it, and
 * follows torch's norm backward (zero where the norm is zero) and clamp_min's mask (the norm
 * gets no gradient where it is below eps). */
#include <math.h>

#include "../amp/autocast.h"
#include "ops.h"
#include "../backend.h"
#include "../rows.h"
#include "../view.h"

typedef struct {
    double p, eps;
} norm_ctx;

static double row_norm(const float *x, int64_t n, double p)
{
    double s = 0.0;
    if (isinf(p)) {
        s = n ? fabs((double)x[0]) : 0.0;
        for (int64_t i = 1; i < n; i++) {
            double a = fabs((double)x[i]);
            s = a != a || (p > 0 ? a > s : a < s) ? a : s;     /* NaN wins, as torch */
            if (s != s)
                break;
        }
        return s;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = fabs((double)x[i]);
        s += p == 0.0 ? (a != 0.0) : p == 1.0 ? a : p == 2.0 ? a * a : pow(a, p);
    }
    return p == 0.0 || p == 1.0 ? s : p == 2.0 ? sqrt(s) : pow(s, 1.0 / p);
}

static void normalize_row(const float *const *in, float *out, int64_t len, int64_t row,
                          void *vctx)
{
    const float *in0_ = in[0];
    (void)row;
    const norm_ctx *c = vctx;
    double n = row_norm(in[0], len, c->p);
    float d = (float)(n != n ? n : n > c->eps ? n : c->eps);
    for (int64_t i = 0; i < len; i++)
        out[i] = in0_[i] / d;
}

static float sign_f(float v)
{
    return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f;
}

/* d||x||_p / dx_i, torch's norm backward: 0 where the norm (or x_i, for p < 1) is 0; ties
 * share the gradient of an inf-norm evenly */
static float norm_deriv(float x, double n, double p, int64_t ties)
{
    if (n == 0.0 || p == 0.0)
        return 0.0f;
    if (isinf(p))
        return fabs((double)x) == n ? sign_f(x) / (float)ties : 0.0f;
    if (p == 1.0)
        return sign_f(x);
    if (p == 2.0)
        return (float)((double)x / n);
    if (x == 0.0f)
        return 0.0f;
    return (float)((double)sign_f(x) * pow(fabs((double)x), p - 1.0) / pow(n, p - 1.0));
}

/* y = x / d with d = max(n, eps): dx_i = g_i / d - [n >= eps] * (g . x) / d^2 * dn/dx_i */
static void normalize_grad_row(const float *const *in, float *out, int64_t len, int64_t row,
                               void *vctx)
{
    (void)row;
    const norm_ctx *c = vctx;
    const float *x = in[0], *g = in[1];
    double n = row_norm(x, len, c->p), gx = 0.0;
    int64_t ties = 0;
    float d = (float)(n != n ? n : n > c->eps ? n : c->eps);
    for (int64_t i = 0; i < len; i++) {
        gx += (double)g[i] * x[i];
        ties += isinf(c->p) && fabs((double)x[i]) == n;
    }
    float k = n >= c->eps ? (float)(gx / ((double)d * d)) : 0.0f;
    for (int64_t i = 0; i < len; i++)
        out[i] = g[i] / d - k * norm_deriv(x[i], n, c->p, ties);
}

static mp_status normalize_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0);
    if (!x)
        return MP_ERR_RUNTIME;
    norm_ctx c = {n->fargs[0], n->fargs[1]};
    mp_tensor *ins[2] = {x, gout[0]};
    return mp_rows_map(ins, 2, (int)n->iargs[0], MP_DTYPE_FLOAT32, normalize_grad_row, &c,
                       &gin[0]);
}

mp_status mp_op_normalize(mp_tensor *a, double p, int64_t dim, double eps, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_NORMALIZE, mp_op_normalize(ac_[0], p, dim, eps, out), a);
    MP_HOST_ONLY("normalize", a);
    *out = NULL;
    int d;
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "linalg.vector_norm: Expected a floating point or "
                        "complex tensor as input. Got %s", mp_dtype_torch_name(a->dtype));
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st != MP_OK)
        return st;
    if (a->ndim == 0)
        d = 0;
    norm_ctx c = {p, eps};
    st = mp_rows_map(&a, 1, d, a->dtype, normalize_row, &c, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("DivBackward0", normalize_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = d;
        node->fargs[0] = p;
        node->fargs[1] = eps;
        st = mp_node_save(node, 0, a);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
