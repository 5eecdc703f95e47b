/* ops_unary.c - one-input pointwise ops and their backward: neg, relu, gelu, gelu-tanh,
 * silu, sigmoid, tanh, exp, log, sqrt, rsqrt, abs, and sin, cos, erf, log1p, expm1, sign,
 * floor, ceil, round, trunc, square, reciprocal, log2, log10. The transcendental ones of the
 * first group (and the derivatives of gelu, gelu-tanh, silu) run on the CPU's vector math
 * kernels (cpu/vmath.h), which give the same bits on every ISA level; the second group uses
 * libm's float functions per element. Integer inputs follow torch: float-only ops give
 * float32, gelu/silu refuse them, the others keep the dtype (int64, uint8 modulo 256; bool
 * squares to int64) and are computed exactly in int64. The backward multiplies
 * the incoming gradient by the derivative at the saved input (or output, where cheaper);
 * sign/floor/ceil/round/trunc have a zero gradient. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../../cpu/dispatch.h"
#include "../../cpu/parallel.h"
#include "../backend.h"
#include "../../shared/mp_kernel_args.h"
#include "../../shared/mp_math.h"
#include "../chunk.h"
#include "../iter.h"
#include "../elementwise.h"
#include "op_table.h"
#include "ops.h"
#include "../rows.h"

#define NO_VM -1

enum { INT_KEEP, INT_FLOAT, INT_NO_BOOL, INT_BOOL_TO_LONG, INT_REFUSE };

/* names and grad_fns are the op table's rows (MP_OP_NEG + op) */
#define UN_ROW(op) mp_op_info(MP_OP_NEG + (int)(op))

