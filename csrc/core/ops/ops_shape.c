/* ops_shape.c - cat and stack (torch's promotion, dim wrapping and legacy skipping of 1-D empty
 * tensors), embedding (row gather; the backward scatter-adds rows in fp32, skipping
 * padding_idx) and train-mode dropout. Dropout draws element i of the row-major order from
 * Philox block (offset + i / 4), word i % 4, so the backward regenerates the same mask from
 * (seed, offset) instead of saving it. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../../cpu/dispatch.h"
#include "../backend.h"
#include "../../shared/mp_kernel_args.h"
#include "../copy.h"
#include "../elementwise.h"
#include "matmul_core.h"
#include "ops.h"
#include "../random.h"
#include "../rows.h"
#include "../view.h"

/* ---- cat / stack ---- */

static int legacy_empty(const int64_t *shape, int nd)
{
    return nd == 1 && shape[0] == 0;
}

/* cat: every tensor that is not legacy-empty has ref's rank and sizes except along dim. */
static mp_status cat_shape(mp_tensor *const *ts, int n, int64_t dim, int64_t *shape, int *nd,
                           int *wdim)
{
    mp_tensor *ref = NULL;
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim == 0)
            return mp_error(MP_ERR_RUNTIME, "zero-dimensional tensor (at position %d) cannot "
                            "be concatenated", i);
        if (!ref && !legacy_empty(ts[i]->shape, ts[i]->ndim))
            ref = ts[i];
    }
    if (!ref) {                       /* all legacy-empty: the result is one of them */
        *nd = 1, shape[0] = 0, *wdim = 0;
        return MP_OK;
    }
    mp_status st = mp_wrap_dim(dim, ref->ndim, wdim);
    if (st != MP_OK)
        return st;
    *nd = ref->ndim;
    memcpy(shape, ref->shape, sizeof(int64_t) * (size_t)ref->ndim);
    shape[*wdim] = 0;
    for (int i = 0; i < n; i++) {
        mp_tensor *t = ts[i];
        if (legacy_empty(t->shape, t->ndim))
            continue;
        if (t->ndim != ref->ndim)
            return mp_error(MP_ERR_SHAPE, "Tensors must have same number of dimensions: got "
                            "%d and %d", ref->ndim, t->ndim);
        for (int d = 0; d < t->ndim; d++)
            if (d != *wdim && t->shape[d] != ref->shape[d])
                return mp_error(MP_ERR_SHAPE, "Sizes of tensors must match except in "
                                "dimension %d. Expected size %lld but got size %lld for tensor "
                                "number %d in the list.", *wdim, (long long)ref->shape[d],
                                (long long)t->shape[d], i);
        if (__builtin_add_overflow(shape[*wdim], t->shape[*wdim], &shape[*wdim]))
            return mp_error(MP_ERR_RUNTIME, "cat: the result's size in dimension %d overflows "
                            "int64", *wdim);
    }
    return MP_OK;
}

/* stack: all shapes equal; the new dim of size n goes at dim (wrapped over ndim + 1). */
static mp_status stack_shape(mp_tensor *const *ts, int n, int64_t dim, int64_t *shape, int *nd,
                             int *wdim)
{
    mp_tensor *ref = ts[0];
    for (int i = 1; i < n; i++) {
        if (ts[i]->ndim != ref->ndim || memcmp(ts[i]->shape, ref->shape, sizeof(int64_t) *
                                               (size_t)ref->ndim) != 0) {
            char a[256], b[256];
            mp_format_shape(a, sizeof a, ref->shape, ref->ndim);
            mp_format_shape(b, sizeof b, ts[i]->shape, ts[i]->ndim);
            return mp_error(MP_ERR_SHAPE, "stack expects each tensor to be equal size, but got "
                            "%s at entry 0 and %s at entry %d", a, b, i);
        }
    }
    if (ref->ndim >= MP_MAX_DIMS)
        return mp_error(MP_ERR_VALUE, "stack: tensors may have at most %d dimensions",
                        MP_MAX_DIMS);
    mp_status st = mp_wrap_dim(dim, ref->ndim + 1, wdim);
    if (st != MP_OK)
        return st;
    *nd = ref->ndim + 1;
    for (int d = 0, j = 0; d < *nd; d++)
        shape[d] = d == *wdim ? n : ref->shape[j++];
    return MP_OK;
}

