/* ops_index.c - advanced indexing: a[indices] (index) and its writer index_put, as torch's
 * aten::index / index_put_. A plan turns the index list into one int64 index per indexed dim
 * (bool masks, and uint8 ones as torch's deprecated byte masks, become the columns of their
 * nonzero(); a 0-dim mask indexes a size-1 dim inserted at its place, as torch does),
 * broadcasts them, and lays out the result; the walk in cpu/index_kernels.c does the work.
 * Backward of index scatter-adds (fp32) into zeros; index_put's backward zeroes (or keeps)
 * the written positions and gathers for the values. */
#include "../amp/autocast.h"
#include "ops_index.h"
#include "../backend.h"

#include <string.h>

#include "../../cpu/index_kernels.h"
#include "../dtypes.h"
#include "../elementwise.h"
#include "ops.h"
#include "../view.h"

typedef struct {
    int n;                          /* indexed dims of the (virtual) tensor */
    int dims[MP_MAX_DIMS];          /* ascending */
    mp_tensor *idx[MP_MAX_DIMS];    /* int64, as given (owned) */
    mp_tensor *bidx[MP_MAX_DIMS];   /* the same, expanded to bshape (owned) */
    int checked[MP_MAX_DIMS];       /* mask columns: in range by construction */
    int64_t bshape[MP_MAX_DIMS], rshape[MP_MAX_DIMS];
    int bnd, rnd, first;            /* first: result dim where the broadcast dims start */
} index_plan;

static void plan_free(index_plan *p)
{
    for (int k = 0; k < p->n; k++) {
        mp_tensor_decref(p->idx[k]);
        mp_tensor_decref(p->bidx[k]);
    }
    p->n = 0;
}

static int64_t shape_numel(const int64_t *shape, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    return n;
}

/* a with a size-1 dim inserted at every set bit of vmask (positions in the result) */
static mp_status virtual_view(mp_tensor *a, uint32_t vmask, mp_tensor **out)
{
    mp_tensor_incref(*out = a);
    for (int d = 0; vmask; d++) {
        if (!(vmask & (1u << d)))
            continue;
        vmask &= ~(1u << d);
        mp_tensor *next = NULL;
        mp_status st = mp_view_unsqueeze(*out, d, &next);
        mp_tensor_decref(*out);
        *out = next;
        if (st != MP_OK)
            return st;
    }
    return MP_OK;
}

static mp_status mask_mismatch(const mp_tensor *mask, const mp_tensor *a, int d, int j)
{
    char sm[256], sa[256];
    mp_format_shape(sm, sizeof sm, mask->shape, mask->ndim);
    mp_format_shape(sa, sizeof sa, a->shape, a->ndim);
    return mp_error(MP_ERR_INDEX, "The shape of the mask %s at index %d does not match the shape "
                    "of the indexed tensor %s at index %d", sm, j, sa, d + j);
}

/* The mask's nonzero() columns become indices of dims d, d+1, ... of the plan. */
static mp_status add_mask(index_plan *p, mp_tensor *mask, const mp_tensor *av, int d)
{
    int k = mask->ndim ? mask->ndim : 1;   /* a 0-dim mask indexes its inserted dim */
    for (int j = 0; j < mask->ndim; j++)
        if (mask->shape[j] != av->shape[d + j])
            return mask_mismatch(mask, av, d, j);
    mp_tensor *nz = NULL;
    mp_status st = mp_op_nonzero(mask, &nz);
    for (int j = 0; j < k && st == MP_OK; j++) {
        int64_t shape = nz->shape[0], stride = nz->ndim == 2 && nz->shape[1] ? nz->shape[1] : 1;
        mp_tensor *col = NULL;
        if (mask->ndim == 0)     /* nonzero() of a 0-dim tensor is (count, 0): zeros */
            st = mp_tensor_full(&shape, 1, MP_DTYPE_INT64, 0.0, &col);
        else
            st = mp_view_make(nz, &shape, &stride, 1, nz->offset + j, &col);
        if (st == MP_OK) {
            p->dims[p->n] = d + j;
            p->checked[p->n] = 1;
            p->idx[p->n++] = col;
        }
    }
    mp_tensor_decref(nz);
    return st;
}

