/* ops_gather.c - gather, scatter (src or value, reduce add/multiply) and scatter_add along one
 * dim, as torch: index has the input's rank, is no larger than the input apart from dim (and
 * no larger than src), and every value is in range (an empty index skips the checks). One
 * walk of cpu/index_kernels.c over the index's shape does each; gather's backward scatter-adds
 * into fp32 zeros, scatter's zeroes the written positions and gathers for src. */
#include <string.h>

#include "../amp/autocast.h"
#include "../../cpu/index_kernels.h"
#include "../backend.h"
#include "../chunk.h"
#include "../elementwise.h"
#include "ops.h"
#include "ops_index.h"
#include "../view.h"

/* The walk over index's shape: data is addressed through index along dim. */
static void dim_walk(mp_tensor *data, int dim, mp_tensor *index, mp_tensor *other,
                     mp_index_mode mode)
{
    mp_index_walk w;
    memset(&w, 0, sizeof w);
    w.ndim = index->ndim ? index->ndim : 1;
    w.shape[0] = 1;
    w.data = mp_tensor_data(data);
    w.other = mp_tensor_data(other);
    w.dtype = data->dtype;
    w.alpha = 1.0;
    w.n_idx = 1;
    w.idx[0] = mp_tensor_data(index);
    w.mul[0] = data->ndim ? data->strides[dim] : 0;
    w.size[0] = data->ndim ? data->shape[dim] : 1;
    for (int d = 0; d < index->ndim; d++) {
        w.shape[d] = index->shape[d];
        w.istr[0][d] = index->strides[d];
        w.ostr[d] = other->ndim ? other->strides[d] : 0;
        w.dstr[d] = d == dim || !data->ndim ? 0 : data->strides[d];
    }
    mp_index_run(&w, mode);
}

static mp_status range_check(mp_tensor *index, int64_t size, int dim, int wrap)
{
    mp_tensor *c = NULL;
    mp_status st = mp_tensor_contiguous(index, &c);
    if (st != MP_OK)
        return st;
    const int64_t *v = mp_tensor_data(c);
    int64_t lo = wrap ? -size : 0;
    for (int64_t i = 0, n = mp_tensor_numel(c); i < n && st == MP_OK; i++)
        if (v[i] < lo || v[i] >= size)
            st = mp_error(MP_ERR_RUNTIME, "index %lld is out of bounds for dimension %d with "
                          "size %lld", (long long)v[i], dim, (long long)size);
    mp_tensor_decref(c);
    return st;
}

static int rank(const mp_tensor *t) { return t->ndim ? t->ndim : 1; }
static int64_t size_at(const mp_tensor *t, int d) { return t->ndim ? t->shape[d] : 1; }

/* scatter: 0 gather, 1 scatter with a value, 2 scatter with src */
static mp_status bad_size(int scatter, mp_tensor *index, mp_tensor *a, mp_tensor *src,
                          int dim, int at)
{
    char si[256], sa[256], ss[256] = "";
    mp_format_shape(si, sizeof si, index->shape, index->ndim);
    mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
    if (!scatter)
        return mp_error(MP_ERR_RUNTIME, "Size does not match at dimension %d expected index %s "
                        "to be no larger than self %s apart from dimension %d", at, si, sa, dim);
    if (src)
        mp_format_shape(ss, sizeof ss, src->shape, src->ndim);
    return mp_error(MP_ERR_RUNTIME, "Expected index %s to be no larger than self %s apart from "
                    "dimension %d%s%s", si, sa, dim, src ? " and to be no larger size than src "
                    : "", ss);
}

