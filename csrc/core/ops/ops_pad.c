/* ops_pad.c - torch.nn.functional.pad (constant for any number of dims; reflect, replicate and
 * circular for the last 1-3 dims; negative pads crop) with backward, and one_hot.
 * pad is an index map: per padded dim a table gives, for each output coordinate, the input
 * coordinate it copies (or none: the constant). The forward copies elements as bytes, so
 * every dtype pads exactly; the backward scatter-adds the gradient in fp32 through the same
 * tables. Argument checks that raise NotImplementedError in torch live in mpamp/nn. */
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../chunk.h"
#include "../backend.h"
#include "../copy.h"
#include "../elementwise.h"
#include "loss.h"
#include "ops.h"
#include "../rows.h"

#define NONE INT64_MIN      /* table entry: the output element is the constant */

typedef struct {
    int mode, ndim;
    int64_t lo[MP_MAX_DIMS], hi[MP_MAX_DIMS];   /* per input dim (0 for unpadded dims) */
    int64_t in_shape[MP_MAX_DIMS], out_shape[MP_MAX_DIMS];
} pad_spec;

static int64_t max0(int64_t v)
{
    return v > 0 ? v : 0;
}

/* Input coordinate for output coordinate j of a dim of size s, or NONE. */
static int64_t source_index(const pad_spec *p, int d, int64_t j)
{
    int64_t s = p->in_shape[d], l = p->lo[d], i = j - l;
    switch (p->mode) {
    case MP_PAD_REFLECT:
        if (i < 0)
            i = -i;
        return i >= s ? 2 * (s - 1) - i : i;
    case MP_PAD_REPLICATE:
        return i < 0 ? 0 : i >= s ? s - 1 : i;
    case MP_PAD_CIRCULAR: {
        /* the kept part (after negative pads) wraps around, as torch's copies do */
        int64_t base = max0(-l), c = s - base - max0(-p->hi[d]);
        int64_t k = (j - max0(l)) % c;
        return base + (k < 0 ? k + c : k);
    }
    default:
        return i >= 0 && i < s ? i : NONE;
    }
}

/* tables[d][j] = source offset (index * stride) of output coordinate j, or NONE. */
static mp_status build_tables(const pad_spec *p, const int64_t *strides, int64_t **tables)
{
    for (int d = 0; d < p->ndim; d++) {
        int64_t n = p->out_shape[d];
        tables[d] = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        if (!tables[d]) {
            for (int e = 0; e < d; e++)
                free(tables[e]);
            return mp_error(MP_ERR_NOMEM, "pad: out of memory for the index tables");
        }
        for (int64_t j = 0; j < n; j++) {
            int64_t i = p->lo[d] || p->hi[d] ? source_index(p, d, j) : j;
            tables[d][j] = i == NONE ? NONE : i * strides[d];
        }
    }
    return MP_OK;
}

static void free_tables(int64_t **tables, int n)
{
    for (int d = 0; d < n; d++)
        free(tables[d]);
}

/* Calls row(ctx, out_row, src_base_or_NONE, last_table) for every output row (all dims but
 * the last), in row-major order; a 0-d tensor is one row of one element. */
typedef void (*row_fn)(void *ctx, int64_t out_row, int64_t base, const int64_t *last,
                       int64_t len);

static void walk_rows(const pad_spec *p, int64_t *const *tables, row_fn fn, void *ctx)
{
    int nd = p->ndim, outer = nd - 1;
    int64_t len = nd ? p->out_shape[nd - 1] : 1, zero = 0, rows = 1, idx[MP_MAX_DIMS] = {0};
    const int64_t *last = nd ? tables[nd - 1] : &zero;
    for (int d = 0; d < outer; d++)
        rows *= p->out_shape[d];
    if (len == 0)
        return;
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = 0;
        for (int d = 0; d < outer && base != NONE; d++)
            base = tables[d][idx[d]] == NONE ? NONE : base + tables[d][idx[d]];
        fn(ctx, r, base, last, len);
        for (int d = outer - 1; d >= 0; d--) {
            if (++idx[d] < p->out_shape[d])
                break;
            idx[d] = 0;
        }
    }
}