/* The part of t (the output, or its gradient) that input i fills. off: running offset. */
static mp_status region_of(mp_tensor *t, int stack, int dim, int i, const int64_t *ishape,
                           int ind, int64_t *off, mp_tensor **out)
{
    if (stack)
        return mp_view_select(t, dim, i, out);
    int64_t size = legacy_empty(ishape, ind) ? 0 : ishape[dim];
    mp_status st = mp_view_slice(t, dim, *off, *off + size, 1, out);
    *off += size;
    return st;
}

static mp_status cat_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int dim = (int)n->iargs[0], stack = (int)n->iargs[1], nd;
    int64_t off = 0;
    mp_tensor *g = gout[0];
    mp_status st = MP_OK;
    for (int i = 0; i < n->n_inputs && st == MP_OK; i++) {
        const int64_t *shape = mp_node_in_shape(n, i, &nd);
        mp_tensor *r = NULL;
        if (!stack && legacy_empty(shape, nd) && g->ndim != 1)
            st = n->next[i].node ? mp_tensor_empty(shape, nd, g->dtype, g->storage->device,
                                                   &gin[i])
                                 : MP_OK;
        else if ((st = region_of(g, stack, dim, i, shape, nd, &off, &r)) == MP_OK &&
                 n->next[i].node)
            mp_tensor_incref(gin[i] = r);
        mp_tensor_decref(r);
    }
    return st;
}

