/* ops_logic.c - logical_and/or/xor/not (any dtypes in, nonzero is true, bool out) and
 * bitwise_and/or/xor/not (bool, uint8 or int64: the promoted dtype; floats raise torch's
 * NotImplementedError), with their in-place forms. Integers are combined as int64, exactly,
 * and stored in the promoted dtype (uint8 keeps the low byte). Logical ops judge an operand in
 * the promoted dtype too: beside a uint8 tensor, a 0-d int64 256 wraps to 0, as torch.
 * None of these record autograd: bool and int64 results cannot require grad. */
#include <string.h>

#include "../chunk.h"
#include "../backend.h"
#include "../elementwise.h"
#include "../iter.h"
#include "op_table.h"
#include "ops.h"
#include "ops_compare.h"
#include "../rows.h"

#define LOGIC_GRAIN (1 << 15)

typedef struct {
    mp_logic_op op;
    int bits;               /* bitwise on int64 or uint8 (else on truth bytes) */
    int invert;             /* unary not */
    int nin;
    mp_dtype out_dt, in_dt[2];
    mp_dtype common;        /* the inputs' promoted dtype (logical ops) */
} logic_ctx;

#define COMBINE(x, y, r, m, OPER)                                                            \
    do {                                                                                     \
        for (int64_t i = 0; i < (m); i++)                                                    \
            (r)[i] = (x)[i] OPER (y)[i];                                                     \
    } while (0)

#define COMBINE_SWITCH(op, x, y, r, m)                                                       \
    do {                                                                                     \
        switch (op) {                                                                        \
        case MP_LOGIC_AND: COMBINE(x, y, r, m, &); break;                                    \
        case MP_LOGIC_OR: COMBINE(x, y, r, m, |); break;                                     \
        default: COMBINE(x, y, r, m, ^); break;                                              \
        }                                                                                    \
    } while (0)

static void run_bits(const logic_ctx *c, char **ptrs, const int64_t *strides, int64_t i0,
                     int64_t m)
{
    int64_t ba[MP_CHUNK], bb[MP_CHUNK], r[MP_CHUNK];
    const int64_t *x = mp_chunk_i64(ptrs[1] + i0 * strides[1] *
                                    (int64_t)mp_dtype_size(c->in_dt[0]), strides[1],
                                    c->in_dt[0], m, ba);
    if (c->invert) {
        for (int64_t i = 0; i < m; i++)
            r[i] = ~x[i];
    } else {
        const int64_t *y = mp_chunk_i64(ptrs[2] + i0 * strides[2] *
                                        (int64_t)mp_dtype_size(c->in_dt[1]), strides[2],
                                        c->in_dt[1], m, bb);
        COMBINE_SWITCH(c->op, x, y, r, m);
    }
    mp_chunk_store_i64(ptrs[0] + i0 * strides[0] * (int64_t)mp_dtype_size(c->out_dt),
                       strides[0], c->out_dt, r, m);
}

static void run_truth(const logic_ctx *c, char **ptrs, const int64_t *strides, int64_t i0,
                      int64_t m)
{
    uint8_t x[MP_CHUNK], y[MP_CHUNK], r[MP_CHUNK];
    mp_chunk_truth_as(ptrs[1] + i0 * strides[1] * (int64_t)mp_dtype_size(c->in_dt[0]),
                      strides[1], c->in_dt[0], c->common, m, x);
    if (c->invert) {
        for (int64_t i = 0; i < m; i++)
            r[i] = (uint8_t)(x[i] ^ 1u);
    } else {
        mp_chunk_truth_as(ptrs[2] + i0 * strides[2] * (int64_t)mp_dtype_size(c->in_dt[1]),
                          strides[2], c->in_dt[1], c->common, m, y);
        COMBINE_SWITCH(c->op, x, y, r, m);
    }
    mp_chunk_store_u8(ptrs[0] + i0 * strides[0], strides[0], r, m);
}

static void logic_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const logic_ctx *c = vctx;
    for (int64_t i0 = 0; i0 < n; i0 += MP_CHUNK) {
        int64_t m = n - i0 < MP_CHUNK ? n - i0 : MP_CHUNK;
        if (c->bits)
            run_bits(c, ptrs, strides, i0, m);
        else
            run_truth(c, ptrs, strides, i0, m);
    }
}

/* out (dtype c->out_dt, the broadcast shape) = the op over ins[0..c->nin) */
static mp_status logic_compute(logic_ctx *c, mp_tensor **ins, const char *name,
                               mp_tensor **out)
{
    mp_tensor *ex[2] = {NULL, NULL};
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(ins, c->nin, shape, &nd, ex, name);
    if (st != MP_OK)
        return st;
    for (int i = 0; i < c->nin; i++)
        c->in_dt[i] = ins[i]->dtype;
    c->common = mp_result_type(ins, c->nin);
    st = mp_tensor_empty(shape, nd, c->out_dt, MP_DEVICE_CPU, out);
    if (st == MP_OK) {
        mp_tensor *ops[3] = {*out, ex[0], ex[1]};
        mp_iter it;
        mp_iter_init(&it, ops, 1 + c->nin);
        mp_iter_run_parallel(&it, logic_run, c, LOGIC_GRAIN);
    }
    mp_decref_all(ex, c->nin);
    return st;
}

#define logical_name(op) (mp_op_info(MP_OP_LOGICAL_AND + (int)(op))->name)  /* op table */
static const char *const logical_names_[MP_LOGIC_COUNT] = {"logical_and_", "logical_or_",
                                                           "logical_xor_"};
