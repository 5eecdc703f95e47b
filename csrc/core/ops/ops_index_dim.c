/* ops_index_dim.c - the index_* ops along one dim with a vector of indices: index_select,
 * index_add (alpha), index_copy, index_fill, each with torch's checks and messages (which
 * differ from op to op, as torch's do). A 0-dim tensor takes part as a 1-element vector. One
 * walk of cpu/index_kernels.c over the selected lines does the work; index_select's backward
 * is an index_add into fp32 zeros. */
#include <string.h>

#include "../amp/autocast.h"
#include "../../cpu/index_kernels.h"
#include "../backend.h"
#include "../chunk.h"
#include "../elementwise.h"
#include "ops.h"
#include "ops_index.h"
#include "../view.h"

/* t viewed with at least one dim (a 0-dim tensor as [1]); new reference */
static mp_status at_least_1d(mp_tensor *t, mp_tensor **out)
{
    int64_t one = 1;
    if (t->ndim) {
        mp_tensor_incref(*out = t);
        return MP_OK;
    }
    return mp_view_make(t, &one, &one, 1, t->offset, out);
}

/* other[..., i, ...] (mode) data[..., index[i], ...] over other's shape (both >= 1-d) */
static void line_walk(mp_tensor *data, int dim, mp_tensor *index, mp_tensor *other,
                      mp_index_mode mode, double alpha)
{
    mp_index_walk w;
    memset(&w, 0, sizeof w);
    w.ndim = other->ndim;
    w.data = mp_tensor_data(data);
    w.other = mp_tensor_data(other);
    w.dtype = data->dtype;
    w.alpha = alpha;
    w.n_idx = 1;
    w.idx[0] = mp_tensor_data(index);
    w.mul[0] = data->strides[dim];
    w.size[0] = data->shape[dim];
    for (int d = 0; d < other->ndim; d++) {
        w.shape[d] = other->shape[d];
        w.ostr[d] = other->strides[d];
        w.dstr[d] = d == dim ? 0 : data->strides[d];
        w.istr[0][d] = d == dim && index->ndim ? index->strides[0] : 0;
    }
    mp_index_run(&w, mode);
}

typedef enum { LINE_SELECT, LINE_ADD, LINE_COPY, LINE_FILL } line_op;

/* the first index outside [lo, size) with each op's message; lo is -size or 0 */
static mp_status check_range(line_op op, mp_tensor *index, int64_t size, int dim)
{
    mp_tensor *c = NULL;
    mp_status st = mp_tensor_contiguous(index, &c);
    if (st != MP_OK)
        return st;
    const int64_t *v = mp_tensor_data(c);
    int64_t lo = op == LINE_FILL ? -size : 0, bad = 0, n = mp_tensor_numel(c), i = 0;
    while (i < n && v[i] >= lo && v[i] < size)
        i++;
    if (i < n)
        bad = v[i];
    mp_tensor_decref(c);
    if (i == n)
        return MP_OK;
    if (op == LINE_SELECT)
        return mp_error(MP_ERR_INDEX, "index out of range in self");
    if (op == LINE_COPY)
        return mp_error(MP_ERR_INDEX, "index_copy_(): index %lld is out of bounds for dimension "
                        "%d with size %lld", (long long)bad, dim, (long long)size);
    return mp_error(op == LINE_ADD ? MP_ERR_RUNTIME : MP_ERR_INDEX, "index %lld is out of "
                    "bounds for dimension %d with size %lld", (long long)bad, dim,
                    (long long)size);
}

