/* elementwise.c - the chunked fp32 map loop, dtype promotion and broadcasting (see
 * elementwise.h). Contiguous float32 operands are used in place; fp16/bf16 chunks go
 * through the vector conversion kernels; other layouts are gathered element by element. */
#include "elementwise.h"

#include <stdio.h>
#include <string.h>

#include "../cpu/dispatch.h"
#include "backend.h"
#include "copy.h"
#include "iter.h"
#include "reduce.h"
#include "view.h"

/* Loads n <= MP_MAP_CHUNK elements (stride in elements) of dtype dt at p into buf as fp32;
 * returns a pointer to the fp32 data (p itself for contiguous float32). */
static const float *load_f32(const char *p, int64_t stride, mp_dtype dt, int64_t n, float *buf,
                             const mp_cpu_kernels *k)
{
    if (stride == 1) {
        switch (dt) {
        case MP_DTYPE_FLOAT32: return (const float *)p;
        case MP_DTYPE_FLOAT16: k->f16_to_f32((const mp_half *)p, buf, (size_t)n); return buf;
        case MP_DTYPE_BFLOAT16: k->bf16_to_f32((const mp_bf16 *)p, buf, (size_t)n); return buf;
        default: break;
        }
    }
    if (stride == 0) {                  /* a broadcast operand (a Python scalar, a bias) */
        float v = (float)mp_load_f64(dt, p);
        for (int64_t i = 0; i < n; i++)
            buf[i] = v;
        return buf;
    }
    if (dt == MP_DTYPE_FLOAT32) {       /* a strided view: gather without the dtype switch */
        const float *f = (const float *)p;
        for (int64_t i = 0; i < n; i++)
            buf[i] = f[i * stride];
        return buf;
    }
    if (dt == MP_DTYPE_FLOAT16 || dt == MP_DTYPE_BFLOAT16) {
        const uint16_t *h = (const uint16_t *)p;
        uint16_t raw[MP_MAP_CHUNK];     /* n <= MP_MAP_CHUNK: map_run loads chunk by chunk */
        for (int64_t i = 0; i < n; i++)
            raw[i] = h[i * stride];
        if (dt == MP_DTYPE_FLOAT16)
            k->f16_to_f32((const mp_half *)raw, buf, (size_t)n);
        else
            k->bf16_to_f32((const mp_bf16 *)raw, buf, (size_t)n);
        return buf;
    }
    size_t sz = mp_dtype_size(dt);
    int64_t step = stride * (int64_t)sz;
    for (int64_t i = 0; i < n; i++)
        buf[i] = (float)mp_load_f64(dt, p + i * step);
    return buf;
}

static void store_f32(char *p, int64_t stride, mp_dtype dt, const float *src, int64_t n,
                      const mp_cpu_kernels *k)
{
    if (stride == 1) {
        switch (dt) {
        case MP_DTYPE_FLOAT32:
            if ((const float *)p != src)
                memcpy(p, src, (size_t)n * sizeof(float));
            return;
        case MP_DTYPE_FLOAT16: k->f32_to_f16(src, (mp_half *)p, (size_t)n); return;
        case MP_DTYPE_BFLOAT16: k->f32_to_bf16(src, (mp_bf16 *)p, (size_t)n); return;
        default: break;
        }
    }
    size_t sz = mp_dtype_size(dt);
    int64_t step = stride * (int64_t)sz;
    for (int64_t i = 0; i < n; i++) {
        mp_scalar v = {src[i], 0, 0};   /* ints truncate, NaN -> INT64_MIN (copy.c) */
        mp_store_scalar(dt, p + i * step, v);
    }
}

/* Elements per thread below which a map stays on one thread: a region on the warm pool costs
 * well under a microsecond (benchmarks/bench_overhead.py), a map element about a nanosecond,
 * so 32k elements (~10-30 us of work) already gain from a second thread. */
#define MP_MAP_GRAIN (1 << 15)

typedef struct {
    int n_in;
    mp_dtype out_dt, in_dt[MP_MAP_MAX_IN];
    mp_map_fn fn;
    const double *args;
    const mp_cpu_kernels *k;
} map_ctx;

