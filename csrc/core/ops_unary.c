/* ops_unary.c - one-input pointwise ops (neg, relu, gelu, gelu-tanh, silu, sigmoid, tanh, exp,
 * log, sqrt, rsqrt, abs) and their backward. The transcendental ones (and the derivatives of
 * gelu, gelu-tanh, silu) run on the CPU's vector math kernels (cpu/vmath.h), which give the
 * same bits on every ISA level; the rest is per-element math from csrc/shared/mp_math.h. The
 * backward multiplies the incoming gradient by the derivative at the saved input (or output,
 * where that is cheaper: sigmoid, tanh, exp, sqrt, rsqrt). */
#include <math.h>

#include "../cpu/dispatch.h"
#include "../shared/mp_math.h"
#include "elementwise.h"
#include "ops.h"

typedef float (*f1)(float);

static float neg_f(float x) { return -x; }
static float abs_f(float x) { return fabsf(x); }
static float sqrt_f(float x) { return sqrtf(x); }
static float rsqrt_f(float x) { return 1.0f / sqrtf(x); }

#define NO_VM -1

static const struct {
    const char *name, *bw_name;
    f1 fn;               /* per-element forward, when there is no vector kernel */
    int float_only;      /* integer inputs give float32 results */
    int save_output;     /* the derivative is a function of the output */
    int vm, vm_grad;     /* vector kernels (mp_vm_map_kind) replacing fn / deriv, or NO_VM */
} ops[MP_UN_COUNT] = {
    [MP_UN_NEG] = {"neg", "NegBackward0", neg_f, 0, 0, NO_VM, NO_VM},
    [MP_UN_RELU] = {"relu", "ReluBackward0", mp_relu, 0, 0, NO_VM, NO_VM},
    [MP_UN_GELU] = {"gelu", "GeluBackward0", NULL, 1, 0, MP_VM_GELU, MP_VM_GELU_GRAD},
    [MP_UN_GELU_TANH] = {"gelu", "GeluBackward0", NULL, 1, 0, MP_VM_GELU_TANH,
                         MP_VM_GELU_TANH_GRAD},
    [MP_UN_SILU] = {"silu", "SiluBackward0", NULL, 1, 0, MP_VM_SILU, MP_VM_SILU_GRAD},
    [MP_UN_SIGMOID] = {"sigmoid", "SigmoidBackward0", NULL, 1, 1, MP_VM_SIGMOID, NO_VM},
    [MP_UN_TANH] = {"tanh", "TanhBackward0", NULL, 1, 1, MP_VM_TANH, NO_VM},
    [MP_UN_EXP] = {"exp", "ExpBackward0", NULL, 1, 1, MP_VM_EXP, NO_VM},
    [MP_UN_LOG] = {"log", "LogBackward0", NULL, 1, 0, MP_VM_LOG, NO_VM},
    [MP_UN_SQRT] = {"sqrt", "SqrtBackward0", sqrt_f, 1, 1, NO_VM, NO_VM},
    [MP_UN_RSQRT] = {"rsqrt", "RsqrtBackward0", rsqrt_f, 1, 1, NO_VM, NO_VM},
    [MP_UN_ABS] = {"abs", "AbsBackward0", abs_f, 0, 0, NO_VM, NO_VM},
};

static void fwd_map(const float *const *in, float *out, int64_t n, const double *args)
{
    int op = (int)args[0];
    if (ops[op].vm != NO_VM) {
        mp_cpu()->vm.map[ops[op].vm](in[0], out, (size_t)n);
        return;
    }
    f1 fn = ops[op].fn;
    for (int64_t i = 0; i < n; i++)
        out[i] = fn(in[0][i]);
}

static void fwd_map64(const double *const *in, double *out, int64_t n, const double *args)
{
    int op = (int)args[0];
    for (int64_t i = 0; i < n; i++) {
        double x = in[0][i];
        out[i] = op == MP_UN_NEG ? -x : op == MP_UN_ABS ? fabs(x) : (x > 0 ? x : 0);
    }
}

/* derivative of op at v (v is the input, or the output when save_output) */
static float deriv(int op, float v)
{
    switch (op) {
    case MP_UN_NEG: return -1.0f;
    case MP_UN_RELU: return mp_relu_grad(v);
    case MP_UN_GELU: return mp_gelu_grad(v);
    case MP_UN_GELU_TANH: return mp_gelu_tanh_grad(v);
    case MP_UN_SILU: return mp_silu_grad(v);
    case MP_UN_SIGMOID: return v * (1.0f - v);
    case MP_UN_TANH: return 1.0f - v * v;
    case MP_UN_EXP: return v;
    case MP_UN_LOG: return 1.0f / v;
    case MP_UN_SQRT: return 0.5f / v;
    case MP_UN_RSQRT: return -0.5f * v * v * v;
    case MP_UN_ABS: return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f;
    default: return 0.0f;
    }
}

static void bwd_map(const float *const *in, float *out, int64_t n, const double *args)
{
    int op = (int)args[0];
    const float *g = in[0], *v = in[1];
    if (ops[op].vm_grad != NO_VM && out != g) {     /* out is a fresh tensor or a buffer */
        mp_cpu()->vm.map[ops[op].vm_grad](v, out, (size_t)n);
        for (int64_t i = 0; i < n; i++)
            out[i] = g[i] * out[i];
        return;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = g[i] * deriv(op, v[i]);
}

static mp_status unary_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *v = mp_node_saved(n, 0);
    if (!v)
        return MP_ERR_RUNTIME;
    mp_tensor *g = gout[0];
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    mp_status st = mp_tensor_empty(g->shape, g->ndim, dt, MP_DEVICE_CPU, &gin[0]);
    if (st != MP_OK)
        return st;
    mp_tensor *ins[2] = {g, v};
    double args[1] = {(double)n->iargs[0]};
    return mp_map(gin[0], ins, 2, bwd_map, args);
}

mp_status mp_op_unary(mp_unary_op op, mp_tensor *a, mp_tensor **out)
{
    if ((int)op < 0 || op >= MP_UN_COUNT)
        return mp_error(MP_ERR_VALUE, "unknown unary op %d", (int)op);
    int is_float = mp_dtype_is_float(a->dtype);
    if (!is_float && a->dtype == MP_DTYPE_BOOL && op == MP_UN_NEG)
        return mp_error(MP_ERR_TYPE, "Negation, the `-` operator, on a bool tensor is not "
                        "supported. If you are trying to invert a mask, use the `~` or "
                        "`logical_not()` operator instead.");
    mp_dtype dt = is_float || !ops[op].float_only ? a->dtype : MP_DTYPE_FLOAT32;
    mp_status st = mp_tensor_empty(a->shape, a->ndim, dt, MP_DEVICE_CPU, out);
    if (st != MP_OK)
        return st;
    double args[1] = {(double)op};
    if (mp_dtype_is_float(dt))
        st = mp_map(*out, &a, 1, fwd_map, args);
    else
        st = mp_map_f64(*out, &a, 1, fwd_map64, args);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(ops[op].bw_name, unary_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = op;
        st = mp_node_save(node, 0, ops[op].save_output ? *out : a);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