typedef struct {
    const char *src;
    char *dst;
    size_t es;
    char value[8];
} copy_ctx;

static void copy_row(void *vctx, int64_t r, int64_t base, const int64_t *last, int64_t len)
{
    copy_ctx *c = vctx;
    char *dst = c->dst + (size_t)(r * len) * c->es;
    if (c->es == 4 && base != NONE) {     /* the common float32 case, without memcpy calls */
        const uint32_t *src = (const uint32_t *)c->src + base;
        uint32_t *d32 = (uint32_t *)dst, v;
        memcpy(&v, c->value, 4);
        for (int64_t j = 0; j < len; j++)
            d32[j] = last[j] == NONE ? v : src[last[j]];
        return;
    }
    for (int64_t j = 0; j < len; j++, dst += c->es) {
        if (base == NONE || last[j] == NONE)
            memcpy(dst, c->value, c->es);
        else
            memcpy(dst, c->src + (base + last[j]) * (int64_t)c->es, c->es);
    }
}

typedef struct {
    const float *g;
    float *gin;
} grad_ctx;

static void grad_row(void *vctx, int64_t r, int64_t base, const int64_t *last, int64_t len)
{
    grad_ctx *c = vctx;
    const float *g = c->g + r * len;
    if (base == NONE)
        return;
    for (int64_t j = 0; j < len; j++)
        if (last[j] != NONE)
            c->gin[base + last[j]] += g[j];
}

static mp_status pad_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    const pad_spec *p = n->ctx;
    int64_t strides[MP_MAX_DIMS], *tables[MP_MAX_DIMS];
    mp_tensor *g = NULL;
    mp_contiguous_strides(p->in_shape, p->ndim, strides);
    mp_status st = mp_loss_dense(gout[0], p->out_shape, p->ndim, &g);
    if (st == MP_OK)
        st = mp_tensor_full(p->in_shape, p->ndim, MP_DTYPE_FLOAT32, 0.0, &gin[0]);
    if (st == MP_OK && (st = build_tables(p, strides, tables)) == MP_OK) {
        grad_ctx c = {mp_tensor_data(g), mp_tensor_data(gin[0])};
        walk_rows(p, tables, grad_row, &c);
        free_tables(tables, p->ndim);
    }
    mp_tensor_decref(g);
    return st;
}

static mp_status too_small(const pad_spec *p, int k)
{
    const int64_t *s = p->in_shape + p->ndim - k, *o = p->out_shape + p->ndim - k;
    if (k == 1)
        return mp_error(MP_ERR_RUNTIME, "input (W: %lld) is too small. Calculated output W: "
                        "%lld", (long long)s[0], (long long)o[0]);
    if (k == 2)
        return mp_error(MP_ERR_RUNTIME, "input (H: %lld, W: %lld ) is too small. Calculated "
                        "output H: %lld W: %lld", (long long)s[0], (long long)s[1],
                        (long long)o[0], (long long)o[1]);
    return mp_error(MP_ERR_RUNTIME, "input (D: %lld H: %lld, W: %lld) is too small. Calculated "
                    "output D: %lld H: %lld W: %lld", (long long)s[0], (long long)s[1],
                    (long long)s[2], (long long)o[0], (long long)o[1], (long long)o[2]);
}

/* torch's checks of the reflect/replicate/circular kernels over the k padded dims (the last
 * dim first, as torch reports them) */