static const struct {
    int int_mode;        /* integer inputs: INT_FLOAT gives float32 results, INT_KEEP keeps
                            the dtype, INT_NO_BOOL refuses bool, INT_BOOL_TO_LONG: bool -> int64
                            (uint8 stays uint8), INT_REFUSE: no integer kernel (torch's) */
    int save_output;     /* the derivative is a function of the output */
    int zero_grad;       /* piecewise constant: the gradient is 0 */
    int vm, vm_grad;     /* vector kernels (mp_vm_map_kind) replacing the loops of fwd_map /
                            bwd_map, or NO_VM */
} ops[MP_UN_COUNT] = {
    [MP_UN_NEG] = {INT_KEEP, 0, 0, NO_VM, NO_VM},
    [MP_UN_RELU] = {INT_KEEP, 1, 0, NO_VM, NO_VM},   /* output: as torch */
    [MP_UN_GELU] = {INT_REFUSE, 0, 0, MP_VM_GELU, MP_VM_GELU_GRAD},
    [MP_UN_GELU_TANH] = {INT_REFUSE, 0, 0, MP_VM_GELU_TANH,
                         MP_VM_GELU_TANH_GRAD},
    [MP_UN_SILU] = {INT_REFUSE, 0, 0, MP_VM_SILU, MP_VM_SILU_GRAD},
    [MP_UN_SIGMOID] = {INT_FLOAT, 1, 0, MP_VM_SIGMOID, NO_VM},
    [MP_UN_TANH] = {INT_FLOAT, 1, 0, MP_VM_TANH, NO_VM},
    [MP_UN_EXP] = {INT_FLOAT, 1, 0, MP_VM_EXP, NO_VM},
    [MP_UN_LOG] = {INT_FLOAT, 0, 0, MP_VM_LOG, NO_VM},
    [MP_UN_SQRT] = {INT_FLOAT, 1, 0, NO_VM, NO_VM},
    [MP_UN_RSQRT] = {INT_FLOAT, 1, 0, NO_VM, NO_VM},
    [MP_UN_ABS] = {INT_KEEP, 0, 0, NO_VM, NO_VM},
    [MP_UN_SIN] = {INT_FLOAT, 0, 0, NO_VM, NO_VM},
    [MP_UN_COS] = {INT_FLOAT, 0, 0, NO_VM, NO_VM},
    [MP_UN_ERF] = {INT_FLOAT, 0, 0, NO_VM, NO_VM},
    [MP_UN_LOG1P] = {INT_FLOAT, 0, 0, NO_VM, NO_VM},
    [MP_UN_EXPM1] = {INT_FLOAT, 1, 0, NO_VM, NO_VM},
    [MP_UN_SIGN] = {INT_KEEP, 0, 1, NO_VM, NO_VM},
    [MP_UN_FLOOR] = {INT_NO_BOOL, 0, 1, NO_VM, NO_VM},
    [MP_UN_CEIL] = {INT_NO_BOOL, 0, 1, NO_VM, NO_VM},
    [MP_UN_ROUND] = {INT_NO_BOOL, 0, 1, NO_VM, NO_VM},
    [MP_UN_TRUNC] = {INT_NO_BOOL, 0, 1, NO_VM, NO_VM},
    [MP_UN_SQUARE] = {INT_BOOL_TO_LONG, 0, 0, NO_VM, NO_VM},
    [MP_UN_RECIPROCAL] = {INT_FLOAT, 1, 0, NO_VM, NO_VM},
    [MP_UN_LOG2] = {INT_FLOAT, 0, 0, NO_VM, NO_VM},
    [MP_UN_LOG10] = {INT_FLOAT, 0, 0, NO_VM, NO_VM},
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

/* in[0] is read once: the build's -fno-strict-aliasing lets a float store alias the pointer
 * array, so reading in[0][i] in the loop would reload in[0] after every store (no vectors) */
#define MAP_LOOP(expr)                                                                       \
    do {                                                                                     \
        const float *x0_ = in[0];                                                            \
        for (int64_t i = 0; i < n; i++) {                                                    \
            float x = x0_[i];                                                                \
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
    case MP_UN_RELU: MAP_LOOP(zero_if(x < 0.0f, x)); break;   /* mp_relu, as a mask */
    case MP_UN_NEG: MAP_LOOP(mp_unary(MP_UN_NEG, x)); break;
    case MP_UN_ABS: MAP_LOOP(mp_unary(MP_UN_ABS, x)); break;
    case MP_UN_SQRT: MAP_LOOP(mp_unary(MP_UN_SQRT, x)); break;
    case MP_UN_RSQRT: MAP_LOOP(mp_unary(MP_UN_RSQRT, x)); break;
    case MP_UN_SIN: MAP_LOOP(mp_unary(MP_UN_SIN, x)); break;
    case MP_UN_COS: MAP_LOOP(mp_unary(MP_UN_COS, x)); break;
    case MP_UN_ERF: MAP_LOOP(mp_unary(MP_UN_ERF, x)); break;
    case MP_UN_LOG1P: MAP_LOOP(mp_unary(MP_UN_LOG1P, x)); break;
    case MP_UN_EXPM1: MAP_LOOP(mp_unary(MP_UN_EXPM1, x)); break;
    case MP_UN_SIGN: MAP_LOOP(mp_unary(MP_UN_SIGN, x)); break;
    case MP_UN_FLOOR: MAP_LOOP(mp_unary(MP_UN_FLOOR, x)); break;
    case MP_UN_CEIL: MAP_LOOP(mp_unary(MP_UN_CEIL, x)); break;
    case MP_UN_ROUND: MAP_LOOP(mp_unary(MP_UN_ROUND, x)); break;
    case MP_UN_TRUNC: MAP_LOOP(mp_unary(MP_UN_TRUNC, x)); break;
    case MP_UN_SQUARE: MAP_LOOP(mp_unary(MP_UN_SQUARE, x)); break;
    case MP_UN_RECIPROCAL: MAP_LOOP(mp_unary(MP_UN_RECIPROCAL, x)); break;
    case MP_UN_LOG2: MAP_LOOP(mp_unary(MP_UN_LOG2, x)); break;
    case MP_UN_LOG10: MAP_LOOP(mp_unary(MP_UN_LOG10, x)); break;
    default: break;
    }
}

/* Integer inputs of the ops that keep an integer dtype, exactly in int64 (wrapping on
 * overflow, as torch); the output is int64 or bool. */
typedef struct {
    int op;
    mp_dtype in_dt, out_dt;
} int_ctx;

static inline int64_t int_apply(int op, int64_t x)
{
    uint64_t u = (uint64_t)x;
    switch (op) {
    case MP_UN_NEG: return (int64_t)(0u - u);
    case MP_UN_ABS: return x < 0 ? (int64_t)(0u - u) : x;
    case MP_UN_RELU: return x > 0 ? x : 0;
    case MP_UN_SIGN: return (x > 0) - (x < 0);
    case MP_UN_SQUARE: return (int64_t)(u * u);
    default: return x;              /* floor, ceil, round, trunc of an integer */
    }
}

static void int_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const int_ctx *c = vctx;
    int64_t buf[MP_CHUNK], r[MP_CHUNK];
    int64_t si = (int64_t)mp_dtype_size(c->in_dt), so = (int64_t)mp_dtype_size(c->out_dt);
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        const int64_t *x = mp_chunk_i64(ptrs[1] + i0 * strides[1] * si, strides[1], c->in_dt,
                                        m, buf);
        for (int64_t i = 0; i < m; i++)
            r[i] = int_apply(c->op, x[i]);
        mp_chunk_store_i64(ptrs[0] + i0 * strides[0] * so, strides[0], c->out_dt, r, m);
    }
}

