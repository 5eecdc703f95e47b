/* ops_scan.c - prod (over everything or one dim), cumsum and cumprod, with backward. Integer
 * inputs become int64 (as torch) and are multiplied / added as int64 with two's-complement
 * wrap-around, never through floats; float rows run in double and round once per element.
 * prod's backward is torch's: g * result / x without zeros, the product of the others at a
 * lone zero, 0 with two zeros or more. cumprod's backward is O(n) per row and exact about
 * zeros: before the first zero it is the reversed cumulative sum of g * y divided by x, at the
 * first zero the running products after it, and 0 beyond. */
#include <stdlib.h>
#include <string.h>

#include "../amp/autocast.h"
#include "../copy.h"
#include "../backend.h"
#include "ops.h"
#include "../reduce_rows.h"
#include "../rows.h"
#include "../view.h"

static uint32_t all_dims(int ndim)
{
    return ndim >= 32 ? ~0u : (1u << ndim) - 1u;
}

/* dtype < 0: a's floating type, int64 for integers (bool included), as torch. */
static mp_dtype scan_dtype(mp_tensor *a, int dtype)
{
    return dtype >= 0 ? (mp_dtype)dtype
                      : mp_dtype_is_float(a->dtype) ? a->dtype : MP_DTYPE_INT64;
}

static int64_t wrap_mul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static int64_t wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* ---- prod ---- */

static mp_status prod_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    mp_tensor *x = mp_node_saved(n, 0), *res = mp_node_saved(n, 1);
    if (!x || !res)
        return MP_ERR_RUNTIME;
    uint32_t mask = (uint32_t)n->iargs[0];
    mp_rowset rs = {0};
    mp_tensor *xr = NULL, *rv = NULL, *g = NULL;
    mp_status st = mp_rowset_of(x, mask, 0, &rs);
    if (st == MP_OK)        /* a fresh fp32 copy: the gradient is written over it */
        st = mp_tensor_cast(rs.rows, MP_DTYPE_FLOAT32, &xr);
    if (st == MP_OK)
        st = mp_as_f32(res, &rv);
    if (st == MP_OK)
        st = mp_as_f32(gout[0], &g);
    if (st == MP_OK) {
        float *o = mp_tensor_data(xr);
        const float *rp = mp_tensor_data(rv), *gp = mp_tensor_data(g);
        for (int64_t r = 0; r < rs.nrows; r++) {
            float *row = o + r * rs.len;
            int64_t zeros = 0, z = 0;
            double others = 1.0;
            for (int64_t i = 0; i < rs.len; i++) {
                if (row[i] == 0.0f)
                    z = i, zeros++;
                else
                    others *= row[i];
            }
            for (int64_t i = 0; i < rs.len; i++)
                row[i] = zeros == 0 ? (float)((double)gp[r] * rp[r] / row[i])
                         : zeros == 1 && i == z ? (float)((double)gp[r] * others) : 0.0f;
        }
        int nd;
        const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
        st = mp_rowset_restore(xr, ishape, nd, mask, &gin[0]);
    }
    mp_rowset_release(&rs);
    mp_tensor_decref(xr);
    mp_tensor_decref(rv);
    mp_tensor_decref(g);
    return st;
}

/* One product per row into out (dtype of the rows). */
static mp_status prod_rows(const mp_rowset *rs, mp_tensor *out)
{
    mp_dtype dt = rs->rows->dtype;
    const char *data = mp_tensor_data(rs->rows);
    char *dst = mp_tensor_data(out);
    size_t sz = mp_dtype_size(dt);
    float *buf = NULL;
    if (mp_dtype_is_float(dt) && !(buf = malloc(sizeof(float) * (size_t)(rs->len + 1))))
        return mp_error(MP_ERR_NOMEM, "out of memory for a row buffer");
    for (int64_t r = 0; r < rs->nrows; r++) {
        mp_scalar v = {1.0, 1, !buf};
        if (buf) {
            const float *x = rs->len ? mp_row_load(dt, data, r, rs->len, buf) : buf;
            for (int64_t i = 0; i < rs->len; i++)
                v.f *= x[i];
        } else {
            for (int64_t i = 0; i < rs->len; i++)
                v.i = wrap_mul(v.i, mp_load_i64(dt, data + (size_t)(r * rs->len + i) * sz));
        }
        mp_store_scalar(dt, dst + (size_t)r * sz, v);
    }
    free(buf);
    return MP_OK;
}

