/* ops_split.c - split / unbind (views of one input recorded as ONE node with many outputs, as
 * torch's SplitBackward0 / UnbindBackward0: backward writes each output's gradient, or zeros
 * for outputs that got none, into one tensor of the input's shape), flip (a copy: mpamp has
 * no negative strides in user tensors, but a copy may read through one), nonzero, and the
 * linspace, eye and repeat_interleave(repeats) factories. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../shared/mp_half.h"
#include "../backend.h"
#include "../chunk.h"
#include "../elementwise.h"
#include "ops.h"
#include "ops_index.h"
#include "../view.h"

/* ---- split / unbind ---- */

typedef struct {
    int64_t n;
    int64_t sizes[];        /* piece sizes along dim; unbind: none (every piece is a select) */
} split_ctx;

static mp_status split_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int nd, dim = (int)n->iargs[0], unbind = (int)n->iargs[1];
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    const split_ctx *c = n->ctx;
    mp_device dev = MP_DEVICE_CPU;     /* the input's: where its pieces' gradients are */
    for (int i = n->n_outputs - 1; i >= 0; i--)
        if (gout[i])
            dev = gout[i]->storage->device;
    mp_status st = mp_tensor_empty(shape, nd, n->in_dtypes[0], dev, &gin[0]);
    mp_scalar zero = {0.0, 0, 1};
    for (int64_t i = 0, off = 0; i < n->n_outputs && st == MP_OK; i++) {
        mp_tensor *region = NULL;
        if (unbind) {
            st = mp_view_select(gin[0], dim, i, &region);
        } else {
            st = mp_view_slice(gin[0], dim, off, off + c->sizes[i], 1, &region);
            off += c->sizes[i];
        }
        if (st == MP_OK)
            st = gout[i] ? mp_tensor_copy_(region, gout[i]) : mp_tensor_fill_(region, zero);
        mp_tensor_decref(region);
    }
    return st;
}

/* records the node over the n views in outs (freed on error) */
static mp_status record_pieces(const char *name, mp_tensor *a, int dim, int unbind,
                               const int64_t *sizes, int64_t n, mp_tensor **outs)
{
    mp_node *node = NULL;
    mp_status st = mp_autograd_record(name, split_backward, &a, 1, outs, (int)n, &node);
    if (st == MP_OK && node) {
        split_ctx *c = malloc(sizeof *c + sizeof(int64_t) * (size_t)(unbind ? 0 : n));
        if (!c) {
            st = mp_error(MP_ERR_NOMEM, "out of memory recording split");
        } else {
            c->n = n;
            if (!unbind)
                memcpy(c->sizes, sizes, sizeof(int64_t) * (size_t)n);
            node->ctx = c;
            node->release_ctx = free;
            node->iargs[0] = dim;
            node->iargs[1] = unbind;
        }
    }
    if (st != MP_OK)
        for (int64_t i = 0; i < n; i++) {
            mp_tensor_decref(outs[i]);
            outs[i] = NULL;
        }
    return st;
}

static mp_status check_sizes(const mp_tensor *a, int dim, const int64_t *sizes, int n)
{
    char list[512] = "[", item[32];
    int64_t sum = 0, negative = 0;
    for (int i = 0; i < n; i++) {
        snprintf(item, sizeof item, "%s%lld", i ? ", " : "", (long long)sizes[i]);
        strncat(list, item, sizeof list - strlen(list) - 2);
        negative |= sizes[i] < 0;
        sum += sizes[i] < 0 ? 0 : sizes[i];
    }
    strncat(list, "]", sizeof list - strlen(list) - 1);
    if (negative)
        return mp_error(MP_ERR_RUNTIME, "split_with_sizes expects split_sizes have only "
                        "non-negative entries, but got split_sizes=%s", list);
    if (sum != a->shape[dim])
        return mp_error(MP_ERR_RUNTIME, "split_with_sizes expects split_sizes to sum exactly to "
                        "%lld (input tensor's size at dimension %d), but got split_sizes=%s",
                        (long long)a->shape[dim], dim, list);
    return MP_OK;
}

mp_status mp_op_split(mp_tensor *a, int64_t dim, const int64_t *sizes, int n, int with_sizes,
                      mp_tensor **outs)
{
    int d = 0;
    if (a->ndim == 0)
        return mp_error(MP_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st == MP_OK)
        st = check_sizes(a, d, sizes, n);
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        outs[i] = NULL;
        if (st == MP_OK)
            st = mp_view_slice(a, d, off, off + sizes[i], 1, &outs[i]);
        off += sizes[i];
    }
    if (st != MP_OK) {
        mp_decref_all(outs, n);
        return st;
    }
    return record_pieces(with_sizes ? "SplitWithSizesBackward0" : "SplitBackward0", a, d, 0,
                         sizes, n, outs);
}

