/* ops_mask.c - masked_fill (a number or 0-d tensor written where a bool mask is True; the
 * mask broadcasts with the input, as torch's out-of-place form does) and tril/triu (what lies
 * above / below diagonal k of the last two dims set to zero, batched over leading dims).
 * Neither converts elements: the fill value is converted once (with torch's overflow check)
 * and rows are copied by element size, so one loop serves every dtype. Rows are the last
 * dim; large outputs are split over the cores by rows. In-place forms are in the bindings
 * (mp_check_inplace + mp_inplace_commit). */
#include <float.h>
#include <string.h>

#include "../../cpu/parallel.h"
#include "../backend.h"
#include "../chunk.h"
#include "../copy.h"
#include "../elementwise.h"
#include "ops.h"
#include "ops_attention.h"
#include "../reduce.h"
#include "../view.h"

#define MASK_GRAIN_ELEMS 65536      /* rows per thread: at least this many elements */

/* torch's C++ type names, as its messages print them */
static const char *cpp_name(mp_dtype dt)
{
    switch (dt) {
    case MP_DTYPE_FLOAT32: return "float";
    case MP_DTYPE_FLOAT16: return "c10::Half";
    case MP_DTYPE_BFLOAT16: return "c10::BFloat16";
    case MP_DTYPE_INT64: return "int64_t";
    case MP_DTYPE_UINT8: return "uint8_t";
    default: return "bool";
    }
}

/* v converted to dt's bits in *bits, or torch's overflow error */
static mp_status value_bits(mp_dtype dt, mp_scalar v, unsigned char *bits)
{
    double f = v.is_int ? (double)v.i : v.f, max = 0.0;
    mp_status st = mp_check_scalar_fits(dt, v);        /* uint8's range */
    if (st != MP_OK)
        return st;
    if (dt == MP_DTYPE_FLOAT32)
        max = FLT_MAX;
    else if (dt == MP_DTYPE_FLOAT16)
        max = 65504.0;
    else if (dt == MP_DTYPE_BFLOAT16)
        max = 3.38953138925153547590470800371487866880e+38;
    int bad = max > 0.0 ? (f > max || f < -max) && f - f == 0.0
                        : dt == MP_DTYPE_INT64 && !v.is_int &&
                              !(f >= -9223372036854775808.0 && f < 9223372036854775808.0);
    if (bad)
        return mp_error(MP_ERR_RUNTIME, "value cannot be converted to type %s without overflow",
                        cpp_name(dt));
    memset(bits, 0, 8);
    mp_store_scalar(dt, (char *)bits, v);
    return MP_OK;
}

/* ---- the row walker: rows are every index of the dims before the last ---- */

typedef struct {
    const char *base;
    int64_t strides[MP_MAX_DIMS];   /* elements; broadcast dims have stride 0 */
} strided;

static strided strided_of(const mp_tensor *t)
{
    strided s;
    s.base = NULL;      /* the kernel's buffer (launch_job) */
    for (int d = 0; d < t->ndim; d++)
        s.strides[d] = t->strides[d];
    return s;
}

/* element offset of (row r, column 0) of s over shape[0..nd) */
static int64_t row_off(const strided *s, const int64_t *shape, int nd, int64_t r)
{
    int64_t off = 0;
    for (int d = nd - 2; d >= 0; d--) {
        off += (r % shape[d]) * s->strides[d];
        r /= shape[d];
    }
    return off;
}

typedef struct {
    int kind;                       /* 0 masked_fill, 1 tril, 2 triu, 3 keep where masked */
    int nd;
    int64_t shape[MP_MAX_DIMS];
    size_t esz;
    strided in, mask;
    char *out;                      /* contiguous over shape */
    unsigned char bits[8];          /* the fill value */
    int64_t diag;
} mask_job;

/* Row loop for one element size T: keep[j] chooses the input, else the fill value. */
#define ROW_LOOP(T)                                                                          \
    do {                                                                                     \
        const T *x = (const T *)xp;                                                          \
        T *o = (T *)op, v;                                                                   \
        memcpy(&v, j->bits, sizeof v);                                                       \
        if (j->kind == 0) {                                                                  \
            for (int64_t c = 0; c < n; c++)                                                  \
                o[c] = mp[c * ms] ? v : x[c * xs];                                           \
        } else if (j->kind == 3) {                                                           \
            for (int64_t c = 0; c < n; c++)                                                  \
                o[c] = mp[c * ms] ? x[c * xs] : v;                                           \
        } else {                                                                             \
            for (int64_t c = 0; c < n; c++)                                                  \
                o[c] = (j->kind == 1 ? c <= lim : c >= lim) ? x[c * xs] : v;                 \
        }                                                                                    \
    } while (0)

