/* view.c - metadata-only view operations (see view.h). Every function validates its
 * arguments and reports errors with torch's wording; none reads or writes tensor data. */
#include "view.h"

#include <string.h>

#include "copy.h"

mp_status mp_wrap_dim(int64_t dim, int ndim, int *out)
{
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return mp_error(MP_ERR_INDEX, "Dimension out of range (expected to be in range of "
                        "[%d, %d], but got %lld)", -n, n - 1, (long long)dim);
    *out = (int)(dim < 0 ? dim + n : dim);
    return MP_OK;
}

mp_status mp_view_make(mp_tensor *t, const int64_t *shape, const int64_t *strides, int ndim,
                       int64_t offset, mp_tensor **out)
{
    mp_status st = mp_shape_check_extent(shape, ndim);
    if (st != MP_OK)
        return st;
    *out = mp_tensor_on_storage(t->storage, t->dtype, shape, strides, ndim, offset);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

/* Strides for viewing t with `shape` without copying, or 0 when impossible. Walks t's dims
 * from the innermost, grouping them into chunks that are contiguous among themselves; every
 * chunk must be covered exactly by a run of the new dims. */
static int view_strides(const mp_tensor *t, const int64_t *shape, int ndim, int64_t *strides)
{
    int64_t numel = mp_tensor_numel(t);
    if (numel == 0 || t->ndim == 0) {
        mp_contiguous_strides(shape, ndim, strides);
        return 1;
    }
    int vd = ndim - 1;
    int64_t base = t->strides[t->ndim - 1], tn = 1, vn = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        tn *= t->shape[d];
        int chunk_ends = d == 0 || (t->shape[d - 1] != 1 && t->strides[d - 1] != tn * base);
        if (!chunk_ends)
            continue;
        while (vd >= 0 && (vn < tn || shape[vd] == 1)) {
            strides[vd] = vn * base;
            vn *= shape[vd];
            vd--;
        }
        if (vn != tn)
            return 0;
        if (d > 0) {
            base = t->strides[d - 1];
            tn = 1;
            vn = 1;
        }
    }
    return vd == -1;
}

mp_status mp_view_reshape(mp_tensor *t, const int64_t *shape_in, int ndim, int view_only,
                          mp_tensor **out)
{
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    char a[256], b[256];
    if (ndim > MP_MAX_DIMS)
        return mp_error(MP_ERR_VALUE, "tensors may have at most %d dimensions, got %d",
                        MP_MAX_DIMS, ndim);
    int64_t numel = mp_tensor_numel(t), known = 1;
    int infer = -1, overflow = 0;
    for (int i = 0; i < ndim; i++) {
        shape[i] = shape_in[i];
        if (shape[i] == -1 && infer < 0) {
            infer = i;
        } else if (shape[i] == -1) {
            return mp_error(MP_ERR_SHAPE, "only one dimension can be inferred");
        } else if (shape[i] < 0) {
            return mp_error(MP_ERR_SHAPE, "invalid shape dimension %lld", (long long)shape[i]);
        } else {
            overflow |= __builtin_mul_overflow(known, shape[i], &known);
        }
    }
    int bad_size = overflow || (infer >= 0 ? known == 0 || numel % known != 0 : known != numel);
    if (bad_size) {
        mp_format_shape(a, sizeof a, shape_in, ndim);      /* only on the error path */
        mp_format_shape(b, sizeof b, t->shape, t->ndim);
        return mp_error(MP_ERR_SHAPE, "shape '%s' is invalid for input of size %lld "
                        "(input shape %s)", a, (long long)numel, b);
    }
    if (infer >= 0)
        shape[infer] = numel / known;
    if (view_strides(t, shape, ndim, strides))
        return mp_view_make(t, shape, strides, ndim, t->offset, out);
    if (view_only) {
        mp_format_shape(a, sizeof a, shape_in, ndim);
        mp_format_shape(b, sizeof b, t->shape, t->ndim);
        return mp_error(MP_ERR_SHAPE, "view size is not compatible with input tensor's size "
                        "and stride (at least one dimension spans across two contiguous "
                        "subspaces). Use .reshape(...) instead. (input shape %s, view %s)",
                        b, a);
    }
    mp_tensor *c;
    mp_status st = mp_tensor_contiguous(t, &c);
    if (st != MP_OK)
        return st;
    mp_contiguous_strides(shape, ndim, strides);
    st = mp_view_make(c, shape, strides, ndim, c->offset, out);
    mp_tensor_decref(c);
    return st;
}