/* Validates the index list against av (a with inserted dims) and collects the indices. */
static mp_status plan_collect(index_plan *p, const mp_tensor *av, mp_tensor *const *indices,
                              int n)
{
    int d = 0;
    for (int i = 0; i < n; i++) {
        mp_tensor *t = indices[i];
        if (!t) {
            d++;
            continue;
        }
        mp_status st = MP_OK;
        if (t->dtype == MP_DTYPE_INT64) {
            mp_tensor_incref(p->idx[p->n] = t);
            p->checked[p->n] = 0;
            p->dims[p->n++] = d++;
        } else {
            st = add_mask(p, t, av, d);
            d += t->ndim ? t->ndim : 1;
        }
        if (st != MP_OK)
            return st;
    }
    return MP_OK;
}

static mp_status broadcast_indices(index_plan *p)
{
    p->bnd = 0;
    for (int k = 0; k < p->n; k++) {
        const mp_tensor *t = p->idx[k];
        int nd = t->ndim > p->bnd ? t->ndim : p->bnd, ok = 1;
        int64_t out[MP_MAX_DIMS];
        for (int i = 0; i < nd; i++) {
            int it = i - (nd - t->ndim), ib = i - (nd - p->bnd);
            int64_t x = it >= 0 ? t->shape[it] : 1, y = ib >= 0 ? p->bshape[ib] : 1;
            ok &= x == y || x == 1 || y == 1;
            out[i] = x == 1 ? y : x;
        }
        if (!ok) {
            char msg[1024] = "", s[256];
            for (int j = 0; j < p->n; j++) {
                mp_format_shape(s, sizeof s, p->idx[j]->shape, p->idx[j]->ndim);
                strncat(msg, j ? ", " : "", sizeof msg - strlen(msg) - 1);
                strncat(msg, s, sizeof msg - strlen(msg) - 1);
            }
            return mp_error(MP_ERR_INDEX, "shape mismatch: indexing tensors could not be "
                            "broadcast together with shapes %s", msg);
        }
        memcpy(p->bshape, out, sizeof(int64_t) * (size_t)nd);
        p->bnd = nd;
    }
    return MP_OK;
}

/* Broadcast shape, expanded indices, and the result's shape for a tensor of `shape`. */
static mp_status plan_layout(index_plan *p, const int64_t *shape, int nd)
{
    mp_status st = broadcast_indices(p);
    int adjacent = 1, r = 0;
    for (int k = 1; k < p->n; k++)
        adjacent &= p->dims[k] == p->dims[k - 1] + 1;
    p->first = adjacent && p->n ? p->dims[0] : 0;
    p->rnd = p->bnd + nd - p->n;
    if (st == MP_OK && p->rnd > MP_MAX_DIMS)
        st = mp_error(MP_ERR_INDEX, "indexing: the result would have %d dimensions (at most %d "
                      "are supported)", p->rnd, MP_MAX_DIMS);
    for (int k = 0; k < p->n && st == MP_OK; k++)
        st = mp_view_expand(p->idx[k], p->bshape, p->bnd, &p->bidx[k]);
    if (st != MP_OK)
        return st;
    for (int d = 0, k = 0, placed = 0; d <= nd; d++) {
        if (!placed && r == p->first) {
            for (int b = 0; b < p->bnd; b++)
                p->rshape[r++] = p->bshape[b];
            placed = 1;
        }
        if (d == nd)
            break;
        if (k < p->n && p->dims[k] == d)
            k++;
        else
            p->rshape[r++] = shape[d];
    }
    return MP_OK;
}