mp_status mp_op_prod(mp_tensor *a, int has_dim, int64_t dim, int keepdim, int dtype,
                     mp_tensor **out)
{
    /* CPU: fp32 for every call; CUDA: fp32_set_opt_dtype (calls without dtype= only) */
    MP_AUTOCAST_ENTRY_IF(dtype < 0 || a->storage->device == MP_DEVICE_CPU, MP_OP_PROD,
                         mp_op_prod(ac_[0], has_dim, dim, keepdim, dtype, out), a);
    MP_HOST_ONLY("prod", a);
    mp_dtype odt = scan_dtype(a, dtype);
    int d = 0;
    *out = NULL;
    mp_status st = has_dim ? mp_wrap_dim(dim, a->ndim, &d) : MP_OK;
    if (st != MP_OK)
        return st;
    uint32_t mask = has_dim ? (1u << d) & all_dims(a->ndim) : all_dims(a->ndim);
    mp_tensor *src = NULL;
    mp_rowset rs = {0};
    st = mp_op_to_dtype(a, odt, 0, &src);          /* torch casts first */
    if (st == MP_OK)
        st = mp_rowset_of(src, mask, has_dim && keepdim, &rs);
    if (st == MP_OK)
        st = mp_tensor_empty(rs.oshape, rs.ond, odt, MP_DEVICE_CPU, out);
    if (st == MP_OK)
        st = prod_rows(&rs, *out);
    mp_rowset_release(&rs);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(has_dim ? "ProdBackward1" : "ProdBackward0", prod_backward,
                                &src, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        if ((st = mp_node_save(node, 0, src)) == MP_OK)
            st = mp_node_save(node, 1, *out);
    }
    mp_tensor_decref(src);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}

/* ---- cumsum / cumprod ---- */

static void scan_row_f(const float *x, float *y, int64_t len, int prod)
{
    double acc = prod ? 1.0 : 0.0;
    for (int64_t i = 0; i < len; i++) {
        acc = prod ? acc * x[i] : acc + x[i];
        y[i] = (float)acc;
    }
}

static void scan_row_i(mp_dtype dt, const char *x, char *y, int64_t len, int prod)
{
    size_t sz = mp_dtype_size(dt);
    mp_scalar acc = {0.0, prod ? 1 : 0, 1};
    for (int64_t i = 0; i < len; i++) {
        int64_t v = mp_load_i64(dt, x + (size_t)i * sz);
        acc.i = prod ? wrap_mul(acc.i, v) : wrap_add(acc.i, v);
        mp_store_scalar(dt, y + (size_t)i * sz, acc);
    }
}

/* rows (contiguous, dtype dt) -> their running sums / products, a tensor of the same shape */
static mp_status scan_rows(const mp_rowset *rs, int prod, mp_tensor **out)
{
    mp_tensor *rows = rs->rows;
    mp_dtype dt = rows->dtype;
    float *buf = NULL, *ybuf = NULL;
    if (mp_dtype_is_float(dt) && !(buf = malloc(sizeof(float) * 2 * (size_t)(rs->len + 1))))
        return mp_error(MP_ERR_NOMEM, "out of memory for a row buffer");
    mp_status st = mp_tensor_empty(rows->shape, rows->ndim, dt, MP_DEVICE_CPU, out);
    if (st != MP_OK) {
        free(buf);
        return st;
    }
    ybuf = buf ? buf + rs->len + 1 : NULL;
    size_t sz = mp_dtype_size(dt);
    const char *data = mp_tensor_data(rows);
    char *dst = mp_tensor_data(*out);
    for (int64_t r = 0; r < rs->nrows && rs->len; r++) {
        if (buf) {
            scan_row_f(mp_row_load(dt, data, r, rs->len, buf), ybuf, rs->len, prod);
            mp_row_store(dt, dst, r, rs->len, ybuf);
        } else {
            size_t off = (size_t)(r * rs->len) * sz;
            scan_row_i(dt, data + off, dst + off, rs->len, prod);
        }
    }
    free(buf);
    return MP_OK;
}

/* cumprod's gradient of one row: x the inputs, y the outputs, g their gradients (fp32). */
static void cumprod_grad_row(const float *x, const float *y, const float *g, float *o,
                             int64_t len)
{
    int64_t z = 0;
    while (z < len && x[z] != 0.0f)
        z++;
    double acc = 0.0;
    for (int64_t i = z - 1; i >= 0; i--) {
        acc += (double)g[i] * y[i];
        o[i] = (float)(acc / x[i]);
    }
    if (z == len)
        return;
    double before = z ? (double)y[z - 1] : 1.0, run = 1.0, s = 0.0;
    for (int64_t j = z; j < len; j++) {
        if (j > z)
            run *= x[j];
        s += (double)g[j] * run;
    }
    o[z] = (float)(before * s);
    for (int64_t i = z + 1; i < len; i++)
        o[i] = 0.0f;
}

