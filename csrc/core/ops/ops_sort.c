/* ops_sort.c - sort and topk along one dim, with backward (the gradient scattered back to the
 * chosen positions). Each element becomes an unsigned key that orders as torch does (floats:
 * -0.0 equal to 0.0, every NaN equal and above +inf; int64 and bool as integers), descending
 * order complements the key, and rows are sorted by (key, index): a stable order in both
 * directions, so ties keep their original order. topk takes the first k of that order: ties
 * give the lower index first (torch's CPU choice among ties is unspecified and can differ).
 * Values are copied as bytes, so they are exact in every dtype. */
#include <stdlib.h>
#include <string.h>

#include "../elementwise.h"
#include "../backend.h"
#include "ops.h"
#include "../reduce_rows.h"
#include "../rows.h"
#include "../copy.h"
#include "../view.h"

typedef struct {
    uint64_t key;
    int64_t idx;
} sort_item;

static int item_cmp(const void *pa, const void *pb)
{
    const sort_item *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static uint64_t key_f32(float v)
{
    if (v != v)
        return UINT64_MAX;
    if (v == 0.0f)
        v = 0.0f;                   /* -0.0 sorts with +0.0 */
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? (uint64_t)(~u) : (uint64_t)(u | 0x80000000u);
}

/* Sorts row r of rs into items (len entries): ascending, or descending when desc. */
static void sort_row(const mp_rowset *rs, int64_t r, int desc, float *buf, sort_item *items)
{
    mp_dtype dt = rs->rows->dtype;
    const char *data = mp_tensor_data(rs->rows);
    size_t sz = mp_dtype_size(dt);
    int64_t len = rs->len;
    if (mp_dtype_is_float(dt)) {
        const float *x = mp_row_load(dt, data, r, len, buf);
        for (int64_t i = 0; i < len; i++)
            items[i].key = key_f32(x[i]);
    } else {
        const char *p = data + (size_t)(r * len) * sz;
        for (int64_t i = 0; i < len; i++)
            items[i].key = (uint64_t)mp_load_i64(dt, p + (size_t)i * sz) ^ (1ull << 63);
    }
    for (int64_t i = 0; i < len; i++) {
        items[i].idx = i;
        if (desc)
            items[i].key = ~items[i].key;
    }
    qsort(items, (size_t)len, sizeof *items, item_cmp);
}

/* The first k of each sorted row: values (rows dtype) and indices (int64), both nrows x k. */
static mp_status select_rows(const mp_rowset *rs, int64_t k, int desc, mp_tensor *values,
                             mp_tensor *indices)
{
    mp_dtype dt = rs->rows->dtype;
    size_t sz = mp_dtype_size(dt);
    float *buf = malloc(sizeof(float) * (size_t)(rs->len + 1));
    sort_item *items = malloc(sizeof(sort_item) * (size_t)(rs->len + 1));
    if (!buf || !items) {
        free(buf);
        free(items);
        return mp_error(MP_ERR_NOMEM, "out of memory for a sort buffer");
    }
    const char *data = mp_tensor_data(rs->rows);
    char *vp = mp_tensor_data(values);
    int64_t *ip = mp_tensor_data(indices);
    for (int64_t r = 0; r < rs->nrows && k > 0; r++) {
        sort_row(rs, r, desc, buf, items);
        const char *row = data + (size_t)(r * rs->len) * sz;
        for (int64_t j = 0; j < k; j++) {
            ip[r * k + j] = items[j].idx;
            memcpy(vp + (size_t)(r * k + j) * sz, row + (size_t)items[j].idx * sz, sz);
        }
    }
    free(buf);
    free(items);
    return MP_OK;
}

/* gin = zeros of the input's shape with g[..., j, ...] added at indices[..., j, ...] along the
 * dim (indices saved, in the output's shape). */
static mp_status scatter_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *idx = mp_node_saved(n, 0);
    if (!idx)
        return MP_ERR_RUNTIME;
    uint32_t mask = (uint32_t)n->iargs[0];
    int nd;
    const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
    mp_rowset gs = {0}, is = {0};
    mp_tensor *gr = NULL, *grows = NULL;
    mp_status st = mp_rowset_of(gout[0], mask, 1, &gs);
    if (st == MP_OK)
        st = mp_rowset_of(idx, mask, 1, &is);
    if (st == MP_OK)
        st = mp_as_f32(gs.rows, &gr);
    int64_t len = 1;
    for (int d = 0; d < nd; d++)
        if (mask & (1u << d))
            len = ishape[d];
    int64_t total = gs.nrows * len;
    if (st == MP_OK)
        st = mp_tensor_full(&total, 1, MP_DTYPE_FLOAT32, 0.0, &grows);
    if (st == MP_OK) {
        const float *g = mp_tensor_data(gr);
        const int64_t *ix = mp_tensor_data(is.rows);
        float *o = mp_tensor_data(grows);
        for (int64_t r = 0; r < gs.nrows; r++)
            for (int64_t j = 0; j < gs.len; j++)
                o[r * len + ix[r * gs.len + j]] += g[r * gs.len + j];
        st = mp_rowset_restore(grows, ishape, nd, mask, &gin[0]);
    }
    mp_rowset_release(&gs);
    mp_rowset_release(&is);
    mp_tensor_decref(gr);
    mp_tensor_decref(grows);
    return st;
}