/* Every index value in [-size, size); skipped when the result is empty, as torch. */
static mp_status plan_check(const index_plan *p, const int64_t *shape)
{
    if (shape_numel(p->rshape, p->rnd) == 0)
        return MP_OK;
    for (int k = 0; k < p->n; k++) {
        if (p->checked[k])
            continue;
        mp_tensor *c = NULL;
        mp_status st = mp_tensor_contiguous(p->idx[k], &c);
        if (st != MP_OK)
            return st;
        const int64_t *v = mp_tensor_data(c);
        int64_t size = shape[p->dims[k]], bad = 0, found = 0;
        for (int64_t i = 0, m = mp_tensor_numel(c); i < m && !found; i++)
            if (v[i] < -size || v[i] >= size)
                found = 1, bad = v[i];
        mp_tensor_decref(c);
        if (found && size == 0)
            return mp_error(MP_ERR_INDEX, "index is out of bounds for dimension with size 0");
        if (found)
            return mp_error(MP_ERR_INDEX, "index %lld is out of bounds for dimension %d with "
                            "size %lld", (long long)bad, k, (long long)size);
    }
    return MP_OK;
}

/* The walk over the result: data is the indexed tensor (a's shape), other has rshape. */
static void plan_walk(const index_plan *p, mp_tensor *data, mp_tensor *other,
                      mp_index_mode mode, double alpha)
{
    mp_index_walk w;
    memset(&w, 0, sizeof w);
    w.data = mp_tensor_data(data);
    w.other = mp_tensor_data(other);
    w.dtype = data->dtype;
    w.alpha = alpha;
    w.n_idx = p->n;
    w.ndim = p->rnd ? p->rnd : 1;
    w.shape[0] = 1;
    for (int k = 0; k < p->n; k++) {
        w.idx[k] = mp_tensor_data(p->bidx[k]);
        w.mul[k] = data->strides[p->dims[k]];
        w.size[k] = data->shape[p->dims[k]];
    }
    for (int r = 0, d = 0, k = 0; r < p->rnd; r++) {
        w.shape[r] = p->rshape[r];
        w.ostr[r] = other->strides[r];
        if (r >= p->first && r < p->first + p->bnd) {
            for (int j = 0; j < p->n; j++)
                w.istr[j][r] = p->bidx[j]->strides[r - p->first];
            continue;
        }
        while (k < p->n && p->dims[k] == d)
            k++, d++;
        w.dstr[r] = data->strides[d++];
    }
    mp_index_run(&w, mode);
}

/* bool, or uint8: torch's deprecated byte mask (the bindings warn) */
static int is_mask(const mp_tensor *t)
{
    return t->dtype == MP_DTYPE_BOOL || t->dtype == MP_DTYPE_UINT8;
}

/* Consumed dims, index dtypes and 0-dim masks (vmask: where their dims are inserted). */
static mp_status scan_indices(const mp_tensor *a, mp_tensor *const *indices, int n,
                              uint32_t *vmask)
{
    int consumed = 0, pos = 0;
    *vmask = 0;
    for (int i = 0; i < n; i++) {
        const mp_tensor *t = indices[i];
        if (t && t->dtype != MP_DTYPE_INT64 && !is_mask(t))
            return mp_error(MP_ERR_INDEX, "tensors used as indices must be long, int, byte or "
                            "bool tensors");
        int virt = t && is_mask(t) && t->ndim == 0;
        int k = !t || t->dtype == MP_DTYPE_INT64 || virt ? 1 : t->ndim;
        if (virt)
            *vmask |= pos < MP_MAX_DIMS ? 1u << pos : 0;
        consumed += k - virt;
        pos += k;
    }
    if (consumed > a->ndim)
        return mp_error(MP_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)",
                        a->ndim, consumed);
    if (pos > MP_MAX_DIMS || a->ndim + (pos - consumed) > MP_MAX_DIMS)
        return mp_error(MP_ERR_INDEX, "indexing: at most %d dimensions, counting one for each "
                        "0-dim bool index", MP_MAX_DIMS);
    return MP_OK;
}

/* The plan for a[indices]; *av: a with the inserted dims (new reference). */
static mp_status plan_build(mp_tensor *a, mp_tensor *const *indices, int n, index_plan *p,
                            mp_tensor **av, uint32_t *vmask)
{
    memset(p, 0, sizeof *p);
    *av = NULL;
    mp_status st = scan_indices(a, indices, n, vmask);
    if (st == MP_OK)
        st = virtual_view(a, *vmask, av);
    if (st == MP_OK)
        st = plan_collect(p, *av, indices, n);
    if (st == MP_OK)
        st = plan_layout(p, (*av)->shape, (*av)->ndim);
    if (st == MP_OK)
        st = plan_check(p, (*av)->shape);
    if (st != MP_OK) {
        plan_free(p);
        mp_tensor_decref(*av);
        *av = NULL;
    }
    return st;
}