static mp_status check_mode(const pad_spec *p, int k)
{
    char sh[256];
    int nd = p->ndim, batch = nd == k + 2, any_neg = 0, all_small = 1;
    mp_format_shape(sh, sizeof sh, p->in_shape, nd);
    if (nd != k + 1 && nd != k + 2)
        return mp_error(MP_ERR_RUNTIME, "pad: mode needs a %dD or %dD input for %d padded "
                        "dims, got %dD", k + 1, k + 2, k, nd);
    for (int d = batch; d < nd && p->mode != MP_PAD_CIRCULAR; d++)
        if (p->in_shape[d] == 0)
            return mp_error(MP_ERR_RUNTIME, "Expected %dD or %dD (batch mode) tensor with "
                            "possibly 0 batch size and other non-zero dimensions for input, "
                            "but got: %s", k + 1, k + 2, sh);
    for (int i = 0; i < k; i++) {
        int d = nd - 1 - i;
        int64_t s = p->in_shape[d], o = p->out_shape[d], l = p->lo[d], h = p->hi[d];
        if (p->mode == MP_PAD_REFLECT && (l >= s || h >= s))
            return mp_error(MP_ERR_RUNTIME, "Argument #%d: Padding size should be less than "
                            "the corresponding input dimension, but got: padding (%lld, %lld) "
                            "at dimension %d of input %s", 4 + 2 * i, (long long)l,
                            (long long)h, d, sh);
        if (p->mode == MP_PAD_CIRCULAR && (l > s || h > s))
            return mp_error(MP_ERR_RUNTIME, "Padding value causes wrapping around more than "
                            "once.");
        if (p->mode == MP_PAD_CIRCULAR && o < 0)
            return mp_error(MP_ERR_RUNTIME, "Negative padding value is resulting in an empty "
                            "dimension");
        if (p->mode == MP_PAD_CIRCULAR && o > 0 && s - max0(-l) - max0(-h) <= 0)
            return mp_error(MP_ERR_RUNTIME, "pad: circular padding of an empty remainder "
                            "(the negative pads crop the whole dimension %d)", d);
        any_neg |= o < 0;
        all_small &= o < 1;
    }
    if (p->mode != MP_PAD_CIRCULAR && (any_neg || all_small))
        return too_small(p, k);
    return MP_OK;
}

static mp_status pad_spec_init(mp_tensor *a, const int64_t *pad, int npad, int mode,
                               pad_spec *p)
{
    if (npad % 2)
        return mp_error(MP_ERR_RUNTIME, "Padding length must be divisible by 2");
    if (npad / 2 > a->ndim)
        return mp_error(MP_ERR_RUNTIME, "Padding length should be less than or equal to two "
                        "times the input dimension but got padding length %d and input of "
                        "dimension %d", npad, a->ndim);
    if (mode < MP_PAD_CONSTANT || mode > MP_PAD_CIRCULAR)
        return mp_error(MP_ERR_VALUE, "pad: unknown mode %d", mode);
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->ndim = a->ndim;
    for (int d = 0; d < a->ndim; d++)
        p->in_shape[d] = a->shape[d];
    for (int i = 0; i < npad / 2; i++) {
        int d = a->ndim - 1 - i;
        p->lo[d] = pad[2 * i];
        p->hi[d] = pad[2 * i + 1];
    }
    for (int d = 0; d < a->ndim; d++)
        p->out_shape[d] = p->in_shape[d] + p->lo[d] + p->hi[d];
    if (mode != MP_PAD_CONSTANT && npad > 0)
        return check_mode(p, npad / 2);
    for (int d = 0; d < a->ndim; d++)
        if (p->out_shape[d] < 0)
            return mp_error(MP_ERR_RUNTIME, "narrow(): length must be non-negative.");
    return MP_OK;
}