static void mask_rows(void *ctx, int64_t r0, int64_t r1)
{
    const mask_job *j = ctx;
    int nd = j->nd;
    int64_t n = j->shape[nd - 1], rows_i = nd >= 2 ? j->shape[nd - 2] : 1;
    int masked = j->kind == 0 || j->kind == 3;
    int64_t xs = j->in.strides[nd - 1], ms = masked ? j->mask.strides[nd - 1] : 0;
    for (int64_t r = r0; r < r1; r++) {
        const char *xp = j->in.base + row_off(&j->in, j->shape, nd, r) * (int64_t)j->esz;
        const uint8_t *mp = masked
                                ? (const uint8_t *)j->mask.base + row_off(&j->mask, j->shape, nd, r)
                                : NULL;
        char *op = j->out + r * n * (int64_t)j->esz;
        int64_t lim = (r % rows_i) + j->diag;   /* tril keeps c <= lim, triu c >= lim */
        switch (j->esz) {
        case 1: ROW_LOOP(uint8_t); break;
        case 2: ROW_LOOP(uint16_t); break;
        case 4: ROW_LOOP(uint32_t); break;
        default: ROW_LOOP(uint64_t); break;
        }
    }
}

/* The MP_KERNEL_MASK kernel: buffers the input, the mask (or absent), the output. */
static mp_status run_mask(void *const *buf, const void *args, mp_msg *msg)
{
    mask_job j = *(const mask_job *)args;
    (void)msg;
    j.in.base = buf[0];
    j.mask.base = buf[1];
    j.out = buf[2];
    int64_t n = j.shape[j.nd - 1], rows = 1;
    for (int d = 0; d < j.nd - 1; d++)
        rows *= j.shape[d];
    if (n == 0 || rows == 0)
        return MP_OK;
    int64_t grain = MASK_GRAIN_ELEMS / n + 1;
    mp_parallel_for(rows, grain, mask_rows, &j);
    return MP_OK;
}

/* Runs j on out's device over in, mask (NULL for tril/triu) and out. */
static mp_status launch_job(const mask_job *j, mp_tensor *in, mp_tensor *mask, mp_tensor *out)
{
    mp_tensor *ts[3] = {in, mask, out};
    mp_status st = mp_check_same_device(ts, 3, out->storage->device, 0);
    if (st == MP_OK)
        st = mp_launch_tensors(out->storage->device, MP_KERNEL_MASK, 3, ts, run_mask, j);
    return st;
}

/* out (new, contiguous) = masked_fill(ex, mask_ex, bits) (keep: ex where the mask is set,
 * bits elsewhere): both already expanded to one shape */
