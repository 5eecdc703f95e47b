/* ops_unary.c - one-input pointwise ops (neg, relu, gelu, gelu-tanh, silu, sigmoid, tanh, exp,
 * log, sqrt, rsqrt, abs) and their backward. The transcendental ones (and the derivatives of
 * gelu, gelu-tanh, silu) run on the CPU's vector math kernels (cpu/vmath.h), which give the
 * same bits on every ISA level; the rest is per-element math from csrc/shared/mp_math.h. The
 * backward multiplies the incoming gradient by the derivative at the saved input (or output,
 * where that is cheaper: sigmoid, tanh, exp, sqrt, rsqrt). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../cpu/dispatch.h"
#include "../shared/mp_math.h"
#include "elementwise.h"
#include "ops.h"

#define NO_VM -1

static const struct {
    const char *name, *bw_name;
    int float_only;      /* integer inputs give float32 results */
    int save_output;     /* the derivative is a function of the output */
    int vm, vm_grad;     /* vector kernels (mp_vm_map_kind) replacing the loops of fwd_map /
                            bwd_map, or NO_VM */
} ops[MP_UN_COUNT] = {
    [MP_UN_NEG] = {"neg", "NegBackward0", 0, 0, NO_VM, NO_VM},
    [MP_UN_RELU] = {"relu", "ReluBackward0", 0, 1, NO_VM, NO_VM},   /* output: as torch */
    [MP_UN_GELU] = {"gelu", "GeluBackward0", 1, 0, MP_VM_GELU, MP_VM_GELU_GRAD},
    [MP_UN_GELU_TANH] = {"gelu", "GeluBackward0", 1, 0, MP_VM_GELU_TANH,
                         MP_VM_GELU_TANH_GRAD},
    [MP_UN_SILU] = {"silu", "SiluBackward0", 1, 0, MP_VM_SILU, MP_VM_SILU_GRAD},
    [MP_UN_SIGMOID] = {"sigmoid", "SigmoidBackward0", 1, 1, MP_VM_SIGMOID, NO_VM},
    [MP_UN_TANH] = {"tanh", "TanhBackward0", 1, 1, MP_VM_TANH, NO_VM},
    [MP_UN_EXP] = {"exp", "ExpBackward0", 1, 1, MP_VM_EXP, NO_VM},
    [MP_UN_LOG] = {"log", "LogBackward0", 1, 0, MP_VM_LOG, NO_VM},
    [MP_UN_SQRT] = {"sqrt", "SqrtBackward0", 1, 1, NO_VM, NO_VM},
    [MP_UN_RSQRT] = {"rsqrt", "RsqrtBackward0", 1, 1, NO_VM, NO_VM},
    [MP_UN_ABS] = {"abs", "AbsBackward0", 0, 0, NO_VM, NO_VM},
};

/* Each op's loop is written out with its per-element math inline, so the compiler vectorises
 * it: a call through a function pointer per element (and a branch on the sign, mispredicted
 * half the time) made ReLU ~3 ns/element, a quarter of a small MLP's step. */

/* +0 where cond holds, else value, as a bit mask: no branch. ReLU is zero_if(x < 0, x) (NaN
 * and -0 pass, as torch's clamp_min), its backward zero_if(x <= 0, grad) (torch's
 * threshold_backward: 0 there even when the gradient is inf or NaN). */
static inline float zero_if(int cond, float value)
{
    uint32_t bits, keep = (uint32_t)cond - 1u;
    memcpy(&bits, &value, sizeof bits);
    bits &= keep;
    memcpy(&value, &bits, sizeof value);
    return value;
}

#define MAP_LOOP(expr)                                                                       \
    do {                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                    \
            float x = in[0][i];                                                              \
            out[i] = (expr);                                                                 \
        }                                                                                    \
    } while (0)

static void fwd_map(const float *const *in, float *out, int64_t n, const double *args)
{
    int op = (int)args[0];
    if (ops[op].vm != NO_VM) {
        mp_cpu()->vm.map[ops[op].vm](in[0], out, (size_t)n);
        return;
    }
    switch (op) {                    /* every op without a vector kernel */
    case MP_UN_RELU: MAP_LOOP(zero_if(x < 0.0f, x)); break;
    case MP_UN_NEG: MAP_LOOP(-x); break;
    case MP_UN_ABS: MAP_LOOP(fabsf(x)); break;
    case MP_UN_SQRT: MAP_LOOP(sqrtf(x)); break;
    case MP_UN_RSQRT: MAP_LOOP(1.0f / sqrtf(x)); break;
    default: break;
    }
}

static void fwd_map64(const double *const *in, double *out, int64_t n, const double *args)
{
    int op = (int)args[0];
    for (int64_t i = 0; i < n; i++) {
        double x = in[0][i];
        out[i] = op == MP_UN_NEG ? -x : op == MP_UN_ABS ? fabs(x) : (x > 0 ? x : 0);
    }
}

/* derivative of op at v (v is the input, or the output when save_output); ReLU's backward is
 * not a product (bwd_map) */
static inline float deriv(int op, float v)
{
    switch (op) {
    case MP_UN_NEG: return -1.0f;
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

#define GRAD_LOOP(expr)                                                                      \
    do {                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                    \
            float v = vs[i];                                                                 \
            out[i] = g[i] * (expr);                                                          \
        }                                                                                    \
    } while (0)

static void bwd_map(const float *const *in, float *out, int64_t n, const double *args)
{
    int op = (int)args[0];
    const float *g = in[0], *vs = in[1];
    if (ops[op].vm_grad != NO_VM && out != g) {     /* out is a fresh tensor or a buffer */
        mp_cpu()->vm.map[ops[op].vm_grad](vs, out, (size_t)n);
        for (int64_t i = 0; i < n; i++)
            out[i] = g[i] * out[i];
        return;
    }
    if (op == MP_UN_RELU) {
        for (int64_t i = 0; i < n; i++)
            out[i] = zero_if(vs[i] <= 0.0f, g[i]);
        return;
    }
    switch (op) {       /* a loop per op with a constant op, so deriv folds away: no switch
                           per element (the vector-kernel ops get here only when out is g) */
    case MP_UN_SIGMOID: GRAD_LOOP(deriv(MP_UN_SIGMOID, v)); break;
    case MP_UN_TANH: GRAD_LOOP(deriv(MP_UN_TANH, v)); break;
    case MP_UN_EXP: GRAD_LOOP(deriv(MP_UN_EXP, v)); break;
    default: GRAD_LOOP(deriv(op, v)); break;
    }
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