/* Saves what backward needs to rebuild the plan: the dims, vmask and the index tensors. */
static mp_status plan_save(mp_node *node, const index_plan *p, uint32_t vmask, int first_arg)
{
    node->iargs[first_arg] = p->n;
    node->iargs[first_arg + 1] = vmask;
    mp_status st = MP_OK;
    for (int k = 0; k < p->n && st == MP_OK; k++) {
        node->fargs[k] = p->dims[k];      /* iargs has no room for 16 dims plus the flags */
        st = mp_node_save(node, k, p->idx[k]);
    }
    return st;
}

/* The plan again in backward, over tensors of `shape` (a's, with the inserted dims). */
static mp_status plan_load(mp_node *node, int first_arg, const int64_t *shape, int nd,
                           index_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = (int)node->iargs[first_arg];
    for (int k = 0; k < p->n; k++) {
        mp_tensor *t = mp_node_saved(node, k);
        if (!t) {
            p->n = k;
            plan_free(p);
            return MP_ERR_RUNTIME;
        }
        mp_tensor_incref(p->idx[k] = t);
        p->dims[k] = (int)node->fargs[k];
    }
    /* index tensors may have been changed in place since the forward: check them again */
    mp_status st = plan_layout(p, shape, nd);
    if (st == MP_OK)
        st = plan_check(p, shape);
    if (st != MP_OK)
        plan_free(p);
    return st;
}

/* zeros of `shape` (fp32) += g at the plan's positions */
static mp_status scatter_add_into_zeros(const index_plan *p, mp_tensor *g, uint32_t vmask,
                                        const int64_t *shape, int nd, mp_tensor **out)
{
    mp_tensor *z = NULL, *zv = NULL, *g32 = NULL;
    mp_status st = mp_tensor_full(shape, nd, MP_DTYPE_FLOAT32, 0.0, &z);
    if (st == MP_OK)
        st = virtual_view(z, vmask, &zv);
    if (st == MP_OK)
        st = mp_tensor_cast(g, MP_DTYPE_FLOAT32, &g32);
    if (st == MP_OK)
        plan_walk(p, zv, g32, MP_IDX_ADD, 1.0);
    mp_tensor_decref(zv);
    mp_tensor_decref(g32);
    if (st != MP_OK) {
        mp_tensor_decref(z);
        return st;
    }
    *out = z;
    return MP_OK;
}

/* a's shape with the inserted dims */
static void virtual_shape(const int64_t *shape, int nd, uint32_t vmask, int64_t *vshape,
                          int *vnd)
{
    *vnd = 0;
    for (int d = 0, j = 0; j < nd || (vmask >> d); d++)
        vshape[(*vnd)++] = vmask & (1u << d) ? 1 : shape[j++];
}

static mp_status index_backward(mp_node *node, mp_tensor **gout, mp_tensor **gin)
{
    int nd, vnd;
    const int64_t *shape = mp_node_in_shape(node, 0, &nd);
    uint32_t vmask = (uint32_t)node->iargs[1];
    int64_t vshape[MP_MAX_DIMS];
    virtual_shape(shape, nd, vmask, vshape, &vnd);
    index_plan p;
    mp_status st = plan_load(node, 0, vshape, vnd, &p);
    if (st != MP_OK)
        return st;
    st = scatter_add_into_zeros(&p, gout[0], vmask, shape, nd, &gin[0]);
    plan_free(&p);
    return st;
}