static mp_status cumsum_backward(mp_node *n, mp_tensor **gout, mp_tensor **gin)
{
    int prod = (int)n->iargs[1];
    mp_tensor *x = prod ? mp_node_saved(n, 0) : NULL, *y = prod ? mp_node_saved(n, 1) : NULL;
    if (prod && (!x || !y))
        return MP_ERR_RUNTIME;
    uint32_t mask = (uint32_t)n->iargs[0];
    mp_rowset gs = {0}, xs = {0}, ys = {0};
    mp_tensor *gr = NULL, *xr = NULL, *yr = NULL, *o = NULL;
    mp_status st = mp_rowset_of(gout[0], mask, 1, &gs);
    if (st == MP_OK)
        st = mp_as_f32(gs.rows, &gr);
    if (st == MP_OK && prod && (st = mp_rowset_of(x, mask, 1, &xs)) == MP_OK &&
        (st = mp_rowset_of(y, mask, 1, &ys)) == MP_OK &&
        (st = mp_as_f32(xs.rows, &xr)) == MP_OK)
        st = mp_as_f32(ys.rows, &yr);
    if (st == MP_OK)
        st = mp_tensor_empty(gr->shape, gr->ndim, MP_DTYPE_FLOAT32, MP_DEVICE_CPU, &o);
    if (st == MP_OK) {
        const float *g = mp_tensor_data(gr);
        float *op = mp_tensor_data(o);
        for (int64_t r = 0; r < gs.nrows; r++) {
            int64_t off = r * gs.len;
            if (prod) {
                cumprod_grad_row((const float *)mp_tensor_data(xr) + off,
                                 (const float *)mp_tensor_data(yr) + off, g + off, op + off,
                                 gs.len);
            } else {
                double acc = 0.0;
                for (int64_t i = gs.len - 1; i >= 0; i--)
                    op[off + i] = (float)(acc += g[off + i]);
            }
        }
        int nd;
        const int64_t *ishape = mp_node_in_shape(n, 0, &nd);
        st = mp_rowset_restore(o, ishape, nd, mask, &gin[0]);
    }
    mp_rowset_release(&gs);
    mp_rowset_release(&xs);
    mp_rowset_release(&ys);
    mp_tensor *tmp[4] = {gr, xr, yr, o};
    for (int i = 0; i < 4; i++)
        mp_tensor_decref(tmp[i]);
    return st;
}

mp_status mp_op_cumsum(mp_tensor *a, int64_t dim, int dtype, int prod, mp_tensor **out)
{
    MP_AUTOCAST_ENTRY_IF(dtype < 0, prod ? MP_OP_CUMPROD : MP_OP_CUMSUM,
                         mp_op_cumsum(ac_[0], dim, dtype, prod, out), a);
    MP_HOST_ONLY("cumsum", a);
    mp_dtype odt = scan_dtype(a, dtype);
    int d;
    *out = NULL;
    mp_status st = mp_wrap_dim(dim, a->ndim, &d);
    if (st != MP_OK)
        return st;
    uint32_t mask = (1u << d) & all_dims(a->ndim);
    mp_tensor *src = NULL, *res = NULL;
    mp_rowset rs = {0};
    st = mp_op_to_dtype(a, odt, 0, &src);
    if (st == MP_OK)
        st = mp_rowset_of(src, mask, 1, &rs);
    if (st == MP_OK)
        st = scan_rows(&rs, prod, &res);
    if (st == MP_OK)
        st = mp_rowset_restore(res, src->shape, src->ndim, mask, out);
    mp_rowset_release(&rs);
    mp_tensor_decref(res);
    mp_node *node = NULL;
    if (st == MP_OK)
        st = mp_autograd_record(prod ? "CumprodBackward0" : "CumsumBackward0", cumsum_backward,
                                &src, 1, out, 1, &node);
    if (st == MP_OK && node) {
        node->iargs[0] = mask;
        node->iargs[1] = prod;
        if (prod && (st = mp_node_save(node, 0, src)) == MP_OK)
            st = mp_node_save(node, 1, *out);
    }
    mp_tensor_decref(src);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