static void int_map(int op, mp_tensor *a, mp_tensor *out)
{
    int_ctx c = {op, a->dtype, out->dtype};
    mp_tensor *its[2] = {out, a};
    mp_iter it;
    mp_iter_init(&it, its, 2);
    mp_iter_run_parallel(&it, int_run, &c, 1 << 17);
}

/* ---- ReLU on 16-bit floats (MP_KERNEL_RELU_16) ----
 * ReLU and its backward on contiguous fp16 or bf16 tensors are selects on the bits, with no
 * widening to fp32 and back (three conversion passes: an fp16 ReLU cost twice the fp32 one).
 * Forward: +0 where x < 0 (sign set, not -0, not NaN), else x; backward: +0 where the saved
 * output is <= 0 (+-0, or sign set and not NaN), else the gradient. NaNs leave with the
 * quiet bit set, as the fp32 round trip of the generic path leaves them, so the bits are
 * that path's. Buffers: output, then x (forward) or the gradient and the saved output. */
typedef mp_relu16_args relu16_args;   /* shared/mp_kernel_args.h */

typedef struct {
    const relu16_args *a;
    uint16_t *out;
    const uint16_t *x, *v;
} relu16_job;

static void relu16_range(void *ctx, int64_t b, int64_t e)
{
    const relu16_job *j = ctx;
    const uint16_t inf = j->a->inf, quiet = j->a->quiet;
    uint16_t *restrict out = j->out;
    const uint16_t *restrict x = j->x, *restrict v = j->v;
    if (!j->a->backward) {
        for (int64_t i = b; i < e; i++) {
            uint16_t h = x[i], mag = h & 0x7fffu;
            uint16_t neg = (h & 0x8000u) && mag != 0 && mag <= inf;
            out[i] = neg ? 0 : mag > inf ? (uint16_t)(h | quiet) : h;
        }
        return;
    }
    for (int64_t i = b; i < e; i++) {
        uint16_t s = v[i], smag = s & 0x7fffu, g = x[i];
        uint16_t off = smag == 0 || ((s & 0x8000u) && smag <= inf);
        out[i] = off ? 0 : (g & 0x7fffu) > inf ? (uint16_t)(g | quiet) : g;
    }
}

static mp_status run_relu16(void *const *buf, const void *args, mp_msg *msg)
{
    const relu16_args *a = args;
    relu16_job j = {a, buf[0], buf[1], a->backward ? buf[2] : NULL};
    (void)msg;
    mp_parallel_for(a->n, 1 << 15, relu16_range, &j);
    return MP_OK;
}

/* ReLU (v NULL) or its backward (x the gradient, v the saved output) into out, when every
 * operand is a contiguous tensor of one 16-bit float dtype and size; 0 when not. */
static int relu16(mp_tensor *out, mp_tensor *x, mp_tensor *v, mp_status *st)
{
    mp_dtype dt = out->dtype;
    int64_t n = mp_tensor_numel(out);
    if ((dt != MP_DTYPE_FLOAT16 && dt != MP_DTYPE_BFLOAT16) || x->dtype != dt ||
        mp_tensor_numel(x) != n || !mp_tensor_is_contiguous(out) ||
        !mp_tensor_is_contiguous(x) ||
        (v && (v->dtype != dt || mp_tensor_numel(v) != n || !mp_tensor_is_contiguous(v))))
        return 0;
    relu16_args a = {n, dt == MP_DTYPE_FLOAT16 ? 0x7c00 : 0x7f80,
                     dt == MP_DTYPE_FLOAT16 ? 0x0200 : 0x0040, v != NULL};
    void *ptr[3] = {mp_tensor_data(out), mp_tensor_data(x), v ? mp_tensor_data(v) : NULL};
    int64_t nbytes[3] = {2 * n, 2 * n, v ? 2 * n : 0};
    *st = mp_launch_bufs(out->storage->device, MP_KERNEL_RELU_16, v ? 3 : 2, ptr, nbytes,
                         run_relu16, &a);
    return 1;
}