static mp_status check_index(line_op op, mp_tensor *index)
{
    static const char *const dtype_msg[] = {
        "index_select(): Expected dtype int32 or int64 for index",
        "index_add_(): Expected dtype int32/int64 for index but got: %s",
        "index_copy_(): Expected a long tensor for index, but got %s",
        "index_fill_(): Expected dtype int64 for index."};
    if (index->dtype != MP_DTYPE_INT64)
        return mp_error(op == LINE_FILL ? MP_ERR_INDEX : MP_ERR_RUNTIME, dtype_msg[op],
                        mp_dtype_torch_name(index->dtype));
    if (index->ndim <= 1)
        return MP_OK;
    char s[256];
    mp_format_shape(s, sizeof s, index->shape, index->ndim);
    switch (op) {
    case LINE_SELECT:
        return mp_error(MP_ERR_INDEX, "index_select(): Index is supposed to be a vector");
    case LINE_ADD:
        return mp_error(MP_ERR_INDEX, "index_add_(): Index is supposed to be a vector, but got "
                        "dim: %d with type: Long and size: %s", index->ndim, s);
    case LINE_COPY:
        return mp_error(MP_ERR_INDEX, "index_copy_(): Index should have dimension 1 or 0 (got "
                        "%d)", index->ndim);
    default:
        return mp_error(MP_ERR_RUNTIME, "Index has to be a vector/scalar");
    }
}

/* index_add / index_copy: src has a's shape with dim replaced by the number of indices */
static mp_status check_source(line_op op, mp_tensor *a, int dim, mp_tensor *index,
                              mp_tensor *src)
{
    const char *fn = op == LINE_ADD ? "index_add_" : "index_copy_";
    int64_t n = mp_tensor_numel(index);
    if (src->dtype != a->dtype)
        return op == LINE_ADD
            ? mp_error(MP_ERR_RUNTIME, "index_add_(): self (%s) and source (%s) must have the "
                       "same scalar type", mp_dtype_torch_name(a->dtype),
                       mp_dtype_torch_name(src->dtype))
            : mp_error(MP_ERR_RUNTIME, "index_copy_(): self and source expected to have the "
                       "same dtype, but got (self) %s and (source) %s",
                       mp_dtype_torch_name(a->dtype), mp_dtype_torch_name(src->dtype));
    int srank = src->ndim ? src->ndim : 1, arank = a->ndim ? a->ndim : 1;
    if (dim >= srank)
        return mp_error(MP_ERR_RUNTIME, "%s(): Indexing dim %d is out of bounds of the source "
                        "tensor with dim %d", fn, dim, src->ndim);
    int64_t have = src->ndim ? src->shape[dim] : 1;
    if (have != n && op == LINE_ADD)
        return mp_error(MP_ERR_RUNTIME, "index_add_(): Number of indices (%lld) should be equal "
                        "to source.size(dim): (%lld), for dim: %d", (long long)n,
                        (long long)have, dim);
    if (have != n)
        return mp_error(MP_ERR_INDEX, "index_copy_(): Number of indices (%lld) should be equal "
                        "to source.size(dim) (%lld)", (long long)n, (long long)have);
    int ok = srank == arank;
    for (int d = 0; ok && d < arank; d++)
        ok = d == dim || (a->ndim ? a->shape[d] : 1) == (src->ndim ? src->shape[d] : 1);
    if (ok)
        return MP_OK;
    char sa[256], ss[256];
    mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
    mp_format_shape(ss, sizeof ss, src->shape, src->ndim);
    return mp_error(MP_ERR_RUNTIME, "%s(): source tensor shape must match self tensor shape, "
                    "excluding the specified dimension. Got self.shape = %s source.shape = %s",
                    fn, sa, ss);
}

/* ---- the result: a copy of a (or, for select, a new tensor) with the lines written ---- */

static mp_status select_lines(mp_tensor *t, int dim, mp_tensor *index, mp_dtype dt,
                              mp_tensor **out)
{
    mp_tensor *t1 = NULL, *idx = NULL, *o1 = NULL;
    int64_t shape[MP_MAX_DIMS];
    mp_status st = at_least_1d(t, &t1);
    if (st == MP_OK)
        st = at_least_1d(index, &idx);
    if (st == MP_OK) {
        memcpy(shape, t1->shape, sizeof(int64_t) * (size_t)t1->ndim);
        shape[dim] = idx->shape[0];
        st = mp_tensor_empty(shape, t->ndim ? t->ndim : 0, dt, MP_DEVICE_CPU, out);
    }
    if (st == MP_OK)
        st = at_least_1d(*out, &o1);
    if (st == MP_OK)
        line_walk(t1, dim, idx, o1, MP_IDX_GATHER, 1.0);
    mp_tensor_decref(t1);
    mp_tensor_decref(idx);
    mp_tensor_decref(o1);
    return st;
}