mp_status mp_op_unbind(mp_tensor *a, int64_t dim, mp_tensor **outs)
{
    int d = 0;
    if (a->ndim == 0)
        return mp_error(MP_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions",
                        (long long)dim);
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    int64_t n = st == MP_OK ? a->shape[d] : 0;
    for (int64_t i = 0; i < n; i++) {
        outs[i] = NULL;
        if (st == MP_OK)
            st = mp_view_select(a, d, i, &outs[i]);
    }
    if (st != MP_OK) {
        mp_decref_all(outs, (int)n);
        return st;
    }
    return record_pieces("UnbindBackward0", a, d, 1, NULL, n, outs);
}

/* ---- flip ---- */

/* a copy of t reversed along the dims in mask: read through a negatively strided header */
static mp_status flipped_copy(mp_tensor *t, uint32_t mask, mp_tensor **out)
{
    int64_t strides[MP_MAX_DIMS], offset = t->offset;
    mp_status st = mp_tensor_empty(t->shape, t->ndim, t->dtype, MP_DEVICE_CPU, out);
    if (st != MP_OK || mp_tensor_numel(t) == 0)
        return st;
    for (int d = 0; d < t->ndim; d++) {
        int flip = (mask >> d) & 1u;
        strides[d] = flip ? -t->strides[d] : t->strides[d];
        offset += flip ? (t->shape[d] - 1) * t->strides[d] : 0;
    }
    mp_tensor *rev = NULL;
    st = mp_view_make(t, t->shape, strides, t->ndim, offset, &rev);
    if (st == MP_OK)
        st = mp_tensor_copy_(*out, rev);
    mp_tensor_decref(rev);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

static mp_status flip_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    return flipped_copy(gout[0], (uint32_t)n->iargs[0], &gin[0]);
}