/* derivative of op at v (v is the input, or the output when save_output): the shared body
 * (ReLU's backward is not a product: bwd_map) */
static inline float deriv(int op, float v)
{
    return mp_unary_deriv(op, v);
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
    mp_tensor *g = gout[0];
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    if (ops[n->iargs[0]].zero_grad)         /* zeros even where g is inf or NaN, as torch */
        return mp_tensor_full_on(g->shape, g->ndim, dt, 0.0, g->storage->device, &gin[0]);
    mp_tensor *v = mp_node_saved(n, 0);
    if (!v)
        return MP_ERR_RUNTIME;
    mp_status st = mp_tensor_empty(g->shape, g->ndim, dt, g->storage->device, &gin[0]);
    if (st != MP_OK)
        return st;
    if (n->iargs[0] == MP_UN_RELU && relu16(gin[0], g, v, &st))
        return st;
    mp_tensor *ins[2] = {g, v};
    double args[1] = {(double)n->iargs[0]};
    return mp_map_with_op(gin[0], ins, 2, bwd_map, MP_MAP_OP_UNARY_GRAD, args);
}

/* The result dtype for a's dtype, or an error (torch's, for bool where it has no kernel). */
static mp_status unary_dtype(mp_unary_op op, mp_dtype in, mp_dtype *out)
{
    *out = in;
    if (mp_dtype_is_float(in))
        return MP_OK;
    if (in == MP_DTYPE_BOOL && op == MP_UN_NEG)
        return mp_error(MP_ERR_TYPE, "Negation, the `-` operator, on a bool tensor is not "
                        "supported. If you are trying to invert a mask, use the `~` or "
                        "`logical_not()` operator instead.");
    switch (ops[op].int_mode) {
    case INT_FLOAT: *out = MP_DTYPE_FLOAT32; break;
    case INT_BOOL_TO_LONG: *out = in == MP_DTYPE_BOOL ? MP_DTYPE_INT64 : in; break;
    case INT_REFUSE:
        return mp_error(MP_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                        op == MP_UN_SILU ? "silu_cpu" : "GeluKernelImpl",
                        mp_dtype_torch_name(in));
    case INT_NO_BOOL:
        if (in == MP_DTYPE_BOOL)
            return mp_error(MP_ERR_NOT_IMPLEMENTED, "\"%s_vml_cpu\" not implemented for "
                            "'Bool'", UN_ROW(op)->name);
        break;
    default: break;
    }
    return MP_OK;
}

mp_status mp_op_unary(mp_unary_op op, mp_tensor *a, mp_tensor **out)
{
    if ((int)op < 0 || op >= MP_UN_COUNT)
        return mp_error(MP_ERR_VALUE, "unknown unary op %d", (int)op);
    MP_AUTOCAST_ENTRY(MP_OP_NEG + (int)op, mp_op_unary(op, ac_[0], out), a);
    mp_dtype dt;
    mp_status st = unary_dtype(op, a->dtype, &dt);
    if (st == MP_OK)
        st = mp_tensor_empty(a->shape, a->ndim, dt, a->storage->device, out);
    if (st != MP_OK)
        return st;
    double args[1] = {(double)op};
    if (op == MP_UN_RELU && relu16(*out, a, NULL, &st)) {
        /* done on the bits */
    } else if (mp_dtype_is_float(dt))
        st = mp_map_with_op(*out, &a, 1, fwd_map, MP_MAP_OP_UNARY, args);
    else if ((st = mp_require_host("unary (integer)", a)) == MP_OK)  /* a host kernel */
        int_map(op, a, *out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(UN_ROW(op)->backward, unary_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = op;
        if (!ops[op].zero_grad)
            st = mp_node_save(node, 0, ops[op].save_output ? *out : a);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
