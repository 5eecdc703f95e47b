/* reduce_rows.c - the row layout over a set of reduced dims (see reduce_rows.h): a permute to
 * (kept dims, reduced dims) and a contiguous copy, its inverse for gradients, the extreme-value
 * scans max/min/amax/amin share, and storing per-row double results in any dtype. */
#include "reduce_rows.h"
#include "backend.h"

#include <string.h>

#include "copy.h"
#include "reduce.h"
#include "view.h"

/* perm: kept dims in order, then reduced dims in order; returns the number of kept dims. */
static int rows_perm(int nd, uint32_t mask, int64_t *perm)
{
    int n = 0;
    for (int d = 0; d < nd; d++)
        if (!(mask & (1u << d)))
            perm[n++] = d;
    int kept = n;
    for (int d = 0; d < nd; d++)
        if (mask & (1u << d))
            perm[n++] = d;
    return kept;
}

mp_status mp_rowset_of(mp_tensor *a, uint32_t mask, int keepdim, mp_rowset *rs)
{
    MP_HOST_ONLY("rowset_of", a);
    int64_t perm[MP_MAX_DIMS];
    int nd = a->ndim;
    mask &= nd >= 32 ? ~0u : (1u << nd) - 1u;
    int kept = rows_perm(nd, mask, perm);
    rs->rows = NULL;
    rs->nrows = rs->len = 1;
    for (int i = 0; i < nd; i++)
        *(i < kept ? &rs->nrows : &rs->len) *= a->shape[perm[i]];
    mp_reduced_shape(a, mask, keepdim, rs->oshape, &rs->ond);
    mp_tensor *p = NULL;
    mp_status st = mp_view_permute(a, perm, nd, &p);
    if (st == MP_OK)
        st = mp_tensor_contiguous(p, &rs->rows);
    mp_tensor_decref(p);
    return st;
}

void mp_rowset_release(mp_rowset *rs)
{
    mp_tensor_decref(rs->rows);
    rs->rows = NULL;
}

mp_status mp_rowset_restore(mp_tensor *g, const int64_t *ishape, int nd, uint32_t mask,
                            mp_tensor **out)
{
    MP_HOST_ONLY("rowset_restore", g);
    int64_t perm[MP_MAX_DIMS], inv[MP_MAX_DIMS], pshape[MP_MAX_DIMS];
    mask &= nd >= 32 ? ~0u : (1u << nd) - 1u;
    rows_perm(nd, mask, perm);
    for (int i = 0; i < nd; i++) {
        pshape[i] = ishape[perm[i]];
        inv[perm[i]] = i;
    }
    mp_tensor *r = NULL, *p = NULL;
    mp_status st = mp_view_reshape(g, pshape, nd, 0, &r);
    if (st == MP_OK)
        st = mp_view_permute(r, inv, nd, &p);
    if (st == MP_OK)
        st = mp_tensor_contiguous(p, out);
    mp_tensor_decref(r);
    mp_tensor_decref(p);
    return st;
}

int64_t mp_row_extreme_f32(const float *x, int64_t len, int is_min)
{
    int64_t best = 0;
    float m = x[0];
    if (m != m)
        return 0;
    for (int64_t i = 1; i < len; i++) {
        float v = x[i];
        if (v != v)
            return i;
        if (is_min ? v < m : v > m) {
            m = v;
            best = i;
        }
    }
    return best;
}

int64_t mp_row_extreme_raw(mp_dtype dt, const void *x, int64_t len, int is_min)
{
    int64_t best = 0;
    if (dt == MP_DTYPE_INT64) {
        const int64_t *p = x;
        for (int64_t i = 1; i < len; i++)
            if (is_min ? p[i] < p[best] : p[i] > p[best])
                best = i;
        return best;
    }
    size_t sz = mp_dtype_size(dt);
    const char *p = x;
    int64_t m = mp_load_i64(dt, p);
    for (int64_t i = 1; i < len; i++) {
        int64_t v = mp_load_i64(dt, p + (size_t)i * sz);
        if (is_min ? v < m : v > m) {
            m = v;
            best = i;
        }
    }
    return best;
}

mp_status mp_tensor_from_f64(const double *v, const int64_t *shape, int nd, mp_dtype dt,
                             mp_tensor **out)
{
    mp_status st = mp_tensor_empty(shape, nd, dt, MP_DEVICE_CPU, out);
    if (st != MP_OK)
        return st;
    char *dst = mp_tensor_data(*out);
    size_t sz = mp_dtype_size(dt);
    int64_t n = mp_tensor_numel(*out);
    for (int64_t i = 0; i < n; i++) {
        mp_scalar s = {v[i], 0, 0};
        mp_store_scalar(dt, dst + (size_t)i * sz, s);
    }
    return MP_OK;
}

mp_status mp_as_f32(mp_tensor *t, mp_tensor **out)
{
    MP_HOST_ONLY("as_f32", t);
    if (t->dtype == MP_DTYPE_FLOAT32)
        return mp_tensor_contiguous(t, out);
    return mp_tensor_cast(t, MP_DTYPE_FLOAT32, out);
}

mp_status mp_check_reduced_nonempty(const char *name, const mp_tensor *a, uint32_t mask)
{
    MP_HOST_ONLY("check_reduced_nonempty", a);
    for (int d = 0; d < a->ndim; d++)
        if ((mask & (1u << d)) && a->shape[d] == 0)
            return mp_error(MP_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero "
                            "size.", name, d);
    return MP_OK;
}
