/* ops_compare.c - eq, ne, lt, le, gt, ge (tensor or wrapped-scalar operands, broadcasting),
 * isnan/isinf/isfinite/isposinf/isneginf, and any/all. Comparisons run in torch's promoted
 * dtype: float operands are compared as fp32 after rounding each to the common float dtype
 * (an int64 tensor against 0.5 compares in float32; an fp16 tensor against 0.1 against
 * fp16(0.1)), integer and bool operands as int64, exactly (in a uint8 comparison a Python
 * int or 0-d int64 wraps modulo 256 first, as torch: uint8 255 == -1). NaN compares unequal
 * to everything (IEEE). Results are bool and are never recorded by autograd. */
#include <math.h>
#include <string.h>

#include "../chunk.h"
#include "../backend.h"
#include "../copy.h"
#include "../elementwise.h"
#include "../iter.h"
#include "op_table.h"
#include "ops.h"
#include "ops_compare.h"
#include "../reduce.h"

/* elements per thread below which a kernel stays on one thread (as mp_map) */
#define CMP_GRAIN (1 << 15)

#define cmp_name(op) (mp_op_info(MP_OP_EQ + (int)(op))->name)   /* the op table's */

typedef struct {
    mp_cmp_op op;
    int is_float;          /* compare as fp32 (else as int64) */
    mp_dtype dt;           /* the promoted dtype: float operands are rounded to it */
    mp_dtype in_dt[2];
} cmp_ctx;

#define CMP_LOOP(x, y, r, m, OPER)                                                           \
    do {                                                                                     \
        for (int64_t i = 0; i < (m); i++)                                                    \
            (r)[i] = (uint8_t)((x)[i] OPER (y)[i]);                                          \
    } while (0)

#define CMP_SWITCH(op, x, y, r, m)                                                           \
    do {                                                                                     \
        switch (op) {                                                                        \
        case MP_CMP_EQ: CMP_LOOP(x, y, r, m, ==); break;                                     \
        case MP_CMP_NE: CMP_LOOP(x, y, r, m, !=); break;                                     \
        case MP_CMP_LT: CMP_LOOP(x, y, r, m, <); break;                                      \
        case MP_CMP_LE: CMP_LOOP(x, y, r, m, <=); break;                                     \
        case MP_CMP_GT: CMP_LOOP(x, y, r, m, >); break;                                      \
        default: CMP_LOOP(x, y, r, m, >=); break;                                            \
        }                                                                                    \
    } while (0)

static void cmp_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const cmp_ctx *c = vctx;
    size_t sa = mp_dtype_size(c->in_dt[0]), sb = mp_dtype_size(c->in_dt[1]);
    uint8_t res[MP_CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        const char *pa = ptrs[1] + i0 * strides[1] * (int64_t)sa;
        const char *pb = ptrs[2] + i0 * strides[2] * (int64_t)sb;
        if (c->is_float) {
            float ba[MP_CHUNK], bb[MP_CHUNK];
            const float *x = mp_chunk_f32(pa, strides[1], c->in_dt[0], c->dt, m, ba);
            const float *y = mp_chunk_f32(pb, strides[2], c->in_dt[1], c->dt, m, bb);
            CMP_SWITCH(c->op, x, y, res, m);
        } else {
            int64_t ba[MP_CHUNK], bb[MP_CHUNK];
            const int64_t *x = mp_chunk_i64_as(pa, strides[1], c->in_dt[0], c->dt, m, ba);
            const int64_t *y = mp_chunk_i64_as(pb, strides[2], c->in_dt[1], c->dt, m, bb);
            CMP_SWITCH(c->op, x, y, res, m);
        }
        mp_chunk_store_u8(ptrs[0] + i0 * strides[0], strides[0], res, m);
    }
}

