/* op_table.c - the rows of op_table.h. Autocast policies mirror torch's lists
 * (aten/src/ATen/autocast_mode.cpp) for the ops mpamp has; an op in no list has MP_AC_NONE
 * for that device. */
#include "op_table.h"

#include <string.h>

#include "ops.h"
#include "ops_attention.h"
#include "ops_cnn.h"
#include "ops_compare.h"
#include "ops_index.h"

#define N MP_AC_NONE
#define LO MP_AC_LOWER
#define F32 MP_AC_FP32
#define PR MP_AC_PROMOTE
#define BAN MP_AC_BANNED

/* ---- family adapters: one typed call per family, the family's code selects the op ---- */

static mp_status mul_fwd(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    (void)alpha;
    return mp_op_mul(a, b, out);
}

static mp_status div_fwd(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    (void)alpha;
    return mp_op_div(a, b, out);
}

static mp_status pow_fwd(mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    (void)alpha;
    return mp_op_pow(a, b, out);
}

static mp_status compare_fwd(int code, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    return mp_op_compare((mp_cmp_op)code, a, b, out);
}

static mp_status logical_fwd(int code, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    return mp_op_logical((mp_logic_op)code, a, b, out);
}

static mp_status bitwise_fwd(int code, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    return mp_op_bitwise((mp_logic_op)code, a, b, out);
}

static mp_status unary_fwd(int code, mp_tensor *a, mp_tensor **out)
{
    return mp_op_unary((mp_unary_op)code, a, out);
}

#define BIN(id, nm, code_, fn, cpu, cuda, bw)                                               \
    [id] = {nm, MP_OPK_BINARY, code_, {cpu, cuda}, {.binary = fn}, bw}
#define PAIR(id, nm, kind, code_, fn, bw)                                                    \
    [id] = {nm, kind, code_, {N, N}, {.pair = fn}, bw}
#define UN(id, nm, cpu, cuda, bw)                                                            \
    [id] = {nm, MP_OPK_UNARY, (int)(id - MP_OP_NEG), {cpu, cuda}, {.unary = unary_fwd}, bw}
#define OTHER(id, nm, fn, cpu, cuda, bw)                                                     \
    [id] = {nm, MP_OPK_OTHER, 0, {cpu, cuda}, {.entry = (mp_op_entry_fn)(fn)}, bw}
#define PY(id, nm, cpu, cuda) [id] = {nm, MP_OPK_PYTHON, 0, {cpu, cuda}, {.entry = NULL}, NULL}