#define bitwise_name(op) (mp_op_info(MP_OP_BITWISE_AND + (int)(op))->name)
static const char *const bitwise_names_[MP_LOGIC_COUNT] = {"bitwise_and_", "bitwise_or_",
                                                           "bitwise_xor_"};

static mp_status check_op(mp_logic_op op)
{
    if ((int)op < 0 || op >= MP_LOGIC_COUNT)
        return mp_error(MP_ERR_VALUE, "unknown logic op %d", (int)op);
    return MP_OK;
}

/* a = res (computed out of place), with torch's in-place checks around it */
static mp_status commit(mp_tensor *a, mp_tensor *res, const char *name)
{
    mp_status st = mp_inplace_commit(a, res, name);
    mp_tensor_decref(res);
    return st;
}

mp_status mp_op_logical(mp_logic_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_HOST_ONLY("logical", a, b);
    mp_status st = check_op(op);
    if (st != MP_OK)
        return st;
    logic_ctx c = {op, 0, 0, 2, MP_DTYPE_BOOL, {MP_DTYPE_BOOL, MP_DTYPE_BOOL},
                   MP_DTYPE_BOOL};
    mp_tensor *ins[2] = {a, b};
    return logic_compute(&c, ins, logical_name(op), out);
}

mp_status mp_op_logical_(mp_logic_op op, mp_tensor *a, mp_tensor *b)
{
    MP_HOST_ONLY("logical_", a, b);
    mp_status st = check_op(op);
    if (st != MP_OK)
        return st;
    mp_tensor *res = NULL;
    if ((st = mp_check_inplace(a, logical_names_[op])) == MP_OK &&
        (st = mp_op_logical(op, a, b, &res)) == MP_OK)
        st = commit(a, res, logical_names_[op]);
    return st;
}

mp_status mp_op_logical_not(mp_tensor *a, mp_tensor **out)
{
    MP_HOST_ONLY("logical_not", a);
    logic_ctx c = {MP_LOGIC_AND, 0, 1, 1, MP_DTYPE_BOOL, {MP_DTYPE_BOOL, MP_DTYPE_BOOL},
                   MP_DTYPE_BOOL};
    return logic_compute(&c, &a, "logical_not", out);
}

mp_status mp_op_logical_not_(mp_tensor *a)
{
    MP_HOST_ONLY("logical_not_", a);
    mp_tensor *res = NULL;
    mp_status st = mp_check_inplace(a, "logical_not_");
    if (st == MP_OK && (st = mp_op_logical_not(a, &res)) == MP_OK)
        st = commit(a, res, "logical_not_");
    return st;
}

/* bitwise ops run in the promoted dtype, which must be bool, uint8 or int64 */
static mp_status bitwise_dtype(mp_tensor *a, mp_tensor *b, const char *kernel, mp_dtype *dt)
{
    mp_tensor *ins[2] = {a, b};
    *dt = b ? mp_result_type(ins, 2) : a->dtype;
    if (mp_dtype_is_float(*dt))
        return mp_error(MP_ERR_NOT_IMPLEMENTED, "\"%s_cpu\" not implemented for '%s'", kernel,
                        mp_dtype_torch_name(*dt));
    return MP_OK;
}

mp_status mp_op_bitwise(mp_logic_op op, mp_tensor *a, mp_tensor *b, mp_tensor **out)
{
    MP_HOST_ONLY("bitwise", a, b);
    mp_dtype dt;
    mp_status st = check_op(op);
    if (st != MP_OK || (st = bitwise_dtype(a, b, bitwise_name(op), &dt)) != MP_OK)
        return st;
    logic_ctx c = {op, dt != MP_DTYPE_BOOL, 0, 2, dt, {MP_DTYPE_BOOL, MP_DTYPE_BOOL},
                   MP_DTYPE_BOOL};
    mp_tensor *ins[2] = {a, b};
    return logic_compute(&c, ins, bitwise_name(op), out);
}

mp_status mp_op_bitwise_(mp_logic_op op, mp_tensor *a, mp_tensor *b)
{
    MP_HOST_ONLY("bitwise_", a, b);
    mp_status st = check_op(op);
    if (st != MP_OK || (st = mp_check_inplace(a, bitwise_names_[op])) != MP_OK)
        return st;
    mp_tensor *ins[2] = {a, b}, *res = NULL;
    if ((st = mp_check_result_cast(mp_result_type(ins, 2), a->dtype)) == MP_OK &&
        (st = mp_op_bitwise(op, a, b, &res)) == MP_OK)
        st = commit(a, res, bitwise_names_[op]);
    return st;
}

mp_status mp_op_bitwise_not(mp_tensor *a, mp_tensor **out)
{
    MP_HOST_ONLY("bitwise_not", a);
    mp_dtype dt;
    mp_status st = bitwise_dtype(a, NULL, "bitwise_not", &dt);
    if (st != MP_OK)
        return st;
    logic_ctx c = {MP_LOGIC_AND, dt != MP_DTYPE_BOOL, 1, 1, dt, {MP_DTYPE_BOOL, MP_DTYPE_BOOL},
                   MP_DTYPE_BOOL};
    return logic_compute(&c, &a, "bitwise_not", out);
}

mp_status mp_op_bitwise_not_(mp_tensor *a)
{
    MP_HOST_ONLY("bitwise_not_", a);
    mp_tensor *res = NULL;
    mp_status st = mp_check_inplace(a, "bitwise_not_");
    if (st == MP_OK && (st = mp_op_bitwise_not(a, &res)) == MP_OK)
        st = commit(a, res, "bitwise_not_");
    return st;
}
