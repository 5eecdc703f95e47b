/* mp_pointwise.h - the unary ops' and arithmetic's one-element bodies, by op id, shared by
 * the CPU loops (csrc/core/ops/ops_unary.c, ops_binary.c; a constant op folds the switch
 * away) and the GPU's map kernel (cuda/map.cu). The CPU's vector kernels for gelu, silu,
 * sigmoid, tanh, exp and log (csrc/cpu/vmath*) keep their accuracy contract, not these bits.
 * Also the map op ids a GPU backend selects its kernel by (mp_map_kernel.op). */
#ifndef MP_POINTWISE_H
#define MP_POINTWISE_H

#include <math.h>

#include "mp_defs.h"
#include "mp_half.h"
#include "mp_math.h"

typedef enum {
    MP_UN_NEG, MP_UN_RELU, MP_UN_GELU, MP_UN_GELU_TANH, MP_UN_SILU, MP_UN_SIGMOID, MP_UN_TANH,
    MP_UN_EXP, MP_UN_LOG, MP_UN_SQRT, MP_UN_RSQRT, MP_UN_ABS,
    MP_UN_SIN, MP_UN_COS, MP_UN_ERF, MP_UN_LOG1P, MP_UN_EXPM1, MP_UN_SIGN, MP_UN_FLOOR,
    MP_UN_CEIL, MP_UN_ROUND, MP_UN_TRUNC, MP_UN_SQUARE, MP_UN_RECIPROCAL, MP_UN_LOG2,
    MP_UN_LOG10, MP_UN_COUNT
} mp_unary_op;

/* What a map computes, for backends that cannot call the CPU's function (args as the CPU
 * function reads them). */
typedef enum {
    MP_MAP_OP_NONE = 0,      /* CPU-only: no GPU kernel */
    MP_MAP_OP_ADD,           /* in0 + args[0] * in1 (sub passes -alpha) */
    MP_MAP_OP_MUL,
    MP_MAP_OP_DIV,
    MP_MAP_OP_UNARY,         /* mp_unary(args[0], in0) */
    MP_MAP_OP_UNARY_GRAD,    /* mp_unary_grad(args[0], in0 = grad, in1 = input or output) */
    MP_MAP_OP_CLAMP,         /* mp_clamp(in0, has_lo = args[0], lo = args[1], has_hi = args[2],
                                hi = args[3]) */
    MP_MAP_OP_POW_SCALAR,    /* mp_pow_scalar(in0, e = args[0]) */
    MP_MAP_OP_DIV_SCALAR     /* in0 / (float)args[0]: mean and the sum/mean backward */
} mp_map_op;
#define MP_MAP_OP_ARGS 4     /* the most op constants a map with an op id reads */

MP_HD float mp_unary(int op, float x)
{
    switch (op) {
    case MP_UN_NEG: return -x;
    case MP_UN_RELU: return mp_relu(x);
    case MP_UN_GELU: return mp_gelu(x);
    case MP_UN_GELU_TANH: return mp_gelu_tanh(x);
    case MP_UN_SILU: return mp_silu(x);
    case MP_UN_SIGMOID: return mp_sigmoid(x);
    case MP_UN_TANH: return tanhf(x);
    case MP_UN_EXP: return expf(x);
    case MP_UN_LOG: return logf(x);
    case MP_UN_SQRT: return sqrtf(x);
    case MP_UN_RSQRT: return 1.0f / sqrtf(x);
    case MP_UN_ABS: return fabsf(x);
    case MP_UN_SIN: return sinf(x);
    case MP_UN_COS: return cosf(x);
    case MP_UN_ERF: return erff(x);
    case MP_UN_LOG1P: return log1pf(x);
    case MP_UN_EXPM1: return expm1f(x);
    case MP_UN_SIGN: return (float)((x > 0.0f) - (x < 0.0f));   /* NaN, -0: +0 */
    case MP_UN_FLOOR: return floorf(x);
    case MP_UN_CEIL: return ceilf(x);
    case MP_UN_ROUND: return nearbyintf(x);                     /* half to even */
    case MP_UN_TRUNC: return truncf(x);
    case MP_UN_SQUARE: return x * x;
    case MP_UN_RECIPROCAL: return 1.0f / x;
    case MP_UN_LOG2: return log2f(x);
    case MP_UN_LOG10: return log10f(x);
    default: return x;
    }
}

/* Derivative of op at v: the input, or the output for the ops that save it (relu, sigmoid,
 * tanh, exp, sqrt, rsqrt, expm1, reciprocal). ReLU's backward is not a product:
 * mp_unary_grad. */