static mp_status join(mp_tensor *const *ts, int n, int64_t dim, int stack, mp_tensor **out)
{
    int64_t shape[MP_MAX_DIMS], off = 0;
    int nd = 0, wdim = 0;
    *out = NULL;
    if (n <= 0)
        return stack ? mp_error(MP_ERR_RUNTIME, "stack expects a non-empty TensorList")
                     : mp_error(MP_ERR_VALUE, "torch.cat(): expected a non-empty list of "
                                "Tensors");
    mp_status st = mp_check_same_device(ts, n, ts[0]->storage->device, 0);
    if (st == MP_OK)
        st = stack ? stack_shape(ts, n, dim, shape, &nd, &wdim)
                   : cat_shape(ts, n, dim, shape, &nd, &wdim);
    mp_dtype dt = ts[0]->dtype;
    for (int i = 1; i < n; i++)
        dt = mp_promote_types(dt, ts[i]->dtype);
    if (st == MP_OK)
        st = mp_tensor_empty(shape, nd, dt, ts[0]->storage->device, out);
    for (int i = 0; i < n && st == MP_OK; i++) {
        mp_tensor *r = NULL;
        if (!stack && legacy_empty(ts[i]->shape, ts[i]->ndim))
            continue;
        if ((st = region_of(*out, stack, wdim, i, ts[i]->shape, ts[i]->ndim, &off, &r)) == MP_OK)
            st = mp_tensor_copy_(r, ts[i]);
        mp_tensor_decref(r);
    }
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(stack ? "StackBackward0" : "CatBackward0", cat_backward, ts, n,
                                out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = wdim;
        node->iargs[1] = stack;
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* join under autocast: cat/stack take a list, so their entry casts it here (CPU promotes) */
static mp_status join_entry(mp_tensor *const *ts, int n, int64_t dim, int stack,
                            mp_tensor **out)
{
    if (!mp_autocast_active() || n <= 0)
        return join(ts, n, dim, stack, out);
    mp_tensor **in = calloc((size_t)n, sizeof *in);
    if (!in)
        return mp_error(MP_ERR_NOMEM, "%s: out of memory", stack ? "stack" : "cat");
    mp_status st = mp_autocast_args(stack ? MP_OP_STACK : MP_OP_CAT, ts, n, in);
    if (st == MP_OK) {
        mp_autocast_exclude();
        st = join(in, n, dim, stack, out);
        mp_autocast_include();
        mp_decref_all(in, n);
    }
    free(in);
    return st;
}

mp_status mp_op_cat(mp_tensor *const *ts, int n, int64_t dim, mp_tensor **out)
{
    return join_entry(ts, n, dim, 0, out);
}

mp_status mp_op_stack(mp_tensor *const *ts, int n, int64_t dim, mp_tensor **out)
{
    return join_entry(ts, n, dim, 1, out);
}

/* ---- embedding ---- */

/* Every index in [0, rows); the first one that is not, in the message (as the kernel reads
 * the indices where they live, the check runs there too, and a bad index fails the call). */
static mp_status check_indices(const int64_t *idx, int64_t n, int64_t rows, mp_msg *msg)
{
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= rows) {
            snprintf(msg->text, sizeof msg->text, "index out of range in self (embedding: "
                     "index %lld with %lld rows)", (long long)idx[i], (long long)rows);
            return MP_ERR_INDEX;
        }
    return MP_OK;
}

typedef mp_embedding_args embed_args;   /* shared/mp_kernel_args.h */

/* The MP_KERNEL_EMBEDDING kernel: buffers the indices (count int64), the contiguous weight
 * (rows x d), the output (count x d). */
static mp_status run_gather(void *const *buf, const void *args, mp_msg *msg)
{
    const embed_args *a = args;
    const int64_t *ix = buf[0];
    const char *src = buf[1];
    char *dst = buf[2];
    mp_status st = check_indices(ix, a->count, a->rows, msg);
    if (st != MP_OK)
        return st;
    for (int64_t i = 0; i < a->count; i++)
        memcpy(dst + (size_t)i * a->row_bytes, src + (size_t)ix[i] * a->row_bytes,
               a->row_bytes);
    return MP_OK;
}

/* The MP_KERNEL_EMBEDDING_BACKWARD kernel: buffers the indices, the fp32 contiguous gradient
 * (count x d), the zeroed fp32 weight gradient (rows x d): rows added in index order, so the
 * result is deterministic; padding_idx rows get nothing. */
static mp_status run_scatter(void *const *buf, const void *args, mp_msg *msg)
{
    const embed_args *a = args;
    const int64_t *ix = buf[0];
    const float *src = buf[1];
    float *dst = buf[2];
    /* indices are checked again: the caller may have changed them since the forward */
    mp_status st = check_indices(ix, a->count, a->rows, msg);
    if (st != MP_OK)
        return st;
    for (int64_t i = 0; i < a->count; i++) {
        if (ix[i] == a->pad)
            continue;
        float *row = dst + ix[i] * a->d;
        const float *gr = src + i * a->d;
        for (int64_t j = 0; j < a->d; j++)
            row[j] += gr[j];
    }
    return MP_OK;
}

static mp_status embedding_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *idx = mp_node_saved(n, 0), *g = NULL;
    int wnd;
    const int64_t *wshape = mp_node_in_shape(n, 0, &wnd);
    if (!idx)
        return MP_ERR_RUNTIME;
    embed_args a = {mp_tensor_numel(idx), wshape[0], wshape[1], n->iargs[0], 0};
    mp_status st = mp_tensor_cast(gout[0], MP_DTYPE_FLOAT32, &g);
    if (st == MP_OK)
        st = mp_tensor_full_on(wshape, wnd, MP_DTYPE_FLOAT32, 0.0, idx->storage->device,
                               &gin[0]);
    if (st == MP_OK) {
        mp_tensor *ts[3] = {idx, g, gin[0]};
        st = mp_launch_tensors(idx->storage->device, MP_KERNEL_EMBEDDING_BACKWARD, 3, ts,
                               run_scatter, &a);
    }
    mp_tensor_decref(g);
    return st;
}