static void map_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const map_ctx *c = vctx;
    float inbuf[MP_MAP_MAX_IN][MP_MAP_CHUNK], outbuf[MP_MAP_CHUNK];
    const float *in[MP_MAP_MAX_IN];
    size_t osz = mp_dtype_size(c->out_dt);
    for (int64_t i0 = 0; i0 < n; i0 += MP_MAP_CHUNK) {
        int64_t m = n - i0 < MP_MAP_CHUNK ? n - i0 : MP_MAP_CHUNK;
        for (int k = 0; k < c->n_in; k++) {
            size_t isz = mp_dtype_size(c->in_dt[k]);
            in[k] = load_f32(ptrs[k + 1] + i0 * strides[k + 1] * (int64_t)isz, strides[k + 1],
                             c->in_dt[k], m, inbuf[k], c->k);
        }
        char *op = ptrs[0] + i0 * strides[0] * (int64_t)osz;
        int direct = strides[0] == 1 && c->out_dt == MP_DTYPE_FLOAT32;
        float *dst = direct ? (float *)op : outbuf;
        c->fn(in, dst, m, c->args);
        if (!direct)
            store_f32(op, strides[0], c->out_dt, dst, m, c->k);
    }
}

typedef struct {
    int n_in;
    mp_dtype out_dt, in_dt[MP_MAP_MAX_IN];
    mp_map_f64_fn fn;
    const double *args;
} map64_ctx;

static void map64_run(char **ptrs, const int64_t *strides, int64_t n, void *vctx)
{
    const map64_ctx *c = vctx;
    double inbuf[MP_MAP_MAX_IN][MP_MAP_CHUNK], outbuf[MP_MAP_CHUNK];
    const double *in[MP_MAP_MAX_IN];
    for (int64_t i0 = 0; i0 < n; i0 += MP_MAP_CHUNK) {
        int64_t m = n - i0 < MP_MAP_CHUNK ? n - i0 : MP_MAP_CHUNK;
        for (int k = 0; k < c->n_in; k++) {
            int64_t step = strides[k + 1] * (int64_t)mp_dtype_size(c->in_dt[k]);
            const char *p = ptrs[k + 1] + i0 * step;
            for (int64_t i = 0; i < m; i++)
                inbuf[k][i] = mp_load_f64(c->in_dt[k], p + i * step);
            in[k] = inbuf[k];
        }
        c->fn(in, outbuf, m, c->args);
        int64_t step = strides[0] * (int64_t)mp_dtype_size(c->out_dt);
        char *p = ptrs[0] + i0 * step;
        for (int64_t i = 0; i < m; i++) {
            double v = outbuf[i];
            mp_scalar s = {v, 0, 0};    /* int64: truncation, NaN-safe (copy.c) */
            mp_store_scalar(c->out_dt, p + i * step, s);
        }
    }
}

mp_status mp_cpu_map_kernel(const mp_map_kernel *k, mp_msg *msg)
{
    (void)msg;
    if (k->fn) {
        map_ctx c = {k->n_in, k->out_dt, {MP_DTYPE_FLOAT32}, k->fn, k->args, mp_cpu()};
        memcpy(c.in_dt, k->in_dt, sizeof c.in_dt);
        mp_iter_run_parallel(k->it, map_run, &c, k->grain);
    } else {
        map64_ctx c = {k->n_in, k->out_dt, {MP_DTYPE_FLOAT32}, k->fn64, k->args};
        memcpy(c.in_dt, k->in_dt, sizeof c.in_dt);
        mp_iter_run_parallel(k->it, map64_run, &c, k->grain);
    }
    return MP_OK;
}

/* A CPU operand of a device map that torch accepts: a 0-d tensor or a Python number, which
 * reaches here broadcast (every stride 0). */
static int host_scalar(const mp_tensor *t)
{
    if (t->storage->device != MP_DEVICE_CPU)
        return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] != 0 && t->shape[d] != 1)
            return 0;
    return 1;
}

/* The device copy of a host scalar operand, broadcast like it (filled on the device from the
 * value: a kernel argument, no copy). */
