/* reduce.c - sum over a dimension mask (see reduce.h). The input is walked together with a
 * double accumulator laid out like the output but with stride 0 along reduced dimensions (an
 * int64 one for integer sums to int64, exact as torch's); the accumulator gets an 8-byte-element
 * header so mp_iter can coalesce both walks. */
#include "reduce.h"
#include "backend.h"
#include "../shared/mp_kernel_args.h"

#include <stdlib.h>
#include <string.h>

#include "../cpu/dispatch.h"
#include "../cpu/parallel.h"
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

#define MP_SUM_GRAIN (1 << 15)  /* input elements per thread's share, at least */

typedef struct {
    mp_sum_iter_args pub;  /* first: what a GPU backend reads (shared/mp_kernel_args.h) */
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
        } else if (strides[0] == 1) {          /* column sums: the ISA's vector adds */
            c->k->vm.acc(acc + i0, buf, (size_t)m);
        } else {
            double *a = acc + i0 * strides[0];
            for (int64_t i = 0; i < m; i++)
                a[i * strides[0]] += buf[i];
        }
    }
}

/* The MP_KERNEL_COLUMN_SUM kernel: buffer 0 the accumulator (cols doubles), buffer 1 a
 * (rows, cols) matrix of fp32, fp16 or bf16 with row stride ld. Threads take ranges of 8
 * columns (64 bytes of the accumulator); each column adds its rows in order, as the iterator
 * walk would. 16-bit rows are widened (exactly) into a stack block first: a whole block of
 * contiguous rows in one call when the range spans them (a bias gradient of 10 columns made
 * two calls per row before), else one call per row of the range. */
typedef mp_colsum_args colsum_args;   /* shared/mp_kernel_args.h */

typedef struct {
    const colsum_args *a;
    double *acc;
    const char *x;
} colsum_job;

#define COLSUM_BLOCK 4096      /* floats of widened 16-bit rows per colsum call */

static void widen(mp_dtype dt, const char *src, float *dst, int64_t n)
{
    if (dt == MP_DTYPE_FLOAT16)
        mp_cpu()->f16_to_f32((const mp_half *)(const void *)src, dst, (size_t)n);
    else
        mp_cpu()->bf16_to_f32((const mp_bf16 *)(const void *)src, dst, (size_t)n);
}

static void colsum_range(void *vj, int64_t u0, int64_t u1)
{
    const colsum_job *j = vj;
    const colsum_args *a = j->a;
    int64_t c0 = u0 * 8, c1 = u1 * 8 < a->cols ? u1 * 8 : a->cols, w = c1 - c0;
    if (a->dt == MP_DTYPE_FLOAT32) {
        mp_cpu()->vm.colsum(j->acc + c0, (const float *)(const void *)j->x + c0,
                            (size_t)a->rows, (size_t)w, (size_t)a->ld);
        return;
    }
    float tmp[COLSUM_BLOCK];
    int64_t width = w < COLSUM_BLOCK ? w : COLSUM_BLOCK, per = COLSUM_BLOCK / width;
    for (int64_t q0 = c0; q0 < c1; q0 += width) {          /* (one pass unless w > the block) */
        int64_t qw = c1 - q0 < width ? c1 - q0 : width;
        for (int64_t r0 = 0; r0 < a->rows; r0 += per) {
            int64_t nr = a->rows - r0 < per ? a->rows - r0 : per;
            const char *src = j->x + (r0 * a->ld + q0) * 2;
            if (qw == a->ld)                               /* whole rows, back to back */
                widen(a->dt, src, tmp, nr * qw);
            else
                for (int64_t r = 0; r < nr; r++)
                    widen(a->dt, src + r * a->ld * 2, tmp + r * qw, qw);
            mp_cpu()->vm.colsum(j->acc + q0, tmp, (size_t)nr, (size_t)qw, (size_t)qw);
        }
    }
}

static mp_status run_colsum(void *const *buf, const void *args, mp_msg *msg)
{
    (void)msg;
    const colsum_args *a = args;
    colsum_job j = {a, buf[0], buf[1]};
    int64_t per = a->rows * 8, g = (MP_SUM_GRAIN + per - 1) / per;
    mp_parallel_for((a->cols + 7) / 8, g > 1 ? g : 1, colsum_range, &j);
    return MP_OK;
}

/* Sums of a floating (rows, cols) walk over its rows (acc strides 0, 1) as the column
 * kernel; 0 when the walk has another shape. */
static int column_sums(const mp_iter *it, mp_dtype dt, mp_device dev, mp_status *st)
{
    if ((dt != MP_DTYPE_FLOAT32 && dt != MP_DTYPE_FLOAT16 && dt != MP_DTYPE_BFLOAT16) ||
        it->numel == 0 || it->ndim != 2 || it->strides[0][0] != 0 ||
        it->strides[0][1] != 1 || it->strides[1][1] != 1 || it->strides[1][0] < it->shape[1])
        return 0;
    colsum_args a = {it->shape[0], it->shape[1], it->strides[1][0], dt};
    void *ptr[2] = {it->base[0], it->base[1]};
    int64_t nbytes[2] = {a.cols * 8,
                         ((a.rows - 1) * a.ld + a.cols) * (int64_t)mp_dtype_size(dt)};
    *st = mp_launch_bufs(dev, MP_KERNEL_COLUMN_SUM, 2, ptr, nbytes, run_colsum, &a);
    return 1;
}

/* The MP_KERNEL_SUM_STORE kernel: buffer 0 the accumulator (n doubles, or int64 when
 * int_acc), buffer 1 the contiguous output of dtype dt. */
typedef mp_sum_store_args store_args;   /* shared/mp_kernel_args.h */

