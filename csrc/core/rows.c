/* rows.c - row views along one dimension and the row loop (see rows.h). Only the layout
 * change (permute + contiguous copy) and the fp32 conversions live here; the per-row math
 * belongs to the op files. */
#include "rows.h"
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/dispatch.h"
#include "../cpu/parallel.h"
#include "copy.h"
#include "view.h"

double mp_sum_f32(const float *x, int64_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < n; i++)
        s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

double mp_sum_sq_dev_f32(const float *x, int64_t n, double c)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        double d0 = x[i] - c, d1 = x[i + 1] - c, d2 = x[i + 2] - c, d3 = x[i + 3] - c;
        s0 += d0 * d0;
        s1 += d1 * d1;
        s2 += d2 * d2;
        s3 += d3 * d3;
    }
    for (; i < n; i++)
        s0 += (x[i] - c) * (x[i] - c);
    return (s0 + s1) + (s2 + s3);
}

/* perm moves dim last; inverse puts it back. */
static void dim_last_perm(int ndim, int dim, int64_t *perm, int64_t *inverse)
{
    int k = 0;
    for (int d = 0; d < ndim; d++)
        if (d != dim)
            perm[k++] = d;
    perm[k] = dim;
    for (int i = 0; i < ndim; i++)
        inverse[perm[i]] = i;
}

void mp_rows_shape(const int64_t *shape, int ndim, int dim, int64_t *out)
{
    int k = 0;
    for (int d = 0; d < ndim; d++)
        if (d != dim)
            out[k++] = shape[d];
    if (ndim > 0)
        out[k] = shape[dim];
}

mp_status mp_rows_of(mp_tensor *a, int dim, mp_tensor **rows)
{
    if (a->ndim == 0 || dim == a->ndim - 1)
        return mp_tensor_contiguous(a, rows);
    int64_t perm[MP_MAX_DIMS], inv[MP_MAX_DIMS];
    dim_last_perm(a->ndim, dim, perm, inv);
    mp_tensor *p;
    mp_status st = mp_view_permute(a, perm, a->ndim, &p);
    if (st != MP_OK)
        return st;
    st = mp_tensor_contiguous(p, rows);
    mp_tensor_decref(p);
    return st;
}

mp_status mp_rows_restore(mp_tensor *rows, int dim, mp_tensor **out)
{
    if (rows->ndim == 0 || dim == rows->ndim - 1) {
        mp_tensor_incref(rows);
        *out = rows;
        return MP_OK;
    }
    int64_t perm[MP_MAX_DIMS], inv[MP_MAX_DIMS];
    dim_last_perm(rows->ndim, dim, perm, inv);
    mp_tensor *p;
    mp_status st = mp_view_permute(rows, inv, rows->ndim, &p);
    if (st != MP_OK)
        return st;
    st = mp_tensor_contiguous(p, out);
    mp_tensor_decref(p);
    return st;
}

const float *mp_row_load(mp_dtype dt, const void *data, int64_t r, int64_t len, float *buf)
{
    size_t sz = mp_dtype_size(dt);
    const char *p = (const char *)data + (size_t)(r * len) * sz;
    switch (dt) {
    case MP_DTYPE_FLOAT32: return (const float *)p;
    case MP_DTYPE_FLOAT16: mp_cpu()->f16_to_f32((const mp_half *)p, buf, (size_t)len); break;
    case MP_DTYPE_BFLOAT16: mp_cpu()->bf16_to_f32((const mp_bf16 *)p, buf, (size_t)len); break;
    default:
        for (int64_t i = 0; i < len; i++)
            buf[i] = (float)mp_load_f64(dt, p + (size_t)i * sz);
        break;
    }
    return buf;
}

void mp_row_store(mp_dtype dt, void *data, int64_t r, int64_t len, const float *src)
{
    size_t sz = mp_dtype_size(dt);
    char *p = (char *)data + (size_t)(r * len) * sz;
    switch (dt) {
    case MP_DTYPE_FLOAT32:
        if ((const float *)p != src)
            memcpy(p, src, (size_t)len * sizeof(float));
        break;
    case MP_DTYPE_FLOAT16: mp_cpu()->f32_to_f16(src, (mp_half *)p, (size_t)len); break;
    case MP_DTYPE_BFLOAT16: mp_cpu()->f32_to_bf16(src, (mp_bf16 *)p, (size_t)len); break;
    default:
        for (int64_t i = 0; i < len; i++) {
            mp_scalar v = {src[i], 0, 0};
            mp_store_scalar(dt, p + (size_t)i * sz, v);
        }
        break;
    }
}

/* The MP_KERNEL_ROWS kernel. Buffers: the n_in row inputs, the output rows, then the aux
 * buffers, whose (translated) addresses are written into the ctx fields aux->slot[i] before
 * the rows run, so the row function only ever sees addresses it may touch. Rows run on the
 * thread pool (contiguous ranges of rows, each with its own conversion buffers) unless the
 * aux says the row function accumulates across rows (serial): a row's values never depend on
 * which thread computed it. */
typedef struct {
    int n_in;
    mp_dtype dt[MP_ROWS_MAX_IN + 1];   /* inputs, then the output */
    int64_t nrows, len;
    mp_row_fn fn;
    void *ctx;
    const mp_row_aux *aux;
} rows_args;