mp_status mp_view_permute(mp_tensor *t, const int64_t *dims, int ndim, mp_tensor **out)
{
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    int seen[MP_MAX_DIMS] = {0};
    if (ndim != t->ndim)
        return mp_error(MP_ERR_SHAPE, "permute(): number of dimensions in the tensor "
                        "input does not match the length of the desired ordering of dimensions "
                        "i.e. input.dim() = %d is not equal to len(dims) = %d", t->ndim, ndim);
    for (int i = 0; i < ndim; i++) {
        int d = 0;
        mp_status st = mp_wrap_dim(dims[i], ndim, &d);
        if (st != MP_OK)
            return st;
        if (seen[d])
            return mp_error(MP_ERR_SHAPE, "permute(): duplicate dims are not allowed.");
        seen[d] = 1;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return mp_view_make(t, shape, strides, ndim, t->offset, out);
}

mp_status mp_view_transpose(mp_tensor *t, int64_t d0, int64_t d1, mp_tensor **out)
{
    int a = 0, b = 0;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    mp_status st = mp_wrap_dim(d0, t->ndim, &a);
    if (st == MP_OK)
        st = mp_wrap_dim(d1, t->ndim, &b);
    if (st != MP_OK)
        return st;
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        shape[a] = t->shape[b], shape[b] = t->shape[a];
        strides[a] = t->strides[b], strides[b] = t->strides[a];
    }
    return mp_view_make(t, shape, strides, t->ndim, t->offset, out);
}

mp_status mp_view_unsqueeze(mp_tensor *t, int64_t dim, mp_tensor **out)
{
    int d = 0;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    if (t->ndim >= MP_MAX_DIMS)
        return mp_error(MP_ERR_VALUE, "tensors may have at most %d dimensions", MP_MAX_DIMS);
    mp_status st = mp_wrap_dim(dim, t->ndim + 1, &d);
    if (st != MP_OK)
        return st;
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = d < t->ndim ? t->strides[d] * t->shape[d] : 1;
            continue;
        }
        shape[i] = t->shape[j];
        strides[i] = t->strides[j++];
    }
    return mp_view_make(t, shape, strides, t->ndim + 1, t->offset, out);
}

mp_status mp_view_squeeze(mp_tensor *t, int64_t dim, int all_dims, mp_tensor **out)
{
    int d = -1, n = 0;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    if (!all_dims) {
        mp_status st = mp_wrap_dim(dim, t->ndim, &d);
        if (st != MP_OK)
            return st;
    }
    for (int i = 0; i < t->ndim; i++) {
        int drop = t->shape[i] == 1 && (all_dims || i == d);
        if (!drop) {
            shape[n] = t->shape[i];
            strides[n++] = t->strides[i];
        }
    }
    return mp_view_make(t, shape, strides, n, t->offset, out);
}