/* torch's checks for gather (fname "gather") and scatter; *wdim: the wrapped dim */
static mp_status check_args(const char *fname, mp_tensor *a, int64_t dim, mp_tensor *index,
                            mp_tensor *src, int *wdim)
{
    int scatter = strcmp(fname, "gather") != 0;
    mp_status st = mp_wrap_dim(dim, a->ndim, wdim);
    if (st != MP_OK)
        return st;
    if (index->dtype != MP_DTYPE_INT64)
        return mp_error(MP_ERR_RUNTIME, "%s(): Expected dtype int32/int64 for index", fname);
    if (src && src->dtype != a->dtype)
        return mp_error(MP_ERR_RUNTIME, "%s(): Expected self.dtype to be equal to src.dtype",
                        fname);
    if (mp_tensor_numel(index) == 0)
        return MP_OK;
    if (rank(index) != rank(a))
        return mp_error(MP_ERR_RUNTIME, "Index tensor must have the same number of dimensions "
                        "as %s tensor", scatter ? "self" : "input");
    if (src && rank(index) != rank(src))
        return mp_error(MP_ERR_RUNTIME, "Index tensor must have the same number of dimensions "
                        "as src tensor");
    for (int d = 0; d < rank(index); d++) {
        int64_t n = size_at(index, d);
        if ((d != *wdim && n > size_at(a, d)) || (src && n > size_at(src, d)))
            return bad_size(scatter, index, a, src, *wdim, d);
    }
    return MP_OK;
}

/* ---- gather ---- */

/* zeros of `shape` (fp32) += g at a[p with p[dim] = index[p]] */
static mp_status scatter_add_zeros(const int64_t *shape, int nd, int dim, mp_tensor *index,
                                   mp_tensor *g, mp_tensor **out)
{
    mp_tensor *z = NULL, *g32 = NULL;
    mp_status st = mp_tensor_full(shape, nd, MP_DTYPE_FLOAT32, 0.0, &z);
    if (st == MP_OK)
        st = mp_tensor_cast(g, MP_DTYPE_FLOAT32, &g32);
    if (st == MP_OK)
        dim_walk(z, dim, index, g32, MP_IDX_ADD);
    mp_tensor_decref(g32);
    if (st != MP_OK) {
        mp_tensor_decref(z);
        return st;
    }
    *out = z;
    return MP_OK;
}

/* the saved index, checked again (it may have been changed in place since the forward) */
static mp_tensor *saved_index(mp_node *n, int64_t size, int dim, int wrap, mp_status *st)
{
    mp_tensor *index = mp_node_saved(n, 0);
    *st = index ? range_check(index, size, dim, wrap) : MP_ERR_RUNTIME;
    return *st == MP_OK ? index : NULL;
}

static mp_status gather_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int nd, dim = (int)n->iargs[0];
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    mp_status st;
    mp_tensor *index = saved_index(n, nd ? shape[dim] : 1, dim, (int)n->iargs[1], &st);
    if (!index)
        return st;
    return scatter_add_zeros(shape, nd, dim, index, gout[0], &gin[0]);
}

