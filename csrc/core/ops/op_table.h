/* op_table.h - the one table of mpamp's ops: an MP_OP_* id per op and one row for each (the
 * name torch prints, the autocast policy per device type, the core entry, the grad_fn its
 * forward records). Autocast (autocast.c), the bindings (which take op ids from Python) and
 * the op families' own files read their names and policies here; Python gets the ids from
 * _C.op_ids (a dict name -> id built from this table), so no Python file mirrors a number.
 * mp_op_table_check() proves at import that every id has a complete row. */
#ifndef MP_OP_TABLE_H
#define MP_OP_TABLE_H

#include "../tensor.h"

/* MP_AC_BANNED: the op raises under autocast (torch bans binary_cross_entropy on CUDA) */
typedef enum { MP_AC_NONE = 0, MP_AC_LOWER, MP_AC_FP32, MP_AC_PROMOTE, MP_AC_BANNED } mp_ac_policy;

#define MP_AC_DEVICES 2   /* indexed by mp_device: CPU, CUDA */

typedef enum {
    /* pointwise binary (kind MP_OPK_BINARY; code: MP_BIN_*) */
    MP_OP_ADD, MP_OP_SUB, MP_OP_MUL, MP_OP_DIV, MP_OP_POW,
    /* comparisons (MP_OPK_COMPARE; code: mp_cmp_op) */
    MP_OP_EQ, MP_OP_NE, MP_OP_LT, MP_OP_LE, MP_OP_GT, MP_OP_GE,
    /* logic (MP_OPK_LOGICAL / MP_OPK_BITWISE; code: mp_logic_op) */
    MP_OP_LOGICAL_AND, MP_OP_LOGICAL_OR, MP_OP_LOGICAL_XOR,
    MP_OP_BITWISE_AND, MP_OP_BITWISE_OR, MP_OP_BITWISE_XOR,
    /* elementwise extrema (MP_OPK_EXTREMUM; code: MP_EXT_*) */
    MP_OP_MAXIMUM, MP_OP_MINIMUM, MP_OP_FMAX, MP_OP_FMIN,
    /* pointwise unary (MP_OPK_UNARY; code: mp_unary_op, in its order) */
    MP_OP_NEG, MP_OP_RELU, MP_OP_GELU, MP_OP_GELU_TANH, MP_OP_SILU, MP_OP_SIGMOID, MP_OP_TANH,
    MP_OP_EXP, MP_OP_LOG, MP_OP_SQRT, MP_OP_RSQRT, MP_OP_ABS, MP_OP_SIN, MP_OP_COS, MP_OP_ERF,
    MP_OP_LOG1P, MP_OP_EXPM1, MP_OP_SIGN, MP_OP_FLOOR, MP_OP_CEIL, MP_OP_ROUND, MP_OP_TRUNC,
    MP_OP_SQUARE, MP_OP_RECIPROCAL, MP_OP_LOG2, MP_OP_LOG10,
    /* ops with their own signature (MP_OPK_OTHER): products, losses, rows, CNN, ... */
    MP_OP_LINEAR, MP_OP_MATMUL, MP_OP_MM, MP_OP_BMM, MP_OP_ADDMM, MP_OP_BADDBMM,
    MP_OP_MSE_LOSS, MP_OP_L1_LOSS, MP_OP_NLL_LOSS, MP_OP_CROSS_ENTROPY, MP_OP_BCE_WITH_LOGITS,
    MP_OP_SMOOTH_L1_LOSS, MP_OP_HUBER_LOSS, MP_OP_KL_DIV, MP_OP_BCE,
    MP_OP_LAYER_NORM, MP_OP_SOFTMAX, MP_OP_LOG_SOFTMAX, MP_OP_SUM, MP_OP_MEAN, MP_OP_CAT,
    MP_OP_STACK,
    MP_OP_CONV1D, MP_OP_CONV2D, MP_OP_GROUP_NORM, MP_OP_SDPA, MP_OP_RMS_NORM,
    MP_OP_PROD, MP_OP_CUMSUM, MP_OP_CUMPROD, MP_OP_LINALG_VECTOR_NORM, MP_OP_LOGSUMEXP,
    MP_OP_REFLECTION_PAD1D, MP_OP_REFLECTION_PAD2D, MP_OP_REFLECTION_PAD3D,
    MP_OP_REPLICATION_PAD1D, MP_OP_REPLICATION_PAD2D, MP_OP_REPLICATION_PAD3D,
    MP_OP_NORMALIZE, MP_OP_SOFTPLUS, MP_OP_INDEX_PUT, MP_OP_SCATTER_ADD, MP_OP_INDEX_COPY,
    /* composites written in Python (MP_OPK_PYTHON: no core entry; their Python code applies
     * the row's policy through _C._autocast_cast) */
    MP_OP_NORM, MP_OP_DIST, MP_OP_EINSUM, MP_OP_COSINE_SIMILARITY,
    /* new ops: one line each, above this one, and a row in op_table.c */
    MP_OP_COUNT
} mp_op_id;

typedef enum {
    MP_OPK_BINARY = 1, MP_OPK_COMPARE, MP_OPK_LOGICAL, MP_OPK_BITWISE, MP_OPK_EXTREMUM,
    MP_OPK_UNARY, MP_OPK_OTHER, MP_OPK_PYTHON
} mp_op_kind;

/* The forward entry: families share one typed call (their code selects the op); the other
 * ops keep their own signatures (ops.h) and the row holds the entry itself. */
typedef mp_status (*mp_op_binary_fn)(mp_tensor *a, mp_tensor *b, double alpha,
                                     mp_tensor **out);
typedef mp_status (*mp_op_pair_fn)(int code, mp_tensor *a, mp_tensor *b, mp_tensor **out);
typedef mp_status (*mp_op_unary_fn)(int code, mp_tensor *a, mp_tensor **out);
typedef void (*mp_op_entry_fn)(void);

typedef struct {
    const char *name;                      /* torch's name of the op (as its messages say) */
    mp_op_kind kind;
    int code;                              /* the family's own number for the op */
    mp_ac_policy autocast[MP_AC_DEVICES];  /* CPU, CUDA (torch's lists) */
    union {
        mp_op_binary_fn binary;            /* MP_OPK_BINARY */
        mp_op_pair_fn pair;                /* COMPARE, LOGICAL, BITWISE, EXTREMUM */
        mp_op_unary_fn unary;              /* UNARY */
        mp_op_entry_fn entry;              /* OTHER: the mp_op_* function of ops.h */
    } forward;
    const char *backward;                  /* the grad_fn it records; NULL: none, or it
                                              depends on the arguments */
} mp_op_row;

/* The row of op (NULL outside 0..MP_OP_COUNT-1). */
const mp_op_row *mp_op_info(int op);
/* The id of the op named `name` (the first row of that name), or -1. */
int mp_op_by_name(const char *name);
/* The id whose row has this kind and family code, or -1 (a family's code -> its op). */
int mp_op_of(mp_op_kind kind, int code);
/* -1 when every id has a complete row (name, kind, forward; each family's rows contiguous
 * in its code order, so MP_OP_EQ + MP_CMP_LT is MP_OP_LT), else the first id that does not. */
int mp_op_table_check(void);

/* Runs a family op by id: BINARY (alpha used by add/sub), COMPARE/LOGICAL/BITWISE/EXTREMUM
 * (alpha ignored) and, with b NULL, UNARY. MP_ERR_VALUE for any other id. */
mp_status mp_op_call(int op, mp_tensor *a, mp_tensor *b, double alpha, mp_tensor **out);

#endif