static const mp_op_row rows[MP_OP_COUNT] = {
    /* pow: CPU leaves it alone, CUDA runs it in fp32 */
    BIN(MP_OP_ADD, "add", MP_BIN_ADD, mp_op_add, N, N, "AddBackward0"),
    BIN(MP_OP_SUB, "sub", MP_BIN_SUB, mp_op_sub, N, N, "SubBackward0"),
    BIN(MP_OP_MUL, "mul", MP_BIN_MUL, mul_fwd, N, N, "MulBackward0"),
    BIN(MP_OP_DIV, "div", MP_BIN_DIV, div_fwd, N, N, "DivBackward0"),
    BIN(MP_OP_POW, "pow", MP_BIN_POW, pow_fwd, N, F32, NULL),   /* PowBackward0/1/2 */

    PAIR(MP_OP_EQ, "eq", MP_OPK_COMPARE, MP_CMP_EQ, compare_fwd, NULL),
    PAIR(MP_OP_NE, "ne", MP_OPK_COMPARE, MP_CMP_NE, compare_fwd, NULL),
    PAIR(MP_OP_LT, "lt", MP_OPK_COMPARE, MP_CMP_LT, compare_fwd, NULL),
    PAIR(MP_OP_LE, "le", MP_OPK_COMPARE, MP_CMP_LE, compare_fwd, NULL),
    PAIR(MP_OP_GT, "gt", MP_OPK_COMPARE, MP_CMP_GT, compare_fwd, NULL),
    PAIR(MP_OP_GE, "ge", MP_OPK_COMPARE, MP_CMP_GE, compare_fwd, NULL),
    PAIR(MP_OP_LOGICAL_AND, "logical_and", MP_OPK_LOGICAL, MP_LOGIC_AND, logical_fwd, NULL),
    PAIR(MP_OP_LOGICAL_OR, "logical_or", MP_OPK_LOGICAL, MP_LOGIC_OR, logical_fwd, NULL),
    PAIR(MP_OP_LOGICAL_XOR, "logical_xor", MP_OPK_LOGICAL, MP_LOGIC_XOR, logical_fwd, NULL),
    PAIR(MP_OP_BITWISE_AND, "bitwise_and", MP_OPK_BITWISE, MP_LOGIC_AND, bitwise_fwd, NULL),
    PAIR(MP_OP_BITWISE_OR, "bitwise_or", MP_OPK_BITWISE, MP_LOGIC_OR, bitwise_fwd, NULL),
    PAIR(MP_OP_BITWISE_XOR, "bitwise_xor", MP_OPK_BITWISE, MP_LOGIC_XOR, bitwise_fwd, NULL),
    PAIR(MP_OP_MAXIMUM, "maximum", MP_OPK_EXTREMUM, MP_EXT_MAXIMUM, mp_op_maximum,
         "MaximumBackward0"),
    PAIR(MP_OP_MINIMUM, "minimum", MP_OPK_EXTREMUM, MP_EXT_MINIMUM, mp_op_maximum,
         "MinimumBackward0"),
    PAIR(MP_OP_FMAX, "fmax", MP_OPK_EXTREMUM, MP_EXT_FMAX, mp_op_maximum, "FmaxBackward0"),
    PAIR(MP_OP_FMIN, "fmin", MP_OPK_EXTREMUM, MP_EXT_FMIN, mp_op_maximum, "FminBackward0"),

    /* CUDA's fp32 list has exp, log, rsqrt, expm1, log1p, log2, log10, reciprocal; CPU's none
     * of the unary ops (sin, cos, erf, sign, floor, ... are in no list: inputs' dtype) */
    UN(MP_OP_NEG, "neg", N, N, "NegBackward0"),
    UN(MP_OP_RELU, "relu", N, N, "ReluBackward0"),
    UN(MP_OP_GELU, "gelu", N, N, "GeluBackward0"),
    UN(MP_OP_GELU_TANH, "gelu", N, N, "GeluBackward0"),       /* approximate="tanh" */
    UN(MP_OP_SILU, "silu", N, N, "SiluBackward0"),
    UN(MP_OP_SIGMOID, "sigmoid", N, N, "SigmoidBackward0"),
    UN(MP_OP_TANH, "tanh", N, N, "TanhBackward0"),
    UN(MP_OP_EXP, "exp", N, F32, "ExpBackward0"),
    UN(MP_OP_LOG, "log", N, F32, "LogBackward0"),
    UN(MP_OP_SQRT, "sqrt", N, N, "SqrtBackward0"),
    UN(MP_OP_RSQRT, "rsqrt", N, F32, "RsqrtBackward0"),
    UN(MP_OP_ABS, "abs", N, N, "AbsBackward0"),
    UN(MP_OP_SIN, "sin", N, N, "SinBackward0"),
    UN(MP_OP_COS, "cos", N, N, "CosBackward0"),
    UN(MP_OP_ERF, "erf", N, N, "ErfBackward0"),
    UN(MP_OP_LOG1P, "log1p", N, F32, "Log1PBackward0"),
    UN(MP_OP_EXPM1, "expm1", N, F32, "Expm1Backward0"),
    UN(MP_OP_SIGN, "sign", N, N, "SignBackward0"),
    UN(MP_OP_FLOOR, "floor", N, N, "FloorBackward0"),
    UN(MP_OP_CEIL, "ceil", N, N, "CeilBackward0"),
    UN(MP_OP_ROUND, "round", N, N, "RoundBackward0"),
    UN(MP_OP_TRUNC, "trunc", N, N, "TruncBackward0"),
    UN(MP_OP_SQUARE, "square", N, N, "PowBackward0"),
    UN(MP_OP_RECIPROCAL, "reciprocal", N, F32, "ReciprocalBackward0"),
    UN(MP_OP_LOG2, "log2", N, F32, "Log2Backward0"),
    UN(MP_OP_LOG10, "log10", N, F32, "Log10Backward0"),

    OTHER(MP_OP_LINEAR, "linear", mp_op_linear, LO, LO, NULL),
    OTHER(MP_OP_MATMUL, "matmul", mp_op_matmul, LO, LO, NULL),
    OTHER(MP_OP_MM, "mm", mp_op_mm, LO, LO, "MmBackward0"),
    OTHER(MP_OP_BMM, "bmm", mp_op_bmm, LO, LO, "BmmBackward0"),
    OTHER(MP_OP_ADDMM, "addmm", mp_op_addmm, LO, LO, "AddmmBackward0"),
    OTHER(MP_OP_BADDBMM, "baddbmm", mp_op_baddbmm, LO, LO, "BaddbmmBackward0"),
    OTHER(MP_OP_MSE_LOSS, "mse_loss", mp_op_mse_loss, F32, F32, "MseLossBackward0"),
    OTHER(MP_OP_L1_LOSS, "l1_loss", mp_op_l1_loss, F32, F32, NULL),
    OTHER(MP_OP_NLL_LOSS, "nll_loss", mp_op_nll_loss, F32, F32, NULL),
    OTHER(MP_OP_CROSS_ENTROPY, "cross_entropy", mp_op_cross_entropy, F32, F32, NULL),
    OTHER(MP_OP_BCE_WITH_LOGITS, "binary_cross_entropy_with_logits", mp_op_bce_with_logits,
          F32, F32, "BinaryCrossEntropyWithLogitsBackward0"),
    OTHER(MP_OP_SMOOTH_L1_LOSS, "smooth_l1_loss", mp_op_smooth_l1_loss, F32, F32, NULL),
    OTHER(MP_OP_HUBER_LOSS, "huber_loss", mp_op_huber_loss, F32, F32, NULL),
    OTHER(MP_OP_KL_DIV, "kl_div", mp_op_kl_div, F32, F32, NULL),
    /* CPU runs binary_cross_entropy in fp32; CUDA refuses it under autocast */
    OTHER(MP_OP_BCE, "binary_cross_entropy", mp_op_binary_cross_entropy, F32, BAN,
          "BinaryCrossEntropyBackward0"),
    /* CPU autocast leaves layer_norm, softmax and sum alone; CUDA runs them in fp32 (softmax
     * and sum via fp32_set_opt_dtype: the same result for kernels that compute in fp32) */
    OTHER(MP_OP_LAYER_NORM, "layer_norm", mp_op_layer_norm, N, F32, "NativeLayerNormBackward0"),
    OTHER(MP_OP_SOFTMAX, "softmax", mp_op_softmax, N, F32, "SoftmaxBackward0"),
    OTHER(MP_OP_LOG_SOFTMAX, "log_softmax", mp_op_softmax, N, F32, "LogSoftmaxBackward0"),
    OTHER(MP_OP_SUM, "sum", mp_op_sum, N, F32, NULL),           /* SumBackward0 or 1 */
    OTHER(MP_OP_MEAN, "mean", mp_op_mean, N, N, NULL),          /* in neither list */
    OTHER(MP_OP_CAT, "cat", mp_op_cat, PR, N, "CatBackward0"),
    OTHER(MP_OP_STACK, "stack", mp_op_stack, PR, N, "StackBackward0"),
    /* conv1d/conv2d are lower precision on both devices; group_norm fp32 on CUDA only;
     * batch_norm and the 2-d pools are in neither list, so they have no row */
    OTHER(MP_OP_CONV1D, "conv1d", mp_op_conv, LO, LO, "ConvolutionBackward0"),
    OTHER(MP_OP_CONV2D, "conv2d", mp_op_conv, LO, LO, "ConvolutionBackward0"),
    OTHER(MP_OP_GROUP_NORM, "group_norm", mp_op_group_norm, N, F32, NULL),
    /* lower precision on both lists; rms_norm is in CUDA's fp32 list only (torch 2.13) */
    OTHER(MP_OP_SDPA, "scaled_dot_product_attention", mp_op_sdpa, LO, LO, NULL),
    OTHER(MP_OP_RMS_NORM, "rms_norm", mp_op_rms_norm, N, F32, NULL),
    /* prod is on CPU's fp32 list (any call) and CUDA's fp32_set_opt_dtype list, with cumsum,
     * cumprod and linalg_vector_norm (calls without dtype= only: their entries skip autocast
     * when dtype is given, except prod on the CPU); logsumexp is CUDA fp32 */
    OTHER(MP_OP_PROD, "prod", mp_op_prod, F32, F32, NULL),
    OTHER(MP_OP_CUMSUM, "cumsum", mp_op_cumsum, N, F32, "CumsumBackward0"),
    OTHER(MP_OP_CUMPROD, "cumprod", mp_op_cumsum, N, F32, "CumprodBackward0"),
    OTHER(MP_OP_LINALG_VECTOR_NORM, "linalg_vector_norm", mp_op_vector_norm, N, F32,
          "LinalgVectorNormBackward0"),
    OTHER(MP_OP_LOGSUMEXP, "logsumexp", mp_op_logsumexp, N, F32, "LogsumexpBackward0"),
    /* CPU lists reflection_pad1d/2d and replication_pad1d/2d/3d as fp32; CUDA none */
    OTHER(MP_OP_REFLECTION_PAD1D, "reflection_pad1d", mp_op_pad, F32, N, NULL),
    OTHER(MP_OP_REFLECTION_PAD2D, "reflection_pad2d", mp_op_pad, F32, N, NULL),
    OTHER(MP_OP_REFLECTION_PAD3D, "reflection_pad3d", mp_op_pad, N, N, NULL),
    OTHER(MP_OP_REPLICATION_PAD1D, "replication_pad1d", mp_op_pad, F32, N, NULL),
    OTHER(MP_OP_REPLICATION_PAD2D, "replication_pad2d", mp_op_pad, F32, N, NULL),
    OTHER(MP_OP_REPLICATION_PAD3D, "replication_pad3d", mp_op_pad, F32, N, NULL),
    /* normalize reaches fp32 on CUDA through norm (fp32_append_dtype) and the division's
     * promotion; CPU leaves it alone */
    OTHER(MP_OP_NORMALIZE, "normalize", mp_op_normalize, N, F32, NULL),
    OTHER(MP_OP_SOFTPLUS, "softplus", mp_op_softplus, N, F32, "SoftplusBackward0"),
    /* CUDA promotes index_put and scatter_add; CPU promotes index_copy (torch's lists) */
    OTHER(MP_OP_INDEX_PUT, "index_put", mp_op_index_put, N, PR, NULL),
    OTHER(MP_OP_SCATTER_ADD, "scatter_add", mp_op_scatter_add, N, PR, NULL),
    OTHER(MP_OP_INDEX_COPY, "index_copy", mp_op_index_copy, PR, N, NULL),

    /* norm is CUDA's fp32_append_dtype, dist CUDA fp32; einsum is CUDA lower precision (on
     * the CPU it is not listed, but the bmm it lowers to is, so its products run low there
     * too, as torch's) */
    PY(MP_OP_NORM, "norm", N, F32),
    PY(MP_OP_DIST, "dist", N, F32),
    PY(MP_OP_EINSUM, "einsum", N, LO),
    PY(MP_OP_COSINE_SIMILARITY, "cosine_similarity", N, F32),
};