static mp_status embedding_gather(mp_tensor *weight, mp_tensor *idx, mp_tensor *out)
{
    mp_tensor *w = NULL;
    mp_status st = mp_tensor_contiguous(weight, &w);
    if (st != MP_OK)
        return st;
    embed_args a = {mp_tensor_numel(idx), weight->shape[0], weight->shape[1], -1,
                    (size_t)weight->shape[1] * mp_dtype_size(weight->dtype)};
    mp_tensor *ts[3] = {idx, w, out};
    st = mp_launch_tensors(out->storage->device, MP_KERNEL_EMBEDDING, 3, ts, run_gather, &a);
    mp_tensor_decref(w);
    return st;
}

mp_status mp_op_embedding(mp_tensor *weight, mp_tensor *indices, int64_t padding_idx,
                          mp_tensor **out)
{
    *out = NULL;
    mp_tensor *devs[2] = {weight, indices};
    mp_status st = mp_check_same_device(devs, 2, weight->storage->device, 0);
    if (st != MP_OK)
        return st;
    if (weight->ndim != 2)
        return mp_error(MP_ERR_RUNTIME, "embedding: 'weight' must be 2-D, got a %d-D tensor",
                        weight->ndim);
    if (indices->dtype != MP_DTYPE_INT64)
        return mp_error(MP_ERR_RUNTIME, "embedding: Expected tensor for argument #1 'indices' "
                        "to have one of the following scalar types: int64; but got %s "
                        "instead", mp_dtype_name(indices->dtype));
    if (indices->ndim + 1 > MP_MAX_DIMS)
        return mp_error(MP_ERR_VALUE, "embedding: indices may have at most %d dimensions",
                        MP_MAX_DIMS - 1);
    int64_t shape[MP_MAX_DIMS];
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[indices->ndim] = weight->shape[1];
    mp_tensor *idx = NULL;
    st = mp_tensor_contiguous(indices, &idx);
    if (st == MP_OK)
        st = mp_tensor_empty(shape, indices->ndim + 1, weight->dtype, weight->storage->device,
                             out);
    if (st == MP_OK)
        st = embedding_gather(weight, idx, *out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("EmbeddingBackward0", embedding_backward, &weight, 1, out, 1,
                                &node);
    if (st == MP_OK && node) {
        node->iargs[0] = padding_idx < 0 ? -1 : padding_idx;
        st = mp_node_save(node, 0, idx);
    }
    mp_tensor_decref(idx);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- dropout ---- */

#define DROP_CHUNK 256      /* a multiple of 4: chunks start on Philox block boundaries */

typedef struct {
    int64_t n;
    mp_dtype sdt, ddt;
    double p;
    uint64_t seed, offset;
} drop_args;

/* The MP_KERNEL_DROPOUT kernel: dst = src * mask, both contiguous (buffers src, dst); mask
 * is 1/(1-p) where element i's uniform draw is below 1 - p, else 0 (so NaN * 0 stays NaN, as
 * torch's multiply). */
static mp_status run_dropout(void *const *bufs, const void *args, mp_msg *msg)
{
    const drop_args *a = args;
    const mp_cpu_kernels *k = mp_cpu();
    float buf[DROP_CHUNK];
    uint32_t words[DROP_CHUNK + 4];     /* + 4: the last block may pass m */
    int64_t n = a->n;
    double p = a->p;
    size_t ssz = mp_dtype_size(a->sdt), dsz = mp_dtype_size(a->ddt);
    const char *s = bufs[0];
    char *d = bufs[1];
    double keep = 1.0 - p;
    float scale = p < 1.0 ? (float)(1.0 / keep) : 0.0f;
    uint32_t below = (uint32_t)ceil(keep * 16777216.0);
    (void)msg;
    for (int64_t i0 = 0; i0 < n; i0 += DROP_CHUNK) {
        int64_t m = n - i0 < DROP_CHUNK ? n - i0 : DROP_CHUNK;
        const char *sp = s + (size_t)i0 * ssz;
        if (a->sdt == MP_DTYPE_FLOAT16)
            k->f16_to_f32((const mp_half *)sp, buf, (size_t)m);
        else if (a->sdt == MP_DTYPE_BFLOAT16)
            k->bf16_to_f32((const mp_bf16 *)sp, buf, (size_t)m);
        else
            memcpy(buf, sp, (size_t)m * sizeof(float));
        if (p > 0.0 && p < 1.0) {
            /* the chunk's Philox words first, then one branch-free (vectorisable) pass:
             * u = (w >> 8) / 2^24 < keep  <=>  (w >> 8) < ceil(keep * 2^24) */
            for (int64_t j = 0; j < m; j += 4)
                mp_philox(a->seed, a->offset + (uint64_t)((i0 + j) / 4), &words[j]);
            for (int64_t i = 0; i < m; i++)
                buf[i] *= (words[i] >> 8) < below ? scale : 0.0f;
        } else {
            for (int64_t i = 0; i < m; i++)
                buf[i] *= scale;
        }
        char *dp = d + (size_t)i0 * dsz;
        if (a->ddt == MP_DTYPE_FLOAT16)
            k->f32_to_f16(buf, (mp_half *)dp, (size_t)m);
        else if (a->ddt == MP_DTYPE_BFLOAT16)
            k->f32_to_bf16(buf, (mp_bf16 *)dp, (size_t)m);
        else
            memcpy(dp, buf, (size_t)m * sizeof(float));
    }
    return MP_OK;
}

/* out (new, contiguous, dtype dt) = a * mask, on a's device */
static mp_status masked(mp_tensor *a, mp_dtype dt, double p, uint64_t seed, uint64_t offset,
                        mp_tensor **out)
{
    mp_tensor *src = NULL;
    mp_status st = mp_tensor_contiguous(a, &src);
    if (st == MP_OK)
        st = mp_tensor_empty(a->shape, a->ndim, dt, a->storage->device, out);
    if (st == MP_OK) {
        drop_args args = {mp_tensor_numel(src), src->dtype, dt, p, seed, offset};
        mp_tensor *ts[2] = {src, *out};
        st = mp_launch_tensors(a->storage->device, MP_KERNEL_DROPOUT, 2, ts, run_dropout,
                               &args);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    mp_tensor_decref(src);
    return st;
}

static mp_status dropout_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *g = gout[0];
    mp_dtype dt = mp_dtype_is_float(g->dtype) ? g->dtype : MP_DTYPE_FLOAT32;
    mp_tensor *gf = NULL;
    mp_status st = MP_OK;
    if (dt == g->dtype)
        mp_tensor_incref(gf = g);
    else
        st = mp_tensor_cast(g, dt, &gf);
    if (st == MP_OK)
        st = masked(gf, dt, n->fargs[0], (uint64_t)n->iargs[0], (uint64_t)n->iargs[1],
                    &gin[0]);
    mp_tensor_decref(gf);
    return st;
}

mp_status mp_op_dropout(mp_tensor *a, double p, uint64_t seed, uint64_t offset,
                        mp_tensor **out, uint64_t *blocks_used)
{
    *out = NULL;
    *blocks_used = 0;
    if (!(p >= 0.0 && p <= 1.0))
        return mp_error(MP_ERR_VALUE, "dropout probability has to be between 0 and 1, but got "
                        "%g", p);
    if (!mp_dtype_is_float(a->dtype))
        return mp_error(MP_ERR_RUNTIME, "dropout: result type Float can't be cast to the "
                        "desired output type %s", mp_dtype_torch_name(a->dtype));
    mp_status st = masked(a, a->dtype, p, seed, offset, out);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("NativeDropoutBackward0", dropout_backward, &a, 1, out, 1,
                                &node);
    if (st == MP_OK && node) {
        node->iargs[0] = (int64_t)seed;
        node->iargs[1] = (int64_t)offset;
        node->fargs[0] = p;
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
        return st;
    }
    if (p > 0.0 && p < 1.0)
        *blocks_used = (uint64_t)((mp_tensor_numel(a) + 3) / 4);
    return MP_OK;
}
