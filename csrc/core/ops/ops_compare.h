/* ops_compare.h - comparisons, logic and bitwise ops, float classification, any/all
 * (ops_compare.c, ops_logic.c) and remainder/fmod/round(decimals) (ops_math.c). Comparison
 * and logic results are bool tensors that never require grad; comparisons are made in
 * torch's promoted dtype (floats rounded to it, int64 exact at any magnitude). In-place forms
 * (name ending in _) check autograd, then torch's cast rule, and write through
 * mp_inplace_commit. */
#ifndef MP_OPS_COMPARE_H
#define MP_OPS_COMPARE_H

#include "../tensor.h"

typedef enum {
    MP_CMP_EQ, MP_CMP_NE, MP_CMP_LT, MP_CMP_LE, MP_CMP_GT, MP_CMP_GE, MP_CMP_COUNT
} mp_cmp_op;
mp_status mp_op_compare(mp_cmp_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_compare_(mp_cmp_op op, mp_tensor *a, mp_tensor *b);

typedef enum { MP_LOGIC_AND, MP_LOGIC_OR, MP_LOGIC_XOR, MP_LOGIC_COUNT } mp_logic_op;
/* logical_*: any dtypes in (nonzero is true), bool out */
mp_status mp_op_logical(mp_logic_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_logical_(mp_logic_op op, mp_tensor *a, mp_tensor *b);
mp_status mp_op_logical_not(mp_tensor *a, mp_tensor **out);
mp_status mp_op_logical_not_(mp_tensor *a);
/* bitwise_*: bool or int64 (the promoted dtype); floats raise NotImplementedError */
mp_status mp_op_bitwise(mp_logic_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_bitwise_(mp_logic_op op, mp_tensor *a, mp_tensor *b);
mp_status mp_op_bitwise_not(mp_tensor *a, mp_tensor **out);
mp_status mp_op_bitwise_not_(mp_tensor *a);

typedef enum {
    MP_CLS_ISNAN, MP_CLS_ISINF, MP_CLS_ISFINITE, MP_CLS_ISPOSINF, MP_CLS_ISNEGINF,
    MP_CLS_COUNT
} mp_class_op;
mp_status mp_op_classify(mp_class_op op, mp_tensor *a, mp_tensor **out);

/* any (all = 0) / all (all = 1) over the dims in dim_mask (bit d: dim d), bool out */
mp_status mp_op_any_all(int all, mp_tensor *a, uint32_t dim_mask, int keepdim,
                        mp_tensor **out);

/* remainder (is_fmod = 0: the sign of b, Python's %) or fmod (is_fmod = 1: the sign of a);
 * integer division by zero is a RuntimeError, as torch */
mp_status mp_op_remainder(int is_fmod, mp_tensor *a, mp_tensor *b, mp_tensor **out);
mp_status mp_op_remainder_(int is_fmod, mp_tensor *a, mp_tensor *b);
/* round half to even at 10^-decimals (float dtypes only) */
mp_status mp_op_round_decimals(mp_tensor *a, int64_t decimals, mp_tensor **out);

#endif