/* *res = a copy of a (dtype dt) with src (or a 0-dim value) combined into its lines */
static mp_status write_lines(mp_tensor *a, int dim, mp_tensor *index, mp_tensor *src,
                             mp_index_mode mode, double alpha, mp_dtype dt, mp_tensor **res)
{
    mp_tensor *r1 = NULL, *idx = NULL, *s1 = NULL, *sexp = NULL;
    mp_status st = mp_tensor_cast(a, dt, res);
    if (st == MP_OK)
        st = at_least_1d(*res, &r1);
    if (st == MP_OK)
        st = at_least_1d(index, &idx);
    if (st == MP_OK)
        st = at_least_1d(src, &s1);
    if (st == MP_OK) {      /* a 0-dim value is expanded to the lines' shape */
        int64_t shape[MP_MAX_DIMS];
        memcpy(shape, r1->shape, sizeof(int64_t) * (size_t)r1->ndim);
        shape[dim] = idx->shape[0];
        st = mp_view_expand(s1, shape, r1->ndim, &sexp);
    }
    if (st == MP_OK)
        line_walk(r1, dim, idx, sexp, mode, alpha);
    mp_tensor_decref(r1);
    mp_tensor_decref(idx);
    mp_tensor_decref(s1);
    mp_tensor_decref(sexp);
    if (st != MP_OK) {
        mp_tensor_decref(*res);
        *res = NULL;
    }
    return st;
}

/* ---- backward ---- */

/* the saved index, checked again (it may have been changed in place since the forward) */
static mp_tensor *saved_index(mp_node *n, line_op op, int dim, mp_status *st)
{
    int nd;
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    mp_tensor *index = mp_node_saved(n, 0);
    *st = index ? check_range(op, index, nd ? shape[dim] : 1, dim) : MP_ERR_RUNTIME;
    return *st == MP_OK ? index : NULL;
}

/* a copy of g with zeros in the lines */
static mp_status zero_lines(mp_tensor *g, int dim, mp_tensor *index, mp_tensor **out)
{
    mp_tensor *zero = NULL;
    mp_status st = mp_tensor_full(NULL, 0, g->dtype, 0.0, &zero);
    if (st == MP_OK)
        st = write_lines(g, dim, index, zero, MP_IDX_PUT, 1.0, g->dtype, out);
    mp_tensor_decref(zero);
    return st;
}

/* iargs: dim, op; fargs: alpha */
static mp_status line_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int dim = (int)n->iargs[0], nd;
    line_op op = (line_op)n->iargs[1];
    mp_status st;
    mp_tensor *index = saved_index(n, op, dim, &st), *g = gout[0];
    if (!index)
        return st;
    if (op == LINE_SELECT) {
        const int64_t *shape = mp_node_in_shape(n, 0, &nd);
        mp_tensor *z = NULL, *g32 = NULL;
        if ((st = mp_tensor_full(shape, nd, MP_DTYPE_FLOAT32, 0.0, &z)) == MP_OK &&
            (st = mp_tensor_cast(g, MP_DTYPE_FLOAT32, &g32)) == MP_OK)
            st = write_lines(z, dim, index, g32, MP_IDX_ADD, 1.0, MP_DTYPE_FLOAT32, &gin[0]);
        mp_tensor_decref(z);
        mp_tensor_decref(g32);
        return st;
    }
    if (n->next[0].node && op == LINE_ADD)
        mp_tensor_incref(gin[0] = g);
    else if (n->next[0].node)
        st = zero_lines(g, dim, index, &gin[0]);
    if (st != MP_OK || op == LINE_FILL || !n->next[1].node)
        return st;
    mp_tensor *sel = NULL, *alpha = NULL;
    st = select_lines(g, dim, index, g->dtype, &sel);
    if (st == MP_OK && n->fargs[0] != 1.0 && (st = mp_scalar_tensor(n->fargs[0], MP_DTYPE_FLOAT32,
                                                                       &alpha)) == MP_OK)
        st = mp_op_mul(sel, alpha, &gin[1]);
    else if (st == MP_OK)
        mp_tensor_incref(gin[1] = sel);
    mp_tensor_decref(sel);
    mp_tensor_decref(alpha);
    return st;
}