static const char *pad_node_name(int mode, int k)
{
    static const char *const names[3][3] = {
        {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0"},
        {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0", "ReplicationPad3DBackward0"},
        {"CircularPad1DBackward0", "CircularPad2DBackward0", "CircularPad3DBackward0"},
    };
    if (mode == MP_PAD_CONSTANT || k < 1 || k > 3)
        return "ConstantPadNdBackward0";
    return names[mode - 1][k - 1];
}

static mp_status pad_record(mp_tensor *a, const pad_spec *p, int npad, mp_tensor **out)
{
    mp_node *node = NULL;
    mp_status st = mp_autograd_record(pad_node_name(p->mode, npad / 2), pad_backward, &a, 1,
                                      out, 1, &node);
    if (st != MP_OK || !node)
        return st;
    pad_spec *copy = malloc(sizeof *copy);
    if (!copy)
        return mp_error(MP_ERR_NOMEM, "pad: out of memory");
    *copy = *p;
    node->ctx = copy;
    node->release_ctx = free;
    return MP_OK;
}

/* The autocast row of a pad: torch lists the reflection/replication kernels by dim count
 * (k = npad / 2); constant and circular pads have none (-1). */
static int pad_autocast_op(int mode, int k)
{
    static const int rows[2][3] = {
        {MP_OP_REFLECTION_PAD1D, MP_OP_REFLECTION_PAD2D, MP_OP_REFLECTION_PAD3D},
        {MP_OP_REPLICATION_PAD1D, MP_OP_REPLICATION_PAD2D, MP_OP_REPLICATION_PAD3D},
    };
    if ((mode != MP_PAD_REFLECT && mode != MP_PAD_REPLICATE) || k < 1 || k > 3)
        return -1;
    return rows[mode - MP_PAD_REFLECT][k - 1];
}

mp_status mp_op_pad(mp_tensor *a, const int64_t *pad, int npad, int mode, mp_scalar value,
                    mp_tensor **out)
{
    int ac = pad_autocast_op(mode, npad / 2);
    MP_AUTOCAST_ENTRY_IF(ac >= 0, ac, mp_op_pad(ac_[0], pad, npad, mode, value, out), a);
    MP_HOST_ONLY("pad", a);
    pad_spec p;
    int64_t *tables[MP_MAX_DIMS];
    *out = NULL;
    mp_status st = pad_spec_init(a, pad, npad, mode, &p);
    if (st == MP_OK && mode == 0) {     /* uint8's range for torch's value, a float: -1 fails */
        mp_scalar fv = {value.is_int ? (double)value.i : value.f, 0, 0};
        st = mp_check_scalar_fits(a->dtype, fv);
    }
    if (st == MP_OK)
        st = mp_tensor_empty(p.out_shape, p.ndim, a->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK && (st = build_tables(&p, a->strides, tables)) == MP_OK) {
        copy_ctx c = {mp_tensor_data(a), mp_tensor_data(*out), mp_dtype_size(a->dtype), {0}};
        mp_store_scalar(a->dtype, c.value, value);
        walk_rows(&p, tables, copy_row, &c);
        free_tables(tables, p.ndim);
    }
    if (st == MP_OK && mp_dtype_is_float(a->dtype))
        st = pad_record(a, &p, npad, out);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- one_hot ---- */

mp_status mp_op_one_hot(mp_tensor *a, int64_t num_classes, mp_tensor **out)
{
    MP_HOST_ONLY("one_hot", a);
    int64_t shape[MP_MAX_DIMS], n = mp_tensor_numel(a), lo = 0, hi = -1;
    mp_tensor *idx = NULL;
    *out = NULL;
    if (a->dtype != MP_DTYPE_INT64)
        return mp_error(MP_ERR_RUNTIME, "one_hot is only applicable to index tensor of type "
                        "LongTensor.");
    if (a->ndim >= MP_MAX_DIMS)
        return mp_error(MP_ERR_VALUE, "one_hot: the result would have more than %d dims",
                        MP_MAX_DIMS);
    if (n == 0 && num_classes <= 0)
        return mp_error(MP_ERR_RUNTIME, "Can not infer total number of classes from empty "
                        "tensor.");
    mp_status st = mp_tensor_contiguous(a, &idx);
    if (st != MP_OK)
        return st;
    const int64_t *v = mp_tensor_data(idx);
    for (int64_t i = 0; i < n; i++) {
        lo = i == 0 || v[i] < lo ? v[i] : lo;
        hi = i == 0 || v[i] > hi ? v[i] : hi;
    }
    if (n > 0 && lo < 0)
        st = mp_error(MP_ERR_RUNTIME, "Class values must be non-negative.");
    else if (n > 0 && num_classes == -1)
        num_classes = hi + 1;
    else if (n > 0 && num_classes <= hi)
        st = mp_error(MP_ERR_RUNTIME, "Class values must be smaller than num_classes.");
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    shape[a->ndim] = num_classes;
    if (st == MP_OK)
        st = mp_tensor_full(shape, a->ndim + 1, MP_DTYPE_INT64, 0.0, out);
    if (st == MP_OK) {
        int64_t *o = mp_tensor_data(*out);
        for (int64_t i = 0; i < n; i++)
            o[i * num_classes + v[i]] = 1;
    }
    mp_tensor_decref(idx);
    return st;
}