static mp_status fill_expanded(mp_tensor *ex, mp_tensor *mex, const unsigned char *bits,
                               int keep, mp_tensor **out)
{
    mp_status st = mp_tensor_empty(ex->shape, ex->ndim, ex->dtype, ex->storage->device, out);
    if (st != MP_OK || mp_tensor_numel(ex) == 0)
        return st;
    mask_job j;
    memset(&j, 0, sizeof j);
    j.kind = keep ? 3 : 0;
    j.nd = ex->ndim ? ex->ndim : 1;
    if (ex->ndim)
        memcpy(j.shape, ex->shape, sizeof(int64_t) * (size_t)ex->ndim);
    else
        j.shape[0] = 1;
    j.esz = mp_dtype_size(ex->dtype);
    j.in = strided_of(ex);
    j.mask = strided_of(mex);
    memcpy(j.bits, bits, 8);
    st = launch_job(&j, ex, mex, *out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* masked_fill without autograd: a and mask broadcast together */
static mp_status fill_plain(mp_tensor *a, mp_tensor *mask, const unsigned char *bits, int keep,
                            mp_tensor **out)
{
    mp_tensor *in[2] = {mask, a}, *ex[2] = {NULL, NULL};
    int64_t shape[MP_MAX_DIMS];
    int nd;
    mp_status st = mp_broadcast_all(in, 2, shape, &nd, ex, "masked_fill");
    if (st == MP_OK)
        st = fill_expanded(ex[1], ex[0], bits, keep, out);
    mp_decref_all(ex, 2);
    return st;
}

/* sum of g (any float dtype, the broadcast shape) where mask is True, as a 0-d fp32 tensor
 * (the kept values summed in double, on g's device) */
static mp_status masked_sum(mp_tensor *g, mp_tensor *mask, mp_tensor **out)
{
    mp_tensor *gc = NULL, *kept = NULL;
    unsigned char zero[8] = {0};
    mp_status st = mp_tensor_cast(g, MP_DTYPE_FLOAT32, &gc);
    if (st == MP_OK)
        st = fill_plain(gc, mask, zero, 1, &kept);
    if (st == MP_OK)
        st = mp_reduce_sum(kept, ~0u, 0, MP_DTYPE_FLOAT32, out);
    mp_tensor_decref(gc);
    mp_tensor_decref(kept);
    return st;
}

/* input: the gradient with the mask's positions zeroed, summed to the input's shape;
 * value (a 0-d tensor): the sum of the gradient over the mask's positions */
static mp_status masked_fill_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *mask = mp_node_saved(n, 0), *g = gout[0], *full = NULL;
    if (!mask)
        return MP_ERR_RUNTIME;
    unsigned char zero[8] = {0};
    mp_status st = MP_OK;
    if (n->next[0].node) {
        st = fill_plain(g, mask, zero, 0, &full);
        int nd;
        const int64_t *shape = mp_node_in_shape(n, 0, &nd);
        if (st == MP_OK)
            st = mp_sum_to_shape(full, shape, nd, &gin[0]);
        mp_tensor_decref(full);
    }
    if (st == MP_OK && n->n_inputs > 1 && n->next[1].node)
        st = masked_sum(g, mask, &gin[1]);
    return st;
}

mp_status mp_op_masked_fill(mp_tensor *a, mp_tensor *mask, mp_scalar value, mp_tensor *vt,
                            mp_tensor **out)
{
    *out = NULL;
    mp_tensor *devs[3] = {a, mask, vt};
    mp_status cs = mp_check_same_device(devs, 3, a->storage->device, 1);
    if (cs != MP_OK)
        return cs;
    if (mask->dtype != MP_DTYPE_BOOL)
        return mp_error(MP_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got "
                        "mask with dtype %s", mask->dtype == MP_DTYPE_INT64 ? "long int"
                        : mask->dtype == MP_DTYPE_UINT8 ? "unsigned char"
                        : cpp_name(mask->dtype));
    if (vt && vt->ndim != 0)
        return mp_error(MP_ERR_RUNTIME, "masked_fill_ only supports a 0-dimensional value "
                        "tensor, but got tensor with %d dimension(s).", vt->ndim);
    if (vt)     /* read on the host (one copy for a device tensor) */
        value = mp_tensor_get_item(vt, 0);
    unsigned char bits[8];
    mp_status st = value_bits(a->dtype, value, bits);
    if (st == MP_OK)
        st = fill_plain(a, mask, bits, 0, out);
    if (st != MP_OK)
        return st;
    mp_tensor *ins[2] = {a, vt};
    mp_node *node = NULL;
    st = mp_autograd_record(vt ? "MaskedFillBackward1" : "MaskedFillBackward0",
                            masked_fill_backward, ins, vt ? 2 : 1, out, 1, &node);
    if (st == MP_OK && node)
        st = mp_node_save(node, 0, mask);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- tril / triu ---- */

static mp_status triangle_plain(mp_tensor *a, int upper, int64_t k, mp_tensor **out)
{
    mp_status st = mp_tensor_empty(a->shape, a->ndim, a->dtype, a->storage->device, out);
    if (st != MP_OK || mp_tensor_numel(a) == 0)
        return st;
    mask_job j;
    memset(&j, 0, sizeof j);
    j.kind = upper ? 2 : 1;
    j.nd = a->ndim;
    memcpy(j.shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    j.esz = mp_dtype_size(a->dtype);
    j.in = strided_of(a);
    j.diag = k;
    st = launch_job(&j, a, NULL, *out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status triangle_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    return triangle_plain(gout[0], (int)n->iargs[0], n->iargs[1], &gin[0]);
}

mp_status mp_op_triangle(mp_tensor *a, int upper, int64_t k, mp_tensor **out)
{
    *out = NULL;
    if (a->ndim < 2)
        return mp_error(MP_ERR_RUNTIME, "%s: input tensor must have at least 2 dimensions",
                        upper ? "triu" : "tril");
    /* past the matrix's extent every k gives the same result; clamping keeps row + k exact */
    int64_t ext = a->shape[a->ndim - 2] + a->shape[a->ndim - 1] + 1;
    k = k > ext ? ext : k < -ext ? -ext : k;
    mp_status st = triangle_plain(a, upper, k, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(upper ? "TriuBackward0" : "TrilBackward0", triangle_backward,
                                &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = upper;
        node->iargs[1] = k;
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