mp_status mp_op_compare(mp_cmp_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    if ((int)op < 0 || op >= MP_CMP_COUNT)
        return mp_error(MP_ERR_VALUE, "unknown comparison %d", (int)op);
    mp_tensor *in[2] = {a, b}, *ex[2];
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(in, 2, shape, &nd, ex, cmp_name(op));
    if (st != MP_OK)
        return st;
    mp_dtype dt = mp_result_type(in, 2);
    cmp_ctx c = {op, mp_dtype_is_float(dt), dt, {a->dtype, b->dtype}};
    st = mp_tensor_empty(shape, nd, MP_DTYPE_BOOL, mp_any_device(in, 2), out);
    if (st == MP_OK) {
        mp_tensor *ops[3] = {*out, ex[0], ex[1]};
        st = mp_run_iter(MP_KERNEL_COMPARE, ops, 3, cmp_run, &c, CMP_GRAIN);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    mp_decref_all(ex, 2);
    return st;
}

mp_status mp_op_compare_(mp_cmp_op op, mp_tensor *a, mp_tensor *b)
{
    static const char *const names[MP_CMP_COUNT] = {"eq_", "ne_", "lt_", "le_", "gt_", "ge_"};
    if ((int)op < 0 || op >= MP_CMP_COUNT)
        return mp_error(MP_ERR_VALUE, "unknown comparison %d", (int)op);
    mp_status st = mp_check_inplace(a, names[op]);
    mp_tensor *res = NULL;
    if (st == MP_OK)
        st = mp_op_compare(op, a, b, &res);
    if (st == MP_OK)
        st = mp_inplace_commit(a, res, names[op]);
    mp_tensor_decref(res);
    return st;
}

/* ---- isnan / isinf / isfinite / isposinf / isneginf ---- */

typedef struct {
    mp_class_op op;
    mp_dtype dt;
} class_ctx;

static void class_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const class_ctx *c = vctx;
    size_t sz = mp_dtype_size(c->dt);
    uint8_t r[MP_CHUNK];
    float buf[MP_CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        const float *x = mp_chunk_f32(ptrs[1] + i0 * strides[1] * (int64_t)sz, strides[1],
                                      c->dt, c->dt, m, buf);
        for (int64_t i = 0; i < m; i++) {
            float v = x[i];
            switch (c->op) {
            case MP_CLS_ISNAN: r[i] = isnan(v) != 0; break;
            case MP_CLS_ISINF: r[i] = isinf(v) != 0; break;
            case MP_CLS_ISFINITE: r[i] = isfinite(v) != 0; break;
            case MP_CLS_ISPOSINF: r[i] = v == INFINITY; break;
            default: r[i] = v == -INFINITY; break;
            }
        }
        mp_chunk_store_u8(ptrs[0] + i0 * strides[0], strides[0], r, m);
    }
}

mp_status mp_op_classify(mp_class_op op, mp_tensor *a, mp_tensor **out)
{
    if ((int)op < 0 || op >= MP_CLS_COUNT)
        return mp_error(MP_ERR_VALUE, "unknown classification %d", (int)op);
    if (!mp_dtype_is_float(a->dtype))      /* integers are finite, never inf or NaN */
        return mp_tensor_full_on(a->shape, a->ndim, MP_DTYPE_BOOL, op == MP_CLS_ISFINITE,
                                 a->storage->device, out);
    mp_status st = mp_tensor_empty(a->shape, a->ndim, MP_DTYPE_BOOL, a->storage->device, out);
    if (st != MP_OK)
        return st;
    class_ctx c = {op, a->dtype};
    mp_tensor *ops[2] = {*out, a};
    st = mp_run_iter(MP_KERNEL_CLASSIFY, ops, 2, class_run, &c, CMP_GRAIN);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- any / all: count the elements that decide (nonzero for any, zero for all); bool out,
 * uint8 for a uint8 input (torch's legacy byte-mask result) ---- */

mp_status mp_op_any_all(int all, mp_tensor *a, uint32_t dim_mask, int keepdim,
                        mp_tensor **out)
{
    mp_tensor *zero = NULL, *decide = NULL, *count = NULL;
    mp_status st = mp_scalar_tensor(0.0, MP_DTYPE_INT64, &zero);
    if (st == MP_OK)
        st = mp_op_compare(all ? MP_CMP_EQ : MP_CMP_NE, a, zero, &decide);
    if (st == MP_OK)
        st = mp_reduce_sum(decide, dim_mask, keepdim, MP_DTYPE_INT64, &count);
    if (st == MP_OK)
        st = mp_op_compare(all ? MP_CMP_EQ : MP_CMP_NE, count, zero, out);
    if (st == MP_OK && a->dtype == MP_DTYPE_UINT8) {    /* torch keeps uint8 for uint8 */
        mp_tensor *b = *out;
        st = mp_tensor_cast(b, MP_DTYPE_UINT8, out);
        mp_tensor_decref(b);
        if (st != MP_OK)
            *out = NULL;
    }
    mp_tensor_decref(zero);
    mp_tensor_decref(decide);
    mp_tensor_decref(count);
    return st;
}