mp_status mp_op_index(mp_tensor *a, mp_tensor *const *indices, int n, mp_tensor **out)
{
    MP_HOST_ONLY("index", a);
    index_plan p;
    mp_tensor *av;
    uint32_t vmask;
    *out = NULL;
    mp_status st = plan_build(a, indices, n, &p, &av, &vmask);
    if (st != MP_OK)
        return st;
    st = mp_tensor_empty(p.rshape, p.rnd, a->dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        plan_walk(&p, av, *out, MP_IDX_GATHER, 1.0);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record("IndexBackward0", index_backward, &a, 1, out, 1, &node);
    if (st == MP_OK && node)
        st = plan_save(node, &p, vmask, 0);
    plan_free(&p);
    mp_tensor_decref(av);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- index_put ---- */

/* a copy of g (g's dtype) with zeros at the plan's positions */
static mp_status zero_positions(const index_plan *p, mp_tensor *g, uint32_t vmask,
                                mp_tensor **out)
{
    mp_tensor *c = NULL, *cv = NULL, *zero = NULL, *zexp = NULL;
    mp_status st = mp_tensor_cast(g, g->dtype, &c);
    if (st == MP_OK)
        st = virtual_view(c, vmask, &cv);
    if (st == MP_OK)
        st = mp_tensor_full(NULL, 0, g->dtype, 0.0, &zero);
    if (st == MP_OK)
        st = mp_view_expand(zero, p->rshape, p->rnd, &zexp);
    if (st == MP_OK)
        plan_walk(p, cv, zexp, MP_IDX_PUT, 1.0);
    mp_tensor_decref(cv);
    mp_tensor_decref(zero);
    mp_tensor_decref(zexp);
    if (st != MP_OK) {
        mp_tensor_decref(c);
        return st;
    }
    *out = c;
    return MP_OK;
}

/* g at the plan's positions (rshape), summed to the values' shape */
static mp_status gather_for_values(mp_node *node, const index_plan *p, mp_tensor *g,
                                   uint32_t vmask, mp_tensor **out)
{
    int vnd;
    const int64_t *vshape = mp_node_in_shape(node, 1, &vnd);
    mp_tensor *gv = NULL, *r = NULL;
    mp_status st = virtual_view(g, vmask, &gv);
    if (st == MP_OK)
        st = mp_tensor_empty(p->rshape, p->rnd, g->dtype, MP_DEVICE_CPU, &r);
    if (st == MP_OK) {
        plan_walk(p, gv, r, MP_IDX_GATHER, 1.0);
        st = mp_sum_to_shape(r, vshape, vnd, out);
    }
    mp_tensor_decref(gv);
    mp_tensor_decref(r);
    return st;
}

static mp_status index_put_backward(mp_node *node, mp_tensor **gout, mp_tensor **gin)
{
    int nd, vnd;
    const int64_t *shape = mp_node_in_shape(node, 0, &nd);
    uint32_t vmask = (uint32_t)node->iargs[1];
    int64_t vshape[MP_MAX_DIMS];
    virtual_shape(shape, nd, vmask, vshape, &vnd);
    index_plan p;
    mp_status st = plan_load(node, 0, vshape, vnd, &p);
    if (st != MP_OK)
        return st;
    if (node->next[0].node && node->iargs[2])
        mp_tensor_incref(gin[0] = gout[0]);
    else if (node->next[0].node)
        st = zero_positions(&p, gout[0], vmask, &gin[0]);
    if (st == MP_OK && node->next[1].node)
        st = gather_for_values(node, &p, gout[0], vmask, &gin[1]);
    plan_free(&p);
    return st;
}

/* torch writes one number through one mask (the other entries whole dims) with masked_fill_,
 * which refuses a uint8 mask: index_put_ gives that error where torch's would. */
static mp_status check_byte_mask_fill(const mp_tensor *a, mp_tensor *const *indices, int n,
                                      const mp_tensor *values, int accumulate)
{
    const mp_tensor *mask = NULL;
    int at = 0, d = 0;
    for (int i = 0; i < n; i++) {
        if (!indices[i]) {
            d++;
            continue;
        }
        if (mask || !is_mask(indices[i]))
            return MP_OK;
        mask = indices[i], at = d;
        d += mask->ndim;
    }
    if (accumulate || !mask || mask->dtype != MP_DTYPE_UINT8 || mp_tensor_numel(values) != 1 ||
        at + mask->ndim > a->ndim)
        return MP_OK;
    for (int j = 0; j < mask->ndim; j++)
        if (mask->shape[j] != a->shape[at + j])
            return MP_OK;                   /* the mask's shape error comes from the plan */
    return mp_error(MP_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got mask "
                    "with dtype unsigned char");
}

static mp_status check_values(const index_plan *p, const mp_tensor *a, const mp_tensor *v)
{
    if (v->dtype != a->dtype)
        return mp_error(MP_ERR_RUNTIME, "Index put requires the source and destination dtypes "
                        "match, got %s for the destination and %s for the source.",
                        mp_dtype_torch_name(a->dtype), mp_dtype_torch_name(v->dtype));
    int ok = v->ndim <= p->rnd;
    for (int i = 0; ok && i < v->ndim; i++) {
        int64_t want = p->rshape[p->rnd - v->ndim + i];
        ok = v->shape[i] == want || v->shape[i] == 1;
    }
    if (ok)
        return MP_OK;
    char sv[256], sr[256];
    mp_format_shape(sv, sizeof sv, v->shape, v->ndim);
    mp_format_shape(sr, sizeof sr, p->rshape, p->rnd);
    return mp_error(MP_ERR_SHAPE, "shape mismatch: value tensor of shape %s cannot be broadcast "
                    "to indexing result of shape %s", sv, sr);
}

/* res = a copy of a, with values written (or added) at the plan's positions */
static mp_status put_into_copy(const index_plan *p, mp_tensor *a, mp_tensor *values,
                               uint32_t vmask, int accumulate, mp_tensor **res)
{
    mp_tensor *vexp = NULL, *rv = NULL;
    mp_status st = mp_view_expand(values, p->rshape, p->rnd, &vexp);
    if (st == MP_OK)
        st = mp_tensor_cast(a, a->dtype, res);
    if (st == MP_OK)
        st = virtual_view(*res, vmask, &rv);
    if (st == MP_OK)
        plan_walk(p, rv, vexp, accumulate ? MP_IDX_ADD : MP_IDX_PUT, 1.0);
    mp_tensor_decref(vexp);
    mp_tensor_decref(rv);
    return st;
}

mp_status mp_op_index_put(mp_tensor *a, mp_tensor *const *indices, int n, mp_tensor *values,
                          int accumulate, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY(MP_OP_INDEX_PUT,
                      mp_op_index_put(ac_[0], indices, n, ac_[1], accumulate, out), a, values);
    MP_HOST_ONLY("index_put", a, values);
    index_plan p;
    mp_tensor *av;
    uint32_t vmask;
    *out = NULL;
    mp_status st = check_byte_mask_fill(a, indices, n, values, accumulate);
    if (st == MP_OK)
        st = plan_build(a, indices, n, &p, &av, &vmask);
    if (st != MP_OK)
        return st;
    mp_tensor_decref(av);
    st = check_values(&p, a, values);
    if (st == MP_OK)
        st = put_into_copy(&p, a, values, vmask, accumulate, out);
    mp_node *node = NULL;
    mp_tensor *ins[2] = {a, values};
    if (st == MP_OK)
        st = mp_autograd_record("IndexPutBackward0", index_put_backward, ins, 2, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[2] = accumulate;
        st = plan_save(node, &p, vmask, 0);
    }
    plan_free(&p);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

mp_status mp_op_index_put_(mp_tensor *a, mp_tensor *const *indices, int n, mp_tensor *values,
                           int accumulate)
{
    MP_HOST_ONLY("index_put_", a, values);
    mp_tensor *res = NULL;
    mp_status st = mp_check_inplace(a, "index_put_");
    if (st == MP_OK) {
        mp_autocast_exclude();      /* index_put_ is not autocast (torch lists index_put) */
        st = mp_op_index_put(a, indices, n, values, accumulate, &res);
        mp_autocast_include();
    }
    if (st == MP_OK)
        st = mp_inplace_commit(a, res, "index_put_");
    mp_tensor_decref(res);
    return st;
}