const mp_op_row *mp_op_info(int op)
{
    return op >= 0 && op < MP_OP_COUNT ? &rows[op] : NULL;
}

int mp_op_by_name(const char *name)
{
    for (int op = 0; op < MP_OP_COUNT; op++)
        if (rows[op].name && strcmp(name, rows[op].name) == 0)
            return op;
    return -1;
}

int mp_op_of(mp_op_kind kind, int code)
{
    for (int op = 0; op < MP_OP_COUNT; op++)
        if (rows[op].kind == kind && rows[op].code == code)
            return op;
    return -1;
}

int mp_op_table_check(void)
{
    for (int op = 0; op < MP_OP_COUNT; op++) {
        const mp_op_row *r = &rows[op];
        if (!r->name || !r->kind || (r->kind != MP_OPK_PYTHON && !r->forward.entry))
            return op;
        /* a family's rows are contiguous in code order (callers index MP_OP_EQ + code) */
        static const int first[] = {[MP_OPK_BINARY] = MP_OP_ADD, [MP_OPK_COMPARE] = MP_OP_EQ,
                                    [MP_OPK_LOGICAL] = MP_OP_LOGICAL_AND,
                                    [MP_OPK_BITWISE] = MP_OP_BITWISE_AND,
                                    [MP_OPK_EXTREMUM] = MP_OP_MAXIMUM,
                                    [MP_OPK_UNARY] = MP_OP_NEG};
        if (r->kind < MP_OPK_OTHER && op != first[r->kind] + r->code)
            return op;
    }
    return -1;
}

mp_status mp_op_call(int op, mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out)
{
    const mp_op_row *r = mp_op_info(op);
    switch (r ? r->kind : 0) {
    case MP_OPK_BINARY:
        return r->forward.binary(a, b, alpha, out);
    case MP_OPK_COMPARE:
    case MP_OPK_LOGICAL:
    case MP_OPK_BITWISE:
    case MP_OPK_EXTREMUM:
        return r->forward.pair(r->code, a, b, out);
    case MP_OPK_UNARY:
        return r->forward.unary(r->code, a, out);
    default:
        return mp_error(MP_ERR_VALUE, "op %d has no pointwise entry", op);
    }
}