static mp_status record(line_op op, mp_tensor *a, mp_tensor *src, int dim, mp_tensor *index,
                        double alpha, mp_tensor **out)
{
    static const char *const names[] = {"IndexSelectBackward0", "IndexAddBackward0",
                                        "IndexCopyBackward0", "IndexFillBackward0"};
    mp_tensor *ins[2] = {a, src};
    mp_node *node = NULL;
    mp_status st = mp_autograd_record(names[op], line_backward, ins, src ? 2 : 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = dim;
        node->iargs[1] = op;
        node->fargs[0] = alpha;
        st = mp_node_save(node, 0, index);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- the ops ---- */

static mp_status prepare(line_op op, mp_tensor *a, int64_t dim, mp_tensor *index, int *wdim)
{
    mp_status st = mp_wrap_dim(dim, a->ndim, wdim);
    if (st == MP_OK)
        st = check_index(op, index);
    if (st == MP_OK && op == LINE_SELECT && a->ndim == 0 && mp_tensor_numel(index) != 1)
        st = mp_error(MP_ERR_RUNTIME, "index_select(): Index to scalar can have only 1 value, got "
                      "%lld value(s)", (long long)mp_tensor_numel(index));
    return st;
}

mp_status mp_op_index_select(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor **out)
{
    MP_HOST_ONLY("index_select", a, index);
    int d = 0;
    *out = NULL;
    mp_status st = prepare(LINE_SELECT, a, dim, index, &d);
    if (st == MP_OK)
        st = check_range(LINE_SELECT, index, a->ndim ? a->shape[d] : 1, d);
    if (st == MP_OK)
        st = select_lines(a, d, index, a->dtype, out);
    return st == MP_OK ? record(LINE_SELECT, a, NULL, d, index, 1.0, out) : st;
}

static mp_status combine_op(line_op op, mp_tensor *a, int64_t dim, mp_tensor *index,
                            mp_tensor *src, double alpha, mp_tensor **out)
{
    int d = 0;
    *out = NULL;
    mp_status st = prepare(op, a, dim, index, &d);
    if (st == MP_OK)
        st = check_source(op, a, d, index, src);
    if (st == MP_OK)
        st = check_range(op, index, a->ndim ? a->shape[d] : 1, d);
    if (st == MP_OK)
        st = write_lines(a, d, index, src, op == LINE_ADD ? MP_IDX_ADD : MP_IDX_PUT, alpha,
                         a->dtype, out);
    return st == MP_OK ? record(op, a, src, d, index, alpha, out) : st;
}

mp_status mp_op_index_add(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                          double alpha, mp_tensor **out)
{
    MP_HOST_ONLY("index_add", a, index, src);
    return combine_op(LINE_ADD, a, dim, index, src, alpha, out);
}

mp_status mp_op_index_copy(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                           mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_INDEX_COPY, mp_op_index_copy(ac_[0], dim, index, ac_[1], out), a,
                      src);
    MP_HOST_ONLY("index_copy", a, index, src);
    return combine_op(LINE_COPY, a, dim, index, src, 1.0, out);
}

mp_status mp_op_index_fill(mp_tensor *a, int64_t dim, mp_tensor *index, mp_scalar value,
                           mp_tensor **out)
{
    MP_HOST_ONLY("index_fill", a, index);
    int d = 0;
    mp_tensor *v = NULL;
    *out = NULL;
    mp_status st = prepare(LINE_FILL, a, dim, index, &d);
    if (st == MP_OK)
        st = check_range(LINE_FILL, index, a->ndim ? a->shape[d] : 1, d);
    if (st == MP_OK)
        st = mp_check_scalar_fits(a->dtype, value);
    if (st == MP_OK && (st = mp_tensor_empty(NULL, 0, a->dtype, MP_DEVICE_CPU, &v)) == MP_OK) {
        mp_store_scalar(a->dtype, mp_tensor_data(v), value);
        st = write_lines(a, d, index, v, MP_IDX_PUT, 1.0, a->dtype, out);
    }
    mp_tensor_decref(v);
    return st == MP_OK ? record(LINE_FILL, a, NULL, d, index, 1.0, out) : st;
}