/* The shared body: the first k of each row along dim d, sorted (desc: largest first). */
static mp_status sort_k(const char *bw_name, mp_tensor *a, int d, int64_t k, int desc,
                        mp_tensor **values, mp_tensor **indices)
{
    uint32_t mask = a->ndim ? 1u << d : 0u;
    int64_t rshape[MP_MAX_DIMS], oshape[MP_MAX_DIMS];
    mp_rowset rs = {0};
    mp_tensor *vr = NULL, *ir = NULL;
    mp_status st = mp_rowset_of(a, mask, 1, &rs);
    memcpy(oshape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    if (a->ndim)
        oshape[d] = k;
    rshape[0] = rs.nrows;
    rshape[1] = k;
    if (st == MP_OK)
        st = mp_tensor_empty(rshape, 2, a->dtype, MP_DEVICE_CPU, &vr);
    if (st == MP_OK)
        st = mp_tensor_empty(rshape, 2, MP_DTYPE_INT64, MP_DEVICE_CPU, &ir);
    if (st == MP_OK)
        st = select_rows(&rs, k, desc, vr, ir);
    if (st == MP_OK)
        st = mp_rowset_restore(vr, oshape, a->ndim, mask, values);
    if (st == MP_OK)
        st = mp_rowset_restore(ir, oshape, a->ndim, mask, indices);
    mp_rowset_release(&rs);
    mp_tensor_decref(vr);
    mp_tensor_decref(ir);
    mp_tensor *outs[2] = {*values, *indices};
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(bw_name, scatter_backward, &a, 1, outs, 2, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        st = mp_node_save(node, 0, *indices);
    }
    if (st != MP_OK) {
        mp_tensor_decref(*values);
        mp_tensor_decref(*indices);
        *values = *indices = NULL;
    }
    return st;
}

mp_status mp_op_sort(mp_tensor *a, int64_t dim, int descending, mp_tensor **values,
                     mp_tensor **indices)
{
    MP_HOST_ONLY("sort", a);
    int d;
    *values = *indices = NULL;
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st != MP_OK)
        return st;
    return sort_k("SortBackward0", a, d, a->ndim ? a->shape[d] : 1, descending, values,
                  indices);
}

mp_status mp_op_topk(mp_tensor *a, int64_t k, int64_t dim, int largest, mp_tensor **values,
                     mp_tensor **indices)
{
    MP_HOST_ONLY("topk", a);
    int d;
    *values = *indices = NULL;
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st != MP_OK)
        return st;
    if (a->dtype == MP_DTYPE_BOOL)
        return mp_error(MP_ERR_RUNTIME, "topk does not support bool dtypes on CPU");
    int64_t len = a->ndim ? a->shape[d] : 1;
    if (k < 0 || k > len)
        return mp_error(MP_ERR_RUNTIME, "selected index k out of range");
    if (a->ndim == 0)
        k = 1;                      /* torch: a 0-d input gives itself, even for k = 0 */
    return sort_k("TopkBackward0", a, d, k, largest, values, indices);
}