mp_status mp_op_gather(mp_tensor *a, int64_t dim, mp_tensor *index, int wrap, mp_tensor **out)
{
    MP_HOST_ONLY("gather", a, index);
    int d = 0;
    *out = NULL;
    mp_status st = check_args("gather", a, dim, index, NULL, &d);
    if (st == MP_OK && mp_tensor_numel(index))
        st = range_check(index, size_at(a, d), d, wrap);
    if (st == MP_OK)
        st = mp_tensor_empty(index->shape, index->ndim, a->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        dim_walk(a, d, index, *out, MP_IDX_GATHER);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("GatherBackward0", gather_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = d;
        node->iargs[1] = wrap;
        st = mp_node_save(node, 0, index);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- scatter / scatter_add ---- */

/* g at the scattered positions (index's shape), in zeros of src's shape when src is larger */
static mp_status gather_for_src(mp_node *n, int dim, mp_tensor *index, mp_tensor *g,
                                mp_tensor **out)
{
    int snd;
    const int64_t *sshape = mp_node_in_shape(n, 1, &snd);
    mp_tensor *z = NULL, *region = NULL;
    mp_status st = mp_tensor_full(sshape, snd, g->dtype, 0.0, &z);
    mp_tensor_incref(region = z);
    for (int d = 0; d < index->ndim && st == MP_OK; d++) {
        mp_tensor *next = NULL;
        st = mp_view_slice(region, d, 0, index->shape[d], 1, &next);
        mp_tensor_decref(region);
        region = next;
    }
    if (st == MP_OK)
        dim_walk(g, dim, index, region, MP_IDX_GATHER);
    mp_tensor_decref(region);
    if (st != MP_OK) {
        mp_tensor_decref(z);
        return st;
    }
    *out = z;
    return MP_OK;
}

/* iargs: dim, kind (0 scatter src, 1 scatter value, 2 scatter_add, 3 reduce) */
static mp_status scatter_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int nd, dim = (int)n->iargs[0], kind = (int)n->iargs[1];
    if (kind == 3)
        return mp_error(MP_ERR_RUNTIME, "derivative for aten::scatter is not implemented");
    const int64_t *shape = mp_node_in_shape(n, 0, &nd);
    mp_status st;
    mp_tensor *index = saved_index(n, nd ? shape[dim] : 1, dim, 0, &st), *g = gout[0];
    if (!index)
        return st;
    if (n->next[0].node && kind == 2) {
        mp_tensor_incref(gin[0] = g);
    } else if (n->next[0].node) {
        mp_tensor *zero = NULL;
        st = mp_tensor_cast(g, g->dtype, &gin[0]);
        if (st == MP_OK)
            st = mp_tensor_full(NULL, 0, g->dtype, 0.0, &zero);
        if (st == MP_OK)
            dim_walk(gin[0], dim, index, zero, MP_IDX_PUT);
        mp_tensor_decref(zero);
    }
    if (st == MP_OK && kind != 1 && n->n_inputs > 1 && n->next[1].node)
        st = gather_for_src(n, dim, index, g, &gin[1]);
    return st;
}

static mp_status scatter_impl(const char *fname, mp_tensor *a, int64_t dim, mp_tensor *index,
                              mp_tensor *src, mp_scalar value, int reduce, int kind,
                              mp_tensor **out)
{
    int d = 0;
    mp_tensor *val = NULL;
    *out = NULL;
    mp_status st = check_args(fname, a, dim, index, src, &d);
    if (st == MP_OK && mp_tensor_numel(index))
        st = range_check(index, size_at(a, d), d, 0);
    if (st == MP_OK && !src)
        st = mp_check_scalar_fits(a->dtype, value);
    if (st == MP_OK && !src && (st = mp_tensor_empty(NULL, 0, a->dtype, MP_DEVICE_CPU, &val)) ==
        MP_OK)
        mp_store_scalar(a->dtype, mp_tensor_data(val), value);
    if (st == MP_OK)
        st = mp_tensor_cast(a, a->dtype, out);
    if (st == MP_OK)
        dim_walk(*out, d, index, src ? src : val, reduce == MP_SCATTER_ADD ? MP_IDX_ADD :
                 reduce == MP_SCATTER_MUL ? MP_IDX_MUL : MP_IDX_PUT);
    mp_decref_all(&val, 1);
    static const char *const names[] = {"ScatterBackward0", "ScatterBackward1",
                                        "ScatterAddBackward0", "NotImplemented"};
    mp_tensor *ins[2] = {a, src};
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(names[kind], scatter_backward, ins, src ? 2 : 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = d;
        node->iargs[1] = kind;
        st = mp_node_save(node, 0, index);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_scatter(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                        mp_scalar value, int reduce, mp_tensor **out)
{
    MP_HOST_ONLY("scatter", a, index, src);
    int kind = reduce != MP_SCATTER_SET ? 3 : src ? 0 : 1;
    return scatter_impl("scatter", a, dim, index, src, value, reduce, kind, out);
}

mp_status mp_op_scatter_add(mp_tensor *a, int64_t dim, mp_tensor *index, mp_tensor *src,
                            mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_SCATTER_ADD, mp_op_scatter_add(ac_[0], dim, index, ac_[1], out), a,
                      src);
    MP_HOST_ONLY("scatter_add", a, index, src);
    mp_scalar none = {0.0, 0, 0};
    return scatter_impl("scatter", a, dim, index, src, none, MP_SCATTER_ADD, 2, out);
}