static mp_status run_store(void *const *buf, const void *args, mp_msg *msg)
{
    const store_args *a = args;
    const double *acc = buf[0];
    char *dst = buf[1];
    size_t sz = mp_dtype_size(a->dt);
    int is_int = mp_dtype_is_integral(a->dt);
    (void)msg;
    for (int64_t i = 0; i < a->n; i++) {
        int64_t iv = a->int_acc ? ((const int64_t *)(const void *)acc)[i] : (int64_t)acc[i];
        mp_scalar v = {acc[i], iv, is_int};
        mp_store_scalar(a->dt, dst + (size_t)i * sz, v);
    }
    return MP_OK;
}

/* n zeroed 8-byte elements on dev: calloc'd host memory on the CPU (no fill pass, no tensor
 * header beyond the ones the caller makes), filled there on a device. */
static mp_status acc_storage(int64_t n, mp_device dev, mp_storage **out)
{
    if (dev != MP_DEVICE_CPU) {
        mp_tensor *t = NULL;
        mp_status st = mp_tensor_empty(&n, 1, MP_DTYPE_INT64, dev, &t);
        if (st == MP_OK && (st = mp_tensor_fill_(t, (mp_scalar){0.0, 0, 1})) == MP_OK) {
            *out = t->storage;
            mp_storage_incref(*out);
        }
        mp_tensor_decref(t);
        return st;
    }
    /* 64-byte aligned, so threads that take neighbouring ranges of outputs (mp_iter_run_split)
     * share no cache line unless a range ends inside one */
    char *raw = calloc((size_t)(n ? n : 1) + 8, sizeof(double));
    if (!raw)
        return mp_error(MP_ERR_NOMEM, "out of memory for a reduction buffer");
    double *acc = (double *)(void *)(raw + (64 - (uintptr_t)raw % 64) % 64);
    *out = mp_storage_wrap(acc, (size_t)n * sizeof(double), MP_DEVICE_CPU, free, raw);
    if (!*out) {
        free(raw);
        return MP_ERR_NOMEM;
    }
    return MP_OK;
}

mp_status mp_acc_zeros(const int64_t *shape, int nd, mp_device dev, mp_tensor **out)
{
    int64_t n = 1, strides[MP_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    mp_storage *s = NULL;
    mp_status st = acc_storage(n, dev, &s);
    if (st != MP_OK)
        return st;
    mp_contiguous_strides(shape, nd, strides);
    *out = mp_tensor_on_storage(s, MP_DTYPE_INT64, shape, strides, nd, 0);
    mp_storage_decref(s);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

static mp_status launch_store(void *acc, mp_tensor *out, int int_acc)
{
    int64_t n = mp_tensor_numel(out);
    store_args a = {n, out->dtype, int_acc};
    void *buf[2] = {acc, mp_tensor_data(out)};
    int64_t nbytes[2] = {n * 8, n * (int64_t)mp_dtype_size(out->dtype)};
    return mp_launch_bufs(out->storage->device, MP_KERNEL_SUM_STORE, 2, buf, nbytes, run_store,
                          &a);
}

mp_status mp_store_f64(mp_tensor *acc, mp_tensor *out)
{
    return launch_store(mp_tensor_data(acc), out, 0);
}

mp_status mp_reduce_sum(mp_tensor *t, uint32_t dim_mask, int keepdim, mp_dtype out_dtype,
                        mp_tensor **out)
{
    int64_t oshape[MP_MAX_DIMS], kshape[MP_MAX_DIMS], astrides[MP_MAX_DIMS];
    int ond, knd;
    mp_device dev = t->storage->device;
    mp_reduced_shape(t, dim_mask, keepdim, oshape, &ond);
    mp_reduced_shape(t, dim_mask, 1, kshape, &knd);
    /* the accumulator: 8-byte elements (doubles, or int64 sums) on t's device, seen through
     * an int64 header with t's shape and stride 0 along the reduced dims */
    int64_t onumel = 1;
    for (int d = 0; d < ond; d++)
        onumel *= oshape[d];
    mp_storage *as = NULL;
    mp_status st = acc_storage(onumel, dev, &as);
    if (st != MP_OK)
        return st;
    mp_contiguous_strides(kshape, knd, astrides);
    for (int d = 0; d < t->ndim; d++)
        if (dim_mask & (1u << d))
            astrides[d] = 0;
    mp_tensor *accv = mp_tensor_on_storage(as, MP_DTYPE_INT64, t->shape, astrides, t->ndim, 0);
    mp_storage_decref(as);
    if (!accv)
        return MP_ERR_NOMEM;
    mp_tensor *ops[2] = {accv, t};
    mp_iter it;
    int int_acc = !mp_dtype_is_float(t->dtype) && out_dtype == MP_DTYPE_INT64;
    sum_ctx c = {{t->dtype, int_acc}, t->dtype, mp_cpu(), int_acc};
    mp_iter_init(&it, ops, 2);
    /* threads take disjoint outputs: every output sums its inputs in the serial order */
    mp_iter_kernel k = {MP_KERNEL_SUM, &it, sum_run, &c, MP_SUM_GRAIN, 1};
    if (!column_sums(&it, t->dtype, dev, &st))
        st = mp_launch_iter(dev, &k);
    if (st == MP_OK)
        st = mp_tensor_empty(oshape, ond, out_dtype, dev, out);
    if (st == MP_OK) {
        st = launch_store(mp_tensor_data(accv), *out, int_acc);
        if (st != MP_OK) {
            mp_tensor_decref(*out);
            *out = NULL;
        }
    }
    mp_tensor_decref(accv);
    return st;
}