mp_status mp_view_expand(mp_tensor *t, const int64_t *shape_in, int ndim, mp_tensor **out)
{
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    char a[256], b[256];
    if (ndim < t->ndim || ndim > MP_MAX_DIMS) {
        mp_format_shape(a, sizeof a, shape_in, ndim);
        mp_format_shape(b, sizeof b, t->shape, t->ndim);
        return mp_error(MP_ERR_SHAPE, "expand(%s): the number of sizes provided (%d) must be "
                        "greater or equal to the number of dimensions in the tensor (%d)",
                        a, ndim, t->ndim);
    }
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int j = i - lead;
        int64_t have = j >= 0 ? t->shape[j] : 1;
        int64_t want = shape_in[i];
        if (want == -1 && j >= 0) {
            shape[i] = have, strides[i] = t->strides[j];
        } else if (want < 0) {
            return mp_error(MP_ERR_SHAPE, "expand: the expanded size %lld is not allowed in a "
                            "leading, non-existing dimension %d", (long long)want, i);
        } else if (have == want) {
            shape[i] = want, strides[i] = j >= 0 ? t->strides[j] : 0;
        } else if (have == 1) {
            shape[i] = want, strides[i] = 0;
        } else {
            mp_format_shape(a, sizeof a, shape_in, ndim);
            mp_format_shape(b, sizeof b, t->shape, t->ndim);
            return mp_error(MP_ERR_SHAPE, "The expanded size of the tensor (%lld) must match "
                            "the existing size (%lld) at non-singleton dimension %d.  Target "
                            "sizes: %s.  Tensor sizes: %s", (long long)want, (long long)have,
                            i, a, b);
        }
    }
    return mp_view_make(t, shape, strides, ndim, t->offset, out);
}

mp_status mp_view_slice(mp_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step,
                        mp_tensor **out)
{
    int d = 0;
    mp_status st = mp_wrap_dim(dim, t->ndim, &d);
    if (st != MP_OK)
        return st;
    if (t->ndim == 0)
        return mp_error(MP_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor.");
    if (step <= 0)
        return mp_error(MP_ERR_VALUE, "step must be greater than zero");
    int64_t n = t->shape[d];
    if (start < 0)
        start = start + n < 0 ? 0 : start + n;
    if (stop < 0)
        stop = stop + n < 0 ? 0 : stop + n;
    if (start > n)
        start = n;
    if (stop > n)
        stop = n;
    int64_t len = stop > start ? (stop - start + step - 1) / step : 0;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    shape[d] = len;
    strides[d] = t->strides[d] * step;
    return mp_view_make(t, shape, strides, t->ndim, t->offset + start * t->strides[d], out);
}

mp_status mp_view_select(mp_tensor *t, int64_t dim, int64_t index, mp_tensor **out)
{
    int d = 0;
    if (t->ndim == 0)
        return mp_error(MP_ERR_INDEX, "invalid index of a 0-dim tensor. Use `tensor.item()` "
                        "in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to "
                        "a number");
    mp_status st = mp_wrap_dim(dim, t->ndim, &d);
    if (st != MP_OK)
        return st;
    int64_t n = t->shape[d];
    if (index < -n || index >= n)
        return mp_error(MP_ERR_INDEX, "index %lld is out of bounds for dimension %d with "
                        "size %lld", (long long)index, d, (long long)n);
    if (index < 0)
        index += n;
    int64_t shape[MP_MAX_DIMS], strides[MP_MAX_DIMS];
    for (int i = 0, j = 0; i < t->ndim; i++) {
        if (i == d)
            continue;
        shape[j] = t->shape[i];
        strides[j++] = t->strides[i];
    }
    return mp_view_make(t, shape, strides, t->ndim - 1, t->offset + index * t->strides[d],
                        out);
}

mp_status mp_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb,
                              int64_t *out, int *nout)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
        if (x != y && x != 1 && y != 1) {
            char sa[256], sb[256];
            mp_format_shape(sa, sizeof sa, a, na);
            mp_format_shape(sb, sizeof sb, b, nb);
            return mp_error(MP_ERR_SHAPE, "The size of tensor a (%lld) must match the size of "
                            "tensor b (%lld) at non-singleton dimension %d (shapes %s and %s)",
                            (long long)x, (long long)y, i, sa, sb);
        }
        out[i] = x == 1 ? y : x;
    }
    *nout = n;
    return MP_OK;
}