static mp_status scalar_to_device(mp_tensor *t, mp_device dev, mp_tensor **out)
{
    mp_scalar v = {mp_load_f64(t->dtype, mp_tensor_data(t)), 0, 0};
    if (mp_dtype_is_integral(t->dtype)) {
        v.is_int = 1;
        v.i = mp_load_i64(t->dtype, mp_tensor_data(t));
    }
    mp_tensor *one;
    mp_status st = mp_tensor_empty(NULL, 0, t->dtype, dev, &one);
    if (st != MP_OK)
        return st;
    if ((st = mp_tensor_fill_(one, v)) != MP_OK) {
        mp_tensor_decref(one);
        return st;
    }
    int64_t zero[MP_MAX_DIMS] = {0};
    *out = mp_tensor_on_storage(one->storage, t->dtype, t->shape, zero, t->ndim, 0);
    mp_tensor_decref(one);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

mp_status mp_run_iter(mp_kernel_id id, mp_tensor *const *ops, int n, mp_iter_fn fn, void *ctx,
                      int64_t grain)
{
    mp_device dev = ops[0]->storage->device;
    mp_tensor *use[MP_ITER_MAX_OPS], *moved[MP_ITER_MAX_OPS] = {NULL};
    mp_status st = MP_OK;
    for (int i = 0; i < n && st == MP_OK; i++) {
        use[i] = ops[i];
        if (ops[i]->storage->device == dev)
            continue;
        if (i > 0 && dev != MP_DEVICE_CPU && host_scalar(ops[i]))
            st = scalar_to_device(ops[i], dev, &moved[i]);
        else
            st = mp_check_same_device(&ops[i], 1, dev, 0);
        if (moved[i])
            use[i] = moved[i];
    }
    if (st == MP_OK) {
        mp_iter it;
        mp_iter_init(&it, use, n);
        mp_iter_kernel k = {id, &it, fn, ctx, grain};
        st = mp_launch_iter(dev, &k);
    }
    mp_decref_all(moved, n);
    return st;
}

/* A map whose output or inputs are not all on the CPU: operands on the output's device (host
 * scalars moved there), then the device's kernel. */
static mp_status map_on_device(mp_map_kernel *k, mp_tensor *out, mp_tensor *const *ins)
{
    mp_device dev = out->storage->device;
    mp_tensor *ops[1 + MP_MAP_MAX_IN], *moved[MP_MAP_MAX_IN] = {NULL};
    mp_status st = MP_OK;
    ops[0] = out;
    for (int i = 0; i < k->n_in && st == MP_OK; i++) {
        ops[i + 1] = ins[i];
        if (ins[i]->storage->device == dev)
            continue;
        if (dev != MP_DEVICE_CPU && host_scalar(ins[i]))
            st = scalar_to_device(ins[i], dev, &moved[i]);
        else
            st = mp_check_same_device(&ins[i], 1, dev, 0);
        if (moved[i])
            ops[i + 1] = moved[i];
    }
    const mp_backend *b = st == MP_OK ? mp_backend_get(dev) : NULL;
    if (b) {
        mp_iter it;
        mp_iter_init(&it, ops, k->n_in + 1);
        k->it = &it;
        mp_msg msg;
        if ((st = b->map(k, &msg)) != MP_OK)
            mp_backend_error(st, &msg);
    } else if (st == MP_OK) {
        st = MP_ERR_NO_CUDA;
    }
    mp_decref_all(moved, k->n_in);
    return st;
}

static mp_status map_any(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_fn fn,
                         mp_map_f64_fn fn64, int op, const double *args)
{
    mp_map_kernel k = {NULL, n_in, out->dtype, {MP_DTYPE_FLOAT32}, fn, fn64, args,
                       MP_MAP_GRAIN, op};
    mp_tensor *ops[1 + MP_MAP_MAX_IN];
    int host = out->storage->device == MP_DEVICE_CPU;
    ops[0] = out;
    for (int i = 0; i < n_in; i++) {
        ops[i + 1] = ins[i];
        k.in_dt[i] = ins[i]->dtype;
        host &= ins[i]->storage->device == MP_DEVICE_CPU;
    }
    if (!host)
        return map_on_device(&k, out, ins);
    mp_iter it;
    mp_iter_init(&it, ops, n_in + 1);
    k.it = &it;
    return mp_cpu_map_kernel(&k, NULL);
}

mp_status mp_map(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_fn fn,
                 const double *args)
{
    return map_any(out, ins, n_in, fn, NULL, 0, args);
}

mp_status mp_map_with_op(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_fn fn, int op,
                    const double *args)
{
    return map_any(out, ins, n_in, fn, NULL, op, args);
}

mp_status mp_map_f64(mp_tensor *out, mp_tensor *const *ins, int n_in, mp_map_f64_fn fn,
                     const double *args)
{
    return map_any(out, ins, n_in, NULL, fn, 0, args);
}

/* ---- promotion ---- */

static int kind_of(mp_dtype d)
{
    return d == MP_DTYPE_BOOL ? 0 : mp_dtype_is_integral(d) ? 1 : 2;
}

mp_dtype mp_promote_types(mp_dtype a, mp_dtype b)
{
    if (a == b)
        return a;
    int ka = kind_of(a), kb = kind_of(b);
    if (ka != kb)
        return ka > kb ? a : b;
    /* same kind, different dtypes: uint8 with int64 widens to int64 (mpamp has no int16, the
     * type torch gives uint8 with int8); floats (fp16 / bf16 / fp32) meet at fp32 */
    return ka == 1 ? MP_DTYPE_INT64 : MP_DTYPE_FLOAT32;
}

mp_dtype mp_result_type(mp_tensor *const *ts, int n)
{
    /* priority 0: dimensioned tensors, 1: 0-d tensors, 2: wrapped numbers */
    int have[3] = {0, 0, 0};
    mp_dtype res[3] = {MP_DTYPE_BOOL, MP_DTYPE_BOOL, MP_DTYPE_BOOL};
    for (int i = 0; i < n; i++) {
        int p = ts[i]->wrapped_number ? 2 : ts[i]->ndim == 0 ? 1 : 0;
        res[p] = have[p] ? mp_promote_types(res[p], ts[i]->dtype) : ts[i]->dtype;
        have[p] = 1;
    }
    mp_dtype out = MP_DTYPE_BOOL;
    int started = 0;
    for (int p = 0; p < 3; p++) {
        if (!have[p])
            continue;
        if (!started) {
            out = res[p];
            started = 1;
        } else if (kind_of(res[p]) > kind_of(out)) {
            /* a lower-priority operand only matters when it is of a higher kind; a wrapped
             * float then gives the default float32 (or the 0-d tensor's float dtype) */
            out = p == 2 && kind_of(res[p]) == 2 ? MP_DTYPE_FLOAT32 : res[p];
        }
    }
    return out;
}

/* ---- broadcasting ---- */

void mp_decref_all(mp_tensor **ts, int n)
{
    for (int i = 0; i < n; i++) {
        mp_tensor_decref(ts[i]);
        ts[i] = NULL;
    }
}

mp_status mp_broadcast_all(mp_tensor *const *ins, int n, int64_t *shape, int *ndim,
                           mp_tensor **expanded, const char *op_name)
{
    int nd = ins[0]->ndim;
    memcpy(shape, ins[0]->shape, sizeof(int64_t) * (size_t)nd);
    for (int i = 1; i < n; i++) {
        int64_t tmp[MP_MAX_DIMS];
        mp_status st = mp_broadcast_shapes(shape, nd, ins[i]->shape, ins[i]->ndim, tmp, &nd);
        if (st != MP_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", mp_error_message());
            return mp_error(st, "%s: %s", op_name, msg);
        }
        memcpy(shape, tmp, sizeof(int64_t) * (size_t)nd);
    }
    *ndim = nd;
    for (int i = 0; i < n; i++) {
        if (ins[i]->ndim == nd && memcmp(ins[i]->shape, shape, sizeof(int64_t) *
                                         (size_t)nd) == 0) {
            mp_tensor_incref(expanded[i] = ins[i]);     /* already the right shape */
            continue;
        }
        mp_status st = mp_view_expand(ins[i], shape, nd, &expanded[i]);
        if (st != MP_OK) {
            mp_decref_all(expanded, i);
            return st;
        }
    }
    return MP_OK;
}

mp_status mp_tensor_full(const int64_t *shape, int ndim, mp_dtype dt, double v, mp_tensor **out)
{
    return mp_tensor_full_on(shape, ndim, dt, v, MP_DEVICE_CPU, out);
}

mp_status mp_tensor_full_on(const int64_t *shape, int ndim, mp_dtype dt, double v, mp_device dev,
                            mp_tensor **out)
{
    mp_status st = mp_tensor_empty(shape, ndim, dt, dev, out);
    if (st != MP_OK)
        return st;
    int is_int = mp_dtype_is_integral(dt);
    mp_scalar s = {v, is_int ? (int64_t)v : 0, is_int};
    return mp_tensor_fill_(*out, s);
}

mp_status mp_scalar_tensor(double v, mp_dtype dt, mp_tensor **out)
{
    mp_status st = mp_tensor_full(NULL, 0, dt, v, out);
    if (st == MP_OK)
        (*out)->wrapped_number = 1;
    return st;
}

mp_status mp_sum_to_shape(mp_tensor *g, const int64_t *shape, int ndim, mp_tensor **out)
{
    uint32_t mask = 0;
    int lead = g->ndim - ndim;
    for (int d = 0; d < g->ndim; d++) {
        int j = d - lead;
        if (j < 0 || (shape[j] == 1 && g->shape[d] != 1))
            mask |= 1u << d;
    }
    if (!mask) {
        mp_tensor_incref(g);
        *out = g;
        return MP_OK;
    }
    mp_tensor *s;
    mp_status st = mp_reduce_sum(g, mask, 1, g->dtype, &s);
    if (st != MP_OK)
        return st;
    st = mp_view_reshape(s, shape, ndim, 0, out);
    mp_tensor_decref(s);
    return st;
}
