/* reduce.c - sum over a dimension mask (see reduce.h). The input is walked together with a
 * double accumulator laid out like the output but with stride 0 along reduced dimensions (an
 * int64 one for integer sums to int64, exact as torch's); the accumulator gets an 8-byte-element
 * header so mp_iter can coalesce both walks. */
#include "reduce.h"
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include "../cpu/dispatch.h"
#include "copy.h"
#include "iter.h"

void mp_reduced_shape(const mp_tensor *t, uint32_t dim_mask, int keepdim, int64_t *shape,
                      int *ndim)
{
    int n = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (dim_mask & (1u << d)) {
            if (keepdim)
                shape[n++] = 1;
        } else {
            shape[n++] = t->shape[d];
        }
    }
    *ndim = n;
}

typedef struct {
    mp_dtype dt;
    const mp_cpu_kernels *k;
    int int_acc;          /* integer input summed to int64: an int64 accumulator (wraps) */
} sum_ctx;

/* Four partial sums so the double adds overlap (a single chain waits on each add). */
static double sum_chunk(const float *x, int64_t m)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < m; i++)
        s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

/* int64/bool: summed exactly in int64 with two's-complement wrap-around (as torch) when the
 * result is int64, else added as doubles; never through fp32 */
static void sum_run_int(char **ptrs, const int64_t *strides, int64_t n, const sum_ctx *c)
{
    int64_t step = strides[1] * (int64_t)mp_dtype_size(c->dt);
    if (c->int_acc) {
        int64_t *acc = (int64_t *)ptrs[0];
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)mp_load_i64(c->dt, ptrs[1] + i * step);
            acc[i * strides[0]] = (int64_t)((uint64_t)acc[i * strides[0]] + v);
        }
        return;
    }
    double *acc = (double *)ptrs[0];
    for (int64_t i = 0; i < n; i++)
        acc[i * strides[0]] += mp_load_f64(c->dt, ptrs[1] + i * step);
}

static void sum_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const sum_ctx *c = vctx;
    if (!mp_dtype_is_float(c->dt)) {
        sum_run_int(ptrs, strides, n, c);
        return;
    }
    double *acc = (double *)ptrs[0];
    const char *src = ptrs[1];
    int64_t step = strides[1] * (int64_t)mp_dtype_size(c->dt);
    float tmp[256];
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        int64_t m = n - i0 < 256 ? n - i0 : 256;
        const char *p = src + i0 * step;
        const float *buf = tmp;                /* contiguous fp32 is read in place */
        if (strides[1] == 1 && c->dt == MP_DTYPE_FLOAT16)
            c->k->f16_to_f32((const mp_half *)p, tmp, (size_t)m);
        else if (strides[1] == 1 && c->dt == MP_DTYPE_BFLOAT16)
            c->k->bf16_to_f32((const mp_bf16 *)p, tmp, (size_t)m);
        else if (strides[1] == 1 && c->dt == MP_DTYPE_FLOAT32)
            buf = (const float *)p;
        else
            for (int64_t i = 0; i < m; i++)
                tmp[i] = (float)mp_load_f64(c->dt, p + i * step);
        if (strides[0] == 0) {
            acc[0] += sum_chunk(buf, m);
        } else if (strides[0] == 1) {          /* column sums: a loop the compiler vectorises */
            double *a = acc + i0;
            for (int64_t i = 0; i < m; i++)
                a[i] += buf[i];
        } else {
            double *a = acc + i0 * strides[0];
            for (int64_t i = 0; i < m; i++)
                a[i * strides[0]] += buf[i];
        }
    }
}

mp_status mp_reduce_sum(mp_tensor *t, uint32_t dim_mask, int keepdim, mp_dtype out_dtype,
                        mp_tensor **out)
{
    MP_HOST_ONLY("reduce_sum", t);
    int64_t oshape[MP_MAX_DIMS], kshape[MP_MAX_DIMS], astrides[MP_MAX_DIMS];
    int ond, knd;
    mp_reduced_shape(t, dim_mask, keepdim, oshape, &ond);
    mp_reduced_shape(t, dim_mask, 1, kshape, &knd);
    int64_t onumel = 1;
    for (int d = 0; d < ond; d++)
        onumel *= oshape[d];
    double *acc = calloc((size_t)(onumel ? onumel : 1), sizeof(double));
    if (!acc)
        return mp_error(MP_ERR_NOMEM, "out of memory for a reduction buffer");
    mp_contiguous_strides(kshape, knd, astrides);
    for (int d = 0; d < t->ndim; d++)
        if (dim_mask & (1u << d))
            astrides[d] = 0;
    mp_storage *as = mp_storage_wrap(acc, (size_t)onumel * sizeof(double), MP_DEVICE_CPU,
                                     free, acc);
    if (!as) {
        free(acc);
        return MP_ERR_NOMEM;
    }
    /* an int64 header gives the 8-byte element size of the double accumulator */
    mp_tensor *accv = mp_tensor_on_storage(as, MP_DTYPE_INT64, t->shape, astrides, t->ndim, 0);
    mp_storage_decref(as);
    if (!accv)
        return MP_ERR_NOMEM;
    mp_tensor *ops[2] = {accv, t};
    mp_iter it;
    int int_acc = !mp_dtype_is_float(t->dtype) && out_dtype == MP_DTYPE_INT64;
    sum_ctx c = {t->dtype, mp_cpu(), int_acc};
    mp_iter_init(&it, ops, 2);
    mp_iter_run(&it, sum_run, &c);
    mp_status st = mp_tensor_empty(oshape, ond, out_dtype, MP_DEVICE_CPU, out);
    if (st == MP_OK) {
        char *dst = mp_tensor_data(*out);
        size_t sz = mp_dtype_size(out_dtype);
        int is_int = mp_dtype_is_integral(out_dtype);
        for (int64_t i = 0; i < onumel; i++) {
            int64_t iv = int_acc ? ((const int64_t *)(const void *)acc)[i] : (int64_t)acc[i];
            mp_scalar v = {acc[i], iv, is_int};
            mp_store_scalar(out_dtype, dst + (size_t)i * sz, v);
        }
    }
    mp_tensor_decref(accv);
    return st;
}