mp_status mp_op_flip(mp_tensor *a, uint32_t dim_mask, mp_tensor **out)
{
    MP_HOST_ONLY("flip", a);
    mp_status st = flipped_copy(a, dim_mask, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("FlipBackward0", flip_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node)
        node->iargs[0] = dim_mask;
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- nonzero ---- */

static int is_nonzero(mp_dtype dt, const char *p)
{
    switch (dt) {     /* by bits: -0.0 is zero, NaN is not */
    case MP_DTYPE_FLOAT32: {
        uint32_t b;
        memcpy(&b, p, sizeof b);
        return (b & 0x7fffffffu) != 0;
    }
    case MP_DTYPE_FLOAT16:
    case MP_DTYPE_BFLOAT16: {
        uint16_t b;
        memcpy(&b, p, sizeof b);
        return (b & 0x7fffu) != 0;
    }
    case MP_DTYPE_INT64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v != 0;
    }
    default:
        return *p != 0;
    }
}

mp_status mp_op_nonzero(mp_tensor *a, mp_tensor **out)
{
    MP_HOST_ONLY("nonzero", a);
    mp_tensor *c = NULL;
    *out = NULL;
    mp_status st = mp_tensor_contiguous(a, &c);
    if (st != MP_OK)
        return st;
    const char *p = mp_tensor_data(c);
    size_t isz = mp_dtype_size(a->dtype);
    int64_t n = mp_tensor_numel(c), count = 0, pos[MP_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++)
        count += is_nonzero(a->dtype, p + (size_t)i * isz);
    int64_t shape[2] = {count, a->ndim};
    st = mp_tensor_empty(shape, 2, MP_DTYPE_INT64, MP_DEVICE_CPU, out);
    int64_t *o = st == MP_OK ? mp_tensor_data(*out) : NULL;
    for (int64_t i = 0; o && i < n; i++) {
        if (is_nonzero(a->dtype, p + (size_t)i * isz)) {
            memcpy(o, pos, sizeof(int64_t) * (size_t)a->ndim);
            o += a->ndim;
        }
        for (int d = a->ndim - 1; d >= 0 && ++pos[d] == a->shape[d]; d--)
            pos[d] = 0;
    }
    mp_tensor_decref(c);
    return st;
}

/* ---- factories ---- */

/* v rounded to dt (fp16/bf16 arithmetic is emulated one rounded fp32 op at a time) */
static float round_to(mp_dtype dt, float v)
{
    if (dt == MP_DTYPE_FLOAT16)
        return mp_half_to_f32(mp_f32_to_half(v));
    if (dt == MP_DTYPE_BFLOAT16)
        return mp_bf16_to_f32(mp_f32_to_bf16(v));
    return v;
}

/* Value i of torch's linspace: from start below the middle, from end above it (so both ends
 * are exact); fp32 steps with one rounding per value (torch's vector kernel uses fma), fp16 and
 * bf16 round after every operation (torch computes in those types), int64 in double from
 * the ends converted to int64. */
static double linspace_at(double start, double end, int64_t steps, int64_t i, mp_dtype dt)
{
    int64_t half = steps > 1 ? steps / 2 : 1, k = i < half ? i : steps - 1 - i;
    if (!mp_dtype_is_float(dt)) {      /* the ends are converted first, as torch */
        start = trunc(start), end = trunc(end);
        double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0.0;
        return i < half ? start + step * (double)k : end - step * (double)k;
    }
    float fs = round_to(dt, (float)start), fe = round_to(dt, (float)end), fk = (float)k;
    float step = steps > 1 ? round_to(dt, round_to(dt, fe - fs) / (float)(steps - 1)) : 0.0f;
    if (dt == MP_DTYPE_FLOAT32)
        return i < half ? fmaf(step, fk, fs) : fmaf(-step, fk, fe);
    return i < half ? round_to(dt, fs + round_to(dt, step * fk))
                    : round_to(dt, fe - round_to(dt, step * fk));
}

mp_status mp_op_linspace(double start, double end, int64_t steps, mp_dtype dt,
                         mp_tensor **out)
{
    if (steps < 0)
        return mp_error(MP_ERR_RUNTIME, "number of steps must be non-negative");
    mp_status st = MP_OK;
    double *ends[2] = {&start, &end};
    for (int i = 0; i < 2 && dt == MP_DTYPE_UINT8; i++) {  /* torch converts the ends first */
        double v = *ends[i];
        int whole = v == trunc(v) && v >= -256.0 && v <= 256.0;  /* (an int; -1.0 passes) */
        mp_scalar s = {v, whole ? (int64_t)v : 0, whole};
        if ((st = mp_check_scalar_fits(dt, s)) != MP_OK)
            return st;
        *ends[i] = (double)(uint8_t)(int64_t)trunc(v);
    }
    st = mp_tensor_empty(&steps, 1, dt, MP_DEVICE_CPU, out);
    if (st != MP_OK)
        return st;
    char *p = mp_tensor_data(*out);
    size_t isz = mp_dtype_size(dt);
    for (int64_t i = 0; i < steps; i++) {
        mp_scalar v = {linspace_at(start, end, steps, i, dt), 0, 0};
        mp_store_scalar(dt, p + (size_t)i * isz, v);
    }
    return MP_OK;
}

mp_status mp_op_eye(int64_t n, int64_t m, mp_dtype dt, mp_tensor **out)
{
    if (n < 0)
        return mp_error(MP_ERR_RUNTIME, "n must be greater or equal to 0, got %lld",
                        (long long)n);
    if (m < 0)
        return mp_error(MP_ERR_RUNTIME, "m must be greater or equal to 0, got %lld",
                        (long long)m);
    int64_t shape[2] = {n, m};
    mp_status st = mp_tensor_full(shape, 2, dt, 0.0, out);
    if (st != MP_OK)
        return st;
    int64_t k = n < m ? n : m, stride = m + 1;
    mp_tensor *diag = NULL;
    mp_scalar one = {1.0, 1, 1};
    st = mp_view_make(*out, &k, &stride, 1, 0, &diag);
    if (st == MP_OK)
        st = mp_tensor_fill_(diag, one);
    mp_tensor_decref(diag);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_repeat_index(mp_tensor *repeats, int64_t output_size, mp_tensor **out)
{
    MP_HOST_ONLY("repeat_index", repeats);
    mp_tensor *c = NULL;
    *out = NULL;
    if (repeats->ndim > 1)
        return mp_error(MP_ERR_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
    if (repeats->dtype != MP_DTYPE_INT64)
        return mp_error(MP_ERR_TYPE, "\"repeat_interleave_cpu\" not implemented for '%s'",
                        mp_dtype_torch_name(repeats->dtype));
    mp_status st = mp_tensor_contiguous(repeats, &c);
    if (st != MP_OK)
        return st;
    const int64_t *r = mp_tensor_data(c);
    int64_t n = mp_tensor_numel(c), total = 0;
    for (int64_t i = 0; i < n && st == MP_OK; i++)
        if (r[i] < 0)
            st = mp_error(MP_ERR_RUNTIME, "repeats can not be negative");
        else if (__builtin_add_overflow(total, r[i], &total))
            st = mp_error(MP_ERR_RUNTIME, "repeat_interleave: the total size overflows int64");
    if (st == MP_OK && output_size >= 0 && output_size != total)
        st = mp_error(MP_ERR_RUNTIME, "allocated size does not match required size");
    if (st == MP_OK)
        st = mp_tensor_empty(&total, 1, MP_DTYPE_INT64, MP_DEVICE_CPU, out);
    int64_t *o = st == MP_OK ? mp_tensor_data(*out) : NULL;
    for (int64_t i = 0; o && i < n; i++)
        for (int64_t j = 0; j < r[i]; j++)
            *o++ = i;
    mp_tensor_decref(c);
    return st;
}