MP_HD float mp_unary_deriv(int op, float v)
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
    case MP_UN_SIN: return cosf(v);
    case MP_UN_COS: return -sinf(v);
    case MP_UN_ERF: return 1.12837916709551257f * expf(-v * v);     /* 2 / sqrt(pi) */
    case MP_UN_LOG1P: return 1.0f / (1.0f + v);
    case MP_UN_EXPM1: return v + 1.0f;
    case MP_UN_SQUARE: return 2.0f * v;
    case MP_UN_RECIPROCAL: return -v * v;
    case MP_UN_LOG2: return 1.0f / (v * 0.693147180559945309f);
    case MP_UN_LOG10: return 1.0f / (v * 2.30258509299404568f);
    default: return 0.0f;
    }
}

/* The input gradient from the output gradient g: ReLU's is +0 where the saved output is
 * <= 0 (even when g is inf or NaN: torch's threshold_backward), g elsewhere. */
MP_HD float mp_unary_grad(int op, float g, float v)
{
    if (op == MP_UN_RELU)
        return v <= 0.0f ? 0.0f : g;
    return g * mp_unary_deriv(op, v);
}

/* torch.clamp: lo first, then hi (NaN passes); a missing bound is not applied. */
MP_HD float mp_clamp(float v, int has_lo, float lo, int has_hi, float hi)
{
    if (has_lo && v < lo)
        v = lo;
    if (has_hi && v > hi)
        v = hi;
    return v;
}

/* x ** e for a Python-number exponent: the common exponents as products and square roots
 * (torch's CPU kernel does the same), else powf. */
MP_HD float mp_pow_scalar(float x, float e)
{
    if (e == 2.0f)
        return x * x;
    if (e == 3.0f)
        return x * x * x;
    if (e == 0.5f)
        return sqrtf(x);
    if (e == -0.5f)
        return 1.0f / sqrtf(x);
    if (e == -1.0f)
        return 1.0f / x;
    if (e == -2.0f)
        return 1.0f / (x * x);
    return powf(x, e);
}

/* One element of a map with an op id: x its inputs, a its op constants (as float). */
MP_HD float mp_map_apply(int op, const float *x, const float *a)
{
    switch (op) {
    case MP_MAP_OP_UNARY: return mp_unary((int)a[0], x[0]);
    case MP_MAP_OP_UNARY_GRAD: return mp_unary_grad((int)a[0], x[0], x[1]);
    case MP_MAP_OP_CLAMP: return mp_clamp(x[0], a[0] != 0.0f, a[1], a[2] != 0.0f, a[3]);
    case MP_MAP_OP_POW_SCALAR: return mp_pow_scalar(x[0], a[0]);
    case MP_MAP_OP_DIV_SCALAR: return x[0] / a[0];
    case MP_MAP_OP_ADD: return a[0] == 1.0f ? x[0] + x[1] : x[0] + a[0] * x[1];
    case MP_MAP_OP_MUL: return x[0] * x[1];
    default: return x[0] / x[1];
    }
}

/* ---- pointwise losses of one difference d = input - target (ops_loss.c, cuda/loss.cu);
 * b is smooth_l1's beta or huber's delta (torch's CPU kernels: |d| < b selects the
 * quadratic piece) ---- */
enum { MP_LOSS_MSE = 0, MP_LOSS_L1 = 1, MP_LOSS_SMOOTH_L1 = 2, MP_LOSS_HUBER = 3 };

MP_HD float mp_loss_value(int kind, float d, float b)
{
    float z = fabsf(d);
    switch (kind) {
    case MP_LOSS_L1: return z;
    case MP_LOSS_SMOOTH_L1: return z < b ? 0.5f * d * d / b : z - 0.5f * b;
    case MP_LOSS_HUBER: return z < b ? 0.5f * d * d : b * (z - 0.5f * b);
    default: return d * d;
    }
}

/* d loss / d input; torch's backward kernels: the linear pieces from |d| >= b on; L1's is
 * sgn(d) with NaN giving 0, as torch's sgn. */
MP_HD float mp_loss_deriv(int kind, float d, float b)
{
    switch (kind) {
    case MP_LOSS_L1: return d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
    case MP_LOSS_SMOOTH_L1: return d <= -b ? -1.0f : d >= b ? 1.0f : d / b;
    case MP_LOSS_HUBER: return d <= -b ? -b : d >= b ? b : d;
    default: return 2.0f * d;
    }
}

#endif