typedef struct {
    const rows_args *a;
    void *const *buf;
    int failed;
} rows_job;

#define ROWS_GRAIN_ELEMS 16384      /* elements per thread's share, at least */
#define ROWS_STACK_FLOATS 2048      /* conversion buffers of short rows live on the stack */

static void rows_range(void *vjob, int64_t r0, int64_t r1)
{
    rows_job *j = vjob;
    const rows_args *a = j->a;
    int64_t len = a->len;
    size_t need = (size_t)(a->n_in + 1) * (size_t)(len + 1);
    float stack[ROWS_STACK_FLOATS];
    float *bufs = need <= ROWS_STACK_FLOATS ? stack : malloc(sizeof(float) * need);
    if (!bufs) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    const float *in[MP_ROWS_MAX_IN];
    float *obuf = bufs + (size_t)a->n_in * (size_t)len;
    mp_dtype odt = a->dt[a->n_in];
    void *odata = j->buf[a->n_in];
    int direct = odt == MP_DTYPE_FLOAT32;
    for (int64_t r = r0; r < r1; r++) {
        for (int k = 0; k < a->n_in; k++)
            in[k] = mp_row_load(a->dt[k], j->buf[k], r, len, bufs + (size_t)k * (size_t)len);
        float *dst = direct ? (float *)odata + r * len : obuf;
        a->fn(in, dst, len, r, a->ctx);
        if (!direct)
            mp_row_store(odt, odata, r, len, dst);
    }
    if (bufs != stack)
        free(bufs);
}

static mp_status run_rows(void *const *buf, const void *vargs, mp_msg *msg)
{
    const rows_args *a = vargs;
    if (a->aux)
        for (int i = 0; i < a->aux->n; i++)
            *a->aux->slot[i] = buf[a->n_in + 1 + i];
    rows_job j = {a, buf, 0};
    if (a->aux && a->aux->serial) {
        rows_range(&j, 0, a->nrows);
    } else {
        int64_t grain = ROWS_GRAIN_ELEMS / (a->len > 0 ? a->len : 1);
        mp_parallel_for(a->nrows, grain > 1 ? grain : 1, rows_range, &j);
    }
    if (j.failed) {
        snprintf(msg->text, sizeof msg->text, "out of memory for a row buffer");
        return MP_ERR_NOMEM;
    }
    return MP_OK;
}

mp_status mp_rows_map_aux(mp_tensor *const *ins, int n_in, int dim, mp_dtype out_dtype,
                          mp_row_fn fn, void *ctx, const mp_row_aux *aux, mp_tensor **out)
{
    mp_tensor *rows[MP_ROWS_MAX_IN] = {NULL}, *orows = NULL;
    mp_tensor *a = ins[0];
    mp_device dev = a->storage->device;
    int64_t len = a->ndim ? a->shape[dim] : 1, numel = mp_tensor_numel(a);
    int64_t nrows = len ? numel / len : 0;
    int naux = aux ? aux->n : 0;
    mp_status st = MP_OK;
    *out = NULL;
    mp_tensor *devs[MP_ROWS_MAX_IN + MP_ROWS_MAX_AUX];
    for (int k = 0; k < n_in; k++)
        devs[k] = ins[k];
    for (int i = 0; i < naux; i++)
        devs[n_in + i] = aux->t[i];
    if ((st = mp_check_same_device(devs, n_in + naux, dev, 0)) != MP_OK)
        return st;
    for (int k = 0; k < n_in && st == MP_OK; k++)
        st = mp_rows_of(ins[k], dim, &rows[k]);
    if (st == MP_OK)
        st = mp_tensor_empty(rows[0]->shape, a->ndim, out_dtype, dev, &orows);
    if (st == MP_OK) {
        void *ptr[MP_ROWS_MAX_IN + 1 + MP_ROWS_MAX_AUX];
        int64_t nbytes[MP_ROWS_MAX_IN + 1 + MP_ROWS_MAX_AUX];
        rows_args args = {n_in, {MP_DTYPE_FLOAT32}, nrows, len, fn, ctx, aux};
        for (int k = 0; k <= n_in; k++) {
            mp_tensor *t = k < n_in ? rows[k] : orows;
            ptr[k] = mp_tensor_data(t);
            nbytes[k] = mp_tensor_numel(t) * (int64_t)mp_dtype_size(t->dtype);
            args.dt[k] = t->dtype;
        }
        for (int i = 0; i < naux; i++) {
            ptr[n_in + 1 + i] = mp_tensor_data(aux->t[i]);
            nbytes[n_in + 1 + i] = mp_tensor_numel(aux->t[i]) *
                                   (int64_t)mp_dtype_size(aux->t[i]->dtype);
        }
        st = mp_launch_bufs(dev, MP_KERNEL_ROWS, n_in + 1 + naux, ptr, nbytes, run_rows, &args);
    }
    if (st == MP_OK)
        st = mp_rows_restore(orows, dim, out);
    for (int k = 0; k < n_in; k++)
        mp_tensor_decref(rows[k]);
    mp_tensor_decref(orows);
    return st;
}

mp_status mp_rows_map(mp_tensor *const *ins, int n_in, int dim, mp_dtype out_dtype,
                      mp_row_fn fn, void *ctx, mp_tensor **out)
{
    return mp_rows_map_aux(ins, n_in, dim, out_dtype, fn, ctx, NULL, out);
}
